"""AllocateMemoryAddr under memory_planner=DSA_RP: every buffer of a function placed by
the DSA-RP solver (``passes.dsa``), one problem per memory space.

MemoryReuse does not run before it, so each buffer InitMemRef made stays its own
allocation and the solver chooses which of them share bytes. What the program requires
to be one buffer is one before the solve: a loop's carried chain (InitMemRef), a result
computed in place over its dying operand (``reuse.donate``). Then, per space:

- a buffer is live where its tiles are (``passes.memory.buffers``); two live at once
  never share a byte;
- a declared ``pl.MemRef`` is kept apart from every other buffer of its space, live or
  not (its slots, constant or rotating, at their offsets in the one piece);
- a ``pl.pipeline``'s stage slots are kept apart as requested; the cross-core rings a
  kernel reserves hold the bottom of Vec;
- two buffers whose sharing would make a write wait for another pipe carry a penalty
  (``passes.dsa_access``): the solver keeps them apart while the space has room.

If that does not fit, and only then, stages of a pipeline may share slots: the fewest
pairs of stages sharing that fits is taken, and PH-DSA-001 says how many, with the lever.
Correctness separations are never relaxed; a space that still does not fit is an error
naming the tiles live together.
"""

from __future__ import annotations

import itertools

import attrs

from pypto.backend import MemorySpace as M
from pypto.errors import MemorySpaceError
from pypto.ir import nodes as n
from pypto.ir.liveness import Liveness
from pypto.ir.types import TileType
from pypto.passes.allocation import dsa
from pypto.passes.context import Diagnostic, PassContext, Severity
from pypto.passes.allocation.dsa_access import penalties
from pypto.passes.allocation.memory import Buffer, aligned, buffers, peak, retype, ring_overflow, ring_reserve
from pypto.passes.allocation.reuse import donate, with_depth

RULE = "AllocateMemoryAddr"
MAX_RELAXATIONS = 64  # depth combinations tried in full; past that, one stage is given up at a time


def plan_dsa(fn: n.Function, ctx: PassContext) -> tuple[n.Function, list[Diagnostic]]:
    """``fn`` with every MemRef at its address, and the PH-DSA-001 hints of pipelines whose
    stages had to share slots; a space that cannot hold its tiles is a MemorySpaceError."""
    fn = donate(fn)
    bufs = buffers(fn, lambda s: ctx.soc.spec(s).align)
    ring = ring_reserve(fn.body)
    walker = Liveness(fn.body)
    separated = _separations(bufs)
    found = penalties(fn, bufs, walker, separated)
    addr, depths, diagnostics = {}, {}, []
    spaces = {b.space for b in bufs.values()} | ({M.Vec} if ring else set())
    for space in sorted(spaces, key=lambda s: s.name):
        group = sorted((b for b in bufs.values() if b.space is space), key=lambda b: (b.start, b.name))
        spec = ctx.soc.spec(space)
        floor = aligned(ring, spec.align) if space is M.Vec else 0  # the rings the kernel reserves come first
        reserved = ((0, floor),) if floor else ()
        mine = frozenset(p for p in separated if bufs[next(iter(p))].space is space)
        weights = tuple(p for p in found if bufs[p[0]].space is space)
        pipes = [b for b in group if b.pipeline]

        def problem(depth, group=group, spec=spec, reserved=reserved, mine=mine, weights=weights):
            items = tuple(dsa.Item(b.name, depth.get(b.name, b.slots) * b.slot_size, spec.align, tuple(b.live()))
                          for b in group)
            return dsa.Problem(spec.capacity, items, reserved, mine, weights)

        requested = {b.name: b.slots for b in pipes}
        chosen, solution = requested, dsa.solve(problem(requested))
        if solution is None:
            for depth in _relaxations(pipes):
                solution = dsa.solve(problem(depth))
                if solution is not None:
                    chosen = depth
                    break
        if solution is None:
            raise _no_fit(fn, space, group, spec.capacity, floor, chosen)
        addr.update(solution.offsets)
        depths.update(chosen)
        shared = sum(_sharing(b.slots, chosen[b.name]) for b in pipes)
        if shared and ctx.enabled("PipelineSeparation"):
            diagnostics.append(_relaxed(space, pipes, chosen, shared))

    def new_type(name, t):
        if not isinstance(t, TileType) or t.memref is None:
            return t
        m = t.memref
        if m.pipeline:
            m = with_depth(m, depths[m.name])
        else:
            m = attrs.evolve(m, size=bufs[m.name].size, reusable=False)
        return attrs.evolve(t, memref=attrs.evolve(m, addr=addr[m.name]))

    return retype(fn, new_type), diagnostics


def _separations(bufs: dict[str, Buffer]) -> frozenset:
    """A declared buffer and every other buffer of its space: kept apart, live or not."""
    out = set()
    for b in bufs.values():
        if not b.reusable and not b.pipeline:
            out.update(frozenset((b.name, o.name)) for o in bufs.values() if o.space is b.space and o is not b)
    return frozenset(out)


def _sharing(stages: int, depth: int) -> int:
    """Pairs of a pipeline's stages in one slot when ``stages`` rotate through ``depth``."""
    per_slot = [len(range(r, stages, depth)) for r in range(depth)]
    return sum(c * (c - 1) // 2 for c in per_slot)


def _relaxations(pipes: list[Buffer]):
    """Depths for the pipelines of a space, fewest stage pairs sharing a slot first (then
    the most bytes kept); past ``MAX_RELAXATIONS`` combinations, the group holding the
    most bytes gives up one slot at a time."""
    if not pipes:
        return
    total = 1
    for b in pipes:
        total *= b.slots
    if total <= MAX_RELAXATIONS:
        combos = itertools.product(*(range(b.slots, 0, -1) for b in pipes))
        ranked = sorted(combos, key=lambda ds: (sum(_sharing(b.slots, d) for b, d in zip(pipes, ds)),
                                                -sum(d * b.slot_size for b, d in zip(pipes, ds))))
        for ds in ranked[1:]:  # the first is the strict depths, already tried
            yield {b.name: d for b, d in zip(pipes, ds)}
        return
    depth = {b.name: b.slots for b in pipes}
    while any(d > 1 for d in depth.values()):
        victim = max((b for b in pipes if depth[b.name] > 1), key=lambda b: (depth[b.name] * b.slot_size, b.name))
        depth = {**depth, victim.name: depth[victim.name] - 1}
        yield depth


def _relaxed(space, pipes: list[Buffer], depth: dict, shared: int) -> Diagnostic:
    pairs = sum(_sharing(b.slots, 1) for b in pipes)
    cut = [b for b in pipes if depth[b.name] < b.slots]
    what = "; ".join(f"'{b.name}' ({'/'.join(b.tiles[:2])}{'...' if len(b.tiles) > 2 else ''}): {depth[b.name]} of "
                     f"{b.slots} slots, {b.slot_size} B per stage" for b in cut)
    text = (f"{shared} of {pairs} relaxed pair(s) reuse physical storage: the pipeline stages requested in "
            f"{space.name} do not all fit apart beside the other buffers, so stages share slots and serialize "
            f"({what}). Shrink the per-stage tiles, relieve the co-resident buffers, or lower pl.pipeline(stage=) "
            f"to {min(depth[b.name] for b in cut)}.")
    return Diagnostic(Severity.PerfHint, RULE, "PH-DSA-001", text, cut[0].loop_span or cut[0].first_span)


def _no_fit(fn: n.Function, space, group: list[Buffer], capacity: int, reserved: int, depth: dict) -> MemorySpaceError:
    """The tiles live together where the space is fullest (a declared buffer counts
    everywhere: nothing shares its bytes), and whether they could fit at all."""
    size = {b.name: (depth.get(b.name, b.slots) * b.slot_size) for b in group}
    declared = [b for b in group if not b.reusable and not b.pipeline]
    others = [attrs.evolve(b, slots=1, slot_size=size[b.name]) for b in group if b not in declared]
    fixed = sum(size[b.name] for b in declared)
    points = sorted({p for b in others for p in (b.start, b.end)}) or [0]
    worst = max(points, key=lambda p: peak(others, p))
    need = peak(others, worst) + fixed
    live = sorted(declared + [b for b in others if b.live_at(worst)], key=lambda b: -size[b.name])
    tiles = ", ".join(f"{'/'.join(b.tiles[:3])}{'...' if len(b.tiles) > 3 else ''} ({size[b.name]} B"
                      + (", declared" if b in declared else "") + ")" for b in live)
    span = next((b.first_span for b in live if b.first_span is not None), fn.span)
    if reserved and need + reserved > capacity:
        return ring_overflow(fn, capacity, reserved, need)
    if need + reserved > capacity:
        return MemorySpaceError(
            f"{space.name} cannot hold the tiles of '{fn.name}': {need} B needed, {capacity - reserved} B available; "
            f"live together: {tiles}", span=span,
            hint="use smaller tiles (tile the loop further), fewer pipeline stages or slots, or end tiles' lifetimes "
                 "sooner")
    return MemorySpaceError(
        f"{space.name} cannot hold the tiles of '{fn.name}' under memory_planner=DSA_RP: at most {need} B are live "
        f"at once, of {capacity - reserved} B, but the planner's bounded search found no placement keeping each "
        f"buffer in one piece (a search failure, not a proof that none exists); fullest where live together: "
        f"{tiles}", span=span,
        hint="compile with memory_planner=\"PYPTO\" (its buffers merge before placement), or use smaller tiles, "
             "fewer pipeline stages or slots")
