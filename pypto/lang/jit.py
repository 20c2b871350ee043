"""Specializing ``@pl.jit`` kernels: one kernel's source plus its arguments' types become a
Program — the entry function, and every ``@pl.jit.incore`` kernel it calls specialized on
the types it passes them.
"""

from __future__ import annotations

import ast

from pypto.errors import SpecializationError
from pypto.ir import nodes as n
from pypto.ir.types import FunctionType, type_name
from pypto.lang.calls import Callee, ProgramHooks
from pypto.lang.converter import FunctionConverter
from pypto.lang.program import check_call_types, source_of


class KernelSource:
    """A kernel function's parsed source, read once per kernel object."""

    def __init__(self, fn):
        self.fn = fn
        self._parsed = None

    def get(self):
        if self._parsed is None:
            source, node = source_of(self.fn)
            if not isinstance(node, ast.FunctionDef):
                raise SpecializationError(f"'{self.fn.__name__}' is not a function", span=source.span(node))
            self._parsed = (source, node)
        return self._parsed

    def param_names(self) -> tuple[str, ...]:
        return tuple(a.arg for a in self.get()[1].args.args)


def specialize(kernel, arg_types: tuple) -> n.Program:
    """The Program of ``kernel`` called with arguments of ``arg_types``."""
    return _JitProgram(kernel).build(arg_types)


class _JitProgram(ProgramHooks):
    def __init__(self, entry):
        self.entry = entry
        self.functions: list[n.Function] = []
        self.specialized: dict[tuple, Callee] = {}
        self.names: set[str] = set()

    def build(self, arg_types: tuple) -> n.Program:
        fn = self.convert(self.entry, arg_types, None, None)
        self.functions.append(fn)
        return n.Program(self.entry.__name__, tuple(self.functions))

    def convert(self, kernel, arg_types: tuple, node, conv) -> n.Function:
        source, fdef = kernel.source.get()
        names = [a.arg for a in fdef.args.args]
        if len(names) != len(arg_types):
            msg = f"'{kernel.__name__}' takes {len(names)} arguments ({', '.join(names)}), got {len(arg_types)}"
            if conv is not None:
                raise conv.error(SpecializationError, node, msg)
            raise SpecializationError(msg, span=source.span(fdef))
        name = kernel.__name__
        k = 0
        while name in self.names:
            k += 1
            name = f"{kernel.__name__}_{k}"
        self.names.add(name)
        converter = FunctionConverter(source, fdef, name=name, kind=kernel.function_type, hooks=self,
                                      given=dict(zip(names, arg_types)))
        return converter.convert()

    def call_kernel(self, kernel, arg_types, node, conv) -> Callee:
        key = (id(kernel), arg_types)
        if key not in self.specialized:
            fn = self.convert(kernel, arg_types, node, conv)
            self.functions.append(fn)
            self.specialized[key] = Callee(fn.name, fn.returns)
            check_call_types(conv, node, fn, arg_types)
        return self.specialized[key]

    def inline_source(self, kernel, node, conv):
        return kernel.source.get()


def describe(arg_types) -> str:
    return ", ".join(type_name(t) for t in arg_types)


KERNEL_TYPES = {
    "jit": FunctionType.Orchestration,
    "incore": FunctionType.InCore,
    "inline": FunctionType.Inline,
}
