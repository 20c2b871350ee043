"""The SoC table: the one description of the modeled hardware.

Passes (capacities, alignments, granularity hints), the front end (legal moves), the
codegen and the simulator (pipes, costs) and the tools (capacities) all read it; nothing
else states a capacity, an alignment or a legal transfer.
"""

from __future__ import annotations

import enum

import attrs
from pyrsistent import pmap


class MemorySpace(enum.Enum):
    """Where a tile or tensor lives. Printed as ``pl.Mem.<name>``."""

    DDR = "DDR"
    Vec = "Vec"  # UB, the vector core's unified buffer
    Mat = "Mat"  # L1 of the cube core
    Left = "Left"  # L0A
    Right = "Right"  # L0B
    Acc = "Acc"  # L0C
    Bias = "Bias"

    def __repr__(self) -> str:
        return f"pl.Mem.{self.name}"


class CoreKind(enum.Enum):
    AIC = "aic"  # cube core
    AIV = "aiv"  # vector core


@attrs.frozen
class SpaceSpec:
    space: MemorySpace
    core: CoreKind
    capacity: int  # bytes the planner may use
    align: int  # bytes
    physical: int = 0  # bytes on the die when larger than usable (UB keeps some back)


@attrs.frozen(kw_only=True)
class SoC:
    name: str
    spaces: pmap  # MemorySpace -> SpaceSpec
    # (src, dst) pairs a single transfer instruction can move between.
    legal_moves: frozenset
    l2_cache_line: int
    # Innermost extent below which a GM<->chip transfer is flagged (PH001).
    recommended_transfer_bytes: int
    aic_cores: int
    aiv_cores: int

    def spec(self, space: MemorySpace) -> SpaceSpec:
        return self.spaces[space]

    def can_move(self, src: MemorySpace, dst: MemorySpace) -> bool:
        return (src, dst) in self.legal_moves

    def targets_from(self, src: MemorySpace) -> tuple[MemorySpace, ...]:
        return tuple(d for d in MemorySpace if (src, d) in self.legal_moves)


M = MemorySpace
KiB = 1024

A2A3 = SoC(
    name="a2a3",
    spaces=pmap(
        {
            M.Mat: SpaceSpec(M.Mat, CoreKind.AIC, 512 * KiB, 128),
            M.Left: SpaceSpec(M.Left, CoreKind.AIC, 64 * KiB, 64),
            M.Right: SpaceSpec(M.Right, CoreKind.AIC, 64 * KiB, 64),
            M.Acc: SpaceSpec(M.Acc, CoreKind.AIC, 128 * KiB, 128),
            M.Bias: SpaceSpec(M.Bias, CoreKind.AIC, 1 * KiB, 64),
            M.Vec: SpaceSpec(M.Vec, CoreKind.AIV, 184 * KiB, 128, physical=192 * KiB),
        }
    ),
    legal_moves=frozenset(
        {
            (M.DDR, M.Vec),
            (M.DDR, M.Mat),
            (M.Vec, M.DDR),
            (M.Mat, M.Left),
            (M.Mat, M.Right),
            (M.Mat, M.Bias),
            (M.Acc, M.Mat),
            (M.Acc, M.DDR),
        }
    ),
    l2_cache_line=512,
    recommended_transfer_bytes=512,
    aic_cores=24,
    aiv_cores=48,
)

BACKENDS = pmap({"a2a3": A2A3})
DEFAULT = A2A3


def backend(name: str) -> SoC:
    from pypto.errors import ConfigError

    try:
        return BACKENDS[name]
    except KeyError:
        raise ConfigError(
            f"unknown backend {name!r}", hint=f"use one of: {', '.join(sorted(BACKENDS))}"
        ) from None
