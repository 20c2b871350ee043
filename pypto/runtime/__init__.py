"""Running kernels: ``RunConfig`` and the dispatch of torch tensors to a platform."""

from pypto.runtime.compiled import CompiledProgram
from pypto.runtime.config import PLATFORMS, RunConfig

__all__ = ["PLATFORMS", "CompiledProgram", "RunConfig"]
