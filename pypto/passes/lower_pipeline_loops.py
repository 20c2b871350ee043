"""LowerPipelineLoops: ``pl.pipeline(N, stage=F)`` replicates its body F times per outer
iteration, so stage k+1's load can overlap stage k's compute; the outer loop strides by
F·step and a tail dispatch covers N % F.

    for i in pl.pipeline(8, stage=2):            for i in pl.range(0, 8, 2):
        t = pl.tile.load(a, [i * 64, 0])   ->        t: ...MemRef("pipe_t", slots=2, pipeline=True)[0]... = pl.tile.load(a, [i * 64, 0])
        pl.tile.store(pl.tile.exp(t), ...)           ...
                                                     t_1: ...MemRef("pipe_t", slots=2, pipeline=True)[1]... = pl.tile.load(a, [(i + 1) * 64, 0])
                                                     ...

Each stage's top-level load lands in its own slot of a ``pipeline=True`` MemRef, which
MemoryReuse keeps apart up to the depth that fits. Loop-carried values thread through
the copies. With a static trip count the tail is straight-line copies; with a dynamic
one, ``if rem > j:`` guards copy j.
"""

from __future__ import annotations

import attrs

from pypto.ir import nodes as n
from pypto.ir.infer import scalar_type
from pypto.ir.rewrite import clone_block, rename, substitute
from pypto.ir.simplify import fold, inline_static_ifs, simplify
from pypto.ir.types import INDEX, ForKind, MemRef, ScalarType, TileType
from pypto.passes.context import PassContext, PassResult, result


STAGED_LOADS = ("tile.load", "tile.extract")


def lower_pipeline_loops(program: n.Program, ctx: PassContext) -> PassResult:
    functions = []
    for fn in program.functions:
        if any(isinstance(s, n.For) and s.kind is ForKind.Pipeline for s in n.walk_stmts(fn.body)):
            fn = _Lowering(fn).run()
        functions.append(fn)
    return result(n.Program(program.name, tuple(functions)))


class _Lowering:
    def __init__(self, fn: n.Function):
        self.fn = fn
        self.types = n.symbols(fn)
        self.used = set(self.types)
        self.memrefs = {t.memref.name for t in self.types.values() if isinstance(t, TileType) and t.memref}
        self.renamed: dict[str, object] = {}  # original loop results -> their final values

    def run(self) -> n.Function:
        body = self.block(self.fn.body)
        return attrs.evolve(self.fn, body=substitute(body, self.renamed))

    def block(self, body) -> tuple:
        out = []
        for stmt in body:
            # A pipelined loop lowered earlier in this block has new result names; whatever
            # follows it here (and is cloned with it by an outer pipeline) reads those.
            stmt = substitute(stmt, self.renamed)
            if isinstance(stmt, n.LOOPS):
                stmt = attrs.evolve(stmt, body=self.block(stmt.body))
                if getattr(stmt, "kind", None) is ForKind.Pipeline:
                    out.extend(self.lower(stmt))
                    continue
            elif isinstance(stmt, n.If):
                stmt = attrs.evolve(stmt, then_body=self.block(stmt.then_body), else_body=self.block(stmt.else_body))
            out.append(stmt)
        return tuple(out)

    def lower(self, loop: n.For) -> list:
        f = loop.stage or 1
        if f == 1:
            return [attrs.evolve(loop, kind=ForKind.Sequential, stage=None)]
        slots = self.slot_names(loop)
        body, tail_yield = _split_yield(loop.body)
        start, stop, step = loop.start, loop.stop, loop.step
        trip = _trip(start, stop, step)
        main_end = _add(start, _mul(_mul(_floordiv(trip, n.Const(f)), n.Const(f)), step))

        # The main loop: copy 0 keeps the body's own names, later copies get fresh ones.
        iv = n.Var(loop.var)
        carried = tuple(n.Var(a.name) for a in loop.iter_args)
        main_body: list = []
        values = carried
        for k in range(f):
            copy, values = self.copy(body, tail_yield, loop, _add(iv, _mul(n.Const(k), step)), values, slots, k,
                                     fresh=k > 0)
            main_body.extend(copy)
        main_results = tuple(n.Binding(n.fresh_name(b.name, self.used), b.type) for b in loop.results)
        if loop.iter_args:
            main_body.append(n.Yield(values, span=loop.span))
        main = n.For(loop.var, start, main_end, _mul(n.Const(f), step), tuple(main_body), ForKind.Sequential,
                     None, loop.iter_args, main_results, span=loop.span)
        out = [main]
        values = tuple(n.Var(b.name) for b in main_results)
        if isinstance(trip, n.Const) and trip.value < f:  # the main loop would never run: only the tail
            out, values = [], tuple(a.init for a in loop.iter_args)

        # The tail: iterations main_end, main_end + step, ... (fewer than f of them).
        static_trip = trip.value if isinstance(trip, n.Const) else None
        if static_trip is not None:
            for j in range(static_trip % f):
                at = n.Const(main_end.value + j * step.value) if isinstance(main_end, n.Const) and \
                    isinstance(step, n.Const) else _add(main_end, _mul(n.Const(j), step))
                copy, values = self.copy(body, tail_yield, loop, at, values, slots, j, fresh=True)
                out.extend(copy)
        else:
            rem = n.fresh_name("rem", self.used)
            remainder = n.BinOp("%", trip, n.Const(f))
            self.types[rem] = scalar_type(remainder, self.types)
            out.append(n.Assign(rem, self.types[rem], remainder, span=loop.span))
            for j in range(f - 1):
                copy, new_values = self.copy(body, tail_yield, loop, _add(main_end, _mul(n.Const(j), step)), values,
                                             slots, j, fresh=True)
                results = tuple(n.Binding(n.fresh_name(b.name, self.used), b.type) for b in loop.results)
                then_body = tuple(copy) + ((n.Yield(new_values),) if results else ())
                else_body = (n.Yield(values),) if results else ()
                out.append(n.If(n.BinOp(">", n.Var(rem), n.Const(j)), then_body, else_body, results, span=loop.span))
                values = tuple(n.Var(b.name) for b in results)
        for b, v in zip(loop.results, values):
            self.renamed[b.name] = v
        return out

    def slot_names(self, loop: n.For) -> dict[str, str]:
        """The top-level loads of the body that get a stage slot (a GM load, or the cube's
        operand piece a tile.extract moves into L0): load name -> MemRef name.
        A load the loop carries on (a sliding window's ``prev = cur``), or an inner loop
        starts from, keeps the carried value's buffer instead."""
        _, yielded = _split_yield(loop.body)
        carried = {v.name for v in yielded if isinstance(v, n.Var)}
        carried |= {a.init.name for s in n.walk_stmts(loop.body) if isinstance(s, n.LOOPS) for a in s.iter_args
                    if isinstance(a.init, n.Var)}  # an inner loop carries it on in a buffer of its own
        out = {}
        for s in loop.body:
            if isinstance(s, n.Assign) and isinstance(s.value, n.Call) and s.value.op in STAGED_LOADS \
                    and s.type.memref is None and s.target not in carried:
                out[s.target] = n.fresh_name(f"pipe_{s.target}", self.memrefs)
        return out

    def copy(self, body, yielded, loop: n.For, iv, values, slots: dict, stage: int, fresh: bool):
        """One stage's copy of the body at loop index ``iv`` reading carried ``values``;
        returns (statements, the values it yields)."""
        pre = []
        if not isinstance(iv, (n.Var, n.Const)) and scalar_type(iv, self.types) != INDEX:
            # the index as the loop variable was: an INT32 trip count makes `main_end + j` an
            # INT32 expression, which a branch yielding the index would then disagree with
            name = n.fresh_name(loop.var, self.used)
            self.types[name] = INDEX
            pre.append(n.Assign(name, INDEX, iv, span=loop.span))
            iv = n.Var(name)
        subst = {loop.var: iv, **{a.name: v for a, v in zip(loop.iter_args, values)}}
        if fresh:
            stmts, mapping = clone_block(body, self.used, subst)
        else:
            stmts, mapping = substitute(body, subst), {}
        f = loop.stage
        original = {new: old for old, new in mapping.items()}
        tagged = []
        for s in stmts:
            if isinstance(s, n.Assign) and original.get(s.target, s.target) in slots:
                memref = MemRef(name=slots[original.get(s.target, s.target)], slots=f, index=n.Const(stage),
                                pipeline=True)
                s = attrs.evolve(s, type=attrs.evolve(s.type, memref=memref))
            tagged.append(s)
        stmts, folded = inline_static_ifs(simplify(tuple(tagged)))  # a tail copy's `if i % 2 == 0` is static
        out_values = tuple(substitute(substitute(rename(v, mapping), subst), folded) for v in yielded)
        stmts, out_values = self.typed(list(stmts), out_values, loop)
        return pre + stmts, out_values

    def typed(self, stmts: list, values: tuple, loop: n.For):
        """Carried scalars keep their iter arg's type: a copy that yields its loop index
        (``main_end + j`` over an INT64 bound) binds it as the index it stands for."""
        types = dict(self.types)
        types.update(n.block_symbols(stmts))  # names the copy bound afresh
        out = []
        for a, v in zip(loop.iter_args, values):
            if isinstance(a.type, ScalarType) and not isinstance(v, n.Const) and scalar_type(v, types) != a.type:
                name = n.fresh_name(a.name, self.used)
                self.types[name] = a.type
                stmts.append(n.Assign(name, a.type, v, span=loop.span))
                v = n.Var(name)
            out.append(v)
        return stmts, tuple(out) + tuple(values[len(out):])


def _split_yield(body):
    if body and isinstance(body[-1], n.Yield):
        return tuple(body[:-1]), body[-1].values
    return tuple(body), ()


def _trip(start, stop, step):
    """Iterations of ``range(start, stop, step)`` for a positive step; never negative, so an
    empty dynamic range runs neither the main loop nor the tail."""
    if all(isinstance(x, n.Const) for x in (start, stop, step)):
        return n.Const(max(0, -(-(stop.value - start.value) // step.value)))
    span = stop if start == n.Const(0) else n.BinOp("-", stop, start)
    count = span if step == n.Const(1) else n.BinOp("//", _add(span, fold(n.BinOp("-", step, n.Const(1)))), step)
    return n.BinOp("max", count, n.Const(0))


def _add(a, b):
    if isinstance(a, n.Const) and isinstance(b, n.Const):
        return n.Const(a.value + b.value)
    if b == n.Const(0):
        return a
    if a == n.Const(0):
        return b
    return n.BinOp("+", a, b)


def _mul(a, b):
    if isinstance(a, n.Const) and isinstance(b, n.Const):
        return n.Const(a.value * b.value)
    if a == n.Const(1):
        return b
    if b == n.Const(1):
        return a
    return n.BinOp("*", a, b)


def _floordiv(a, b):
    if isinstance(a, n.Const) and isinstance(b, n.Const):
        return n.Const(a.value // b.value)
    return n.BinOp("//", a, b)
