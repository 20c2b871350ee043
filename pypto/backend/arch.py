"""The hardware's vocabulary: memory spaces, core kinds, pipes, and core instances.

These name things in the IR (a tile's space), in instruction programs (a pipe) and on
the chip (a core); the SoC table (``pypto.backend.soc``) says how large and how fast.
"""

from __future__ import annotations

import enum

import attrs


# The K one fractal step of the cube reads per output element: 32 bytes of the operand dtype
# (16 fp16/bf16, 8 fp32, 32 int8). The cube's accumulation works in these blocks of K
# (pypto.sim.ops.cube_math), so the compiler slices K only at their multiples.
CUBE_K_BYTES = 32


class MemorySpace(enum.Enum):
    """Where a tile or tensor lives. Printed as ``pl.Mem.<name>``."""

    DDR = "DDR"
    Vec = "Vec"  # UB, the vector core's unified buffer
    Mat = "Mat"  # L1 of the cube core
    Left = "Left"  # L0A
    Right = "Right"  # L0B
    Acc = "Acc"  # L0C
    Bias = "Bias"
    LeftScale = "LeftScale"  # the MX matmul's left scales (A5)
    RightScale = "RightScale"  # the MX matmul's right scales (A5)

    def __repr__(self) -> str:
        return f"pl.Mem.{self.name}"

    __hash__ = object.__hash__  # as CoreKind's


class CoreKind(enum.Enum):
    AIC = "aic"  # cube core
    AIV = "aiv"  # vector core
    # the reference's names of the same two kinds (its ``CoreType``): aliases, the same members
    CUBE = "aic"
    VECTOR = "aiv"

    # Members are singletons and compare by identity: the identity hash is the same
    # relation, computed in C (Enum's own hashes the name in Python, on every dict lookup
    # of the simulator's per-pipe state).
    __hash__ = object.__hash__


class Pipe(enum.Enum):
    """The AI core's execution pipes, in dataflow order (the order trace lanes use)."""

    MTE2 = "MTE2"  # GM -> UB (AIV) / GM -> L1 (AIC)
    MTE1 = "MTE1"  # L1 -> L0A / L0B
    CUBE = "CUBE"  # mmad
    VECTOR = "VECTOR"
    FIXPIPE = "FIXPIPE"  # L0C -> GM / L1
    MTE3 = "MTE3"  # UB -> GM
    SCALAR = "SCALAR"  # issues everything in order; runs control flow

    __hash__ = object.__hash__  # as CoreKind's


@attrs.frozen(order=True, cache_hash=True)  # a dict key on the simulator's hot path
class CoreId:
    """One core of the chip: its kind, its cluster, and which of the cluster's cores of
    that kind it is (an a2a3 cluster has one AIC, index 0, and two AIVs, 0 and 1)."""

    kind: CoreKind
    cluster: int
    index: int = 0
    # ``aic<n>`` / ``aiv<n>``, numbered across the chip as the hardware numbers them:
    # cluster c holds aic<c> and aiv<2c>, aiv<2c+1> (computed once: traces read it per item)
    name: str = attrs.field(init=False, eq=False, order=False, repr=False)

    def __attrs_post_init__(self):
        per = 1 if self.kind is CoreKind.AIC else 2
        object.__setattr__(self, "name", f"{self.kind.value}{self.cluster * per + self.index}")

    def __str__(self) -> str:
        return self.name
