"""The statements of a matmul computed in L0-sized pieces (AutoTileMatmulL0's emitter): the
K chain of one output tile, and the grid of output tiles with each tile placed as it is
done — stored to GM, or written into a Mat scratch another matmul reads.

    K chain of the tile at (mi, ni), k < K:                full-K grid, A held (rows outer):
    a = pl.tile.extract(A, mi, 0, [m, k], Left)            for mi, (o,) in pl.range(0, Mf, m, init_values=(out,)):
    b = pl.tile.extract(B, 0, ni, [k, n], Right)               a = pl.tile.extract(A, mi, 0, [m, K], Left)
    acc = pl.tile.matmul(a, b)                                 for ni, (o2,) in pl.pipeline(0, Nf, n, init_values=(o,), stage=2):
    for ko, (acc_i,) in pl.pipeline(k, K, k, ..., stage=2):        b = pl.tile.extract(B, 0, ni, [K, n], Right)
        ...  acc_n = pl.tile.matmul_acc(acc_i, a_k, b_k)           c = pl.tile.matmul(a, b)
    (a shorter last block when k does not divide K)                o3 = pl.tile.store(c, [mi, ni], o2)

K blocks start at multiples of k, itself a multiple of the cube's 32-byte K block, so the
accumulator takes the block sums of one matmul over all of K, in the same order: the
pieces give the whole matmul's bits (``pypto.sim.ops.cube_math``). The operand tiles of a
pipelined loop take turns in two L0 buffers (LowerPipelineLoops), so the next piece moves in
while the cube works; with ``double_buffer_c`` two accumulators do the same for the drain.
The partial last row and column of tiles, where m or n does not divide M or N, follow the
loops straight-line.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import contextmanager

import attrs

from pypto.backend import MemorySpace as M
from pypto.backend import SoC
from pypto.errors import Span
from pypto.ir import nodes as n
from pypto.ir.infer import call_type
from pypto.ir.ops import op_call
from pypto.ir.types import INDEX, ForKind, MemRef, TileType


class Builder:
    """Statements bound into the current block, each typed as it is made."""

    def __init__(self, types: dict, used: set, soc: SoC, span: Span | None):
        self.types, self.used, self.soc, self.span = types, used, soc, span
        self.blocks: list[list] = [[]]

    @property
    def out(self) -> list:
        return self.blocks[-1]

    @contextmanager
    def block(self):
        self.blocks.append([])
        try:
            yield self.blocks[-1]
        finally:
            self.blocks.pop()

    def fresh(self, base: str, t) -> str:
        name = n.fresh_name(base, self.used)
        self.types[name] = t
        return name

    def bind(self, base: str, call: n.Call, *, name: str | None = None, memref: MemRef | None = None) -> n.Var:
        """``call`` bound to a fresh name from ``base`` (or to ``name``)."""
        t = call_type(call, self.types, self.soc)
        if memref is not None:
            t = attrs.evolve(t, memref=memref)
        if name is None:
            name = self.fresh(base, t)
        self.types[name] = t
        self.out.append(n.Assign(name, t, call, span=self.span))
        return n.Var(name)

    def loop(self, base: str, start: int, stop, step: int, carried: tuple, body: Callable, *, pipelined: bool,
             names: tuple | None = None) -> tuple:
        """``for v in range(start, stop, step)`` carrying ``carried`` (Vars): ``body(v,
        iter_vars)`` emits one trip and returns the values it yields; the loop's results
        (bound to ``names`` when given)."""
        var = self.fresh(base, INDEX)
        iter_args = tuple(n.IterArg(self.fresh(f"{c.name}_iter", self.types[c.name]), self.types[c.name], c)
                          for c in carried)
        with self.block() as stmts:
            values = body(n.Var(var), tuple(n.Var(a.name) for a in iter_args))
            stmts.append(n.Yield(tuple(values), span=self.span))
        results = tuple(n.Binding(names[k] if names else self.fresh(c.name, a.type), a.type)
                        for k, (c, a) in enumerate(zip(carried, iter_args)))
        for b in results:
            self.types[b.name] = b.type
        self.out.append(n.For(var, n.Const(start), _expr(stop), n.Const(step), tuple(stmts),
                              ForKind.Pipeline if pipelined else ForKind.Sequential, 2 if pipelined else None,
                              iter_args, results, span=self.span))
        return tuple(n.Var(b.name) for b in results)


def _expr(x):
    return x if isinstance(x, (n.Var, n.Const, n.BinOp)) else n.Const(x)


def plus(a, b: int):
    if isinstance(a, n.Const):
        return n.Const(a.value + b)
    return a if b == 0 else n.BinOp("+", a, n.Const(b))


@attrs.frozen
class Job:
    """One matmul to compute in pieces: its operands (Mat tiles), what the first K block of
    each output tile is (``fresh``: matmul, ``bias``: matmul_bias, ``acc``: matmul_acc onto
    ``acc``), the design point and where each finished tile goes."""

    lhs: n.Var
    rhs: n.Var
    M: int
    N: int
    K: int
    m: int
    n: int
    k: int
    first: str  # "fresh" | "bias" | "acc"
    acc: n.Var | None = None
    bias: Callable | None = None  # (builder, ni, width) -> the Bias tile for columns [ni, ni + width)
    rows_outer: bool = True  # full-K grid: A held per row of tiles (else B per column)
    double_buffer_c: bool = False
    # a batch_matmul's pages: each operand's batch axes (its pieces keep them whole), and
    # the ops of a first block and of the rest
    batch: tuple = ((), ())
    ops: tuple = ("tile.matmul", "tile.matmul_acc")


def _first_block(b: Builder, job: Job, a: n.Var, w: n.Var, ni, width: int, acc: n.Var | None = None,
                 bias: n.Var | None = None) -> n.Call:
    if job.first == "bias":
        return op_call("tile.matmul_bias", lhs=a, rhs=w, bias=bias or job.bias(b, ni, width))
    if job.first == "acc":
        return op_call(job.ops[1], acc=acc, lhs=a, rhs=w)
    return op_call(job.ops[0], lhs=a, rhs=w)


def extract(b: Builder, src: n.Var, row, col, shape: tuple, space: M) -> n.Var:
    return b.bind(f"{src.name}_{space.name}", op_call("tile.extract", src=src, index_row=_expr(row),
                                                      index_col=_expr(col), shape=tuple(n.Const(s) for s in shape),
                                                      target_memory=space))


def k_chain(b: Builder, job: Job, mi, ni, rows: int, cols: int, *, name: str | None = None) -> n.Var:
    """The output tile [mi, mi + rows) x [ni, ni + cols) over all of K: the first K block
    starts it, the rest accumulate in a pipelined loop, a shorter tail last (the last bound
    to ``name`` when given)."""
    full, tail = divmod(job.K, job.k)
    # (start, width) of the straight-line blocks and ("loop", start, stop) of the loop
    steps = [(0, job.k)]
    if full > 2:
        steps.append(("loop", job.k, full * job.k))
    elif full == 2:
        steps.append((job.k, job.k))
    if tail:
        steps.append((full * job.k, tail))

    def block(acc, kk, width, bound):
        a = extract(b, job.lhs, mi, kk, (*job.batch[0], rows, width), M.Left)
        w = extract(b, job.rhs, kk, ni, (*job.batch[1], width, cols), M.Right)
        call = _first_block(b, job, a, w, ni, cols, job.acc) if acc is None else \
            op_call(job.ops[1], acc=acc, lhs=a, rhs=w)
        return b.bind("acc", call, name=bound)

    acc = None
    for k, step in enumerate(steps):
        bound = name if k == len(steps) - 1 else None
        if step[0] == "loop":
            _, start, stop = step
            acc, = b.loop("ko", start, stop, job.k, (acc,), lambda ko, it: (block(it[0], ko, job.k, None),),
                          pipelined=True, names=(bound,) if bound else None)
        else:
            acc = block(acc, n.Const(step[0]), step[1], bound)
    return acc


@attrs.frozen
class Placement:
    """Where a finished output tile goes: ``place(builder, acc, mi, ni, state, name)`` puts
    it and returns the new state (the output tensor, or the scratch tile)."""

    state: n.Var
    place: Callable


def split_k_grid(b: Builder, job: Job, at: Placement, name: str) -> None:
    """Every output tile its own K chain, straight-line, rows outer; the last placement
    bound to ``name``."""
    tiles = [(mi, ni) for mi in range(0, job.M, job.m) for ni in range(0, job.N, job.n)]
    state = at.state
    for k, (mi, ni) in enumerate(tiles):
        rows, cols = min(job.m, job.M - mi), min(job.n, job.N - ni)
        acc = k_chain(b, job, n.Const(mi), n.Const(ni), rows, cols)
        state = at.place(b, acc, n.Const(mi), n.Const(ni), state, name if k == len(tiles) - 1 else None)


def full_k_grid(b: Builder, job: Job, at: Placement, name: str) -> None:
    """k == K: the held operand's panel per outer step (A per row of tiles, or B per
    column), the other operand's tiles streaming in a pipelined inner loop; the partial
    row / column of tiles after the loops. The last placement is bound to ``name``."""
    outer_size, inner_size = (job.M, job.N) if job.rows_outer else (job.N, job.M)
    outer_step, inner_step = (job.m, job.n) if job.rows_outer else (job.n, job.m)
    outer_full, inner_full = outer_size // outer_step * outer_step, inner_size // inner_step * inner_step

    def tile(o, i, o_len, i_len, held, state, last_name, memref=None, bias=None):
        mi, ni, rows, cols = (o, i, o_len, i_len) if job.rows_outer else (i, o, i_len, o_len)
        if job.rows_outer:
            a, w = held, extract(b, job.rhs, 0, ni, (job.K, cols), M.Right)
        else:
            a, w = extract(b, job.lhs, mi, 0, (rows, job.K), M.Left), held
        acc = b.bind("acc", _first_block(b, job, a, w, ni, cols, job.acc, bias), memref=memref)
        return at.place(b, acc, mi, ni, state, last_name)

    def band(o, o_len, state, last_name):
        """One row (column) of tiles at outer offset ``o``: a column's bias window once."""
        bias = None
        if job.rows_outer:
            held = extract(b, job.lhs, o, 0, (o_len, job.K), M.Left)
        else:
            held = extract(b, job.rhs, 0, o, (job.K, o_len), M.Right)
            bias = job.bias(b, o, o_len) if job.first == "bias" else None
        trips = inner_full // inner_step
        tail = inner_size - inner_full
        if trips >= 2:
            def body(i, it):
                memref = None
                if job.double_buffer_c:  # two accumulators, by the parity of the tile
                    memref = MemRef(name=n.fresh_name("acc_dbc", b.used), slots=2,
                                    index=n.BinOp("%", n.BinOp("//", i, n.Const(inner_step)), n.Const(2)),
                                    pipeline=True)
                return (tile(o, i, o_len, inner_step, held, it[0], None, memref, bias),)

            state, = b.loop("ni" if job.rows_outer else "mi", 0, inner_full, inner_step, (state,), body,
                            pipelined=True, names=(last_name,) if last_name and not tail else None)
        elif trips == 1:
            state = tile(o, n.Const(0), o_len, inner_step, held, state, None if tail else last_name, bias=bias)
        if tail:
            state = tile(o, n.Const(inner_full), o_len, tail, held, state, last_name, bias=bias)
        return state

    state = at.state
    trips = outer_full // outer_step
    outer_tail = outer_size - outer_full
    if trips >= 2:
        state, = b.loop("mo" if job.rows_outer else "no", 0, outer_full, outer_step, (state,),
                        lambda o, it: (band(o, outer_step, it[0], None),), pipelined=False,
                        names=(name,) if not outer_tail else None)
    elif trips == 1:
        state = band(n.Const(0), outer_step, state, None if outer_tail else name)
    if outer_tail:
        band(n.Const(outer_full), outer_tail, state, name)
