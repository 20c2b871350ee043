"""MemoryReuse (memory_planner=PYPTO): buffers whose lifetimes do not overlap share one
MemRef, and each pipeline's stage slots get the depth that fits (``passes.reuse``).

    a: ...MemRef("mem_vec_0", size=32768, reusable=True)... = ...    a: ...MemRef("mem_vec_0", size=32768)...
    (a's last use)                                          ->      (a's last use)
    b: ...MemRef("mem_vec_1", size=32768, reusable=True)... = ...    b: ...MemRef("mem_vec_0", size=32768)...

A pipeline cut short of its stages says so (PH-MR-001), with the lever. The output's
buffers are final: no MemRef is ``reusable`` or ``pipeline`` any more.
"""

from __future__ import annotations

from pypto.ir import nodes as n
from pypto.ir.types import TileType
from pypto.passes.context import PassContext, PassResult, Planner, result
from pypto.passes.allocation.reuse import apply_reuse, plan_reuse

PLANNERS = frozenset({Planner.PYPTO})


def memory_reuse(program: n.Program, ctx: PassContext) -> PassResult:
    functions, diagnostics = [], []
    for fn in program.functions:
        if any(isinstance(t, TileType) and t.memref for t in n.symbols(fn).values()):
            plan = plan_reuse(fn, ctx)
            fn = apply_reuse(plan)
            diagnostics.extend(plan.diagnostics)
        functions.append(fn)
    return result(n.Program(program.name, tuple(functions)), diagnostics)
