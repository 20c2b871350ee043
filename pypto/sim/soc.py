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


class Pipe(enum.Enum):
    """The AI core's execution pipes, in dataflow order (the order trace lanes use)."""

    MTE2 = "MTE2"  # GM -> UB (AIV) / GM -> L1 (AIC)
    MTE1 = "MTE1"  # L1 -> L0A / L0B
    CUBE = "CUBE"  # mmad
    VECTOR = "VECTOR"
    FIXPIPE = "FIXPIPE"  # L0C -> GM / L1
    MTE3 = "MTE3"  # UB -> GM
    SCALAR = "SCALAR"  # issues everything in order; runs control flow


@attrs.frozen(kw_only=True)
class Costs:
    """Cycle costs of the modeled AI core. These are model parameters, not measurements:
    each is an assumption, chosen so the model reproduces the effects the reference
    documentation reports (``tests/test_calibration.py``, ``bench/simulator.py``).

    Every instruction occupies its pipe for some cycles; the transfer pipes (MTE2, MTE1,
    FIXPIPE, MTE3) also have a latency after that before their data lands, during which
    the pipe already starts its next transfer. A set_flag waits for its pipe's earlier
    work to land.

    - GM transfers (MTE2 in; MTE3, FIXPIPE out) move ``gm_bytes_per_cycle``, with
      ``gm_latency``. A window whose rows are whole tensor rows is one contiguous burst;
      otherwise each row is a burst, and a row shorter than the L2 line occupies the link
      as if it were ``short_row_bytes`` long (the unused rest of the line it costs). Why
      rows under 512 B cost more per byte: calibrated to the seed's 16-25 % (the b_trans
      matmul, ``pypto.examples.b_trans_matmul``).
    - MTE1 moves L1 -> L0 at ``l1_bytes_per_cycle``, latency ``mte1_latency``; the
      fixpipe drains L0C at ``fixpipe_bytes_per_cycle``.
    - The cube does one 16x16x16 fractal per ``cube_cycles_per_fractal`` after
      ``cube_startup``.
    - A vector instruction costs ``vector_startup`` plus, per 256 B repeat, the op's cycles
      from ``vector_cycles`` (1 when not listed).
    - The scalar unit issues one instruction per ``scalar_issue`` cycles, pays
      ``loop_iteration`` per loop trip and ``branch`` per if; a pipe queue holds at most
      ``queue_depth`` issued instructions before the scalar unit stalls.
    - set_flag / wait_flag take ``sync_cycles`` on their pipe.
    """

    gm_latency: int = 120
    gm_bytes_per_cycle: int = 128
    short_row_bytes: int = 224
    l1_bytes_per_cycle: int = 256
    mte1_latency: int = 16
    fixpipe_bytes_per_cycle: int = 128
    cube_startup: int = 12
    cube_cycles_per_fractal: int = 1
    vector_startup: int = 8
    vector_repeat_bytes: int = 256
    vector_cycles: pmap = pmap({"exp": 2, "log": 2, "sqrt": 2, "rsqrt": 2, "recip": 2, "div": 4, "divs": 4,
                                "row_expand_expdif": 3, "row_expand_div": 4, "col_expand_div": 4,
                                "transpose": 2})
    scalar_issue: int = 2
    loop_iteration: int = 4
    branch: int = 2
    queue_depth: int = 32
    sync_cycles: int = 1


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
    # Pipes each core has, and which pipe moves data between two spaces.
    core_pipes: pmap = pmap()
    costs: Costs = Costs()
    event_ids: int = 8  # flags per direction per pipe pair
    # The M and N extents ConvertTensorToTileOps gives one cube block of a tensor-level
    # matmul (an assumption: a 128 x 256 FP32 block fills Acc, and its K slices then fit
    # Left/Right with a useful K). The K slice is the longest the L0/L1 capacities allow.
    cube_block_m: int = 128
    cube_block_n: int = 256

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
            (M.Vec, M.Vec),  # a vector copy within UB
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
    core_pipes=pmap({
        CoreKind.AIC: (Pipe.MTE2, Pipe.MTE1, Pipe.CUBE, Pipe.FIXPIPE, Pipe.SCALAR),
        CoreKind.AIV: (Pipe.MTE2, Pipe.VECTOR, Pipe.MTE3, Pipe.SCALAR),
    }),
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
