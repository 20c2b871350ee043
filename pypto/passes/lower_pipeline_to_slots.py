"""LowerPipelineToSlots (memory_planner=PTOAS only): a ``pl.pipeline(N, stage=F)`` loop
keeps its shape, and each tile its body loads at top level rotates through F slots of one
allocation, which the assembler turns into a multi-tile region.

    for i in pl.pipeline(8, stage=2):                  for i in pl.range(8):
        t = pl.tile.load(a, [i * 64, 0], ...)   ->         t: pl.Tile[..., pl.MemRef("pipe_t", slots=2)[i % 2], pl.Mem.Vec] = pl.tile.load(...)
        ...                                                ...

A loop is left for LowerPipelineLoops when a slot cannot express it: a stage outside
2..16, a step other than 1, a start not a multiple of F, a loaded tile that is carried
out of the loop or into an inner one, has a runtime valid shape or already names its
MemRef — or nothing to slot at all.
"""

from __future__ import annotations

import attrs

from pypto.ir import nodes as n
from pypto.ir.types import ForKind, MemRef, TileType
from pypto.passes.context import PassContext, PassResult, Planner, result
from pypto.sim.soc import MemorySpace as M

PLANNERS = frozenset({Planner.PTOAS})
SLOTTED_SPACES = (M.Vec, M.Mat, M.Acc)


def lower_pipeline_to_slots(program: n.Program, ctx: PassContext) -> PassResult:
    functions = []
    for fn in program.functions:
        names = {t.memref.name for t in n.symbols(fn).values() if isinstance(t, TileType) and t.memref}
        functions.append(attrs.evolve(fn, body=_block(fn.body, names)))
    return result(n.Program(program.name, tuple(functions)))


def _block(body, names: set) -> tuple:
    out = []
    for stmt in body:
        if isinstance(stmt, n.For):
            stmt = attrs.evolve(stmt, body=_block(stmt.body, names))
            if stmt.kind is ForKind.Pipeline:
                stmt = _slot(stmt, names) or stmt
        elif isinstance(stmt, n.If):
            stmt = attrs.evolve(stmt, then_body=_block(stmt.then_body, names),
                                else_body=_block(stmt.else_body, names))
        out.append(stmt)
    return tuple(out)


def _slot(loop: n.For, names: set) -> n.For | None:
    f = loop.stage
    if not 2 <= f <= 16 or loop.step != n.Const(1):
        return None
    if not (isinstance(loop.start, n.Const) and loop.start.value % f == 0):
        return None
    carried = {v.name for s in loop.body if isinstance(s, n.Yield) for v in s.values if isinstance(v, n.Var)}
    carried |= {a.init.name for s in n.walk_stmts(loop.body) if isinstance(s, n.For) for a in s.iter_args
                if isinstance(a.init, n.Var)}
    candidates = [s for s in loop.body if isinstance(s, n.Assign) and isinstance(s.value, n.Call)
                  and s.value.op == "tile.load"]
    if not candidates:
        return None
    for s in candidates:
        t = s.type
        if (t.memref is not None or t.valid_shape is not None or t.space not in SLOTTED_SPACES
                or s.target in carried):
            return None
    index = n.BinOp("%", n.Var(loop.var), n.Const(f))
    body = []
    for s in loop.body:
        if s in candidates:
            memref = MemRef(name=n.fresh_name(f"pipe_{s.target}", names), slots=f, index=index)
            s = attrs.evolve(s, type=attrs.evolve(s.type, memref=memref))
        body.append(s)
    return attrs.evolve(loop, body=tuple(body), kind=ForKind.Sequential, stage=None)
