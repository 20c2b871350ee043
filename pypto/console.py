"""What a user reads on the console: a pypto error's traceback cut to their own frames, and
a command's ``--help`` summary.

A pypto error's traceback as its user reads it: their own frames, not the compiler's.
The error's message already names the kernel's file:line:col and ends with its ``help:``
line; the 18-82 frames of ``pypto/...`` above it said nothing to someone writing a
kernel. ``$PYPTO_TRACEBACK=full`` keeps every frame (for a bug report on pypto itself).

Filtered at the public entry points (``located`` calls, ``RunConfig(...)``): the frames
inside this package go, and so do the library frames it called (torch, the standard
library); a user's function pypto calls back keeps its frames."""

from __future__ import annotations

import os
import sysconfig
import types
from pathlib import Path

_PACKAGE = str(Path(__file__).resolve().parent) + os.sep
_LIBRARIES = tuple({str(Path(p).resolve()) + os.sep for key in ("stdlib", "platstdlib", "purelib", "platlib")
                    if (p := sysconfig.get_paths().get(key))})

FULL = "full"


def _ours(filename: str) -> bool:
    return filename.startswith(_PACKAGE) or filename.startswith("<attrs generated")


def _library(filename: str) -> bool:
    return filename.startswith("<") or filename.startswith(_LIBRARIES)


def user_frames(tb: types.TracebackType | None) -> types.TracebackType | None:
    """``tb`` without pypto's frames and the library frames under them (None when no frame
    is left: the frames above, the user's, are added as the error leaves the entry point)."""
    kept, inside = [], False
    entry = tb
    while entry is not None:
        name = os.path.abspath(entry.tb_frame.f_code.co_filename)
        if _ours(name):
            inside = True
        elif not (inside and _library(name)):
            kept.append(entry)
            inside = False
        entry = entry.tb_next
    head = None
    for entry in reversed(kept):
        head = types.TracebackType(head, entry.tb_frame, entry.tb_lasti, entry.tb_lineno)
    return head


def filtered(err: BaseException, mode: str | None = None) -> BaseException:
    """``err`` with its traceback (and its cause's) cut to the user's frames, unless
    ``mode`` (default: ``$PYPTO_TRACEBACK``) is ``"full"``. A fault of the compiler's own
    (``InternalError``) keeps every frame: they are what its bug report needs."""
    from pypto.errors import InternalError

    mode = os.environ.get("PYPTO_TRACEBACK", "") if mode is None else mode
    if mode.strip().lower() == FULL or isinstance(err, InternalError):
        return err
    seen = set()
    current = err
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        current.__traceback__ = user_frames(current.__traceback__)
        current = current.__cause__
    return err


def boundary(fn):
    """``fn``, a public entry point: a pypto error it raises leaves with the user's frames."""
    import functools

    from pypto.errors import PyptoError

    @functools.wraps(fn)
    def entry(*args, **kwargs):
        __tracebackhide__ = True  # (pytest and IPython leave this frame out too)
        try:
            return fn(*args, **kwargs)
        except PyptoError as err:
            raise filtered(err) from err.__cause__  # pypto's frames left out: PYPTO_TRACEBACK=full shows them

    return entry


def description(doc: str) -> str:
    """A module docstring's first paragraph as one line: a command's ``--help`` summary
    (its first line alone stops mid-sentence wherever the sentence wraps)."""
    first = (doc or "").strip().split("\n\n")[0]
    return " ".join(line.strip() for line in first.splitlines())
