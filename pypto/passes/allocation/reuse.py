"""Buffer reuse, the analysis under MemoryReuse (memory_planner=PYPTO) and the model of
the assembler's (``ptoas``): buffers whose lifetimes do not overlap share one MemRef, and
each pipeline's stage slots get the depth that fits.

    a: ...MemRef("mem_vec_0", size=32768, reusable=True)... = ...    a: ...MemRef("mem_vec_0", size=32768)...
    (a's last use)                                          ->      (a's last use)
    b: ...MemRef("mem_vec_1", size=32768, reusable=True)... = ...    b: ...MemRef("mem_vec_0", size=32768)...

A ``pipeline=True`` MemRef (LowerPipelineLoops' stage slots) asks for F slots; when the
space cannot hold F of them beside everything live during the loop, its slots drop to the
depth D that fits (stage k uses slot k mod D) and PH-MR-001 says so, with the lever.
Only InitMemRef's ``reusable`` buffers change name — merged with one another, or a result
written over a dying operand's buffer; a declared allocation, whatever its name, keeps it
and keeps its tiles. The output's buffers are final: no MemRef is ``reusable`` or
``pipeline`` any more. PlanPtoasMemory (memory_planner=PTOAS) sizes
pipelines with ``plan_reuse`` too, against the same model of what is live.
"""

from __future__ import annotations

import bisect

import attrs

from pypto.ir import nodes as n
from pypto.ir.liveness import Liveness
from pypto.ir.ops import lookup
from pypto.ir.ops.registry import UNALIASED
from pypto.ir.types import MemRef, TileType
from pypto.passes.context import (
    Diagnostic,
    PassContext,
    Severity,
)
from pypto.backend import MemorySpace
from pypto.passes.allocation.memory import Buffer, buffers, peak, retype, ring_reserve

@attrs.define
class ReusePlan:  # a result to read, not an IR node
    fn: n.Function  # with the in-place results donated their operand's buffer
    merged: dict  # MemRef name -> the name of the buffer it joins
    live: dict  # surviving name -> Buffer
    depths: dict  # pipeline MemRef name -> the depth that fits
    diagnostics: tuple


def plan_reuse(fn: n.Function, ctx: PassContext, rule: str = "MemoryReuse") -> ReusePlan:
    """Which buffers share bytes (results in place, disjoint lifetimes merged) and how
    deep each pipeline can be beside them, with PH-MR-001 for each one cut short."""
    fn = donate(fn)
    bufs = buffers(fn, lambda s: ctx.soc.spec(s).align)
    merged = _merge(bufs)
    live = _after_merge(bufs, merged)
    depths, diagnostics = _pipeline_depths(live, ctx, rule, ring_reserve(fn.body))
    return ReusePlan(fn, merged, live, depths, tuple(diagnostics))


def apply_reuse(plan: ReusePlan) -> n.Function:
    def new_type(name, t):
        if not isinstance(t, TileType) or t.memref is None:
            return t
        m = t.memref
        if m.pipeline:
            return attrs.evolve(t, memref=with_depth(m, plan.depths[m.name]))
        target = plan.merged.get(m.name, m.name)
        return attrs.evolve(t, memref=attrs.evolve(m, name=target, size=plan.live[target].size, reusable=False))

    return retype(plan.fn, new_type)


def with_depth(m: MemRef, depth: int) -> MemRef:
    """A pipeline's MemRef at the depth it gets: stage k in slot k mod depth (a rotating
    ``i % F`` turns ``i % depth``); one slot is a plain buffer. No longer ``pipeline``."""
    slot = None if m.size is None else m.size // m.slots
    if depth == 1:  # every stage shares the one buffer
        return attrs.evolve(m, slots=1, size=slot, index=None, pipeline=False)
    index = m.index
    if isinstance(index, n.Const):
        index = n.Const(index.value % depth)
    elif isinstance(index, n.BinOp) and index.op == "%" and index.rhs == n.Const(m.slots):
        index = attrs.evolve(index, rhs=n.Const(depth))
    return attrs.evolve(m, slots=depth, size=None if slot is None else depth * slot, index=index, pipeline=False)


def donate(fn: n.Function) -> n.Function:
    """A tile computed in place: an op's result and an operand whose last use is that op
    share one buffer (or slot) — the result takes the operand's, or, when the result's
    buffer is shared already (a loop's carried chain), the operand takes the result's, or,
    when both are, the two become one.

        t: ...MemRef("pipe_t", ...)[0]... = pl.tile.load(...)
        e: ...MemRef("mem_vec_0", ..., reusable=True)... = pl.tile.exp(t)  ->  e: ...MemRef("pipe_t", ...)[0]... = ...
    """
    types = n.symbols(fn)
    walker = Liveness(fn.body)
    live = {name: walker.interval(name, carry=False) for name in walker.defs}
    members = _Members(live)
    for name, t in types.items():
        if isinstance(t, TileType) and t.memref is not None:
            members.add(t.memref, name)
    new: dict[str, object] = {}  # tile -> the MemRef it now writes

    def memref(name):
        return new.get(name, types[name].memref)

    def alone(name) -> bool:  # the only tile in a buffer InitMemRef made for it
        m = memref(name)
        return m.reusable and members.only(m, name)

    def move(name, m) -> None:
        members.remove(memref(name), name)
        new[name] = m
        members.add(m, name)

    def donors(stmt) -> list:
        """The operands ``stmt`` may compute its result in place of: a tile of the result's
        space and size whose last use on a path from here is this op (a read in the if's
        other branch is on no path from here)."""
        dst, here = types[stmt.target], walker.defs[stmt.target][0]
        # (a scratch tile or a broadcast vector is read while the result is written)
        return [arg.name for param, arg in zip(lookup(stmt.value.op).params, stmt.value.args)
                if param.name not in UNALIASED and isinstance(arg, n.Var) and isinstance(types.get(arg.name), TileType)
                and types[arg.name].space is dst.space and types[arg.name].nbytes == dst.nbytes
                and not walker.live_after(arg.name, here)]

    in_place = [s for s in n.walk_stmts(fn.body) if isinstance(s, n.Assign) and isinstance(s.value, n.Call)
                and lookup(s.value.op).in_place and types[s.target].memref is not None]
    # each (operand, result) an op may compute in place: the two may share a buffer
    # though the operand is read where the result is written
    links = {(x, s.target) for s in in_place for x in donors(s)}
    for stmt in in_place:
        here, end = live[stmt.target]
        for name in donors(stmt):
            arg = n.Var(name)
            m = memref(arg.name)
            if m is None:
                continue
            if any(walker.defs[arg.name][0] < loop.start for loop in walker.loops_at(here)):
                continue  # dies at the loop's end, but the next iteration reads it again
            # Nothing else in the buffer taken may be live while the newcomer is (a next
            # in-place op may write it exactly where the newcomer dies).
            if alone(stmt.target) and members.free(m, arg.name, here, end):
                move(stmt.target, m)
                break
            if m.slots == 1 and alone(arg.name) and members.free(memref(stmt.target), stmt.target,
                                                                  live[arg.name][0], here):
                move(arg.name, memref(stmt.target))
                break
            # both shared already (a loop's carried chain ending in this op, another starting
            # from its result, perhaps in one branch of an if): one buffer, when no tile of
            # either is needed where one of the other's is written — else two accumulators
            # where the cube has room for one
            theirs = memref(stmt.target)
            if (m.reusable and theirs.reusable and m.slots == theirs.slots == 1 and m.size == theirs.size
                    and not any(_interfere(walker, x, y) for x in members.names(m) for y in members.names(theirs)
                                if (x, y) not in links and (y, x) not in links)):
                for y in members.names(theirs):
                    move(y, m)
                break
    if not new:
        return fn
    return retype(fn, lambda name, t: attrs.evolve(t, memref=new[name]) if name in new else t)


def _interfere(walker: Liveness, a: str, b: str) -> bool:
    """Whether one of two values is still needed where the other is written (read there,
    or on a path after it — a use in the if's other branch is not on one)."""
    def needed(x, pos):
        return pos in walker.uses.get(x, ()) or walker.live_after(x, pos)
    return needed(a, walker.defs[b][0]) or needed(b, walker.defs[a][0])


class _Members:
    """The tiles each MemRef holds now, ordered by where their lives end, so "is any other
    tile of it live within (begin, end)" looks only at those that end after ``begin`` — a
    long in-place chain collapsed into one buffer is not rescanned at every link."""

    def __init__(self, live: dict):
        self.live = live
        self.by_end: dict[object, list] = {}  # MemRef -> sorted [(end, start, tile)]

    def _entry(self, name):
        start, end = self.live.get(name, (0, 0))
        return end, start, name

    def add(self, m, name) -> None:
        bisect.insort(self.by_end.setdefault(m, []), self._entry(name))

    def remove(self, m, name) -> None:
        entries = self.by_end[m]
        entries.pop(bisect.bisect_left(entries, self._entry(name)))

    def names(self, m) -> list:
        return [x for _, _, x in self.by_end.get(m, [])]

    def only(self, m, name) -> bool:
        entries = self.by_end.get(m, [])
        return all(x == name for _, _, x in entries)

    def free(self, m, name, begin, end) -> bool:
        entries = self.by_end.get(m, [])
        for k in range(bisect.bisect_right(entries, (begin, float("inf"), "")), len(entries)):
            _, start, x = entries[k]
            if x != name and start < end:
                return False
        return True


def _merge(bufs: dict[str, Buffer]) -> dict[str, str]:
    """Greedy interval packing of InitMemRef's single-slot buffers, per space and size:
    a buffer joins one of its own size whose tiles are never live with its own. Buffers of
    different sizes stay apart — sharing would hold the larger size wherever the smaller
    is live — and AllocateMemoryAddr lets them share bytes where their lives allow."""
    mergeable = [b for b in bufs.values() if b.reusable and b.slots == 1 and not b.pipeline]
    mergeable.sort(key=lambda b: (b.start, b.name))
    homes: list[list[Buffer]] = []
    merged: dict[str, str] = {}
    for b in mergeable:
        home = next((h for h in homes if h[0].space is b.space and h[0].size == b.size
                     and not any(x.overlaps(b) for x in h)), None)
        if home is not None:
            home.append(b)
            merged[b.name] = home[0].name
        else:
            homes.append([b])
    return merged


def _after_merge(bufs: dict[str, Buffer], merged: dict[str, str]) -> dict[str, Buffer]:
    out: dict[str, Buffer] = {}
    for b in bufs.values():
        name = merged.get(b.name, b.name)
        if name in out:
            home = out[name]
            home.slot_size = max(home.slot_size, b.slot_size)
            for start, end in b.live():
                home.join(start, end)
            home.tiles.extend(b.tiles)
        else:
            out[name] = attrs.evolve(b, name=name, tiles=list(b.tiles), intervals=list(b.live()))
    return out


def _pipeline_depths(live: dict[str, Buffer], ctx: PassContext, rule: str, ring: int = 0):
    """Depth per pipeline buffer (one group per operand): the most slots (<= requested)
    that fit beside everything else live during its loop. The groups of one loop compete
    for the same bytes; while they over-subscribe, the group holding the most bytes gives
    up a slot (ties: the lowest group id), so the operands keep balanced depths."""
    loops: dict[tuple, list[Buffer]] = {}
    for b in live.values():
        if b.pipeline:
            loops.setdefault((b.space, b.loop_span or (b.start, b.end)), []).append(b)
    ordered = sorted((sorted(g, key=lambda b: (b.start, b.name)) for g in loops.values()),
                     key=lambda g: (g[0].start, g[0].space.name))
    gids = {b.name: i for i, b in enumerate(b for g in ordered for b in g)}
    depths, diagnostics = {}, []
    for pipes in ordered:
        space = pipes[0].space
        start, end = min(b.start for b in pipes), max(b.end for b in pipes)
        others = [b for b in live.values() if b.space is space and b not in pipes]
        reserved = max((peak(others, p) for p in range(start, end + 1)), default=0)
        free = ctx.soc.spec(space).capacity - reserved - (ring if space is MemorySpace.Vec else 0)
        depth = {b.name: max(1, min(b.slots, free // b.slot_size)) for b in pipes}
        while sum(depth[b.name] * b.slot_size for b in pipes) > free:
            shed = [b for b in pipes if depth[b.name] > 1]
            if not shed:
                break
            victim = max(shed, key=lambda b: (depth[b.name] * b.slot_size, -gids[b.name]))
            depth[victim.name] -= 1
        depths.update(depth)
        if ctx.enabled("PipelineDepth"):
            diagnostics.extend(depth_hint(b, gids[b.name], depth[b.name], free, reserved, rule,
                                          others=sum(o.slots * o.slot_size for o in pipes if o is not b))
                               for b in pipes if depth[b.name] < b.slots)
    return depths, diagnostics


def depth_hint(b: Buffer, gid: int, achieved: int, free: int, reserved: int,
               rule: str = "MemoryReuse", others: int = 0) -> Diagnostic:
    """The reference compiler's PH-MR-001, whose budget also leaves room for the other
    pipeline groups of the loop (``others``: their bytes at the depths they request), so
    that following the lever makes the hint go away."""
    req, slot = b.slots, b.slot_size
    after = f" after {reserved} B reserved" if reserved else ""
    text = (f"software pipelining requested depth {req} for pipeline group {gid} in {b.space.name}, but only "
            f"{achieved} of {req} buffers fit ({slot} B per stage, {max(free, 0)} B free{after}) \u2014 stages "
            f"{achieved} apart share storage and serialize. ")
    if free < slot:
        text += ("Co-resident buffers leave no room for even one stage; relieve them (smaller or fewer co-live "
                 "tiles) or move work out of this loop.")
    elif slot * req > free:
        text += f"This operand alone needs {slot * req} B for depth {req}; "
        if not others:
            text += f"shrink the per-stage tile to <= {free // req} B"
        elif free - others >= req:
            text += (f"shrink the per-stage tile to <= {(free - others) // req} B (the other pipeline groups of "
                     f"this loop keeping the {others} B their depths request)")
        else:
            text += (f"shrink the per-stage tile to <= {free // req} B and relieve the other pipeline groups of "
                     f"this loop, which request {others} B")
        text += f", or reduce the pipeline depth (e.g. `pl.pipeline(stage=)`) to {achieved}."
    else:
        text += (f"The operand would fit depth {req} on its own, but co-resident buffers / other pipeline groups "
                 "over-subscribe the space; relieve the co-residents (smaller or fewer co-live tiles) or reduce "
                 f"the pipeline depth to {achieved}.")
    return Diagnostic(Severity.PerfHint, rule, "PH-MR-001", text, b.loop_span or b.first_span)
