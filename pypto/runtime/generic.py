"""A program with ``pl.dynamic`` axes, compiled (what ``ir.compile`` and ``runtime.run`` make
of a ``GenericProgram``): each call compiles it for its tensors' extents, once per set of
extents, and runs that ``CompiledProgram``.
"""

from __future__ import annotations

import dataclasses

import attrs

from pypto.backend import backend
from pypto.errors import ConfigError, SpecializationError
from pypto.ir import nodes as n
from pypto.ir.types import TensorType
from pypto.lang.program import GenericProgram
from pypto.runtime.arguments import arg_type
from pypto.runtime.callsite import call_span, located
from pypto.runtime.compiled import CompiledProgram, compile_program
from pypto.runtime.config import RunConfig
from pypto.runtime.worker import on_device


def _arg_types(program: GenericProgram, args) -> tuple:
    """The IR types of a call's arguments, one per entry parameter."""
    names = program.param_names
    if len(args) != len(names):
        raise SpecializationError(f"'{program.name}' takes {len(names)} arguments ({', '.join(names)}), got "
                                  f"{len(args)}", span=call_span(argument=min(len(args), len(names))),
                                  hint="pass every tensor, Out ones included: their extents specialize it")
    return tuple(arg_type(x, a, k) for k, (x, a) in enumerate(zip(names, args)))


def specialize(program: GenericProgram, *args) -> n.Program:
    """The Program of a ``GenericProgram`` for a call with these arguments (torch tensors
    and numbers): ``program.specialize(x, out)``."""
    return program.specialize_types(_arg_types(program, args))


GenericProgram.specialize = specialize  # (the runtime reads a call's arguments; the front end, types)


class GenericCompiled:
    """What a compiled program does with one set of extents, this does with each;
    ``compiled_for(*args)`` is the CompiledProgram for a call's arguments. With an output
    directory configured, each set of extents writes a directory of its own in it."""

    def __init__(self, program: GenericProgram, config: RunConfig):
        self.program = program
        self.config = config
        self.name = program.name
        self._compiled: dict[tuple, CompiledProgram] = {}

    @property
    def param_names(self) -> list:
        return self.program.param_names

    @property
    def platform(self) -> str:
        return self.config.platform

    def compiled_for(self, *args) -> CompiledProgram:
        names = self.param_names
        types = _arg_types(self.program, on_device(args, self))
        if types not in self._compiled:
            try:
                program = self.program.specialize_types(types, backend(self.config.backend))
            except SpecializationError as err:  # an argument's mistake: at the user's argument
                if getattr(err, "param", None) not in names:
                    raise
                raise SpecializationError(err.message, span=call_span(argument=names.index(err.param)),
                                          hint=err.hint).with_note(f"the parameter is declared at {err.span}") from None
            config = self.config
            chosen = config.output_dir if config.output_dir is not None else config.save_kernels_dir
            if chosen is not None:  # (two sets of extents never share a build directory)
                extents = "_".join("x".join(map(str, t.shape)) for t in types if isinstance(t, TensorType))
                config = dataclasses.replace(config, output_dir=chosen / f"{self.name}_{extents or 'scalars'}")
            self._compiled[types] = compile_program(program, names, config, write=True)
        return self._compiled[types]

    @located
    def run(self, *args, config: RunConfig | None = None, dfx_dir=None):
        """``CompiledProgram.run`` of the program compiled for these arguments."""
        return self.compiled_for(*args).run(*args, config=config, dfx_dir=dfx_dir)

    @located
    def __call__(self, *args, config: RunConfig | None = None):
        return self.compiled_for(*args)(*args, config=config)

    def __getattr__(self, attr: str):
        if not attr.startswith("_") and (attr in attrs.fields_dict(CompiledProgram) or hasattr(CompiledProgram, attr)):
            raise ConfigError(f"'{self.name}' has pl.dynamic axes: it is compiled once per set of extents, and "
                              f"'{attr}' belongs to one of those", span=call_span(),
                              hint=f"compiled.compiled_for(*tensors).{attr}")
        raise AttributeError(f"'GenericCompiled' object has no attribute '{attr}'")

    def __repr__(self) -> str:
        return f"<compiled {self.name}: pl.dynamic axes, {len(self._compiled)} specialization(s) so far>"
