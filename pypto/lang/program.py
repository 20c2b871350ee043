"""Programs from source: the ``@pl.program`` class form and pass-dump text.

A program is a class of ``@pl.function`` methods; functions call each other as
``self.f(...)``. Bodies convert on demand, so a caller can be converted before the callee
it needs the signature of. ``parse_text`` is what ``pypto.lang.parse`` runs on a dump.
"""

from __future__ import annotations

import ast
import inspect

import attrs
import linecache
import textwrap
from pathlib import Path

from pypto.errors import (
    ExecutionError,
    ParseError,
    TypeCheckError,
    UnsupportedSyntaxError,
)
from pypto.backend import DEFAULT
from pypto.ir import nodes as n
from pypto.ir.collector import collector_paused
from pypto.ir.types import FunctionType, ScalarType, type_name
from pypto.lang import names as N
from pypto.lang.calls import Callee, ProgramHooks
from pypto.lang.converter import FunctionConverter
from pypto.lang.exprs import Source


class ProgramBuilder(ProgramHooks):
    """Converts the methods of one program class, each once, callees on demand."""

    def __init__(self, source: Source, cls: ast.ClassDef, soc):
        super().__init__(soc)
        self.source = source
        self.cls = cls
        self.defs: dict[str, ast.FunctionDef] = {}
        for stmt in cls.body:
            if isinstance(stmt, ast.FunctionDef):
                if stmt.name in self.defs:
                    raise ParseError(f"function '{stmt.name}' is defined twice in program '{cls.name}'",
                                     span=source.span(stmt))
                self.defs[stmt.name] = stmt
            elif not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)) and not isinstance(stmt, ast.Pass):
                raise UnsupportedSyntaxError("a @pl.program class holds only @pl.function methods",
                                             span=source.span(stmt))
        self.done: dict[str, n.Function] = {}
        self.active: list[str] = []

    def build(self) -> n.Program:
        for name in self.defs:
            self.function(name, None)
        return n.Program(self.cls.name, tuple(self.done[name] for name in self.defs))

    def function(self, name: str, node) -> n.Function:
        if name in self.done:
            return self.done[name]
        if name in self.active:
            raise UnsupportedSyntaxError(f"function '{name}' calls itself (recursion is not supported)",
                                         span=self.source.span(node))
        fdef = self.defs[name]
        self.active.append(name)
        try:
            kind, auto, dual = function_options(self.source, fdef, self.soc)
            conv = FunctionConverter(self.source, fdef, name=name, kind=kind, hooks=self, has_self=True,
                                     auto_scope=auto)
            fn = conv.convert()
            if dual:
                fn = attrs.evolve(fn, dual_aiv=True)
        finally:
            self.active.pop()
        self.done[name] = fn
        return fn

    def call_method(self, name, arg_types, node, conv) -> Callee:
        if name not in self.defs:
            raise conv.error(ParseError, node, f"'self.{name}' is not a function of program '{self.cls.name}'")
        fn = self.function(name, node)
        check_call_types(conv, node, fn, arg_types)
        return Callee.of(fn)


def check_call_types(conv, node, fn: n.Function, arg_types, display: str | None = None) -> None:
    """Each argument has its parameter's type, or an integer scalar the call converts to the
    parameter's integer dtype (a loop index passed for a pl.Scalar[pl.INT64])."""
    name = display or fn.name
    if len(arg_types) != len(fn.params):
        raise conv.error(TypeCheckError, node, f"'{name}' takes {len(fn.params)} arguments, got {len(arg_types)}")
    args = getattr(node, "args", None) or []
    for k, (p, t) in enumerate(zip(fn.params, arg_types)):
        if p.type == t or widens(t, p.type):
            continue
        where = args[k] if k < len(args) else node
        raise conv.error(TypeCheckError, where, f"argument '{p.name}' of '{name}' is {type_name(p.type)}, got {type_name(t)}",
                         hint=f"pass a value of type {type_name(p.type)}")


def widens(given, declared) -> bool:
    """An integer scalar converts to any integer parameter dtype, as Python ints do."""
    return isinstance(given, ScalarType) and isinstance(declared, ScalarType) \
        and given.dtype.is_int and declared.dtype.is_int


def function_type(source: Source, fdef: ast.FunctionDef, soc) -> FunctionType:
    """The type a ``@pl.function(type=...)`` decorator names (Opaque when bare)."""
    return function_options(source, fdef, soc)[0]


def function_options(source: Source, fdef: ast.FunctionDef, soc) -> tuple[FunctionType, bool, bool]:
    """(the type a ``@pl.function(type=..., auto_scope=..., attrs=...)`` decorator names —
    Opaque when bare —, its auto_scope, whether both vector cores run it)."""
    # (a converter only to read the decorator's constants: InCore, so it does not walk the body to
    # tell whether an Opaque function orchestrates)
    conv = FunctionConverter(source, fdef, name=fdef.name, kind=FunctionType.InCore, hooks=ProgramHooks(soc))
    for deco in fdef.decorator_list:
        target = deco.func if isinstance(deco, ast.Call) else deco
        ref = conv.resolve_chain(target)
        if not (isinstance(ref, N.Path) and ref.parts == ("function",)):
            raise conv.error(ParseError, deco, "program methods are decorated with @pl.function(type=...)")
        if isinstance(deco, ast.Call):
            kw = {k.arg: k.value for k in deco.keywords}
            if "external_source" in kw:
                raise conv.error(UnsupportedSyntaxError, kw["external_source"],
                                 "external kernels (external_source=) cannot run here: a hand-written AscendC "
                                 "source needs the vendor toolkit, which this implementation does without",
                                 hint=f"write '{fdef.name}' in PyPTO (type=pl.FunctionType.InCore) to run it on "
                                      "ref or a2a3sim")
            if deco.args or set(kw) - {"type", "auto_scope", "attrs"}:
                raise conv.error(UnsupportedSyntaxError, deco, "@pl.function takes only type=, auto_scope= and "
                                 "attrs= here")
            kind = conv.static_of(kw["type"], FunctionType, "the function type") if "type" in kw else \
                FunctionType.Opaque
            auto = conv.static_of(kw["auto_scope"], bool, "auto_scope") if "auto_scope" in kw else True
            dual = _function_attrs(conv, kw["attrs"], kind) if "attrs" in kw else False
            return kind, auto, dual
        return FunctionType.Opaque, True, False
    raise conv.error(ParseError, fdef, f"method '{fdef.name}' needs @pl.function",
                     hint="@pl.function(type=pl.FunctionType.InCore)")


def _function_attrs(conv, node, kind: FunctionType) -> bool:
    """``attrs={"dual_aiv_dispatch": True}``: the one attribute a program function takes here."""
    if not isinstance(node, ast.Dict) or any(not isinstance(k, ast.Constant) for k in node.keys):
        raise conv.error(TypeCheckError, node, "attrs= is a dict literal of attribute names",
                         hint='attrs={"dual_aiv_dispatch": True}')
    dual = False
    for k, v in zip(node.keys, node.values):
        if k.value != "dual_aiv_dispatch":
            raise conv.error(UnsupportedSyntaxError, k, f"unknown function attribute {k.value!r}",
                             hint='the attribute known here is "dual_aiv_dispatch" (an AIV function both vector '
                                  'cores of the cluster run)')
        dual = conv.static_of(v, bool, "dual_aiv_dispatch")
    if dual and kind is not FunctionType.AIV:
        raise conv.error(TypeCheckError, node, f"dual_aiv_dispatch runs an AIV function on both vector cores; this "
                         f"function is {kind.name}", hint="@pl.function(type=pl.FunctionType.AIV, "
                                                           'attrs={"dual_aiv_dispatch": True})')
    return dual


def parse_text(text: str, filename: str, soc) -> n.Program:
    """A program from DSL text (a pass dump), read with ``ast`` and never executed."""
    with collector_paused():
        return _parse_text(text, filename, soc)


def _parse_text(text: str, filename: str, soc) -> n.Program:
    try:
        module = ast.parse(text, filename=filename)
    except SyntaxError as exc:
        from pypto.errors import Span

        span = Span(filename, exc.lineno or 1, exc.offset or 1, text=exc.text.rstrip("\n") if exc.text else None)
        raise ParseError(f"invalid syntax: {exc.msg}", span=span) from None
    aliases = [a.asname or a.name for s in module.body if isinstance(s, ast.Import) for a in s.names
               if a.name == "pypto.language"]
    source = Source(filename, tuple(text.splitlines()), exact=True,
                    resolver=N.Resolver(aliases[0] if len(aliases) == 1 else "pl"))
    classes = [s for s in module.body if isinstance(s, ast.ClassDef)]
    others = [s for s in module.body if not isinstance(s, (ast.ClassDef, ast.Import, ast.ImportFrom))
              and not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    if others:
        raise UnsupportedSyntaxError("a program text holds imports and one @pl.program class",
                                     span=source.span(others[0]))
    if len(classes) != 1:
        raise ParseError(f"expected one @pl.program class, found {len(classes)}",
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


# ----------------------------------------------------------------------------- user source


def source_of(obj) -> tuple[Source, ast.AST]:
    """The ``ast`` of a function or class as written in its file, with spans into that file."""
    from pypto.errors import PyptoError

    try:
        file = inspect.getsourcefile(obj) or inspect.getfile(obj)
        lines, start = inspect.getsourcelines(obj)
    except (OSError, TypeError):
        raise PyptoError(
            f"cannot retrieve the source code of '{getattr(obj, '__qualname__', obj)}': kernels are parsed "
            "from their source, which must be available in a file",
            hint="define the kernel in a .py file (not in an interactive prompt or exec string)",
        ) from None
    text = "".join(lines)
    dedented = textwrap.dedent(text)
    indent = len(text.split("\n", 1)[0]) - len(dedented.split("\n", 1)[0])
    tree = ast.parse(dedented)
    node = tree.body[0]
    all_lines = tuple(line.rstrip("\n") for line in linecache.getlines(file)) or tuple(
        line.rstrip("\n") for line in lines)
    namespace = dict(getattr(obj, "__globals__", None) or vars(inspect.getmodule(obj) or object()))
    closure = getattr(obj, "__closure__", None)
    if closure:
        for name, cell in zip(obj.__code__.co_freevars, closure):
            try:
                namespace[name] = cell.cell_contents
            except ValueError:  # an empty cell: defined later in the enclosing function
                pass
    source = Source(file, all_lines, line_offset=start - 1, col_offset=indent,
                    resolver=N.ModuleResolver(namespace))
    return source, node


class FunctionDecl:
    """What ``@pl.function`` leaves on a method; ``@pl.program`` reads the class source.
    With ``external_source``, the hand-written C++ file behind it, resolved against the
    defining file's directory."""

    def __init__(self, fn, type: FunctionType, external_source=None):
        self.fn = fn
        self.type = type
        self.__name__ = fn.__name__
        self.__doc__ = fn.__doc__
        self.external_source = None
        if external_source is not None:
            path = Path(external_source)
            if not path.is_absolute():
                path = Path(inspect.getsourcefile(fn) or ".").resolve().parent / path
            self.external_source = path
            source, node = source_of(fn)
            if not (len(node.body) == 1 and isinstance(node.body[0], ast.Expr)
                    and isinstance(node.body[0].value, ast.Constant) and node.body[0].value.value is Ellipsis):
                raise ParseError(f"'{fn.__name__}' is backed by {external_source}: its body is a bare '...' "
                                 "(signature only)", span=source.span(node.body[0]),
                                 hint="replace the body with ...")

    def __call__(self, *args, **kwargs):
        source, node = source_of(self.fn)
        if self.external_source is not None:
            raise ExecutionError(
                f"'{self.__name__}' is an external kernel ({self.external_source}): hand-written AscendC sources "
                "cannot be compiled or simulated here, which has no vendor toolkit", span=source.span(node),
                hint="write the kernel in PyPTO (an InCore function) to run it on ref or a2a3sim")
        raise ExecutionError(f"'{self.__name__}' is a @pl.function: it runs as a method of a @pl.program class, "
                             "not on its own", span=source.span(node),
                             hint="call it from the program's orchestration function, or use @pl.jit for a "
                                  "kernel you call directly")


def function(fn=None, *, type: FunctionType = FunctionType.Opaque, external_source=None, auto_scope=True, attrs=None):
    """``@pl.function`` / ``@pl.function(type=pl.FunctionType.InCore)`` /
    ``@pl.function(type=pl.FunctionType.AIV, external_source="kernels/k.cpp")``."""
    if fn is None:
        return lambda f: FunctionDecl(f, type, external_source)
    return FunctionDecl(fn, type, external_source)


def program(cls) -> n.Program:
    """``@pl.program``: the class's methods become an IR Program (parsed, never run)."""
    source, node = source_of(cls)
    namespace = dict(vars(inspect.getmodule(cls) or object()))
    # A class defined in a function sees that function's locals (the sizes a builder
    # function computes before its @pl.program class, say), as its annotations did.
    caller = inspect.currentframe().f_back
    if caller is not None and caller.f_code.co_name != "<module>":
        namespace.update(caller.f_locals)
    for decl in vars(cls).values():  # methods see their enclosing function's locals
        fn = getattr(decl, "fn", None)
        for name, cell in zip(getattr(fn, "__code__", None) and fn.__code__.co_freevars or (),
                              getattr(fn, "__closure__", None) or ()):
            try:
                namespace[name] = cell.cell_contents
            except ValueError:
                pass
    source = Source(source.file, source.lines, source.line_offset, source.col_offset,
                    resolver=N.ModuleResolver(namespace))
    if not isinstance(node, ast.ClassDef):
        raise ParseError("@pl.program decorates a class", span=source.span(node))
    # read when Python defines the class, before any RunConfig names a backend: the
    # default one; the pass pipeline verifies it again against the backend in force
    with collector_paused():
        return ProgramBuilder(source, node, DEFAULT).build()
