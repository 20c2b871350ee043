"""PlanPtoasMemory (memory_planner=PTOAS only): the assembler places the tiles, so the
program keeps no addresses and no merged names — but what it hands over must be what
ptoas can lower, on every platform alike:

- each pipeline gets the slots that fit beside everything else live in its space during
  its loop, by the model and with the PH-MR-001 of MemoryReuse under PYPTO;

      t: ...MemRef("pipe_t", size=262144, slots=4, pipeline=True)[i % 4]...   ->   t: ...MemRef("pipe_t", size=131072, slots=2)[i % 2]...

- no two slots of one region are live at once in a loop iteration: ptoas guards only the
  first ``multi_tile_get`` of an iteration (``unsafe_colive_slots`` lets them through, to
  show the corruption on the simulator);
- every space holds its tiles under the assembler's reuse and first-fit placement
  (``assembler_plan``, which codegen runs again for the simulator's addresses).
"""

from __future__ import annotations

import attrs

from pypto.errors import CodegenError
from pypto.ir import nodes as n
from pypto.ir.types import TileType
from pypto.passes.context import PassContext, PassResult, Planner, result
from pypto.passes.memory import Walker, retype
from pypto.passes.memory_reuse import plan_reuse, with_depth

PLANNERS = frozenset({Planner.PTOAS})


def plan_ptoas_memory(program: n.Program, ctx: PassContext) -> PassResult:
    functions, diagnostics = [], []
    for fn in program.functions:
        if any(isinstance(t, TileType) and t.memref for t in n.symbols(fn).values()):
            unguarded_slots(fn, ctx.unsafe_colive_slots)
            plan = plan_reuse(fn, ctx, rule="PlanPtoasMemory")
            fn = retype(fn, lambda name, t: attrs.evolve(t, memref=with_depth(t.memref, plan.depths[t.memref.name]))
                        if isinstance(t, TileType) and t.memref is not None and t.memref.pipeline else t)
            diagnostics.extend(plan.diagnostics)
            assembler_plan(fn, ctx)  # raises what ptoas could not place
        functions.append(fn)
    return result(n.Program(program.name, tuple(functions)), diagnostics)


def assembler_plan(fn: n.Function, ctx: PassContext) -> n.Function:
    """``fn`` as ptoas lays it out (level2): buffers reused and placed first fit, slotted
    MemRefs as regions — MemoryReuse's and AllocateMemoryAddr's algorithms, quietly."""
    from pypto.passes.allocate_memory_addr import allocate_memory_addr
    from pypto.passes.memory_reuse import memory_reuse

    program = n.Program("plan", (fn,))
    quiet = attrs.evolve(ctx, disabled=ctx.disabled | {"PipelineDepth"}, planner=Planner.PYPTO)
    program = memory_reuse(program, quiet).program
    return allocate_memory_addr(program, quiet).program.functions[0]


def unguarded_slots(fn: n.Function, unsafe: bool) -> set[str]:
    """Tiles taken from a second slot of one region while the first is live, in one loop
    iteration. Refused, unless ``unsafe``; then returned, for the sync inserter to leave
    unguarded as ptoas does."""
    walker = Walker()
    walker.block(fn.body, ())
    types = n.symbols(fn)
    unguarded = set()
    for loop in (s for s in n.walk_stmts(fn.body) if isinstance(s, n.For)):
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
                             "or compile with the default memory_planner=\"PYPTO\"")
                unguarded.add(other)
    return unguarded


def _one_iteration(body):
    """The statements of a loop body, branches included; nested loops iterate on their own."""
    for stmt in body:
        yield stmt
        if isinstance(stmt, n.If):
            yield from _one_iteration(stmt.then_body)
            yield from _one_iteration(stmt.else_body)


def _colive(walker: Walker, a: str, b: str) -> bool:
    def span(name):
        start = walker.defs[name][0]
        return start, max(walker.uses.get(name, [start]) + [start])

    (s1, e1), (s2, e2) = span(a), span(b)
    return s1 <= e2 and s2 <= e1
