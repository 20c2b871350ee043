"""The cycle-level simulator of the AI cores: each launch on the cores of one cluster (its
AIC, and one of its AIVs), any number of launches on one clock, each core an instance
(``CoreId``) with its own memories and flags.

A launch is ``simulate`` (pure: the Timeline) then ``apply`` (the data). Each core's
scalar unit (``issue.Issuer``) walks its program in order, evaluating scalars and issuing
every instruction into its pipe's queue; each pipe runs its queue in order, one
instruction at a time, concurrently with the other pipes and cores, held back only by
wait_flag (``schedule``). Costs come from the SoC table. As each record starts it is
race-checked, traced and compiled into its data effect (``effects``), then dropped; a
steady loop on one core is fast-forwarded from its last simulated trip (``steady``). The
data: every instruction reads its operands when it starts and writes its result when it
ends, on byte-addressed on-chip memories and the GM tensors — with the op semantics the
interpreter uses, so a race-free program computes the interpreter's bits.

Hazards: two instructions on different pipes that touch the same bytes (one writing),
which the flags do not order, are a ``SimulatorHazard`` — whether or not this run's
timing happened to overlap them — unless ``unsafe``, where the data corrupts as hardware
would. Vector clocks carried through the flags decide "ordered"; nothing orders two
launches, so GM bytes they share (one writing) are a hazard.
"""

from __future__ import annotations

import time
import weakref

import attrs
import torch

from pypto.codegen.isa import GmLoc, Instr, Kernel, ScalarAssign, ScalarLoad, walk
from pypto.ir.collector import collector_paused
from pypto.ir import nodes as n
from pypto.ir.ops.spmd import BLOCK_REGISTERS, LANE_REGISTER
from pypto.ir.types import TensorType
from pypto.sim.data import effects as Effects
from pypto.sim.data.steps import Steps, run_steps
from pypto.sim.ops import fresh
from pypto.sim import lacking
from pypto.sim.fastforward import offsets
from pypto.sim.reports import progress
from pypto.sim.data import ranks
from pypto.sim.timing.hazards import SimulatorHazard
from pypto.sim.record import Items, Record
from pypto.sim.reports.run_report import RunReport
from pypto.sim.timing.schedule import SimulatorDeadlock, schedule
from pypto.sim.timing.issue import Issuer, SimulatorError
from pypto.sim.accesses.views import overlap_groups, overlaps_any
from pypto.backend import CoreKind, SoC

__all__ = ["Launch", "RunReport", "SimulatorDeadlock", "SimulatorError", "SimulatorHazard", "Timeline", "apply",
           "run_kernel", "simulate", "simulate_together"]


# ----------------------------------------------------------------------------- machine


@attrs.frozen(eq=False)
class Timeline:
    """Launches in simulated time, before any data moves: what each pipe of each core does
    when, the trace items, and the data effects in time order (each instruction reads its
    operands at its start and writes its result at its end). Pure: a function of the
    kernels, their scalar arguments, where their tensors lie and which cores run them, so
    a launch like an earlier one reuses it."""

    effects: tuple  # (time, 0 end / 1 begin, launch, program order, item), sorted; empty with ``steps``
    items: Items  # the trace items
    cycles: int
    pipe_cycles: dict  # core name -> pipe -> cycles occupied
    instructions: int
    sync_instructions: int
    memories: tuple  # (core name, space, bytes) of the on-chip memories it uses, as far as it uses them
    launches: int = 1
    steps: Steps | None = None  # a race-free timeline's effects, compiled (then ``effects`` is empty)
    # the GM windows its loads and stores move: (launch, parameter, writes, offsets, extents), each once
    footprint: tuple = ()
    skipped: int = 0  # trips of steady loops produced from the trip before rather than simulated (``steady``)
    prints: tuple = ()  # what its pl.debug_prints saw, at their cycles (``pypto.sim.reports.prints``)
    # each pl.system.syncall the launch reaches, in order: ((core name, the cycle it arrives), ...)
    arrivals: tuple = ()

    def report(self) -> RunReport:
        return RunReport(cycles=self.cycles, pipe_cycles={c: dict(p) for c, p in self.pipe_cycles.items()},
                         instructions=self.instructions, sync_instructions=self.sync_instructions,
                         launches=self.launches, timelines=[(0, self.items)], prints=list(self.prints))


@attrs.frozen
class Launch:
    """A kernel with its arguments, on a cluster: its AIC program runs on the cluster's
    cube core, its AIV program on vector core ``lane`` of it."""

    kernel: Kernel
    args: tuple
    cluster: int = 0
    lane: int = 0
    block: int = 0  # which block of an SPMD task, of ``blocks``: what its block registers read
    blocks: int = 1
    # a Group member's hand-written pipes: their GM rings by name (shared with the peer), and
    # the vector cores (lanes) a cube member's pipe flags go to
    scratch: tuple = ()
    peer_lanes: tuple = ()
    # per pl.system.syncall: ((core name, the cycles it holds that core past its arrival), ...)
    holds: tuple = ()

    def peers(self, soc: SoC) -> dict:
        cores = soc.cluster_cores(self.cluster)
        aiv = [c for c in cores if c.kind is CoreKind.AIV]
        if not 0 <= self.lane < len(aiv):
            raise SimulatorError(f"{soc.name} clusters have vector cores 0..{len(aiv) - 1}, not {self.lane}")
        cube = next(c for c in cores if c.kind is CoreKind.AIC)
        if self.kernel.lanes > 1:  # a split kernel's AIV program runs on each vector core
            if self.kernel.lanes > len(aiv):
                raise SimulatorError(f"{self.kernel.name} splits its vector work over {self.kernel.lanes} cores, and "
                                     f"{soc.name} clusters have {len(aiv)}")
            return {CoreKind.AIC: cube, CoreKind.AIV: tuple(aiv[:self.kernel.lanes])}
        if self.peer_lanes:
            return {CoreKind.AIC: cube, CoreKind.AIV: tuple(aiv[k] for k in self.peer_lanes)}
        return {CoreKind.AIC: cube, CoreKind.AIV: aiv[self.lane]}

    def tensors(self) -> dict:
        out = {name: v for (name, t), v in zip(self.kernel.params, self.args) if isinstance(t, TensorType)}
        out.update(self.scratch)
        return out


def run_kernel(kernel: Kernel, args: tuple, soc: SoC, *, unsafe: bool = False) -> tuple[tuple, RunReport]:
    """Run one launch of ``kernel`` on cluster 0; GM tensors are written in place."""
    began = time.perf_counter()
    launch = Launch(kernel, args)
    timeline = simulate(kernel, args, soc, unsafe=unsafe)
    apply(timeline, launch.tensors())
    report = timeline.report()
    report.wall_seconds = time.perf_counter() - began
    return (), report


def simulate(kernel: Kernel, args: tuple, soc: SoC, *, unsafe: bool = False, cluster: int = 0,
             lane: int = 0, block: int = 0, blocks: int = 1, holds: tuple = ()) -> Timeline:
    """One launch's Timeline (a hazard or deadlock raises here), remembered per kernel for
    the same scalar arguments, tensor views and cores (and block registers, if it reads
    them): control flow reads no tensor data, and where in memory the tensors lie matters
    only as far as they share storage."""
    if ranks.crosses(kernel):  # its timing and data are its peers' too: simulated each time, with them
        return simulate_together((Launch(kernel, args, cluster, lane, block, blocks),), soc, unsafe=unsafe)
    cache = _timelines(kernel)
    if cache.reads_registers is None:
        cache.reads_registers = _reads_block_registers(kernel)
        # an SPMD block's index is a scalar like any: it may only move windows (a kernel
        # whose control flow reads GM data is simulated for each value of that data)
        cache.moving = {} if scalar_reads(kernel) else offsets.moving(kernel, (_BLOCK_IDX,) if cache.reads_registers
                                                                       else ())
    moving = {} if unsafe or fresh.checking() else _moving_values(kernel, args, cache.moving, block)
    registers = ("moving" if _BLOCK_IDX in moving else block, blocks) if cache.reads_registers else ()
    # what fresh memory holds is part of the data the scalar unit may read (a tile element)
    key = (id(soc), unsafe, cluster, lane, registers, fresh.fresh_byte(), fresh.checking(), holds) + \
        _placement(kernel, args, moving) + _data(kernel, args, scalar_reads(kernel))
    entry = cache.pop(key, None)  # the most recently used go last

    def at(values=None):  # the launch with these values of its moving scalars
        moved = args if values is None else tuple(values.get(p, a) for (p, _), a in zip(kernel.params, args))
        b = block if values is None else values.get(_BLOCK_IDX, block)
        return simulate_together((Launch(kernel, moved, cluster, lane, b, blocks, holds=holds),), soc,
                                 unsafe=unsafe)

    if entry is None:
        timeline = at()
        entry = offsets.Family(timeline, moving, cache.moving) if moving else timeline
        cache.items_kept += timeline.items.stored()
        while cache and cache.items_kept > _KEPT_ITEMS:
            cache.items_kept -= _kept(cache.pop(next(iter(cache)))).items.stored()
    cache[key] = entry
    if not isinstance(entry, offsets.Family):
        return entry
    if entry.values != moving and entry.steps is None and not entry.learn(at):
        # its effects do not move in ints alone (a fast-forwarded loop's trips are one
        # effect): a timeline per value, as for any other scalar
        cache.moving = {}
        cache.pop(key)
        return simulate(kernel, args, soc, unsafe=unsafe, cluster=cluster, lane=lane, block=block, blocks=blocks,
                        holds=holds)
    timeline = entry.at(moving)
    if not offsets.inside(timeline.footprint, Launch(kernel, args).tensors()):
        # a window moved out of its tensor may land on another's bytes: this value's
        # hazards are its own (and its out-of-range store is said where it is)
        return at()
    return timeline


def _kept(entry) -> Timeline:
    return entry.timeline if isinstance(entry, offsets.Family) else entry


def _moving_values(kernel: Kernel, args: tuple, moving: dict, block: int) -> dict:
    """The values of the scalars that only move this launch's GM windows (``offsets``),
    its block index among them."""
    if not moving:
        return {}
    params = [p for p, _ in kernel.params]
    tensors = {p: a for (p, t), a in zip(kernel.params, args) if isinstance(t, TensorType)}
    groups = dict(zip(tensors, overlap_groups(list(tensors.values()))))
    out = {}
    for name, uses in moving.items():
        value = block if name == _BLOCK_IDX else args[params.index(name)]
        if type(value) is int and offsets.shifts(uses, tensors, groups):
            out[name] = value
    return out


def _reads_block_registers(kernel: Kernel) -> bool:
    """Whether any of the kernel's programs reads ``%block_idx`` or ``%block_num``."""
    return any(isinstance(x, ScalarAssign) and n.expr_vars(x.value) & _REGISTERS
               for program in kernel.programs for x in walk(program.body))


def scalar_reads(kernel: Kernel) -> frozenset:
    """The tensor parameters whose data the kernel's control flow depends on: those its
    scalar unit reads elements of (``pl.read``) — or, where it reads an element of a tile
    (computed from any of them), all of them. Found once per kernel."""
    cache = _timelines(kernel)
    if cache.loaded is None:
        if reads_tiles(kernel):
            cache.loaded = frozenset(name for name, t in kernel.params if isinstance(t, TensorType))
        else:
            cache.loaded = frozenset(x.tensor for program in kernel.programs for x in walk(program.body)
                                     if isinstance(x, ScalarLoad))
    return cache.loaded


def reads_tiles(kernel: Kernel) -> bool:
    """Whether the kernel's scalar unit reads an element of a tile (``pl.read`` of a tile):
    then its simulation computes the data as it goes. Found once per kernel."""
    cache = _timelines(kernel)
    if cache.reads_tiles is None:
        cache.reads_tiles = any(isinstance(x, Instr) and (x.result is not None or x.op == "tile.debug_print")
                                for program in kernel.programs for x in walk(program.body))
    return cache.reads_tiles


def _data(kernel: Kernel, args: tuple, loaded: frozenset) -> tuple:
    """The contents of the tensors the scalar unit reads, as the timeline depends on them."""
    if not loaded:
        return ()
    return tuple(a.contiguous().view(-1).view(torch.uint8).numpy().tobytes() if a.numel() else b""
                 for (name, _), a in zip(kernel.params, args) if name in loaded)


_REGISTERS = frozenset(BLOCK_REGISTERS.values())
_BLOCK_NAMES = (BLOCK_REGISTERS["tile.get_block_idx"], BLOCK_REGISTERS["tile.get_block_num"])
_BLOCK_IDX = _BLOCK_NAMES[0]


def _placement(kernel: Kernel, args: tuple, moving: dict | None = None) -> tuple:
    """The arguments as a timeline depends on them: scalars by value; a tensor by its view
    (shape, strides, dtype), which group of tensors whose bytes overlap it is in, and where
    relative to the group's first — costs depend on shapes and contiguity, never on
    addresses, and hazards on how tensors overlap. So the same kernel on another tile of
    the same tensors (a task graph's next task) reuses the timeline. Scalars by value and
    type, a float by its bits (-0.0 is not 0.0); those in ``moving`` not at all (``offsets``)."""
    moving = moving or {}
    tensors = [value for (_, t), value in zip(kernel.params, args) if isinstance(t, TensorType)]
    groups = iter(overlap_groups(tensors))
    first: dict[int, int] = {}  # group -> the address of its first tensor
    out = []
    for (name, t), value in zip(kernel.params, args):
        if isinstance(t, TensorType):
            g = next(groups)
            base = first.setdefault(g, value.data_ptr())
            out.append((g, value.data_ptr() - base, tuple(value.shape), value.stride(), value.dtype))
        elif name in moving:  # one timeline for every value, moved (``offsets``)
            out.append(("moving",))
        elif isinstance(value, float):  # 0.0 == -0.0, and the sign is the program's
            out.append(("float", value.hex()))
        else:
            out.append((type(value).__name__, value))
    return tuple(out)


# Timelines remembered per kernel, least recently used dropped first, while their trace items
# stay under this (the next tiles of a task graph — a thousand small tasks — all stay; one
# long kernel keeps its last).
_KEPT_ITEMS = 1 << 17
_CACHES: dict[int, tuple] = {}  # id(kernel) -> (weak reference, _Kept)


class _Kept(dict):
    """One kernel's timelines by key, in order of use, and their trace items in all."""

    items_kept = 0
    reads_registers: bool | None = None  # whether the kernel reads its block registers
    moving: dict | None = None  # its scalars that only move GM windows (``offsets.moving``)
    loaded: frozenset | None = None  # the tensors its scalar unit reads elements of (``scalar_reads``)
    reads_tiles: bool | None = None  # whether its scalar unit reads an element of a tile (``reads_tiles``)


def _timelines(kernel: Kernel) -> _Kept:
    entry = _CACHES.get(id(kernel))
    if entry is None or entry[0]() is not kernel:
        ident = id(kernel)
        entry = (weakref.ref(kernel, lambda _: _CACHES.pop(ident, None)), _Kept())
        _CACHES[ident] = entry
    return entry[1]


# Fast-forward steady loops (``steady``) where a launch runs on one core; the trip by trip
# way gives the same timeline, and is what tests compare it with.
FAST_FORWARD = True


def simulate_together(launches, soc: SoC, *, unsafe: bool = False, steady: bool | None = None) -> Timeline:
    """Launches that start together on one clock, each on its own cores (two on one core
    are refused): every core's memories and flags are its own; GM is shared, so bytes two
    launches touch (one writing) are a hazard — nothing orders one launch against another.
    ``steady``: fast-forward steady loops (default ``FAST_FORWARD``)."""
    with collector_paused():
        steady = FAST_FORWARD if steady is None else steady
        try:
            return _simulate_together(launches, soc, unsafe, steady)
        except SimulatorHazard as exc:
            if not getattr(exc, "fast_forwarded", False):
                raise
        # a stand-in of skipped trips is later than the trip it stands for: the trip by
        # trip check says whether there is a race, and names the instructions exactly
        return _simulate_together(launches, soc, unsafe, False)


def _simulate_together(launches, soc: SoC, unsafe: bool, steady: bool) -> Timeline:
    issuers = {}
    written = [launch.tensors()[name] for launch in launches for name in _stored(launch.kernel)]
    for k, launch in enumerate(launches):
        lacking.refuse(launch.kernel, soc)  # an instruction this chip does not have
        scalars = {name: v for (name, t), v in zip(launch.kernel.params, launch.args) if not isinstance(t, TensorType)}
        scalars.update(zip(_BLOCK_NAMES, (launch.block, launch.blocks)))
        tensors = launch.tensors()
        peers = launch.peers(soc)
        unwritten = frozenset(name for name, t in tensors.items() if not overlaps_any(t, written))
        for program in launch.kernel.programs:
            split = program.core is CoreKind.AIV and isinstance(peers[CoreKind.AIV], tuple)
            for lane, core in enumerate(peers[program.core] if split else (peers[program.core],)):
                if core in issuers:
                    raise SimulatorError(f"two launches run on {core.name} at once",
                                         hint="give each launch a cluster (and vector core) of its own")
                own = {**peers, CoreKind.AIV: core} if split else peers
                issuers[core] = Issuer(program, {**scalars, LANE_REGISTER: lane}, tensors, soc, own, k, len(issuers),
                                       unwritten)
                issuers[core].holds = tuple(dict(h).get(core.name, 0) for h in launch.holds)
    live = None
    if any(reads_tiles(launch.kernel) for launch in launches):  # the values it reads, as it reads them
        sizes = [(core.name, space, max(spec.capacity, spec.physical)) for core in issuers
                 for space, spec in soc.spaces.items() if spec.core is core.kind]
        kind = ranks.OnRank if any(ranks.crosses(launch.kernel) for launch in launches) else Effects.Live
        live = kind(sizes, [launch.tensors() for launch in launches])
    # one core: its state is the scheduler's; and every trip computed where data is (a
    # fast-forwarded trip has no effects of its own to perform)
    steady = steady and not unsafe and not fresh.checking() and len(issuers) == 1 and live is None \
        and not any(_reaches_syncall(launch.kernel) for launch in launches)  # each arrival is the chip's
    for issuer in issuers.values():
        issuer.steady = steady
    streams = {core: issuer.stream() for core, issuer in issuers.items()}
    record = Record(launches, unsafe, steady, live)
    started = progress.counting(record.started, "simulated", cycle=_end)  # a run's progress line
    try:
        leftover = schedule(streams, soc.costs.queue_depth, started, record.steady.boundary if steady else None,
                            live.timed if isinstance(live, ranks.OnRank) else None)
    except SimulatorHazard as exc:
        exc.fast_forwarded = bool(steady and record.steady.skipped)
        raise
    finally:
        progress.done(started)
    if leftover and not unsafe:
        (src_core, src, dst_core, dst, event), count = leftover[0]
        raise SimulatorError(f"flag {src_core.name}.{src.value} -> {dst_core.name}.{dst.value} event {event} is "
                             f"set {count} more time(s) than waited for when the kernel ends",
                             hint="every set_flag needs its wait_flag: the sync program is unbalanced")
    return _timeline(record)


def _end(d) -> int:
    return d.end


def _timeline(record: Record) -> Timeline:
    pipe_cycles: dict = {}
    for (core, pipe), cycles in record.busy.items():
        pipe_cycles.setdefault(core, {})[pipe] = cycles
    record.effects.sort(key=lambda p: p[:4])
    done = isinstance(record.live, ranks.OnRank)  # its data is in place already
    return Timeline(() if done else tuple(record.effects), record.items, record.cycles, pipe_cycles,
                    record.instructions, record.syncs, record.extents.sizes(), record.launches,
                    None if done else record.steps, record.footprint.windows(),
                    record.steady.skipped if record.steady is not None else 0,
                    tuple(record.live.prints) if record.live is not None else (), _arrivals(record.arrivals))


def _arrivals(starts) -> tuple:
    """Each core's arrival at the launch's k-th barrier, its k-th SYNCALL; a core that
    reaches fewer than another would wait there for ever."""
    per_core: dict = {}
    for start, core in sorted(starts, key=lambda p: p[0]):
        per_core.setdefault(core, []).append(start)
    counts = {len(v) for v in per_core.values()}
    if len(counts) > 1:
        raise SimulatorError(f"the cores of one block reach pl.system.syncall a different number of times "
                             f"({', '.join(f'{c.name}: {len(v)}' for c, v in per_core.items())}): the barrier "
                             "would wait for ever", hint="reach every syncall on every participating core "
                                                         "(not under a condition one core alone takes)")
    return tuple(tuple(sorted((c.name, v[k]) for c, v in per_core.items())) for k in range(counts.pop())) \
        if per_core else ()


def _reaches_syncall(kernel: Kernel) -> bool:
    return any(isinstance(node, Instr) and node.mnemonic == "SYNCALL" for program in kernel.programs
               for node in walk(program.body))


def _stored(kernel: Kernel) -> set:
    """The tensor parameters the kernel's instructions write."""
    return {w.tensor for program in kernel.programs for node in walk(program.body) if isinstance(node, Instr)
            for w in node.writes if isinstance(w, GmLoc)}


def apply(timeline: Timeline, *tensors: dict, atomic=None) -> None:
    """Perform a timeline's data effects, in time order, on fresh on-chip memories and on
    the GM tensors — each launch's by parameter name, in launch order — written in place.
    ``atomic(tensor, index, data, start, end)`` takes its atomic adds (the chip orders them
    among other tasks'); without it they add at once."""
    with collector_paused():
        if timeline.steps is not None:
            run_steps(timeline.steps, timeline.memories, tensors, atomic)
        else:  # (each instruction's effect twice: as it starts and as it ends)
            Effects.apply(progress.counted(timeline.effects, "applied", len(timeline.effects)), timeline.memories,
                          tensors, atomic)
