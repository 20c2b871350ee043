"""Programs and functions from DSL text, read with ``ast`` and never run: a pass dump (one
``@pl.program`` class) and the reference's ``pl.parse`` / ``pl.loads`` family (one
``@pl.function``, or one program; ``import pypto.language as pl`` is implied). Also the
IR's bytes (``pypto.ir.serialize`` / ``deserialize``): its text, which reads back as it was.
"""

from __future__ import annotations

import ast
import contextlib
from pathlib import Path

import attrs

from pypto.backend import DEFAULT
from pypto.errors import ParseError, PyptoError, Span, UnsupportedSyntaxError
from pypto.ir import nodes as n
from pypto.ir.collector import collector_paused
from pypto.lang.vocabulary import names as N
from pypto.lang.statements.calls import ProgramHooks
from pypto.lang.converter import FunctionConverter
from pypto.lang.expressions.exprs import Source
from pypto.lang.program import GenericProgram
from pypto.lang.program_builder import ProgramBuilder, function_options


class InvalidSyntax(ParseError, SyntaxError):
    """Text Python cannot parse (a ``SyntaxError`` too, as the reference raises)."""


class NotOneDefinition(ParseError, ValueError):
    """Text without the one function (or program) it should hold (a ``ValueError`` too)."""


def parse_text(text: str, filename: str, soc=DEFAULT) -> n.Program:
    """A program from DSL text (a pass dump): imports and one ``@pl.program`` class."""
    with collector_paused():
        source, module = _read(text, filename)
        others = [s for s in module.body if not isinstance(s, (ast.ClassDef, ast.Import, ast.ImportFrom))
                  and not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
        if others:
            raise UnsupportedSyntaxError("a program text holds imports and one @pl.program class",
                                         span=source.span(others[0]))
        return _program(source, module, soc)


def parse(text: str, filename: str = "<string>", soc=DEFAULT):
    """``pl.parse(code)``: the one ``@pl.function`` the text defines, as a Function (or its
    one ``@pl.program`` class, as a Program)."""
    with collector_paused(), _shallow(filename):
        source, module = _read(text, filename, exact=False)
        functions = [s for s in module.body if isinstance(s, ast.FunctionDef)]
        classes = [s for s in module.body if isinstance(s, ast.ClassDef)]
        if classes and not functions:
            return _program(source, module, soc)
        if len(functions) != 1 or classes:
            found = f"{len(functions)} functions" + (f" and {len(classes)} classes" if classes else "")
            raise NotOneDefinition(f"expected one @pl.function, found {found}",
                                   span=source.span(functions[1]) if len(functions) > 1 else None,
                                   hint="pass the text of one function (pl.parse_program reads a @pl.program)")
        fdef = functions[0]
        kind, auto, dual = function_options(source, fdef, soc)
        fn = FunctionConverter(source, fdef, name=fdef.name, kind=kind, hooks=_NoCalls(soc), auto_scope=auto).convert()
        return attrs.evolve(fn, dual_aiv=True) if dual else fn


def parse_program(text: str, filename: str = "<string>", soc=DEFAULT) -> n.Program:
    """``pl.parse_program(code)``: the text's one ``@pl.program`` class."""
    with collector_paused(), _shallow(filename):
        source, module = _read(text, filename, exact=False)
        return _program(source, module, soc)


def loads(path, soc=DEFAULT):
    """``pl.loads(path)``: ``parse`` of a file's text."""
    path = Path(path)
    return parse(_file(path), str(path), soc)


def loads_program(path, soc=DEFAULT) -> n.Program:
    """``pl.loads_program(path)``: ``parse_program`` of a file's text."""
    path = Path(path)
    return parse_program(_file(path), str(path), soc)


# ----------------------------------------------------------------------------- the IR's bytes

_MAGIC = b"pypto-ir 1 "


def serialize(node) -> bytes:
    """A Program's or a Function's bytes: a header and its DSL text (read with ``ast``, never
    run, by ``deserialize``)."""
    if isinstance(node, GenericProgram):
        node.functions  # noqa: B018  (the error that says how to get a Program of it)
    if isinstance(node, n.Function):
        called = sorted({s.value.callee for s in n.walk_stmts(node.body) if isinstance(getattr(s, "value", None),
                                                                                    n.FuncCall)})
        if called:
            raise PyptoError(f"function '{node.name}' calls {', '.join(called)}: on its own it does not read back",
                             hint="serialize the Program that holds them")
        return _MAGIC + b"function\n" + n.Program(node.name, (node,)).as_python().encode()
    if isinstance(node, n.Program):
        return _MAGIC + b"program\n" + node.as_python().encode()
    raise TypeError(f"serialize takes a Program or a Function, got {type(node).__name__}")


def deserialize(data: bytes):
    """What ``serialize`` wrote: the Program, or the Function."""
    if not isinstance(data, (bytes, bytearray)) or not data.startswith(_MAGIC) or b"\n" not in data:
        raise ParseError("these bytes are not pypto IR (pypto.ir.serialize writes them)")
    header, text = bytes(data).split(b"\n", 1)
    kind = header[len(_MAGIC):]
    if kind not in (b"function", b"program"):
        raise ParseError(f"unknown kind of pypto IR: {kind.decode(errors='replace')!r}")
    try:
        decoded = text.decode()
    except UnicodeDecodeError:
        raise ParseError("these bytes are not pypto IR: its text is UTF-8") from None
    program = parse_text(decoded, "<serialized>")
    return program.functions[0] if kind == b"function" else program


# ----------------------------------------------------------------------------- reading


class _NoCalls(ProgramHooks):
    """A function read on its own calls no other (no program holds one)."""


def _read(text: str, filename: str, exact: bool = True) -> tuple[Source, ast.Module]:
    """``exact``: text a pass printed, read as printed (its writes were checked when its
    program was); else source a user wrote, checked as a kernel's source is."""
    try:
        module = ast.parse(text, filename=filename)
    except SyntaxError as exc:
        span = Span(filename, exc.lineno or 1, exc.offset or 1, text=exc.text.rstrip("\n") if exc.text else None)
        raise InvalidSyntax(f"invalid syntax: {exc.msg}", span=span) from None
    deep = _too_deep(module)
    if deep is not None:
        raise ParseError(f"{filename}: an expression is nested too deeply to read (over {MAX_NESTING} levels)",
                         span=Span(filename, deep.lineno, deep.col_offset + 1), hint="split it into named parts")
    aliases = [a.asname or a.name for s in module.body if isinstance(s, ast.Import) for a in s.names
               if a.name == "pypto.language"]
    source = Source(filename, tuple(text.splitlines()), exact=exact,
                    resolver=N.Resolver(aliases[0] if len(aliases) == 1 else "pl"))
    return source, module


def _program(source: Source, module: ast.Module, soc) -> n.Program:
    classes = [s for s in module.body if isinstance(s, ast.ClassDef)]
    if len(classes) != 1:
        raise NotOneDefinition(f"expected one @pl.program class, found {len(classes)}",
                               span=source.span(classes[1]) if len(classes) > 1 else None)
    cls = classes[0]
    resolver = source.resolver
    decorated = [d for d in cls.decorator_list
                 if isinstance(d, ast.Attribute) and isinstance(d.value, ast.Name)
                 and resolver.resolve(d.value.id) == N.Path(()) and d.attr == "program"]
    if len(cls.decorator_list) != 1 or not decorated:
        raise ParseError(f"class '{cls.name}' is not a program: a program text's class is decorated with "
                         "@pl.program (and nothing else)", span=source.span(cls),
                         hint=f"put @pl.program on the line above 'class {cls.name}:'")
    return ProgramBuilder(source, cls, soc).build()


def _file(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ParseError(f"cannot read {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise ParseError(f"cannot read {path}: it is not UTF-8 text (byte {exc.start})") from None


# Deeper expressions are refused before conversion: the converter recurses per level, and
# where Python's recursion limit would stop it depends on the process (IPython raises it),
# so a text reads or is refused the same everywhere. No printed program comes near.
MAX_NESTING = 100


def _too_deep(module: ast.Module):
    """The first expression node nested over MAX_NESTING expressions deep, or None
    (walked with a stack of our own: the tree may be deeper than Python's recursion goes)."""
    stack = [(module, 0)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, ast.expr):
            depth += 1
            if depth > MAX_NESTING:
                return node
        stack.extend((child, depth) for child in ast.iter_child_nodes(node))
    return None


@contextlib.contextmanager
def _shallow(filename: str):
    """An expression nested deeper than the converter's recursion goes is refused, not a
    Python RecursionError."""
    try:
        yield
    except RecursionError:
        raise ParseError(f"{filename}: an expression is nested too deeply to read",
                         hint="split it into named parts") from None
