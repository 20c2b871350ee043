"""Running kernels: ``RunConfig`` and the dispatch of torch tensors to a platform, the
simulated device (``ChipWorker``), and the reference's entry points over a Program
(``run``, and ``pypto.ir.compile``, which this layer installs in ``pypto.ir``)."""

import pypto.ir as _ir
from pypto.runtime.bench import BenchmarkStats, benchmark
from pypto.runtime.build import compile as _compile
from pypto.runtime.build import run
from pypto.runtime.compiled import CompiledProgram
from pypto.runtime.config import PLATFORMS, RunConfig
from pypto.runtime.tensor_spec import ScalarSpec, TensorSpec
from pypto.runtime.worker import ChipWorker, DeviceTensor, RegistrationHandle

_ir.compile = _compile  # the IR compiles nothing itself: the runtime is what builds and runs it

__all__ = ["PLATFORMS", "BenchmarkStats", "ChipWorker", "CompiledProgram", "DeviceTensor", "RegistrationHandle", "RunConfig", "ScalarSpec",
           "TensorSpec", "benchmark", "run"]
