"""The model of the assembler (``ptoas``, memory_planner=PTOAS): where it places the
tiles — its reuse and first-fit placement, the same analyses as MemoryReuse's and
AllocateMemoryAddr's — and which slots of a multi-buffer region it leaves unguarded (it
guards only the first one an iteration selects). PlanPtoasMemory checks a program
against it; codegen reads the simulator's addresses from it.
"""

from __future__ import annotations

import attrs

from pypto.errors import CodegenError
from pypto.ir import nodes as n
from pypto.ir.liveness import Liveness
from pypto.ir.types import TileType
from pypto.passes.context import PassContext, Planner
from pypto.passes.allocation.placement import place
from pypto.passes.allocation.reuse import apply_reuse, plan_reuse


def assembler_plan(fn: n.Function, ctx: PassContext) -> n.Function:
    """``fn`` as ptoas lays it out (level2): buffers reused and placed first fit, slotted
    MemRefs as regions — the analyses under MemoryReuse and AllocateMemoryAddr, quietly."""
    quiet = attrs.evolve(ctx, disabled=ctx.disabled | {"PipelineDepth"}, planner=Planner.PYPTO)
    return place(apply_reuse(plan_reuse(fn, quiet)), ctx.soc)


def unguarded_slots(fn: n.Function, unsafe: bool) -> set[str]:
    """Tiles taken from a second slot of one region while the first is live, in one loop
    iteration. Refused, unless ``unsafe``; then returned, for the sync inserter to leave
    unguarded as ptoas does."""
    walker = Liveness(fn.body)
    types = n.symbols(fn)
    unguarded = set()
    for loop in (s for s in n.walk_stmts(fn.body) if isinstance(s, n.LOOPS)):
        gets: dict[str, list[str]] = {}  # region -> tiles in order, one per distinct slot
        slots_seen: dict[str, list] = {}
        for stmt in _one_iteration(loop.body):
            if not isinstance(stmt, n.Assign) or not isinstance(stmt.type, TileType):
                continue
            m = stmt.type.memref
            if m is None or m.slots < 2 or m.index is None:
                continue
            if m.index not in slots_seen.setdefault(m.name, []):
                slots_seen[m.name].append(m.index)
                gets.setdefault(m.name, []).append(stmt.target)
        for region, tiles in gets.items():
            first = tiles[0]
            for other in tiles[1:]:
                if not _colive(walker, first, other):
                    continue
                if not unsafe:
                    stmt = next(s for s in n.walk_stmts(fn.body) if isinstance(s, n.Assign) and s.target == other)
                    raise CodegenError(
                        f"The declared allocation 'pl.MemRef(\"{region}\", slots={types[other].memref.slots})' "
                        "cannot be lowered to a ptoas multi-buffer region because two of its slots are live at once "
                        f"inside a loop ('{first}' and '{other}'), and ptoas guards only the first slot selected in "
                        "an iteration \u2014 the second would be read while the next iteration overwrites it. Under "
                        "memory_planner=PTOAS the slots have no other way to stay apart.",
                        span=stmt.span,
                        hint="take one slot per iteration (index every tile of the region with the same slot), "
                             "or compile with the default memory_planner=\"PYPTO\" (or \"DSA_RP\"), which keeps "
                             "them apart")
                unguarded.add(other)
    return unguarded


def _one_iteration(body):
    """The statements of a loop body, branches included; nested loops iterate on their own."""
    for stmt in body:
        yield stmt
        if isinstance(stmt, n.If):
            yield from _one_iteration(stmt.then_body)
            yield from _one_iteration(stmt.else_body)


def _colive(walker: Liveness, a: str, b: str) -> bool:
    def span(name):
        start = walker.defs[name][0]
        return start, max(walker.uses.get(name, [start]) + [start])

    (s1, e1), (s2, e2) = span(a), span(b)
    return s1 <= e2 and s2 <= e1
