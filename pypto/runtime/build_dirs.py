"""Where a build goes, how it gets there whole, and which builds may go.

    $PYPTO_PROG_BUILD_DIR (or ./build_output) / <kernel>_<YYYYMMDD_HHMMSS>[_k]    a default build
    RunConfig(output_dir=D)                                                     a named one

A build is written into a fresh hidden directory beside its place (``.<name>.building-*``,
``Staged``) and then moved there in one rename, so no reader, run or other build ever sees
one half written, whatever threads or processes build at once:
- a default build takes the first free name: ``mkdir`` reserves it, and the build is renamed
  onto that empty directory (a rename replaces an empty directory, never a full one);
- a named one replaces the build there — the newest complete build wins. A rename cannot
  replace a directory that has files, so the two are exchanged (``renameat2`` with
  ``RENAME_EXCHANGE``; without it the old one is first moved aside, leaving a moment with
  none), after what is not a build's own (your files, earlier runs' ``sim/`` and
  ``dfx_outputs/``) has been moved into the new one. Builds into one directory take its
  parent's lock exclusively, one at a time; a run writing into a build (its L0 trace, its
  dfx outputs) takes it shared, so no exchange happens under it.

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
import ctypes
import errno
import fnmatch
import os
import re
import shutil
import tempfile
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
# A build's own files: an older build's are not carried into a newer one at the same place
OWN = ("passes_dump", "kernels/aic/*.pto", "kernels/aiv/*.pto", "report/perf_hints.log",
       "report/pipeline_profile.txt", "report/pipeline_profile.json", BUILD_MARK, "program.pypto", LEASE)

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


@contextlib.contextmanager
def locked(directory: Path, *, exclusive: bool):
    """``directory``'s lock, held across processes: exclusive while a build is put into it,
    shared while a run writes into a build in it."""
    fd = None
    if fcntl is not None:
        try:
            fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        except OSError:  # (a directory we cannot open or lock: unlocked)
            if fd is not None:
                os.close(fd)
            fd = None
    try:
        yield
    finally:
        if fd is not None:
            os.close(fd)


def writing_into(build: Path):
    """Held while a run writes into ``build``: no newer build replaces it meanwhile."""
    return locked(build.parent, exclusive=False)


class Staged:
    """A build being written: a fresh hidden directory beside ``place``, leased from the start
    (so pruning never takes it, in the making or once in place). As a context manager it is
    removed if the writing fails."""

    def __init__(self, place: Path):
        place.parent.mkdir(parents=True, exist_ok=True)
        self.place = place
        self.path = Path(tempfile.mkdtemp(prefix=f".{place.name}{BUILDING}", dir=place.parent))
        self.lease = Lease(self.path)

    def __enter__(self) -> Staged:
        return self

    def __exit__(self, kind, value, tb) -> None:
        if kind is not None:
            shutil.rmtree(self.path, ignore_errors=True)

    def publish(self, *, replace: bool) -> Path:
        """Move the build into place: the first free name of ``place`` (``place_1``, ...), or
        ``place`` itself, replacing the build there (``replace``). Where it went."""
        if not replace:
            while True:
                reserved = fresh_dir(self.place)
                try:
                    os.rename(self.path, reserved)
                    return reserved
                except OSError as exc:  # something was put into the reserved directory: another name
                    if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST):
                        raise
        target = self.place
        with locked(target.parent, exclusive=True):
            try:
                os.rename(self.path, target)  # nothing there (or an empty directory)
                return target
            except OSError as exc:
                if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST):
                    raise
            old = _replace(target, self.path)
        shutil.rmtree(old, ignore_errors=True)
        return target


def _replace(target: Path, new: Path) -> Path:
    """Put the build ``new`` at ``target`` (a directory with files), with what of the old one is
    not a build's own moved into it: where the old one now is, to be removed."""
    carried: list[tuple[str, str]] = []
    try:
        _carry(target, new, "", carried)
        if _exchange(new, target):
            return new
        aside = target.with_name(f".{target.name}{REMOVING}{uuid.uuid4().hex[:8]}")
        os.rename(target, aside)
        try:
            os.rename(new, target)
        except OSError:
            os.rename(aside, target)
            raise
        return aside
    except OSError:
        for source, moved in reversed(carried):  # the old directory as it was
            with contextlib.suppress(OSError):
                os.rename(moved, source)
        raise


def _carry(old: Path, new: Path, prefix: str, carried: list) -> None:
    """What of ``old`` is not a build's own (``OWN``), moved to the same place in ``new``."""
    for entry in os.scandir(old):
        relative = prefix + entry.name
        if any(fnmatch.fnmatchcase(relative, pattern) for pattern in OWN):
            continue
        there = new / entry.name
        if entry.is_dir(follow_symlinks=False) and there.is_dir() and not there.is_symlink():
            _carry(Path(entry.path), there, relative + "/", carried)
        elif not os.path.lexists(there):
            os.rename(entry.path, there)
            carried.append((entry.path, str(there)))


_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def _exchange(a: Path, b: Path) -> bool:
    """Swap two directories in one step, where the kernel can (Linux ``renameat2``): whether it did."""
    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (AttributeError, OSError, TypeError):
        return False
    if renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):  # not on this kernel or file system
        return False
    raise OSError(code, os.strerror(code), str(b))
