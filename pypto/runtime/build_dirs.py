"""Where a build goes when no ``output_dir`` is given, and how many such builds are kept.

    $PYPTO_PROG_BUILD_DIR (or ./build_output) / <kernel>_<YYYYMMDD_HHMMSS>[_k]

After each such build the newest ``keep_builds`` of its kernel stay (``RunConfig(keep_builds=N)``,
else ``$PYPTO_KEEP_BUILDS``, else 5; 0 keeps every one); older ones go — never one that a
``CompiledProgram`` of this process still holds (a kernel's cache keeps its builds alive), and
never a directory without a build's ``compiled_meta.json``, which a build writes last. An
``output_dir`` of the user's choosing is never pruned. ``pypto clean`` removes builds by hand.
"""

from __future__ import annotations

import os
import re
import shutil
import weakref
from pathlib import Path

from pypto.errors import ConfigError
from pypto.log import logger

BUILD_MARK = "compiled_meta.json"  # every build writes it, last: what makes a directory a whole build
STAMP = re.compile(r"_(\d{8}_\d{6})(?:_(\d+))?$")  # <kernel>_<YYYYMMDD>_<HHMMSS>[_k]
DEFAULT_KEEP = 5
KEEP_ENV = "PYPTO_KEEP_BUILDS"

# output directory -> the CompiledProgram written there, while one is alive: its build is in use
_live: weakref.WeakValueDictionary = weakref.WeakValueDictionary()


def default_root() -> Path:
    return Path(os.environ.get("PYPTO_PROG_BUILD_DIR") or "build_output")


def kernel_of(name: str) -> str:
    """``layer_1_20261203_101500_2`` -> ``layer_1``: a build's kernel, its time stamp dropped."""
    return STAMP.sub("", name) or name


def builds(root: Path) -> list[Path]:
    """The builds directly under ``root``, oldest first (by modification time)."""
    if not root.is_dir():
        return []
    found = [d for d in root.iterdir() if d.is_dir() and not d.is_symlink() and (d / BUILD_MARK).is_file()]
    return sorted(found, key=lambda d: (d.stat().st_mtime, d.name))


def keep_count(configured: int | None) -> int:
    """How many builds of a kernel to keep: the config's count, else the environment's."""
    if configured is not None:
        return configured
    text = os.environ.get(KEEP_ENV)
    if not text:
        return DEFAULT_KEEP
    if not text.strip().isdigit():
        raise ConfigError(f"${KEEP_ENV}={text!r} is not a count of builds",
                          hint=f"{KEEP_ENV}=5 keeps the newest 5 builds of each kernel; 0 keeps them all")
    return int(text)


def hold(path: Path, compiled) -> None:
    """``compiled`` uses the build at ``path``: no pruning removes it while it lives."""
    _live[str(path)] = compiled


def prune(new: Path, keep: int) -> list[Path]:
    """Remove the builds of ``new``'s kernel beside it, but the newest ``keep`` (``new`` among
    them) and those in use. Only directories named as default builds of that kernel go,
    oldest first by the time in their name; a removal that fails (another process took the
    directory first, say) is skipped. Returns what went."""
    if keep <= 0 or not STAMP.search(new.name):
        return []
    kernel = kernel_of(new.name)
    mine = []
    for d in new.parent.iterdir():
        m = STAMP.search(d.name)
        if m and d.name[:m.start()] == kernel and not d.is_symlink() and (d / BUILD_MARK).is_file():
            mine.append((m.group(1), int(m.group(2) or 0), d))
    mine.sort(key=lambda entry: entry[:2])
    gone = []
    for _, _, d in mine[:max(0, len(mine) - keep)]:
        if d == new or str(d) in _live:
            continue
        shutil.rmtree(d, ignore_errors=True)
        if not d.exists():
            gone.append(d)
    if gone:
        logger.debug(f"[build] removed {len(gone)} older build(s) of {kernel} under {new.parent} (keeping the "
                     f"newest {keep}: RunConfig(keep_builds=N) or ${KEEP_ENV}; 0 keeps all)")
    return gone
