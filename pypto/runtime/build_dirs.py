"""Where builds go, which are in use, and which may go.

    $PYPTO_PROG_BUILD_DIR (or ./build_output) / <kernel>_<YYYYMMDD_HHMMSS>[_k]    a default build
    RunConfig(output_dir=D)                                                     a named one

(How a build is put into place whole, whatever threads or processes build at once:
``pypto.runtime.publish``.)

Held builds: every live ``CompiledProgram`` holds a shared ``flock`` on its build's lease
file, ``.pypto_lease``, from the moment the build starts; any process sees it, and the
kernel drops it when the holder is collected or its process ends (no lease outlives its
holder). Removing a build (pruning, ``pypto clean``) needs the lease exclusively, without
waiting: a build any live program holds stays. After each default build the newest
``keep_builds`` of its kernel stay (``RunConfig(keep_builds=N)``, else ``$PYPTO_KEEP_BUILDS``,
else 5; 0 keeps every one), and a named ``output_dir`` is never pruned.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import shutil
import uuid
import weakref
from pathlib import Path

try:
    import fcntl
except ImportError:  # (no flock here: a build is seen as held by this process's programs only)
    fcntl = None

from pypto.errors import ConfigError
from pypto.log import logger

BUILD_MARK = "compiled_meta.json"  # every build writes it, last: what makes a directory a whole build
LEASE = ".pypto_lease"
STAMP = re.compile(r"_(\d{8}_\d{6})(?:_(\d+))?$")  # <kernel>_<YYYYMMDD>_<HHMMSS>[_k]
DEFAULT_KEEP = 5
KEEP_ENV = "PYPTO_KEEP_BUILDS"
BUILDING, REMOVING = ".building-", ".removing-"  # hidden leftovers of a build or a removal cut short
# output directory -> the CompiledProgram written there, while one is alive: in use even where
# the file system has no locks
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
    found = [d for d in root.iterdir() if not d.name.startswith(".") and d.is_dir() and not d.is_symlink()
             and (d / BUILD_MARK).is_file()]
    return sorted(found, key=lambda d: (d.stat().st_mtime, d.name))


def leftovers(root: Path) -> list[Path]:
    """Hidden directories of builds or removals cut short (their process ended) under ``root``."""
    if not root.is_dir():
        return []
    return [d for d in root.iterdir() if d.name.startswith(".") and (BUILDING in d.name or REMOVING in d.name)
            and d.is_dir() and not d.is_symlink()]


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


def fresh_dir(path: Path) -> Path:
    """A new directory ``path``, or ``path_1``, ``path_2``, ...: the first this call creates.
    ``mkdir`` either creates or fails, so concurrent callers never get one between them."""
    path.parent.mkdir(parents=True, exist_ok=True)
    k = 0
    while True:
        candidate = path if k == 0 else path.with_name(f"{path.name}_{k}")
        try:
            candidate.mkdir()
            return candidate
        except FileExistsError:
            k += 1


class Lease:
    """A shared lock on a build's lease file, held while this object lives."""

    def __init__(self, directory: Path):
        self.fd = os.open(directory / LEASE, os.O_RDONLY | os.O_CREAT | os.O_CLOEXEC, 0o644)
        # closed, never unlocked: a forked child shares the lock, and its LOCK_UN would drop ours
        weakref.finalize(self, os.close, self.fd)
        if fcntl is not None:
            with contextlib.suppress(OSError):  # a file system without locks: this process's _live only
                fcntl.flock(self.fd, fcntl.LOCK_SH)  # waits while a removal holds it

    def guards(self, directory: Path) -> bool:
        """Whether the lease is still the one of the build at ``directory`` (not a removed one's)."""
        try:
            return os.path.samestat(os.fstat(self.fd), os.stat(directory / LEASE))
        except OSError:
            return False


def hold(path: Path, compiled, lease: Lease | None = None) -> Lease | None:
    """``compiled`` uses the build at ``path`` (under ``lease``, or one taken now): no removal
    takes it while it lives. The lease to keep with it — None where none can be taken (a
    build in a directory not ours to write). A build removed meanwhile: ``FileNotFoundError``."""
    _live[str(path)] = compiled
    if lease is not None:
        return lease
    try:
        lease = Lease(path)
    except FileNotFoundError:
        raise
    except OSError:
        return None
    if not lease.guards(path):
        raise FileNotFoundError(errno.ENOENT, "the build was removed", str(path))
    return lease


@contextlib.contextmanager
def _claimed(d: Path):
    """Whether ``d``'s lease was taken exclusively (no live program of any process holds the
    build), holding it inside the block."""
    if str(d) in _live:
        yield False
        return
    fd = os.open(d / LEASE, os.O_RDONLY | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        if fcntl is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                yield False
                return
            except OSError:  # no locks on this file system: this process's holders were looked at
                pass
        # (not removed, its name taken by another build, while we opened it)
        yield os.path.samestat(os.fstat(fd), os.stat(d / LEASE))
    finally:
        os.close(fd)


def in_use(d: Path) -> bool:
    """Whether a live program (of any process) holds the build ``d`` (which this only reads)."""
    if str(d) not in _live and not (d / LEASE).exists():  # every holder makes it before it locks it
        return False
    with _claimed(d) as free:
        return not free


def remove(d: Path) -> bool:
    """Remove the build ``d`` unless a live program (of any process) holds it: whether it went.
    It is renamed out of sight first, so no reader finds it half deleted."""
    with _claimed(d) as free:
        if not free:
            return False
        gone = d.with_name(f".{d.name}{REMOVING}{uuid.uuid4().hex[:8]}")
        os.rename(d, gone)
        shutil.rmtree(gone, ignore_errors=True)
    return True


def prune(new: Path, keep: int) -> list[Path]:
    """Remove the builds of ``new``'s kernel beside it, but the newest ``keep`` (``new`` among
    them) and those in use. Only directories named as default builds of that kernel go,
    oldest first by the time in their name; one that cannot go is skipped. What went."""
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
        if d == new:
            continue
        try:
            if remove(d):
                gone.append(d)
        except OSError:  # another process removed it first, say
            continue
    if gone:
        logger.debug(f"[build] removed {len(gone)} older build(s) of {kernel} under {new.parent} (keeping the "
                     f"newest {keep}: RunConfig(keep_builds=N) or ${KEEP_ENV}; 0 keeps all)")
    return gone
