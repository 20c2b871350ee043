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
  (``passes.ptoas``, the model of the assembler, which codegen reads again for the
  simulator's addresses).
"""

from __future__ import annotations

import attrs

from pypto.ir import nodes as n
from pypto.ir.types import TileType
from pypto.passes.context import PassContext, PassResult, Planner, result
from pypto.passes.allocation.memory import retype
from pypto.passes.allocation.ptoas import assembler_plan, unguarded_slots
from pypto.passes.allocation.reuse import plan_reuse, with_depth

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
