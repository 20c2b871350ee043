"""Where the user called us: the first frame outside the runtime, the span of the call it
is running (``co_positions``: the whole call expression, over several lines if written so),
and the span of one argument inside it. Errors at a kernel call, a ``compile()``, a
``CompiledProgram.run()`` or a ``RunConfig(...)`` are reported there."""

from __future__ import annotations

import ast
import dataclasses
import functools
import linecache
import sys
from pathlib import Path

from pypto.errors import PyptoError, Span, SpecializationError
from pypto.console import boundary, filtered

_RUNTIME = str(Path(__file__).resolve().parent)
_REPLACE = dataclasses.replace.__code__.co_filename  # dataclasses.replace(config, ...) builds a RunConfig
_BOUNDARY = boundary.__code__.co_filename  # the entry points' wrapper (pypto.console)


def _ours(filename: str) -> bool:
    # attrs writes each class's __init__ as generated code named "<attrs generated ...>".
    return filename.startswith("<attrs generated") or filename in (_REPLACE, _BOUNDARY) \
        or str(Path(filename).resolve().parent) == _RUNTIME


def user_frame():
    """The innermost frame that is not the runtime's own: the user's call."""
    frame = sys._getframe(1)
    while frame is not None and _ours(frame.f_code.co_filename):
        frame = frame.f_back
    return frame


def _position(frame):
    """(line, end line, col, end col) of the instruction ``frame`` runs, 1-based columns."""
    try:
        positions = list(frame.f_code.co_positions())
        line, end_line, col, end_col = positions[frame.f_lasti // 2]
    except (AttributeError, IndexError, ValueError):
        return None
    if None in (line, end_line, col, end_col):
        return None
    return line, end_line, col + 1, end_col + 1


def _call_node(frame, pos):
    """The ``ast.Call`` written at ``pos`` in ``frame``'s file, or None."""
    line, end_line, col, end_col = pos
    lines = [linecache.getline(frame.f_code.co_filename, k) for k in range(line, end_line + 1)]
    if not all(lines):
        return None
    lines[-1] = lines[-1][:end_col - 1]
    lines[0] = lines[0][col - 1:]
    try:
        node = ast.parse("(" + "".join(lines) + ")", mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    return node if isinstance(node, ast.Call) else None


def _span(frame, line, col, end_line, end_col) -> Span:
    text = linecache.getline(frame.f_code.co_filename, line).rstrip("\n")
    return Span(frame.f_code.co_filename, line, col, end_line, end_col, text or None)


def call_span(frame=None, argument: int | str | None = None) -> Span | None:
    """The span of the call ``frame`` is running (default: the user's), or of one of its
    arguments — by position, or by keyword name — when it can be told apart."""
    frame = frame or user_frame()
    if frame is None:
        return None
    pos = _position(frame)
    if pos is None:
        text = linecache.getline(frame.f_code.co_filename, frame.f_lineno).rstrip("\n")
        return Span(frame.f_code.co_filename, frame.f_lineno, 1, frame.f_lineno, 1, text or None)
    line, end_line, col, end_col = pos
    node = _call_node(frame, pos) if argument is not None else None
    target = None
    if node is not None:
        if isinstance(argument, str):
            target = next((k for k in node.keywords if k.arg == argument), None)
        elif isinstance(argument, int) and not any(isinstance(a, ast.Starred) for a in node.args[:argument + 1]):
            target = node.args[argument] if argument < len(node.args) else None
    if target is None:
        return _span(frame, line, col, end_line, end_col)

    def shift(lineno, offset):  # the parsed text starts at (line, col) after one "("
        return line + lineno - 1, (col + offset - 1 if lineno == 1 else offset + 1)

    start = shift(target.lineno, target.col_offset)
    end = shift(target.end_lineno, target.end_col_offset)
    return _span(frame, start[0], start[1], end[0], end[1])


def located(fn):
    """``fn`` with every PyptoError it raises located at the user's call (see ``at_call``)."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        __tracebackhide__ = True  # (pytest and IPython leave this frame out too)
        try:
            return fn(*args, **kwargs)
        except PyptoError as err:
            raise filtered(at_call(err)) from err.__cause__  # pypto's frames left out: PYPTO_TRACEBACK=full shows them

    return wrapper


def at_call(err: PyptoError) -> PyptoError:
    """``err`` located at the user's call; an argument mismatch located at the kernel's
    own signature (a declared shape, say) keeps that place and names the call in a note."""
    if getattr(err, "call_located", False):
        return err
    span = call_span()
    out = err
    if err.span is None:
        out = err.with_span(span)
    elif isinstance(err, SpecializationError) and span is not None and (span.file, span.line) != (
            err.span.file, err.span.line):
        out = err.with_note(f"in the call at {span}")
    out.call_located = True
    return out
