"""``@pl.jit`` kernels as callable objects: specialize on the arguments, cache, run."""

from __future__ import annotations

import torch

from pypto.errors import SpecializationError
from pypto.ir import nodes as n
from pypto.ir.types import DataType, FunctionType, ScalarType, TensorType
from pypto.lang.jit import KernelSource, declared_types, specialize
from pypto.runtime.compiled import CompiledProgram, compile_program, lower_program
from pypto.runtime.config import RunConfig, coerce_config
from pypto.sim.numerics import FROM_TORCH


def arg_type(name: str, value):
    """The IR type a call argument specializes its parameter to."""
    if isinstance(value, torch.Tensor):
        if value.dtype not in FROM_TORCH:
            supported = ", ".join(str(t).replace("torch.", "") for t in FROM_TORCH)
            raise SpecializationError(f"argument '{name}' has unsupported torch dtype {value.dtype}",
                                      hint=f"Supported: {supported}")
        if value.device.type != "cpu":
            raise SpecializationError(f"argument '{name}' is on {value.device}; kernels run on CPU tensors here",
                                      hint="pass tensor.cpu()")
        return TensorType(tuple(value.shape), FROM_TORCH[value.dtype])
    if isinstance(value, bool):
        return ScalarType(DataType.BOOL)
    if isinstance(value, int):
        return ScalarType(DataType.INT64)
    if isinstance(value, float):
        return ScalarType(DataType.FP32)
    raise SpecializationError(f"argument '{name}' is a {type(value).__name__}; kernels take torch tensors and numbers")


class JitKernel:
    """A kernel function: parsed from source on first use, specialized per argument types."""

    __pypto_kernel__ = True

    def __init__(self, fn, function_type: FunctionType):
        self.fn = fn
        self.function_type = function_type
        self.source = KernelSource(fn)
        self.__name__ = fn.__name__
        self.__qualname__ = fn.__qualname__
        self.__doc__ = fn.__doc__
        self.__wrapped__ = fn
        self._programs: dict[tuple, n.Program] = {}
        self._compiled: dict[tuple, CompiledProgram] = {}  # for calls: per argument types and config

    def __repr__(self) -> str:
        return f"<pypto kernel {self.__qualname__} ({self.function_type.name})>"

    @property
    def param_names(self) -> tuple[str, ...]:
        return self.source.param_names()

    def arg_types(self, args) -> tuple:
        names = self.param_names
        if len(args) != len(names):
            raise SpecializationError(
                f"@pl.jit function '{self.__name__}' takes {len(names)} arguments ({', '.join(names)}), got {len(args)}")
        return tuple(arg_type(name, value) for name, value in zip(names, args))

    def specialize(self, *args) -> n.Program:
        """The Program for these arguments, before any pass (cached per argument types).
        With no arguments, the parameters' full annotations give the types."""
        key = declared_types(self) if not args and self.param_names else self.arg_types(args)
        if key not in self._programs:
            self._programs[key] = specialize(self, key)
        return self._programs[key]

    def lower(self, *args, config: RunConfig | None = None) -> n.Program:
        """The Program after the pass pipeline. Writes nothing. With no arguments, the
        parameters' full annotations give the types."""
        return lower_program(self.specialize(*args), coerce_config(config)).program

    def compile(self, *args, config: RunConfig | None = None) -> CompiledProgram:
        """Specialize, run the passes, and write the output directory (dumps, report).
        With no arguments, the parameters' full annotations give the types."""
        return compile_program(self.specialize(*args), self.param_names, coerce_config(config), write=True)

    def __call__(self, *args, config: RunConfig | None = None):
        config = coerce_config(config)
        key = (self.arg_types(args), config)
        compiled = self._compiled.get(key)
        if compiled is None:
            compiled = compile_program(self.specialize(*args), self.param_names, config,
                                       write=config.writes_artifacts)
            self._compiled[key] = compiled
        return compiled(*_as_declared(compiled.program, args))


def _as_declared(program: n.Program, args) -> tuple:
    """A Python int passed for a float scalar parameter, as the float the kernel declares."""
    params = program.function(program.name).params
    return tuple(float(a) if isinstance(a, int) and not isinstance(a, bool) and isinstance(p.type, ScalarType)
                 and p.type.dtype.is_float else a for a, p in zip(args, params))


class _JitDecorator:
    """``pl.jit``, with ``pl.jit.incore`` and ``pl.jit.inline`` for the functions it calls."""

    def __init__(self, function_type: FunctionType):
        self.function_type = function_type

    def __call__(self, fn=None, **options):
        if fn is None:  # @pl.jit.incore(level=...)
            unknown = set(options) - {"level"}
            if unknown:
                raise TypeError(f"unexpected option {sorted(unknown)[0]!r}")
            return lambda f: JitKernel(f, self.function_type)
        return JitKernel(fn, self.function_type)


class _Jit(_JitDecorator):
    def __init__(self):
        super().__init__(FunctionType.Orchestration)
        self.incore = _JitDecorator(FunctionType.InCore)
        self.inline = _JitDecorator(FunctionType.Inline)


jit = _Jit()
