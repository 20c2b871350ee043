"""The SoC table: the one description of the modeled hardware.

Passes (capacities, alignments, granularity hints), the front end (legal moves), the
codegen and the simulator (pipes, costs, the chip's cores) and the tools (capacities) all
read it; nothing else states a capacity, an alignment, a legal transfer or a core count.
"""

from __future__ import annotations

import enum

import attrs
from pyrsistent import pmap

from pypto.backend.arch import CoreId, CoreKind, MemorySpace, Pipe


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
      otherwise each row is a burst, and a row shorter than the chip's GM access granularity
      (``SoC.gm_access_granularity``) occupies the link as if it were ``short_row_bytes``
      long (the unused rest of the access it costs). Why a2a3's rows under 512 B cost more per byte: calibrated to the seed's 16-25 % (the b_trans
      matmul, ``pypto.examples.b_trans_matmul``). A transfer by index (``tile.mgather``,
      ``tile.mscatter``) holds the vector pipe, which walks the index tile, for
      ``gm_latency`` and one burst per index — a row of the tensor, or one element — each
      costed as such a row.
    - MTE1 moves L1 -> L0 at ``l1_bytes_per_cycle``, latency ``mte1_latency``; the
      fixpipe drains L0C at ``fixpipe_bytes_per_cycle``.
    - The cube does one 16x16x16 fractal per ``cube_cycles_per_fractal`` after
      ``cube_startup``.
    - A vector instruction costs ``vector_startup`` plus, per 256 B repeat, the cycles of
      its op's cost class (``OpDef.unit``) from ``vector_cycles`` (1 when not listed).
    - The scalar unit issues one instruction per ``scalar_issue`` cycles, pays
      ``loop_iteration`` per loop trip and ``branch`` per if; a pipe queue holds at most
      ``queue_depth`` issued instructions before the scalar unit stalls. A scalar read of
      one GM element (``pl.read`` in a kernel) stalls it ``scalar_gm_read`` cycles: a miss
      of its data cache, out to GM and back. A write of one GM element (``pl.write`` of a
      tensor) holds it ``scalar_gm_write`` cycles (written through, and the cache line
      flushed so the MTE pipes see it); a read or write of one element of a Vec tile
      (``pl.read`` / ``pl.write`` of a tile) ``scalar_ub_access`` cycles. These run on the
      scalar unit's own pipe: it issues nothing else until they are done, and a wait_flag
      before them (a tile's producer) stalls it.
    - set_flag / wait_flag take ``sync_cycles`` on their pipe.
    - A ``pl.system.syncall`` holds the scalar unit for its arrival: ``syncall_hard``
      cycles to signal the FFTS block (assumed: a few dozen, a register write across the
      die), ``syncall_soft`` for the atomic add to the GM counter and its first poll
      (assumed: a GM write and a read round trip, as ``scalar_gm_write`` +
      ``scalar_gm_read``). The wait for the other participants is the chip's
      (``pypto.chip.barriers``), which releases a hard barrier ``syncall_hard`` after the
      last arrival and a soft one at the next poll, ``scalar_gm_read`` after it.
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
    # per cost class (``OpDef.unit``): exp, log, sqrt, rsqrt, recip are transcendental; the
    # divisions divide; row_expand_expdif subtracts then exponentiates; a sort or merge runs a
    # comparison network over each repeat's proposals; tile.rsqrt with its scratch tile takes a
    # square root, then divides a block of ones by it (sqrt_divide: the two passes)
    vector_cycles: pmap = pmap({"simple": 1, "transcendental": 2, "divide": 4, "exp_difference": 3, "transpose": 2,
                                 "sort": 8, "sqrt_divide": 6})
    scalar_issue: int = 2
    loop_iteration: int = 4
    branch: int = 2
    scalar_gm_read: int = 2 * 120  # a round trip at gm_latency
    scalar_gm_write: int = 120  # out to GM once
    scalar_ub_access: int = 4
    queue_depth: int = 32
    sync_cycles: int = 1
    syncall_hard: int = 40
    syncall_soft: int = 120 + 2 * 120


@attrs.frozen(kw_only=True)
class ChipCosts:
    """Cycle costs of the modeled chip around the cores (core clock cycles; model
    parameters, as ``Costs``'). The reference documents one figure, the pickup latency
    ("~0.8 µs per switch"); the others are assumptions of the same scale.

    - The orchestrator (one AICPU thread) interprets the orchestration in source order and
      spends ``submit`` per task it submits (dependency lookup, descriptor build).
    - A task whose producers have all finished is ready ``release`` later; an idle core of
      its kind takes it: the scheduler writes its descriptor (``dispatch``), the core picks
      it up ``pickup`` later and runs it; the scheduler observes its end ``completion``
      later (the task's finish) — only then is the core free and its consumers released.
    - An SPMD task's further blocks share its descriptor: the scheduler writes only each
      one's block index (``block_dispatch``) to the next idle core of the kind.
    - Swimlane records count a ``swimlane_hz`` clock (a2a3's 50 MHz system counter); the
      cores run at ``core_hz``.
    - A copy between host and device memory (``pypto.runtime.benchmark``'s H2D / D2H of
      host tensors) costs ``host_copy`` to set up, then moves ``host_link_bytes_per_cycle``
      (about 20 GB/s over PCIe at the core clock).
    """

    submit: int = 300
    release: int = 90
    dispatch: int = 180
    block_dispatch: int = 45
    pickup: int = 1440  # 0.8 µs at 1.8 GHz
    completion: int = 360
    core_hz: int = 1_800_000_000
    swimlane_hz: int = 50_000_000
    host_copy: int = 18_000  # 10 µs
    host_link_bytes_per_cycle: int = 11


@attrs.frozen(kw_only=True)
class Interconnect:
    """The card-to-card links between ranks (core clock cycles at ``ChipCosts.core_hz``;
    model parameters, each with where it comes from).

    - ``link_bytes_per_cycle``: one direction of one HCCS link. Source: Huawei's Atlas 800T
      A2 data sheet gives 392 GB/s of HCCS per Ascend 910B card over its 7 full-mesh links,
      56 GB/s a link, 31 bytes a cycle at 1.8 GHz. Each ordered pair of ranks has its own
      link (the 8-card full mesh); transfers on one link queue behind each other.
    - ``latency``: from a transfer's issue until its first bytes land in the peer's window.
      Assumed: 2 µs, the scale of a one-sided HCCL write between cards of one server.
    - ``rma_issue``: the scalar unit's cost to issue a TPUT / TGET descriptor. Assumed: 0.2 µs.
    - ``notify_issue``: issuing a TNOTIFY (a 4-byte remote write or atomic add), whose value
      lands ``latency`` later. Assumed: 0.1 µs.
    - ``poll``: one TWAIT poll of the local signal cell (a GM read by the scalar unit); a wait
      ends at the first poll after its condition holds. Assumed: 0.05 µs.
    """

    link_bytes_per_cycle: int = 31
    latency: int = 3600
    rma_issue: int = 360
    notify_issue: int = 180
    poll: int = 90


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
    # The bytes one GM access moves at once: a transfer's row shorter than this costs as
    # ``Costs.short_row_bytes`` (the unused rest of the access it pays for).
    gm_access_granularity: int
    # The chip: ``clusters`` clusters, each of ``aic_per_cluster`` cube cores and
    # ``aiv_per_cluster`` vector cores that share flags (cross-core sync stays in a cluster).
    clusters: int
    aic_per_cluster: int = 1
    aiv_per_cluster: int = 2
    dies: int = 1  # the clusters are spread evenly over the dies
    # (src, dst) moves between the cube and the vector cores of one cluster that the chip's
    # memory graph has (A5: the fixpipe writes L0C into UB, the vector core's MTE3 writes UB
    # into L1). This model still stages a cross-core move of a mixed scope through GM, so
    # these only extend the memory graph (``find_mem_path``), not what one instruction moves.
    cluster_moves: frozenset = frozenset()
    # Pipes each core has, and which pipe moves data between two spaces.
    core_pipes: pmap = pmap()
    costs: Costs = Costs()
    chip: ChipCosts = ChipCosts()
    links: Interconnect = Interconnect()  # between the cards of a cluster of ranks
    event_ids: int = 8  # flags per direction per pipe pair
    # The M and N extents ConvertTensorToTileOps gives one cube block of a tensor-level
    # matmul (an assumption: a 128 x 256 FP32 block fills Acc, and its K slices then fit
    # Left/Right with a useful K). The K slice is the longest the L0/L1 capacities allow.
    cube_block_m: int = 128
    cube_block_n: int = 256
    # the reference's name of the chip, and the PTO instructions it does not have (a kernel
    # holding one is refused on this one's simulator, naming the chips that have it)
    product: str = ""
    platform: str = ""  # the simulated platform that runs this chip (RunConfig(platform=...))
    lacks: frozenset = frozenset()
    # dtypes (short names) the store pipe cannot add atomically into GM though the ISA
    # names them (A5: bf16, the reference's Ascend950Handler::SupportsBf16AtomicAdd)
    lacks_atomic_add: frozenset = frozenset()
    # the reference's handler figures with no effect on this model's arithmetic
    launch_core_count_method: str = "set_block_num"
    requires_gm_pipe_buffer: bool = True
    # The vector unit's one-instruction conversions (dtype short name -> the ones it reaches),
    # where the chip's LegalizeTileCast expands the others into chains of them; None: every
    # cast the ops accept is one instruction (a2a3: the reference's feature matrix needs no
    # expansion there)
    native_casts: object = None

    @property
    def title(self) -> str:
        """How messages name the chip: ``Ascend950 (a5)``."""
        return f"{self.product} ({self.name})"

    def spec(self, space: MemorySpace) -> SpaceSpec:
        return self.spaces[space]

    @property
    def aic_cores(self) -> int:
        return self.clusters * self.aic_per_cluster

    @property
    def aiv_cores(self) -> int:
        return self.clusters * self.aiv_per_cluster

    def per_cluster(self, kind: CoreKind) -> int:
        return self.aic_per_cluster if kind is CoreKind.AIC else self.aiv_per_cluster

    def cluster_cores(self, cluster: int) -> tuple[CoreId, ...]:
        """The cores of one cluster: its AICs, then its AIVs."""
        if not 0 <= cluster < self.clusters:
            raise ValueError(f"{self.name} has clusters 0..{self.clusters - 1}, not {cluster}")
        return tuple(CoreId(kind, cluster, i) for kind in (CoreKind.AIC, CoreKind.AIV)
                     for i in range(self.per_cluster(kind)))

    def cores(self, kind: CoreKind | None = None) -> tuple[CoreId, ...]:
        """Every core of the chip (of one kind), cluster by cluster."""
        return tuple(c for k in range(self.clusters) for c in self.cluster_cores(k) if kind in (None, c.kind))

    def core_number(self, core: CoreId) -> int:
        """The core's id on the chip, as the runtime and its swimlane number cores: the
        cube cores first, cluster by cluster, then the vector cores (cluster c's at
        aic_cores + c * aiv_per_cluster + index)."""
        if core.kind is CoreKind.AIC:
            return core.cluster * self.aic_per_cluster + core.index
        return self.aic_cores + core.cluster * self.aiv_per_cluster + core.index

    def can_move(self, src: MemorySpace, dst: MemorySpace) -> bool:
        return (src, dst) in self.legal_moves

    def crosses(self, src: MemorySpace, dst: MemorySpace) -> bool:
        """Whether a move from ``src`` to ``dst`` goes from one kind of core to the other
        through GM (a store on one side, a load on the other): what a mixed scope stages."""
        if src is MemorySpace.DDR or dst is MemorySpace.DDR or self.can_move(src, dst):
            return False
        if src not in self.spaces or dst not in self.spaces:
            return False
        return self.spec(src).core is not self.spec(dst).core and self.can_move(src, MemorySpace.DDR) \
            and self.can_move(MemorySpace.DDR, dst)

    def targets_from(self, src: MemorySpace) -> tuple[MemorySpace, ...]:
        return tuple(d for d in MemorySpace if (src, d) in self.legal_moves)

    def graph_from(self, src: MemorySpace) -> tuple[MemorySpace, ...]:
        """Where the chip's memory graph goes from ``src`` in one hop: the single-instruction
        moves and the cluster's cross-core moves (the reference's ``mem_graph``)."""
        return tuple(d for d in MemorySpace if (src, d) in self.legal_moves or (src, d) in self.cluster_moves)

    @property
    def clusters_per_die(self) -> int:
        return self.clusters // self.dies


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
            # the cube core's L1 -> GM DMA (copy_cbuf_to_gm, on its MTE3); A5's cube has none
            (M.Mat, M.DDR),
        }
    ),
    l2_cache_line=512,
    recommended_transfer_bytes=512,
    gm_access_granularity=512,  # the reference's Ascend910BHandler (GetGmAccessGranularityBytes)
    clusters=24,  # 24 AIC + 48 AIV
    core_pipes=pmap({
        CoreKind.AIC: (Pipe.MTE2, Pipe.MTE1, Pipe.CUBE, Pipe.FIXPIPE, Pipe.MTE3, Pipe.SCALAR),
        CoreKind.AIV: (Pipe.MTE2, Pipe.VECTOR, Pipe.MTE3, Pipe.SCALAR),
    }),
    product="Ascend910B",
    platform="a2a3sim",
    # pto-isa's a5 only: the counter-based generator (pl.tile.random), the MX mmad (pl.matmul_mx)
    lacks=frozenset({"TRANDOM", "MMAD_MX"}),
)

# Ascend950 (A5). Every figure is the reference's (its C++ backend: Create950SoC in
# src/backend/common/soc.cpp, Ascend950Handler in include/pypto/backend/950/) unless marked
# an assumption.
A5 = SoC(
    name="a5",
    spaces=pmap(
        {
            M.Mat: SpaceSpec(M.Mat, CoreKind.AIC, 512 * KiB, 128),
            M.Left: SpaceSpec(M.Left, CoreKind.AIC, 64 * KiB, 64),
            M.Right: SpaceSpec(M.Right, CoreKind.AIC, 64 * KiB, 64),
            M.Acc: SpaceSpec(M.Acc, CoreKind.AIC, 256 * KiB, 128),  # twice a2a3's
            M.Bias: SpaceSpec(M.Bias, CoreKind.AIC, 4 * KiB, 64),
            # the MX matmuls' E8M0 scales, beside L0A / L0B
            M.LeftScale: SpaceSpec(M.LeftScale, CoreKind.AIC, 4 * KiB, 32),
            M.RightScale: SpaceSpec(M.RightScale, CoreKind.AIC, 4 * KiB, 32),
            # 248 KiB physical; the top 8 KiB are kept back as on a2a3 (pto-isa#170)
            M.Vec: SpaceSpec(M.Vec, CoreKind.AIV, 240 * KiB, 128, physical=248 * KiB),
        }
    ),
    legal_moves=frozenset(
        {
            (M.DDR, M.Vec),
            (M.Vec, M.Vec),  # a vector copy within UB (as on a2a3)
            (M.DDR, M.Mat),
            (M.Vec, M.DDR),
            (M.Mat, M.Left),
            (M.Mat, M.Right),
            (M.Mat, M.Bias),
            (M.Mat, M.LeftScale),
            (M.Mat, M.RightScale),
            (M.Acc, M.Mat),
            (M.Acc, M.DDR),
            # no Mat -> DDR: A5's cube core has no L1 -> GM DMA (the reference's graph has none)
        }
    ),
    cluster_moves=frozenset({(M.Acc, M.Vec), (M.Vec, M.Mat)}),
    l2_cache_line=512,
    recommended_transfer_bytes=128,  # PH001's threshold: the GM access granularity
    gm_access_granularity=128,
    clusters=36,  # 18 mixed clusters (1 AIC + 2 AIV) per die, 2 dies: 36 AIC + 72 AIV
    dies=2,
    core_pipes=pmap({
        CoreKind.AIC: (Pipe.MTE2, Pipe.MTE1, Pipe.CUBE, Pipe.FIXPIPE, Pipe.MTE3, Pipe.SCALAR),
        CoreKind.AIV: (Pipe.MTE2, Pipe.VECTOR, Pipe.MTE3, Pipe.SCALAR),
    }),
    # Assumptions, scaled from a2a3's by the ratios of the reference's own cost models
    # (Ascend950Handler::GetL0CostModel against a2a3's): the cube's fixed cost per
    # instruction 25 vs 21 cycles, its L0A load bandwidth 206.3 vs 129.7 B/cycle. A row
    # under the 128 B access granularity costs as 56 B (a2a3's 224 / 512, at 128). The
    # drain (fixpipe) figure is kept: the reference notes its a5 fit carries a ~4x
    # simulator-vs-device gap, the same as a2a3's simulator, so the device ratio is unknown.
    costs=Costs(cube_startup=14, l1_bytes_per_cycle=400, short_row_bytes=56),
    product="Ascend950",
    platform="a5sim",
    lacks_atomic_add=frozenset({"bf16"}),
    launch_core_count_method="set_core_num",
    requires_gm_pipe_buffer=False,
    # pto-isa's A5 tcvt conversions, as the reference's LegalizeTileCast page lists them
    # (docs/en/dev/passes/14-legalize_tile_cast.md, "Ascend950 (a5)", the native column),
    # over the dtypes modeled here
    native_casts=pmap({
        "bf16": frozenset({"fp16", "fp32", "int32"}),
        "fp16": frozenset({"fp32", "int16", "int32", "int8", "uint8"}),
        "fp32": frozenset({"bf16", "fp16", "int16", "int32", "int64"}),
        "int16": frozenset({"fp16", "fp32", "int32", "uint32", "uint8"}),
        "int32": frozenset({"fp32", "int16", "int64", "uint16", "uint8"}),
        "int64": frozenset({"fp32", "int32"}),
        "int8": frozenset({"fp16", "int16", "int32"}),
        "uint32": frozenset({"int16", "uint16", "uint8"}),
        "uint8": frozenset({"fp16", "uint16"}),
    }),
)


class BackendType(enum.Enum):
    """The reference's names for the SoC tables (``RunConfig(backend=...)`` takes either).
    Every chip the reference names is a member; ``BACKENDS`` holds those modeled here."""

    Ascend910B = "a2a3"
    Ascend950 = "a5"


BACKENDS = pmap({"a2a3": A2A3, "a5": A5})
DEFAULT = A2A3


def having(has, but: SoC) -> tuple[str, str] | None:
    """The chips other than ``but`` of which ``has(table)`` holds, as a message names them
    ("Ascend950 (a5)") and as a hint runs them ("RunConfig(platform='a5sim')"); None when
    there is none."""
    tables = [t for t in BACKENDS.values() if t is not but and has(t)]
    if not tables:
        return None
    return (" or ".join(t.title for t in tables),
            " or ".join(f"RunConfig(platform='{t.platform}')" for t in tables))


def backend(name: str | BackendType) -> SoC:
    """The SoC table of a modeled chip; a chip the reference names that has no table here,
    or a name of neither, is a ConfigError that lists the ones there are."""
    from pypto.errors import ConfigError

    key = name.value if isinstance(name, BackendType) else name
    if key in BACKENDS:
        return BACKENDS[key]
    modeled = ", ".join(f"{k!r} (BackendType.{BackendType(k).name})" if k in BackendType._value2member_map_
                        else repr(k) for k in sorted(BACKENDS))
    if key in BackendType._value2member_map_:
        raise ConfigError(f"backend {key!r} (BackendType.{BackendType(key).name}) is not modeled by this package yet",
                          hint=f"use one of: {modeled}")
    raise ConfigError(f"unknown backend {name!r}", hint=f"use one of: {modeled}")
