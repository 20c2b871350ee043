"""The user-facing error hierarchy and the source spans that let every error name the
user's own file:line:col.

Every mistake a kernel author can make ends in a ``PyptoError`` subclass; internal
``KeyError``/``AssertionError`` never escape the compiler's public entry points.
"""

from __future__ import annotations

import linecache

import attrs


@attrs.frozen
class Span:
    """A region of user source: 1-based line, 1-based column (as editors count)."""

    file: str
    line: int
    col: int
    end_line: int = attrs.field(default=0)
    end_col: int = attrs.field(default=0)
    # Text of the first line, captured where the source is in hand (dumps parsed from a
    # string have no file for linecache to read).
    text: str | None = attrs.field(default=None, eq=False, repr=False)

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"

    def source_line(self) -> str | None:
        if self.text is not None:
            return self.text
        line = linecache.getline(self.file, self.line)
        return line.rstrip("\n") if line else None


class PyptoError(Exception):
    """Base of every error the compiler reports about the user's program or input."""

    kind = "error"

    def __init__(self, message: str, span: Span | None = None, hint: str | None = None,
                 notes: tuple[str, ...] = ()):
        super().__init__(message)
        self.message = message
        self.span = span
        self.hint = hint
        self.notes = tuple(notes)  # where the located code was reached from (an inlined call, say)

    def with_span(self, span: Span | None) -> PyptoError:
        """The same error located at ``span`` unless it already names a place."""
        if self.span is not None or span is None:
            return self
        clone = type(self).__new__(type(self))
        clone.__dict__.update(self.__dict__)
        Exception.__init__(clone, self.message)
        clone.span = span
        return clone.with_traceback(self.__traceback__)  # (PYPTO_TRACEBACK=full shows where it was raised)

    def with_note(self, note: str) -> PyptoError:
        """The same error with one more line of context."""
        clone = type(self).__new__(type(self))
        clone.__dict__.update(self.__dict__)
        Exception.__init__(clone, self.message)
        clone.notes = (*getattr(self, "notes", ()), note)
        return clone.with_traceback(self.__traceback__)

    def __str__(self) -> str:
        return format_message(self.message, self.span, self.hint, getattr(self, "notes", ()))


def format_message(message: str, span: Span | None, hint: str | None, notes=()) -> str:
    parts = [message]
    if span is not None:
        parts.append(f"  --> {span}")
        text = span.source_line()
        if text is not None:
            gutter = " " * len(str(span.line))
            width = 1
            if span.end_line == span.line and span.end_col > span.col:
                width = span.end_col - span.col
            parts.append(f"{gutter} |")
            parts.append(f"{span.line} | {text}")
            parts.append(f"{gutter} | {' ' * (span.col - 1)}{'^' * width}")
    parts.extend(f"  note: {note}" for note in notes)
    if hint:
        parts.append(f"  help: {hint}")
    return "\n".join(parts)


class ParseError(PyptoError):
    """Source (user DSL or a pass dump) that the front end cannot read."""


class UnsupportedSyntaxError(ParseError):
    """A Python construct the kernel language does not have."""


class TypeCheckError(PyptoError):
    """Operand types, shapes, dtypes or memory spaces that do not fit an op."""


class MemorySpaceError(TypeCheckError):
    """A tile placed in, or moved to, a memory space the hardware does not allow."""


class OutOfBoundsError(TypeCheckError):
    """A load/store region that statically falls outside its tensor."""


class SpecializationError(PyptoError):
    """Call arguments that do not match a kernel's signature."""


class ConfigError(PyptoError, ValueError):
    """A RunConfig value the runtime does not know."""


class InternalError(PyptoError):
    """A fault of the compiler's, not of the program (the reference's ``pypto.InternalError``)."""


class VerificationError(InternalError):
    """An IR invariant broken between passes: always a compiler bug, reported with the node."""


class PartialCodegenError(PyptoError):
    """Code generation that cannot finish the program (the reference's, raised when some
    kernels generate and others do not; here, each reason it has)."""


class CodegenError(PartialCodegenError):
    """A program the modeled assembler cannot lower (under memory_planner="PTOAS", found
    by the pass pipeline, so every platform refuses it alike)."""


class UnwrittenOutputError(TypeCheckError, PartialCodegenError):
    """An Out parameter the body rebinds and nothing writes (``out = pl.add(a, b)``): the
    reference finds it in code generation, here the front end names the line."""


class ExecutionError(PyptoError):
    """A program that fails while running (a dynamic index out of range, say)."""
