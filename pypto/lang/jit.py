"""Specializing ``@pl.jit`` kernels: one kernel's source plus its arguments' types become a
Program — the entry function, and every ``@pl.jit.incore`` kernel it calls specialized on
the types it passes them.
"""

from __future__ import annotations

import ast

from pypto.errors import (
    PyptoError,
    SpecializationError,
    UnsupportedSyntaxError,
)
from pypto.ir import nodes as n
from pypto.ir.collector import collector_paused
from pypto.ir.types import FunctionType, type_name
from pypto.lang.statements.calls import Callee, ProgramHooks
from pypto.lang.converter import FunctionConverter
from pypto.lang.program_builder import at_the_call, check_call_types
from pypto.lang.sources import Reads


def declared_types(kernel, soc) -> tuple:
    """The argument types a kernel's own annotations spell out, for specializing it with no
    arguments (``k.lower()``); every parameter needs a full annotation."""
    source, fdef = kernel.source.get()
    conv = FunctionConverter(source, fdef, name=fdef.name, kind=kernel.function_type, hooks=ProgramHooks(soc))
    out = []
    dynamic = []  # parameters whose annotation is full but for pl.dynamic axes
    for arg in fdef.args.args:
        if arg.annotation is None:
            raise SpecializationError(f"'{kernel.__name__}' was called with no arguments, and parameter "
                                      f"'{arg.arg}' has no annotation to take its type from",
                                      span=source.span(arg), hint="pass the arguments, or annotate the parameter")
        try:
            t, _ = conv.annotation(arg.annotation)
        except PyptoError as err:
            if any(conv.is_dynamic(part) for part in ast.walk(arg.annotation)):
                dynamic.append(arg.arg)
                continue
            raise SpecializationError(
                f"'{kernel.__name__}' was called with no arguments, and parameter '{arg.arg}' does not spell out "
                f"its type: {err.message}", span=err.span,
                hint=f"pass the arguments, or annotate fully: {arg.arg}: pl.Tensor[[128, 128], pl.FP32]") from None
        out.append(t)
    if dynamic:
        raise DynamicAxes(kernel.__name__, dynamic)
    return tuple(out)


class DynamicAxes(SpecializationError):
    """``declared_types``: the annotations are full but for pl.dynamic axes, whose extents
    only a call's tensors give (the kernel compiles once per set of them)."""

    def __init__(self, name: str, params: list):
        super().__init__(f"'{name}' was called with no arguments, and {', '.join(repr(p) for p in params)} "
                         "has pl.dynamic axes, whose extents a call's tensors give",
                         hint="pass sample tensors, or compile() it and call the result with tensors")
        self.params = tuple(params)


def specialize(kernel, arg_types: tuple, soc) -> tuple[n.Program, Reads]:
    """The Program of ``kernel`` called with arguments of ``arg_types``, on backend ``soc``,
    and the outside values it was built from (``Reads``: it is stale once one changes)."""
    with collector_paused():
        builder = _JitProgram(kernel, soc)
        program = builder.build(arg_types)
    return program, Reads(builder.resolvers)


def specialize_for_host(kernel, arg_types: tuple, soc) -> tuple[n.Program, dict, Reads]:
    """As ``specialize``, for a run as host Python (``debug=True``): ``breakpoint()`` and
    ``print(...)`` are kept as calls; also, per function, the name the source gives each
    value (``{function: {ssa name: source name}}``), so the host code names them so."""
    with collector_paused():
        builder = _JitProgram(kernel, soc)
        builder.debug = True
        program = builder.build(arg_types)
    return program, builder.pynames, Reads(builder.resolvers)


class _JitProgram(ProgramHooks):
    def __init__(self, entry, soc):
        super().__init__(soc)
        self.entry = entry
        self.functions: list[n.Function] = []
        self.specialized: dict[tuple, Callee] = {}
        self.names: set[str] = set()
        self.active: list = [entry]  # kernels being converted: calling one again is recursion
        self.resolvers: list = []  # of every kernel read: what their names gave is the program's
        self.pynames: dict[str, dict] = {}  # function -> {ssa name: the source's name}

    def build(self, arg_types: tuple) -> n.Program:
        fn = self.convert(self.entry, arg_types, None, None)
        self.functions.append(fn)
        return n.Program(self.entry.__name__, tuple(self.functions))

    def convert(self, kernel, arg_types: tuple, node, conv) -> n.Function:
        source, fdef = self.source_of(kernel, node, conv)
        names = [a.arg for a in fdef.args.args]
        if len(names) != len(arg_types):
            msg = f"'{kernel.__name__}' takes {len(names)} arguments ({', '.join(names)}), got {len(arg_types)}"
            if conv is not None:
                raise conv.error(SpecializationError, node, msg)
            raise SpecializationError(msg, span=source.span(fdef))
        name = n.fresh_name(kernel.__name__, self.names)
        converter = FunctionConverter(source, fdef, name=name, kind=kernel.function_type, hooks=self,
                                      given=dict(zip(names, arg_types)),
                                      auto_scope=getattr(kernel, "auto_scope", True))
        try:
            fn = converter.convert()
            self.pynames[fn.name] = dict(converter.pynames)
            return fn
        except SpecializationError as err:
            raise at_the_call(err, names, kernel.__name__, node, conv) from None

    def call_kernel(self, kernel, arg_types, node, conv) -> Callee:
        if any(k is kernel for k in self.active):
            raise conv.error(UnsupportedSyntaxError, node,
                             f"function '{kernel.__name__}' calls itself (recursion is not supported)",
                             hint="kernels are expanded at compile time; write the repetition as a pl.range loop")
        key = (id(kernel), arg_types)
        if key not in self.specialized:
            self.active.append(kernel)
            try:
                fn = self.convert(kernel, arg_types, node, conv)
            finally:
                self.active.pop()
            self.functions.append(fn)
            self.specialized[key] = Callee.of(fn, kernel.__name__)
            check_call_types(conv, node, fn, arg_types, kernel.__name__)
        return self.specialized[key]

    def inline_source(self, kernel, node, conv):
        return self.source_of(kernel, node, conv)

    def source_of(self, kernel, node, conv):
        """A called kernel's source; a mistake in its signature also names the call."""
        try:
            got = kernel.source.get()
        except PyptoError as err:
            if conv is None:
                raise
            raise err.with_note(f"'{kernel.__name__}' is called at {conv.span(node)}") from None
        self.resolvers.append(got[0].resolver)
        return got


def describe(arg_types) -> str:
    return ", ".join(type_name(t) for t in arg_types)


KERNEL_TYPES = {
    "jit": FunctionType.Orchestration,
    "incore": FunctionType.InCore,
    "inline": FunctionType.Inline,
}
