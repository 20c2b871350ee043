"""``@pl.jit`` kernels as callable objects: specialize on the arguments, cache, run."""

from __future__ import annotations

import difflib
import linecache
import sys

import torch

from pypto.errors import ParseError, Span, SpecializationError, TypeCheckError, UnsupportedSyntaxError
from pypto.ir import nodes as n
from pypto.ir.types import DataType, FunctionType, Level, ScalarType, TensorType
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

    def bind(self, args: tuple, kwargs: dict) -> tuple:
        """The arguments in parameter order: positions, then keywords by parameter name.
        A mistake is reported at the user's call."""
        names = self.param_names
        frame = _user_frame()
        if len(args) > len(names):
            raise SpecializationError(
                f"@pl.jit function '{self.__name__}' takes {len(names)} arguments ({', '.join(names)}), got {len(args)}",
                span=_span_at(frame, self.__name__))
        bound = dict(zip(names, args))
        for key, value in kwargs.items():
            if key not in names:
                close = difflib.get_close_matches(key, names, n=1)
                raise SpecializationError(f"@pl.jit function '{self.__name__}' got an unexpected keyword argument "
                                          f"'{key}'", span=_span_at(frame, f"{key}="),
                                          hint=f"did you mean '{close[0]}'?" if close
                                          else f"its parameters are: {', '.join(names)}")
            if key in bound:
                raise SpecializationError(f"@pl.jit function '{self.__name__}' got multiple values for argument "
                                          f"'{key}'", span=_span_at(frame, f"{key}="))
            bound[key] = value
        missing = [x for x in names if x not in bound]
        if missing:
            raise SpecializationError(
                f"@pl.jit function '{self.__name__}' takes {len(names)} arguments ({', '.join(names)}), "
                f"got {len(bound)}: '{missing[0]}' is missing", span=_span_at(frame, self.__name__))
        return tuple(bound[x] for x in names)

    def arg_types(self, args) -> tuple:
        names = self.param_names
        if len(args) != len(names):
            raise SpecializationError(
                f"@pl.jit function '{self.__name__}' takes {len(names)} arguments ({', '.join(names)}), got {len(args)}")
        return tuple(arg_type(name, value) for name, value in zip(names, args))

    def specialize(self, *args, **kwargs) -> n.Program:
        """The Program for these arguments, before any pass (cached per argument types).
        With no arguments, the parameters' full annotations give the types."""
        if not args and not kwargs and self.param_names:
            key = declared_types(self)
        else:
            key = self.arg_types(self.bind(args, kwargs))
        if key not in self._programs:
            self._programs[key] = specialize(self, key)
        return self._programs[key]

    def lower(self, *args, config: RunConfig | None = None, **kwargs) -> n.Program:
        """The Program after the pass pipeline. Writes nothing. With no arguments, the
        parameters' full annotations give the types."""
        return lower_program(self.specialize(*args, **kwargs), coerce_config(config)).program

    def compile(self, *args, config: RunConfig | None = None, **kwargs) -> CompiledProgram:
        """Specialize, run the passes, and write the output directory (dumps, report).
        With no arguments, the parameters' full annotations give the types."""
        return compile_program(self.specialize(*args, **kwargs), self.param_names, coerce_config(config), write=True)

    def __call__(self, *args, config: RunConfig | None = None, **kwargs):
        """Run on torch tensors and numbers, passed by position or by parameter name."""
        args = self.bind(args, kwargs)
        config = coerce_config(config)
        key = (self.arg_types(args), config)
        compiled = self._compiled.get(key)
        if compiled is None:
            compiled = compile_program(self.specialize(*args), self.param_names, config,
                                       write=config.writes_artifacts)
            self._compiled[key] = compiled
        return compiled(*_as_declared(compiled.program, args))


def _as_declared(program: n.Program, args) -> tuple:
    """A Python int passed for a float scalar parameter, as the float the kernel declares;
    one passed for an integer parameter must fit its dtype (nothing narrows it)."""
    params = program.function(program.name).params
    out = []
    for a, p in zip(args, params):
        if isinstance(a, int) and not isinstance(a, bool) and isinstance(p.type, ScalarType):
            if p.type.dtype.is_float:
                a = float(a)
            elif p.type.dtype.is_int:
                lo, hi = p.type.dtype.int_range
                if not lo <= a <= hi:
                    raise SpecializationError(f"argument '{p.name}' is {a}, which does not fit the parameter's "
                                              f"{p.type.dtype.name} ({lo}..{hi})",
                                              hint="pass a value in range, or declare a wider dtype")
        out.append(a)
    return tuple(out)


class _JitDecorator:
    """``pl.jit``, with ``pl.jit.incore`` and ``pl.jit.inline`` for the functions it calls."""

    def __init__(self, function_type: FunctionType, name: str):
        self.function_type = function_type
        self.name = name

    def __call__(self, fn=None, **options):
        if fn is None:  # @pl.jit.incore(level=...)
            self._check_options(options, _user_frame())
            return lambda f: JitKernel(f, self.function_type)
        if options:
            self._check_options(options, _user_frame())
        return JitKernel(fn, self.function_type)

    def _check_options(self, options: dict, frame) -> None:
        """Options are checked where the decorator is written; what a kernel does not
        support yet is said, not ignored."""
        known = ("level",) if self.function_type is FunctionType.InCore else ()
        for key, value in options.items():
            span = _span_at(frame, f"{key}=")
            if key not in known:
                close = difflib.get_close_matches(key, known, n=1)
                raise ParseError(f"@{self.name} got an unexpected option '{key}'", span=span,
                                 hint=f"did you mean '{close[0]}'?" if close else
                                 f"@{self.name} takes {'level=' if known else 'no options'}")
            if not isinstance(value, Level):
                raise TypeCheckError(f"@{self.name}(level=...) takes a pl.Level, not {value!r}", span=span,
                                     hint="level=pl.Level.CHIP_DIE")
            if value is not Level.CHIP_DIE:
                # A per-core level (AIC / AIV) would pin the kernel to one core type; the
                # compiler places each op on the core that runs it instead.
                raise UnsupportedSyntaxError(
                    f"@{self.name}(level=pl.Level.{value.name}) is not supported: an InCore kernel runs at "
                    "pl.Level.CHIP_DIE, with its vector ops on the AIV cores and its matmuls on the AIC cores",
                    span=span, hint=f"drop the option: @{self.name}")


def _user_frame():
    """The first frame outside this module: the user's call or decorator line."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename == __file__:
        frame = frame.f_back
    return frame


def _span_at(frame, token: str) -> Span | None:
    """Where ``token`` is written on the line ``frame`` is running (its start if absent)."""
    if frame is None:
        return None
    file, line = frame.f_code.co_filename, frame.f_lineno
    text = linecache.getline(file, line).rstrip("\n")
    col = text.find(token) + 1 if token in text else 1
    width = len(token.rstrip("=")) if token in text else 0
    return Span(file, line, col, line, col + width, text or None)


class _Jit(_JitDecorator):
    def __init__(self):
        super().__init__(FunctionType.Orchestration, "pl.jit")
        self.incore = _JitDecorator(FunctionType.InCore, "pl.jit.incore")
        self.inline = _JitDecorator(FunctionType.Inline, "pl.jit.inline")


jit = _Jit()
