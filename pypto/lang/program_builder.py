"""One program class converted (``ProgramBuilder``): its methods, each once, callees on
demand — a method with ``pl.dynamic`` axes per call, for the types its call passes — and
what a method's ``@pl.function(...)`` decorator says (``function_options``), read without
running it; and what ``@pl.function`` leaves on a method or a module kernel (``FunctionDecl``). A call's argument types are checked against the callee's signature here
(``check_call_types``), for ``@pl.jit`` kernels too. ``pypto.lang.program`` holds the
decorators and the program objects a user gets; ``pypto.lang.text`` builds dumps with this.
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import attrs

from pypto.errors import (
    ExecutionError,
    ParseError,
    PyptoError,
    SpecializationError,
    TypeCheckError,
    UnsupportedSyntaxError,
)
from pypto.ir import nodes as n
from pypto.ir.types import FunctionType, Level, ScalarType, conforms, sizing_key, type_name
from pypto.lang.vocabulary import names as N
from pypto.lang.statements.calls import Callee, ProgramHooks
from pypto.lang.converter import FunctionConverter
from pypto.lang.expressions.exprs import Source
from pypto.lang.sources import KernelSource, source_of


class ProgramBuilder(ProgramHooks):
    """Converts the methods of one program class, each once, callees on demand. A method
    whose signature has a ``pl.dynamic`` axis is converted per call, for the types its call
    passes, as is a module-level ``@pl.function`` the program calls by name; the entry (the
    last method, which a compiled program runs) takes ``entry_types`` when they are given."""

    kernel_call_hint = "call it from the program's orchestration, or declare it @pl.function(type=pl.FunctionType.Inline)"

    def __init__(self, source: Source, cls: ast.ClassDef, soc, entry_types: tuple | None = None):
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
        self.entry = next(reversed(self.defs), None)
        self.entry_types = entry_types
        self.done: dict[str, n.Function] = {}
        self.active: list = []  # the functions being converted: calling one again is recursion
        self.instances: dict[tuple, Callee] = {}  # (function, argument types) -> its specialization
        self.extra: list[n.Function] = []  # those specializations, in the order they were made
        self._generic: dict[int, bool] = {}
        # the IR names taken: the methods converted as written (a generic one's first call takes its name)
        self.names = {x for x, fdef in self.defs.items() if not self.generic(source, fdef)} | {self.entry}

    def build(self) -> n.Program:
        for name in self.defs:  # (without its types the entry's conversion says what it lacks)
            if name == self.entry or not self.generic(self.source, self.defs[name]):
                self.function(name, None)
        return n.Program(self.cls.name, tuple(self.extra) + tuple(self.done[x] for x in self.defs if x in self.done))

    def generic(self, source: Source, fdef: ast.FunctionDef) -> bool:
        """Whether the function's signature has a ``pl.dynamic`` axis (its calls type it)."""
        if id(fdef) in self._generic:
            return self._generic[id(fdef)]
        conv = FunctionConverter(source, fdef, name=fdef.name, kind=FunctionType.InCore, hooks=ProgramHooks(self.soc))
        annotations = [a.annotation for a in fdef.args.args if a.annotation is not None]  # (a return type's
        # axes are the parameters')
        found = self._generic[id(fdef)] = any(conv.is_dynamic(x) for a in annotations for x in ast.walk(a))
        return found

    def function(self, name: str, node) -> n.Function:
        if name in self.done:
            return self.done[name]
        self.enter(name, node)
        try:
            given = self.entry_types if name == self.entry else None
            if given is not None:
                params = [a.arg for a in self.defs[name].args.args[1:]]
                if len(params) != len(given):
                    raise SpecializationError(f"'{name}' takes {len(params)} arguments ({', '.join(params)}), got "
                                              f"{len(given)}", span=self.source.span(self.defs[name]))
                given = dict(zip(params, given))
            fn = self.convert(self.source, self.defs[name], name, has_self=True, given=given)
        finally:
            self.active.pop()
        self.done[name] = fn
        return fn

    def enter(self, key, node, conv=None) -> None:
        """``key`` (a method's name, or a module kernel) is being converted; ``node``, the call
        of it (in ``conv``'s source)."""
        if key in self.active:
            span = conv.span(node) if conv is not None else self.source.span(node) if node is not None else None
            raise UnsupportedSyntaxError(f"function '{getattr(key, '__name__', key)}' calls itself (recursion is not "
                                         "supported)", span=span,
                                         hint="kernels are expanded at compile time; write the repetition as a "
                                              "pl.range loop")
        self.active.append(key)

    def convert(self, source: Source, fdef: ast.FunctionDef, name: str, *, has_self: bool, given=None,
                node=None, conv=None) -> n.Function:
        kind, auto, dual = function_options(source, fdef, self.soc)
        converter = FunctionConverter(source, fdef, name=name, kind=kind, hooks=self, has_self=has_self,
                                      given=given, auto_scope=auto)
        try:
            fn = converter.convert()
        except SpecializationError as err:
            raise at_the_call(err, [a.arg for a in fdef.args.args[int(has_self):]], fdef.name, node, conv) from None
        return attrs.evolve(fn, dual_aiv=True) if dual else fn

    def call_method(self, name, arg_types, node, conv) -> Callee:
        if name not in self.defs:
            raise conv.error(ParseError, node, f"'self.{name}' is not a function of program '{self.cls.name}'")
        fdef = self.defs[name]
        if self.generic(self.source, fdef):
            return self.instance(name, self.source, fdef, True, arg_types, node, conv)
        fn = self.function(name, node)
        check_call_types(conv, node, fn, arg_types)
        return Callee.of(fn)

    def call_kernel(self, kernel, arg_types, node, conv) -> Callee:
        if not isinstance(kernel, FunctionDecl):
            raise conv.error(ParseError, node, f"'{kernel.__name__}' is a @pl.jit kernel: a @pl.program calls its "
                             "own methods (self.f(...)) and @pl.function kernels",
                             hint="declare it with @pl.function(type=pl.FunctionType.InCore)")
        source, fdef = self.inline_source(kernel, node, conv)
        return self.instance(kernel, source, fdef, False, arg_types, node, conv)

    def instance(self, key, source: Source, fdef: ast.FunctionDef, has_self: bool, arg_types: tuple, node,
                 conv) -> Callee:
        """``fdef`` (a method's, ``key`` its name, or a module kernel's, ``key`` the kernel)
        converted for ``arg_types``, once per argument types."""
        sized = tuple(map(sizing_key, arg_types))
        if (key, sized) not in self.instances:
            params = [a.arg for a in fdef.args.args[int(has_self):]]
            if len(params) != len(arg_types):
                raise conv.error(TypeCheckError, node, f"'{fdef.name}' takes {len(params)} arguments, got "
                                 f"{len(arg_types)}")
            unique = n.fresh_name(fdef.name, self.names)
            self.enter(key, node, conv)
            try:
                fn = self.convert(source, fdef, unique, has_self=has_self, given=dict(zip(params, arg_types)),
                                  node=node, conv=conv)
            finally:
                self.active.pop()
            check_call_types(conv, node, fn, arg_types, fdef.name)
            # a call passing a tensor sized as the orchestration runs gets the kernel its written
            # extents make: the one a call of those static shapes gets
            written = (key, tuple(p.type for p in fn.params))
            if written in self.instances:
                self.names.discard(unique)
            else:
                self.extra.append(fn)
                self.instances[written] = Callee.of(fn, fdef.name)
            self.instances[key, sized] = self.instances[written]
        return self.instances[key, sized]

    def inline_source(self, kernel, node, conv):
        try:
            return kernel.source.get()
        except PyptoError as err:
            raise err.with_note(f"'{kernel.__name__}' is called at {conv.span(node)}") from None


def at_the_call(err: SpecializationError, names, fname: str, node, conv) -> PyptoError:
    """A specialization's mismatch, reported at the call's argument (the declaration is the
    context); as it is when there is no call."""
    param = getattr(err, "param", None)
    if conv is None or param is None or param not in names:
        return err
    k = names.index(param)
    at = node.args[k] if k < len(getattr(node, "args", ())) else node
    return conv.error(TypeCheckError, at, f"'{fname}': {err.message}", hint=err.hint).with_note(
        f"the parameter is declared at {err.span}")


def check_call_types(conv, node, fn: n.Function, arg_types, display: str | None = None) -> None:
    """Each argument has its parameter's type, or an integer scalar the call converts to the
    parameter's integer dtype (a loop index passed for a pl.Scalar[pl.INT64])."""
    name = display or fn.name
    if len(arg_types) != len(fn.params):
        raise conv.error(TypeCheckError, node, f"'{name}' takes {len(fn.params)} arguments, got {len(arg_types)}")
    args = getattr(node, "args", None) or []
    for k, (p, t) in enumerate(zip(fn.params, arg_types)):
        if p.type == t or widens(t, p.type) or conforms(t, p.type):
            continue
        where = args[k] if k < len(args) else node
        raise conv.error(TypeCheckError, where, f"argument '{p.name}' of '{name}' is {type_name(p.type)}, got {type_name(t)}",
                         hint=f"pass a value of type {type_name(p.type)}")


def widens(given, declared) -> bool:
    """An integer scalar converts to any integer parameter dtype, as Python ints do, and to a
    bool one (non-zero is true: a flag computed as 0 or 1)."""
    return isinstance(given, ScalarType) and isinstance(declared, ScalarType) \
        and given.dtype.is_int and (declared.dtype.is_int or declared.dtype.is_bool)


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
            if deco.args or set(kw) - {"type", "auto_scope", "attrs", "level", "role"}:
                raise conv.error(UnsupportedSyntaxError, deco, "@pl.function takes only type=, auto_scope=, "
                                 "attrs=, level= and role= here")
            if "level" in kw and conv.static_of(kw["level"], Level, "the level") is Level.HOST:
                raise conv.error(TypeCheckError, deco, f"'{fdef.name}' runs on the host (level=pl.Level.HOST): a "
                                 "program of the cores cannot call it",
                                 hint="dispatch the program's orchestration from it: self.orch(..., device=r)")
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


class FunctionDecl:
    """What ``@pl.function`` leaves on a method; ``@pl.program`` reads the class source.
    Defined outside the class (at module level, or by a builder function), it is a kernel a
    program calls by name, converted for the types of each call. With ``external_source``,
    the hand-written C++ file behind it, resolved against the defining file's directory."""

    __pypto_kernel__ = True  # a name holding one is a callable kernel (names.classify)

    def __init__(self, fn, type: FunctionType, external_source=None, scope: dict | None = None):
        self.fn = fn
        self.type = type
        # the names it sees as they are when it is defined, as a program's methods see theirs
        self.source = KernelSource(fn, type, {**getattr(fn, "__globals__", {}), **(scope or {})})
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

    @property
    def function_type(self) -> FunctionType:
        return self.type

    @property
    def param_names(self) -> tuple[str, ...]:
        return self.source.param_names()

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
