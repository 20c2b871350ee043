"""LowerPipelineToSlots (memory_planner=PTOAS only): a ``pl.pipeline(N, stage=F)`` loop
keeps its shape, and each tile its body loads at top level rotates through F slots of one
allocation, which the assembler turns into a multi-tile region.

    for i in pl.pipeline(8, stage=2):                  for i in pl.range(8):
        t = pl.tile.load(a, [i * 64, 0], ...)   ->         t: pl.Tile[..., pl.MemRef("pipe_t", slots=2, pipeline=True)[i % 2], pl.Mem.Vec] = pl.tile.load(...)
        ...                                                ...

F is the depth asked for (``pipeline=True``): PlanPtoasMemory gives each region the
slots that fit beside what else is live in its space once InitMemRef has made the
buffers, as MemoryReuse does for PYPTO (PH-MR-001 when fewer fit).

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
from pypto.backend import MemorySpace as M

PLANNERS = frozenset({Planner.PTOAS})
SLOTTED_SPACES = (M.Vec, M.Mat, M.Acc)


def lower_pipeline_to_slots(program: n.Program, ctx: PassContext) -> PassResult:
    functions = []
    for fn in program.functions:
        names = {t.memref.name for t in n.symbols(fn).values() if isinstance(t, TileType) and t.memref}
        functions.append(attrs.evolve(fn, body=_Slotter(names).block(fn.body)))
    return result(n.Program(program.name, tuple(functions)))


class _Slotter:
    def __init__(self, names: set):
        self.names = names

    def block(self, body) -> tuple:
        out = []
        for stmt in body:
            if isinstance(stmt, n.LOOPS):
                stmt = attrs.evolve(stmt, body=self.block(stmt.body))
                if getattr(stmt, "kind", None) is ForKind.Pipeline:
                    stmt = self.slot(stmt) or stmt
            elif isinstance(stmt, n.If):
                stmt = attrs.evolve(stmt, then_body=self.block(stmt.then_body), else_body=self.block(stmt.else_body))
            out.append(stmt)
        return tuple(out)

    def slot(self, loop: n.For) -> n.For | None:
        f = loop.stage
        if not 2 <= f <= 16 or loop.step != n.Const(1):
            return None
        if not (isinstance(loop.start, n.Const) and loop.start.value % f == 0):
            return None
        carried = _carried(loop.body)
        candidates = [s for s in loop.body if isinstance(s, n.Assign) and isinstance(s.value, n.Call)
                      and s.value.op == "tile.load"]
        if not candidates:
            return None
        for s in candidates:
            t = s.type
            if (t.memref is not None or t.valid_shape is not None or t.space not in SLOTTED_SPACES
                    or s.target in carried):
                return None
        body = []
        index = n.BinOp("%", n.Var(loop.var), n.Const(f))
        for s in loop.body:
            if s in candidates:
                name = n.fresh_name(f"pipe_{s.target}", self.names)
                memref = MemRef(name=name, slots=f, index=index, pipeline=True)
                s = attrs.evolve(s, type=attrs.evolve(s.type, memref=memref))
            body.append(s)
        return attrs.evolve(loop, body=tuple(body), kind=ForKind.Sequential, stage=None)


def _carried(body) -> set[str]:
    """Names whose value may leave an iteration: yielded by the loop, starting an inner
    loop, or reaching either through an if's or an inner loop's results."""
    out = {v.name for s in body if isinstance(s, n.Yield) for v in s.values if isinstance(v, n.Var)}
    out |= {a.init.name for s in n.walk_stmts(body) if isinstance(s, n.LOOPS) for a in s.iter_args
            if isinstance(a.init, n.Var)}
    while True:
        more = set()
        for s in n.walk_stmts(body):
            if isinstance(s, (n.If, *n.LOOPS)):
                blocks = (s.then_body, s.else_body) if isinstance(s, n.If) else (s.body,)
                for k, r in enumerate(s.results):
                    if r.name not in out:
                        continue
                    more |= {y.values[k].name for b in blocks for y in b if isinstance(y, n.Yield)
                             and isinstance(y.values[k], n.Var)}
                    if isinstance(s, n.LOOPS) and isinstance(s.iter_args[k].init, n.Var):
                        more.add(s.iter_args[k].init.name)
        if more <= out:
            return out
        out |= more
