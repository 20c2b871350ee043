"""How a build gets into place whole: it is written into a fresh hidden directory beside
its place (``.<name>.building-*``, ``Staged``) and moved there in one rename, so no reader,
run or other build ever sees one half written, whatever threads or processes build at once:
- a default build takes the first free name: ``mkdir`` reserves it, and the build is renamed
  onto that empty directory (a rename replaces an empty directory, never a full one);
- a named one replaces the build there — the newest complete build wins. A rename cannot
  replace a directory that has files, so the two are exchanged (``renameat2`` with
  ``RENAME_EXCHANGE``; without it the old one is first moved aside, leaving a moment with
  none), after what is not a build's own (your files, earlier runs' ``sim/`` and
  ``dfx_outputs/``) has been moved into the new one. Builds into one directory take its
  parent's lock exclusively, one at a time; a run writing into a build (its L0 trace, its
  dfx outputs) takes it shared, so no exchange happens under it.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fnmatch
import os
import shutil
import tempfile
import uuid
from pathlib import Path

try:
    import fcntl
except ImportError:  # (no flock here: builds into one directory are not kept one at a time)
    fcntl = None

from pypto.log import logger
from pypto.runtime.build_dirs import BUILD_MARK, BUILDING, LEASE, REMOVING, Lease, fresh_dir

# A build's own files: an older build's are not carried into a newer one at the same place
OWN = ("passes_dump", "kernels/aic/*.pto", "kernels/aiv/*.pto", "report/perf_hints.log",
       "report/pipeline_profile.txt", "report/pipeline_profile.json", BUILD_MARK, "program.pypto", LEASE,
       "kernel_config.py")


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
        try:
            self.lease = Lease(self.path)
        except OSError as exc:  # (out of file descriptors, say: held in this process only, by _live)
            logger.debug(f"[build] no lease on {place}: {exc.strerror or exc}; other processes may prune it")
            self.lease = None

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
    for entry in list(os.scandir(old)):  # (listed first: entries leave it as it is walked)
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
