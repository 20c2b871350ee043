"""AllocateMemoryAddr (memory_planner=PYPTO): every MemRef gets a byte address in its
space; buffers live at the same time never overlap, and everything fits the SoC table's
capacity at the space's alignment.

    t: ...pl.MemRef("mem_vec_0", size=32768)...   ->   t: ...pl.MemRef("mem_vec_0", 0, 32768)...
    u: ...pl.MemRef("pipe_u", size=65536, slots=2)[1]...  ->  ...pl.MemRef("pipe_u", 32768, 65536, slots=2)[1]...

Placement is first fit (``passes.placement``). A set of tiles that cannot fit is an
error naming the space, the bytes needed and available, and the tiles live there.
"""

from __future__ import annotations


from pypto.ir import nodes as n
from pypto.ir.types import TileType
from pypto.passes.context import PassContext, PassResult, Planner, result
from pypto.passes.placement import place

PLANNERS = frozenset({Planner.PYPTO})


def allocate_memory_addr(program: n.Program, ctx: PassContext) -> PassResult:
    functions = []
    for fn in program.functions:
        if any(isinstance(t, TileType) and t.memref for t in n.symbols(fn).values()):
            fn = place(fn, ctx.soc)
        functions.append(fn)
    return result(n.Program(program.name, tuple(functions)))
