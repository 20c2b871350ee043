"""Running kernels: ``RunConfig`` and the dispatch of torch tensors to a platform, the
simulated device (``ChipWorker``), and the reference's entry points over a Program
(``run``, ``compile_program``, and ``pypto.ir.compile``, which this layer installs in
``pypto.ir``).

The names that need the compiler or the simulator (``CompiledProgram``, ``benchmark``, ...)
load on first use (PEP 562), so ``import pypto.language`` — which imports this package for
``pl.jit`` — costs the front end and not the whole simulator."""

import importlib

import pypto.ir as _ir
import pypto.ir.compiled_program as _ir_compiled_program
import pypto.ir.distributed_compiled_program as _ir_distributed
import pypto.ir.pass_manager as _ir_pass_manager
from pypto.runtime.build import compile as _compile
from pypto.runtime.build import run
from pypto.runtime.config import PLATFORMS, RunConfig

_ir.compile = _compile  # the IR compiles nothing itself: the runtime is what builds and runs it

# name -> the module of this package that defines it, imported when the name is first read
_LAZY = {
    "BenchmarkStats": "bench", "benchmark": "bench",
    "CompiledProgram": "compiled",
    "ChipWorker": "worker", "DeviceTensor": "worker", "RegistrationHandle": "worker",
    "ScalarSpec": "tensor_spec", "TensorSpec": "tensor_spec",
    "RunResult": "runner", "compile_program": "runner", "execute_compiled": "runner",
    "Worker": "runtime_base",
    "DistributedConfig": "distributed.config", "DistributedWorker": "distributed.worker",
    "StackedDeviceTensor": "distributed.worker",
    "DistributedProgram": "distributed.program",
    "ensure_pto_isa_root": "pto_isa", "pto_isa_include_dir": "pto_isa",
}


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'pypto.runtime' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"pypto.runtime.{module}"), name)
    globals()[name] = value  # read once: the next access is a plain attribute
    return value


def __dir__() -> list:
    return sorted(set(globals()) | set(_LAZY))


def _provider(module, names: dict):
    """A module ``__getattr__`` for ``module``, an IR module whose ``names`` (name -> the module
    of this package that defines it) are this layer's: the IR runs nothing."""
    def provide(name: str):
        if name in names:
            value = getattr(importlib.import_module(f"pypto.runtime.{names[name]}"), name)
            setattr(module, name, value)
            return value
        raise AttributeError(f"module {module.__name__!r} has no attribute {name!r}")
    return provide


_ir_compiled_program.__getattr__ = _provider(_ir_compiled_program, {"CompiledProgram": "compiled"})
_ir.__getattr__ = _provider(_ir, {"CompiledProgram": "compiled"})  # the reference's `ir.CompiledProgram.from_dir`
_ir_distributed.__getattr__ = _provider(_ir_distributed, {"DistributedConfig": "distributed.config",
                                                          "DistributedCompiledProgram": "distributed.program"})
_ir_pass_manager.__getattr__ = _provider(_ir_pass_manager, {"PassManager": "pass_manager"})

__all__ = ["PLATFORMS", "BenchmarkStats", "ChipWorker", "CompiledProgram", "DeviceTensor", "RegistrationHandle", "RunConfig",
           "DistributedConfig", "DistributedWorker", "StackedDeviceTensor", "RunResult", "ScalarSpec", "TensorSpec", "Worker", "benchmark", "compile_program", "ensure_pto_isa_root",
           "execute_compiled", "pto_isa_include_dir", "run"]
