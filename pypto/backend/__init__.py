"""The ground floor: the modeled hardware — its vocabulary (memory spaces, core kinds,
pipes, core instances) and its SoC tables (capacities, alignments, legal moves, costs, the
chip's clusters). It imports nothing of ours but ``pypto.errors``."""

from pypto.backend.arch import CUBE_K_BYTES, CoreId, CoreKind, MemorySpace, Pipe
from pypto.backend.soc import A2A3, BACKENDS, DEFAULT, BackendType, ChipCosts, Costs, SoC, SpaceSpec, backend

__all__ = ["A2A3", "BACKENDS", "CUBE_K_BYTES", "DEFAULT", "BackendType", "ChipCosts", "CoreId", "CoreKind", "Costs", "MemorySpace", "Pipe",
           "SoC", "SpaceSpec", "backend"]
