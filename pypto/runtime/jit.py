"""``@pl.jit`` kernels as callable objects: specialize on the arguments, cache, run."""

from __future__ import annotations

import difflib
import os
from typing import TYPE_CHECKING

from pypto.backend import backend
from pypto.errors import ParseError, PyptoError, SpecializationError, TypeCheckError, UnsupportedSyntaxError
from pypto.ir import nodes as n
from pypto.ir.types import FunctionType, Level
from pypto.lang.jit import DynamicAxes, declared_types, specialize
from pypto.lang.program_builder import FunctionDecl
from pypto.lang.sources import KernelSource, source_of
from pypto.log import logger
from pypto.runtime.arguments import arg_type, as_declared
from pypto.runtime.callsite import call_span, located
from pypto.runtime.config import RunConfig, coerce_config
from pypto.console import boundary

if TYPE_CHECKING:
    from pypto.runtime.compiled import CompiledProgram

# The compiler, the simulator and the chip load on a kernel's first compile, not at
# ``import pypto.language``: each use below imports ``pypto.runtime.compiled`` where it needs it.


class JitKernel:
    """A kernel function: parsed from source on first use, specialized per argument types."""

    __pypto_kernel__ = True

    def __init__(self, fn, function_type: FunctionType, auto_scope: bool = True, debug: bool = False):
        if isinstance(fn, FunctionDecl):
            source, node = source_of(fn.fn)
            raise PyptoError(f"'{fn.__name__}' is already a @pl.function: a kernel is one or the other",
                             span=source.span(node), hint="keep @pl.jit (a kernel you call) or @pl.function (a kernel "
                                                          "a @pl.program calls), not both")
        self.fn = fn
        self.function_type = function_type
        self.auto_scope = auto_scope  # an entry's: every loop body and branch is a runtime scope
        self.debug = debug  # @pl.jit(debug=True): every call runs as host Python (pypto.runtime.host)
        self.source = KernelSource(fn, function_type)
        self.__name__ = fn.__name__
        self.__qualname__ = fn.__qualname__
        self.__doc__ = fn.__doc__
        self.__wrapped__ = fn
        self._programs: dict[tuple, tuple] = {}  # (Program, the Reads it was built from)
        # for calls: per argument types and config (the reference's name: ``kernel._cache.clear()``
        # makes the next call compile again)
        self._cache: dict[tuple, CompiledProgram] = {}
        self._built: dict[tuple, CompiledProgram] = {}  # compile()'s: per specialized program and config

    def __repr__(self) -> str:
        return f"<pypto kernel {self.__qualname__} ({self.function_type.name})>"

    @property
    def param_names(self) -> tuple[str, ...]:
        return self.source.param_names()

    def bind(self, args: tuple, kwargs: dict) -> tuple:
        """(the arguments in parameter order: positions, then keywords by parameter name;
        where each was written: its position or keyword). A mistake is reported at the user's call."""
        names = self.param_names
        if len(args) > len(names):
            raise SpecializationError(
                f"@pl.jit function '{self.__name__}' takes {len(names)} arguments ({', '.join(names)}), got {len(args)}",
                span=call_span(argument=len(names)))
        bound = dict(zip(names, args))
        where = {name: k for k, name in enumerate(names[:len(args)])}
        for key, value in kwargs.items():
            if key not in names:
                close = difflib.get_close_matches(key, names, n=1)
                raise SpecializationError(f"@pl.jit function '{self.__name__}' got an unexpected keyword argument "
                                          f"'{key}'", span=call_span(argument=key),
                                          hint=f"did you mean '{close[0]}'?" if close
                                          else f"its parameters are: {', '.join(names)}")
            if key in bound:
                raise SpecializationError(f"@pl.jit function '{self.__name__}' got multiple values for argument "
                                          f"'{key}'", span=call_span(argument=key))
            bound[key] = value
            where[key] = key
        missing = [x for x in names if x not in bound]
        if missing:
            raise SpecializationError(
                f"@pl.jit function '{self.__name__}' takes {len(names)} arguments ({', '.join(names)}), "
                f"got {len(bound)}: '{missing[0]}' is missing", span=call_span())
        return tuple(bound[x] for x in names), tuple(where[x] for x in names)

    def arg_types(self, args, where) -> tuple:
        return tuple(arg_type(name, value, at) for name, value, at in zip(self.param_names, args, where))

    @located
    def specialize(self, *args, config: RunConfig | None = None, **kwargs) -> n.Program:
        """The Program for these arguments, before any pass (cached per argument types and
        backend). With no arguments, the parameters' full annotations give the types."""
        return self._specialize(args, kwargs, _config(config))

    def _specialize(self, args, kwargs, config: RunConfig) -> n.Program:
        soc = backend(config.backend)
        if not args and not kwargs and self.param_names:
            types = declared_types(self, soc)
        else:
            types = self.arg_types(*self.bind(args, kwargs))
        return self._program(types, soc)

    def _program(self, types: tuple, soc) -> n.Program:
        key = (types, soc.name)
        known = self._programs.get(key)
        if known is not None:
            stale = known[1].changed()
            if stale is None:
                return known[0]
            logger.debug(f"[compile] {self.__name__}: built again, {stale}")
        self._programs[key] = specialize(self, types, soc)
        return self._programs[key][0]

    @located
    def lower(self, *args, config: RunConfig | None = None, **kwargs) -> n.Program:
        """The Program after the pass pipeline. Writes nothing. With no arguments, the
        parameters' full annotations give the types."""
        from pypto.runtime.compiled import lower_program

        config = _config(config)
        return lower_program(self._specialize(args, kwargs, config), config).program

    @located
    def compile(self, *args, config: RunConfig | None = None, **kwargs) -> CompiledProgram:
        """Specialize, run the passes, and write the output directory (dumps, report):
        once per argument types and config — the same CompiledProgram again after that.
        With no arguments, the parameters' full annotations give the types."""
        return self._build(args, kwargs, _config(config))

    def _build(self, args, kwargs, config: RunConfig) -> CompiledProgram:
        try:
            program = self._specialize(args, kwargs, config)
        except DynamicAxes:
            # annotated in full but for pl.dynamic axes: one compile per set of extents, at
            # the calls (as a @pl.program with such axes compiles)
            from pypto.runtime.generic import GenericCompiled

            key = ("generic", config, os.environ.get("PYPTO_PROG_BUILD_DIR"))
            if key not in self._built:
                self._built[key] = GenericCompiled(_Generic(self), config)
            return self._built[key]
        # (the program is _programs' own, kept: one object per types; a build directory
        # chosen by the environment is part of the key, as it is of the build)
        key = (id(program), config, os.environ.get("PYPTO_PROG_BUILD_DIR"))
        if key not in self._built:
            from pypto.runtime.compiled import compile_program

            self._built[key] = compile_program(program, self.param_names, config, write=True)
        return self._built[key]

    @located
    def __call__(self, *args, config: RunConfig | None = None, **kwargs):
        """Run on torch tensors and numbers, passed by position or by parameter name. With
        ``RunConfig(codegen_only=True)``: compile and write the build (as ``compile``), run
        nothing, and return the ``CompiledProgram`` — as ``pypto.runtime.run`` does."""
        config = _config(config)
        if config.codegen_only:
            return self._build(args, kwargs, config)
        args, where = self.bind(args, kwargs)
        types = self.arg_types(args, where)
        if config.debug or self.debug:  # as host Python, for pdb and print (pypto.runtime.host)
            from pypto.runtime import host

            return host.run(self, args, where, types, backend(config.backend))
        key = (types, config)
        program = self._program(types, backend(config.backend))  # built again when a value it read has changed
        compiled = self._cache.get(key)
        if compiled is None or compiled.program is not program:
            from pypto.runtime.compiled import compile_program

            compiled = compile_program(program, self.param_names, config, write=config.writes_artifacts)
            self._cache[key] = compiled
        return compiled(*as_declared(compiled.params, self.param_names, args, where.__getitem__))


class _Generic:
    """A jit kernel as ``GenericCompiled`` reads a program with pl.dynamic axes: its name,
    its parameters, and its Program for a call's argument types."""

    def __init__(self, kernel):
        self.kernel = kernel
        self.name = kernel.__name__
        self.param_names = list(kernel.param_names)

    def specialize_types(self, arg_types: tuple, soc) -> n.Program:
        return self.kernel._program(arg_types, soc)


def _config(value) -> RunConfig:
    """``config=`` as given; a mistake in it is reported at the ``config=`` the user wrote."""
    try:
        return coerce_config(value)
    except PyptoError as err:
        raise err.with_span(call_span(argument="config")) from None


class _JitDecorator:
    """``pl.jit``, with ``pl.jit.incore`` and ``pl.jit.inline`` for the functions it calls."""

    def __init__(self, function_type: FunctionType, name: str):
        self.function_type = function_type
        self.name = name

    @boundary
    def __call__(self, fn=None, **options):
        self._check_options(options)
        auto, debug = options.get("auto_scope", True), options.get("debug", False)
        if fn is None:  # @pl.jit.incore(level=...), @pl.jit(auto_scope=False)
            return lambda f: JitKernel(f, self.function_type, auto, debug)
        return JitKernel(fn, self.function_type, auto, debug)

    def _check_options(self, options: dict) -> None:
        """Options are checked where the decorator is written; what a kernel does not
        support yet is said, not ignored."""
        known = ("level",) if self.function_type is FunctionType.InCore else ("auto_scope",)
        if self.function_type is FunctionType.Orchestration:
            known += ("debug",)
        for key, value in options.items():
            span = call_span(argument=key)
            if key == "auto_scope" and self.function_type is FunctionType.InCore:
                raise TypeError(f"@{self.name} does not accept an auto_scope= argument (auto_scope is only "
                                "meaningful for the Orchestration entry, the HOST orchestrator, and inline "
                                "sub-functions)")
            if key == "level" and self.function_type is not FunctionType.InCore:
                raise TypeError(f"@{self.name} does not accept a level= argument")
            if key not in known:
                close = difflib.get_close_matches(key, known, n=1)
                raise ParseError(f"@{self.name} got an unexpected option '{key}'", span=span,
                                 hint=f"did you mean '{close[0]}'?" if close else
                                 f"@{self.name} takes {' and '.join(k + '=' for k in known)}")
            if key == "debug":
                if not isinstance(value, bool):
                    raise TypeCheckError(f"@{self.name}(debug=...) takes a bool, not {value!r}", span=span,
                                         hint=f"@{self.name}(debug=True)")
                continue
            if key == "auto_scope":
                if not isinstance(value, bool):
                    raise TypeCheckError(f"@{self.name}(auto_scope=...) takes a bool, not {value!r}", span=span)
                continue
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


class _JitIncore(_JitDecorator):
    """``@pl.jit.incore``: a kernel that runs on the cores (an InCore function), called from
    a ``@pl.jit`` entry as ``out = kernel(a, out)``; each call there is one task.

    Its body is tile code (``pl.load``, tile ops, ``pl.store``) or tensor code the compiler
    blocks into tiles. ``@pl.jit.incore(level=pl.Level.CHIP_DIE)`` is the one level it takes."""


class _JitInline(_JitDecorator):
    """``@pl.jit.inline``: a helper whose body is written into each kernel that calls it
    (``y = helper(x, 2.0)``), at compile time. Unlike a kernel, it may take defaults and
    keyword-only parameters, bound as Python binds them; ``auto_scope=`` as ``pl.jit``."""


class _Jit(_JitDecorator):
    """``@pl.jit``: a kernel entry, compiled on first call and run on the configured platform.

    ``kernel(*tensors, config=RunConfig(platform="ref" | "a2a3sim"))`` compiles (once per
    argument shapes, dtypes and the outside values the source reads) and runs it, writing its
    ``pl.Out`` / ``pl.InOut`` tensors in place; ``kernel.compile(*args, config=...)`` returns
    the ``CompiledProgram`` (``.run(*args)`` gives a ``RunReport``: cycles, per-task records),
    ``kernel.lower(*args)`` the lowered ``Program``, ``kernel.specialize(*args)`` the
    front end's. The body is parsed, never run: its scalar code and loops are the
    orchestration (on the host), each ``pl.at`` scope or ``pl.jit.incore`` call a task on the
    cores. ``@pl.jit(auto_scope=False)`` opens no runtime scope per loop trip and branch.

    Family: ``pl.jit.incore`` (a kernel of the cores), ``pl.jit.inline`` (a helper written
    into its callers); ``@pl.program`` / ``@pl.function`` are the reference's class form."""

    def __init__(self):
        super().__init__(FunctionType.Orchestration, "pl.jit")
        self.incore = _JitIncore(FunctionType.InCore, "pl.jit.incore")
        self.inline = _JitInline(FunctionType.Inline, "pl.jit.inline")

    @staticmethod
    def host(fn=None, **options):
        """``@pl.jit.host``: the orchestrator of many ranks (``pypto.runtime.distributed``)."""
        from pypto.runtime.distributed.host import HostKernel

        if options:
            raise TypeError(f"@pl.jit.host takes no options, got {', '.join(options)}")
        return HostKernel(fn) if fn is not None else HostKernel


jit = _Jit()
