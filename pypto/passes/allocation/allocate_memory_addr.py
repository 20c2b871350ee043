"""AllocateMemoryAddr (memory_planner=PYPTO or DSA_RP): every MemRef gets a byte address
in its space; buffers live at the same time never overlap, and everything fits the SoC
table's capacity at the space's alignment.

    t: ...pl.MemRef("mem_vec_0", size=32768)...   ->   t: ...pl.MemRef("mem_vec_0", 0, 32768)...
    u: ...pl.MemRef("pipe_u", size=65536, slots=2)[1]...  ->  ...pl.MemRef("pipe_u", 32768, 65536, slots=2)[1]...

Under PYPTO, after MemoryReuse, placement is first fit (``passes.placement``). Under
DSA_RP, MemoryReuse has not run: the DSA-RP solver chooses which buffers share bytes and
where, keeping apart those whose sharing would stall one pipe on another while there is
room (``passes.dsa_plan``), with PH-DSA-001 where pipeline stages had to share. A set of
tiles that cannot fit is an error naming the space, the bytes needed and available, and
the tiles live there.
"""

from __future__ import annotations


from pypto.ir import nodes as n
from pypto.ir.types import TileType
from pypto.passes.context import PassContext, PassResult, Planner, result
from pypto.passes.allocation.dsa_plan import plan_dsa
from pypto.passes.allocation.placement import place

PLANNERS = frozenset({Planner.PYPTO, Planner.DSA_RP})


def allocate_memory_addr(program: n.Program, ctx: PassContext) -> PassResult:
    functions, diagnostics = [], []
    for fn in program.functions:
        if any(isinstance(t, TileType) and t.memref for t in n.symbols(fn).values()):
            if ctx.planner is Planner.DSA_RP:
                fn, found = plan_dsa(fn, ctx)
                diagnostics.extend(found)
            else:
                fn = place(fn, ctx.soc)
        functions.append(fn)
    return result(n.Program(program.name, tuple(functions)), diagnostics)
