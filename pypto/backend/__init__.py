"""The ground floor: the modeled hardware — its vocabulary (memory spaces, core kinds,
pipes, core instances) and its SoC tables (capacities, alignments, legal moves, costs, the
chip's clusters) — and the reference's backend objects read off those tables
(``Backend910B.instance()``, ``set_backend_type``, ...). It imports nothing of ours but
``pypto.errors``."""

from pypto.backend.arch import CUBE_K_BYTES, CoreId, CoreKind, MemorySpace, Pipe
from pypto.backend.backends import (
    Backend,
    Backend910B,
    Backend950,
    BackendHandler,
    Cluster,
    Core,
    Die,
    Mem,
    get_backend_instance,
    get_backend_type,
    get_handler,
    is_backend_configured,
    reset_for_testing,
    set_backend_type,
)
from pypto.backend.soc import A2A3, A5, BACKENDS, DEFAULT, BackendType, ChipCosts, Costs, SoC, SpaceSpec, backend, having

__all__ = ["A2A3", "A5", "BACKENDS", "CUBE_K_BYTES", "DEFAULT", "Backend", "Backend910B", "Backend950", "BackendHandler", "BackendType", "ChipCosts",
           "Cluster", "Core", "CoreId", "CoreKind", "Costs", "Die", "Mem", "MemorySpace", "Pipe", "SoC", "SpaceSpec", "backend", "having",
           "get_backend_instance", "get_backend_type", "get_handler", "is_backend_configured", "reset_for_testing",
           "set_backend_type"]
