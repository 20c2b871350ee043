"""ConvertTensorToTileOps: tensor-level ops inside InCore functions become loads, tile ops
and stores, blocked along rows so that each block's tiles fit in Vec.

    out[:] = pl.add(a, b)       for r in pl.range(0, 512, 128):          # [512, 128] fp32
                          ->        a_t = pl.tile.load(a, [r, 0], [128, 128], target_memory=None)
                                    b_t = pl.tile.load(b, [r, 0], [128, 128], target_memory=None)
                                    add = pl.tile.add(a_t, b_t)
                                    pl.tile.store(add, [r, 0], out)

Each ``tensor.assemble`` (``out[...] = x``) is a sink; the tensor ops that feed it are
computed block by block at the sink (an intermediate feeding two sinks is computed in
both). Row-local ops (elementwise, row reductions and broadcasts, casts) block along
rows; a column reduction of a row-local expression too large for Vec folds its blocks of
rows into a result carried by a loop (sum, max or min of the blocks' reductions); anything
else (reshape, transpose, a column reduction that fits) takes the whole tensor as one
block, which must fit. A ``tensor.matmul`` feeding a sink becomes the cube chain over M/N
blocks with a K loop carrying the accumulator. Loads leave the memory space to
InferTileMemorySpace.
"""

from __future__ import annotations

import math

import attrs

from pypto.errors import MemorySpaceError, UnsupportedSyntaxError
from pypto.ir import nodes as n
from pypto.ir.ops import lookup
from pypto.ir.rewrite import substitute
from pypto.ir.simplify import simplify
from pypto.ir.types import INDEX, ForKind, FunctionType, TensorType
from pypto.passes.context import PassContext, PassResult, result
from pypto.sim.soc import MemorySpace as M

INCORE = (FunctionType.InCore, FunctionType.AIC, FunctionType.AIV, FunctionType.Opaque)
ROW_LOCAL = frozenset(
    [f"tensor.{x}" for x in ("add", "sub", "mul", "div", "maximum", "minimum", "adds", "subs", "muls", "divs",
                             "maximums", "minimums", "neg", "abs", "relu", "exp", "log", "sqrt", "rsqrt", "recip",
                             "row_sum", "row_max", "row_min", "row_expand", "row_expand_add", "row_expand_sub",
                             "row_expand_mul", "row_expand_div", "row_expand_expdif", "cast", "full", "create",
                             "fillpad")]
    + [f"tensor.col_expand_{x}" for x in ("add", "sub", "mul", "div")])
ELEMENTWISE = ROW_LOCAL - {f"tensor.{x}" for x in ("row_sum", "row_max", "row_min", "row_expand", "row_expand_add",
                                                   "row_expand_sub", "row_expand_mul", "row_expand_div",
                                                   "row_expand_expdif", "col_expand_add", "col_expand_sub",
                                                   "col_expand_mul", "col_expand_div")}
WHOLE = frozenset({"tensor.col_sum", "tensor.col_max", "tensor.col_min", "tensor.col_expand", "tensor.reshape",
                   "tensor.transpose"})
TILE_OP = {"tensor.create": "tile.create"}
COL_REDUCE = {"tensor.col_sum": "tile.add", "tensor.col_max": "tile.maximum", "tensor.col_min": "tile.minimum"}


def convert_tensor_to_tile_ops(program: n.Program, ctx: PassContext) -> PassResult:
    out = []
    for fn in program.functions:
        if fn.type in INCORE and any(_tensor_call(s) for s in n.walk_stmts(fn.body)):
            fn = _Converter(fn, ctx).run()
        out.append(fn)
    return result(n.Program(program.name, tuple(out)))


def _tensor_call(stmt):
    value = getattr(stmt, "value", None)
    return value if isinstance(value, n.Call) and value.op.startswith("tensor.") else None


@attrs.frozen
class _Leaf:
    """A GM tensor window the blocked code loads from."""

    tensor: str
    offsets: tuple


class _Converter:
    def __init__(self, fn: n.Function, ctx: PassContext):
        self.fn = fn
        self.ctx = ctx
        self.types = n.symbols(fn)
        self.used = set(self.types)
        self.defs: dict[str, tuple] = {}  # tensor-op result -> (Call, span)
        for stmt in n.walk_stmts(fn.body):
            call = _tensor_call(stmt)
            if call is not None and isinstance(stmt, n.Assign):
                self.defs[stmt.target] = (call, stmt.span)

    def run(self) -> n.Function:
        self._check_escapes()
        return attrs.evolve(self.fn, body=self.block(self.fn.body))

    def _check_escapes(self) -> None:
        """Intermediate tensors live only in blocks: anything else reading one is an error."""
        for stmt in n.walk_stmts(self.fn.body):
            call = getattr(stmt, "value", None)
            readers = []
            if isinstance(call, n.Call) and not call.op.startswith("tensor."):
                readers = [a for a in call.args if isinstance(a, n.Var)]
            elif isinstance(call, n.FuncCall) or isinstance(stmt, (n.Return, n.Yield)):
                readers = [a for a in (call.args if call is not None else stmt.values) if isinstance(a, n.Var)]
            for v in readers:
                if v.name in self.defs and self.defs[v.name][0].op not in ("tensor.assemble", "tensor.slice"):
                    raise UnsupportedSyntaxError(
                        f"the tensor '{v.name}' computed by {self.defs[v.name][0].op} has no GM storage to be "
                        "read from here", span=getattr(stmt, "span", None),
                        hint="assemble it into an output tensor first (out[...] = value)")

    def block(self, body) -> tuple:
        out = []
        for stmt in body:
            call = _tensor_call(stmt)
            if call is None:
                stmt = self.through_slices(stmt)
                if isinstance(stmt, n.For):
                    stmt = attrs.evolve(stmt, body=self.block(stmt.body))
                elif isinstance(stmt, n.If):
                    stmt = attrs.evolve(stmt, then_body=self.block(stmt.then_body), else_body=self.block(stmt.else_body))
                out.append(stmt)
            elif call.op == "tensor.assemble":
                target, source, offset = call.args
                out.extend(self.sink(target, source, offset, stmt.span))
                if isinstance(stmt, n.Assign):  # out_1 = (out[...] = x): the same tensor
                    out.append(n.Assign(stmt.target, stmt.type, target, span=stmt.span))
            # other tensor ops are computed at the sinks that read them
        return tuple(out)

    # ------------------------------------------------------------------ sinks

    def sink(self, target: n.Var, source, offset, span) -> list:
        if isinstance(source, n.Var) and source.name in self.defs and self.defs[source.name][0].op == "tensor.matmul":
            return self.matmul(target, source, offset, span)
        nodes = self.dag(source, span)
        shape = self.types[source.name].shape
        if self.too_large_col_reduction(nodes, source):
            return self.col_reduction(target, source, offset, nodes[:-1], span)
        whole = any(self.defs[x][0].op in WHOLE for x in nodes)
        rows = shape[0] if len(shape) == 2 else 1
        cols = shape[-1]
        block_cols = None
        if whole:
            block_rows = rows
        elif self.elementwise(nodes, source) and self.row_bytes(nodes, source, rows) > self.capacity:
            block_rows, block_cols = self.block_2d(nodes, source, rows, cols)
        else:
            block_rows = self.block_rows(nodes, source, rows, span)
        r, c = n.fresh_name("r", self.used), n.fresh_name("c", self.used)
        self.types[r] = self.types[c] = INDEX
        body = self.emit_block(nodes, source, n.Var(r), block_rows, rows, span, n.Var(c), block_cols)
        store_off = list(offset)
        if len(shape) == 2:
            store_off[0] = _plus(offset[0], n.Var(r))
        if block_cols is not None:
            store_off[-1] = _plus(offset[-1], n.Var(c))
        body.append(n.Eval(n.Call("tile.store", (body_result(body), tuple(store_off), target)), span=span))
        if block_cols is not None:
            if cols // block_cols > 1:
                body = [n.For(c, n.Const(0), n.Const(cols), n.Const(block_cols), body, ForKind.Sequential, span=span)]
            else:
                body = _subst(body, c)
        if rows // block_rows > 1:
            return [n.For(r, n.Const(0), n.Const(rows), n.Const(block_rows), body, ForKind.Sequential, span=span)]
        return _subst(body, r)

    def too_large_col_reduction(self, nodes, source) -> bool:
        """A column reduction of a row-local expression whose tiles do not fit at once."""
        if not (nodes and nodes[-1] == source.name and self.defs[source.name][0].op in COL_REDUCE):
            return False
        x = self.defs[source.name][0].args[0]
        inner = nodes[:-1]
        if not isinstance(x, n.Var) or len(self.types[x.name].shape) != 2 \
                or any(self.defs[y][0].op not in ROW_LOCAL | {"tensor.slice"} for y in inner):
            return False
        rows = self.types[x.name].shape[0]
        return self.row_bytes(inner, x, rows) * rows > self.capacity

    def col_reduction(self, target: n.Var, source: n.Var, offset, inner, span) -> list:
        """``out = col_sum(x)`` over blocks of rows that fit, folded into a running
        result carried by a loop — the first block starts it:

            acc = col_sum(x[0:B]);  for r in range(B, R, B): acc = add(acc, col_sum(x[r:r + B]))
        """
        call, _ = self.defs[source.name]
        x = call.args[0]
        rows, cols = self.types[x.name].shape
        reserve = 2 * cols * self.types[source.name].dtype.nbytes  # the running result and one block's
        block = self.block_rows(inner, x, rows, span, reserve=reserve)
        reduce, combine = "tile." + call.op.removeprefix("tensor."), COL_REDUCE[call.op]

        def reduced(r) -> tuple[list, n.Var]:
            body = self.emit_block(inner, x, r, block, rows, span)
            return body, self.tile_call(body, source.name, reduce, (body_result(body),), span)

        stmts, acc = reduced(n.Const(0))
        stmts = list(simplify(tuple(stmts)))  # the first block's offsets, + 0 folded
        if rows > block:
            r = n.fresh_name("r", self.used)
            self.types[r] = INDEX
            body, part = reduced(n.Var(r))
            carried = n.fresh_name(f"{source.name}_acc", self.used)
            self.types[carried] = self.types[acc.name]
            folded = self.tile_call(body, source.name, combine, (n.Var(carried), part), span)
            body.append(n.Yield((folded,), span=span))
            out = n.fresh_name(f"{source.name}_total", self.used)
            self.types[out] = self.types[acc.name]
            stmts.append(n.For(r, n.Const(block), n.Const(rows), n.Const(block), body, ForKind.Sequential, None,
                               (n.IterArg(carried, self.types[acc.name], acc),), (n.Binding(out, self.types[out]),),
                               span=span))
            acc = n.Var(out)
        stmts.append(n.Eval(n.Call("tile.store", (acc, tuple(offset), target)), span=span))
        return stmts

    def tile_call(self, body: list, base: str, op: str, args: tuple, span) -> n.Var:
        """``op(*args)`` bound to a fresh name, its trailing parameters at their defaults."""
        tile_op = lookup(op)
        args = (*args, *(q.default for q in tile_op.params[len(args):]))
        return self.bind(body, base, n.Call(tile_op.name, args), span)

    @property
    def capacity(self) -> int:
        return self.ctx.soc.spec(M.Vec).capacity

    def elementwise(self, nodes, source) -> bool:
        """Every op maps element to element over one shape: blocks may split any axis."""
        shape = self.types[source.name].shape
        return all(self.defs[x][0].op in ELEMENTWISE for x in nodes) and all(
            self.types[x].shape == shape for x in [*nodes, *self.leaves(nodes, source)])

    def row_bytes(self, nodes, source, rows: int) -> int:
        return sum(math.prod(self.types[x].shape) * self.types[x].dtype.nbytes
                   for x in [*nodes, *self.leaves(nodes, source)]) // max(rows, 1)

    def block_2d(self, nodes, source, rows: int, cols: int) -> tuple[int, int]:
        """(rows, columns) per block when not even one whole row fits: the widest column
        block that fits (a divisor of the width), then as many rows of it as fit."""
        per_elem = self.row_bytes(nodes, source, rows) // cols
        block_cols = _largest_divisor(cols, lambda d: d * per_elem <= self.capacity)
        block_rows = _largest_divisor(rows, lambda d: d * block_cols * per_elem <= self.capacity)
        return block_rows, block_cols

    def dag(self, source, span) -> list[str]:
        """Tensor-op results feeding ``source``, producers first."""
        order: list[str] = []

        def visit(v):
            if not isinstance(v, n.Var) or v.name not in self.defs or v.name in order:
                return
            call, _ = self.defs[v.name]
            if call.op == "tensor.matmul":
                raise UnsupportedSyntaxError(
                    "on a2a3 a matmul's result reaches vector ops only through GM", span=span,
                    hint="assemble the matmul into an output tensor, and load it back in a second kernel")
            if call.op not in ROW_LOCAL | WHOLE | {"tensor.slice"}:
                raise UnsupportedSyntaxError(f"{call.op} cannot be converted to tile ops here", span=span)
            for arg in call.args:
                visit(arg)
            order.append(v.name)

        visit(source)
        return order

    def block_rows(self, nodes, source, rows: int, span, reserve: int = 0) -> int:
        """The most rows per block whose tiles all fit in Vec (a divisor of the row count),
        beside ``reserve`` bytes of other tiles."""
        capacity = self.ctx.soc.spec(M.Vec).capacity
        per_row = 0
        for name in [*nodes, *self.leaves(nodes, source)]:
            t = self.types[name]
            if len(t.shape) == 2 and t.shape[0] == rows:
                per_row += t.shape[1] * t.dtype.nbytes
            else:
                per_row += math.prod(t.shape) * t.dtype.nbytes / max(rows, 1)
        for block in sorted((d for d in range(1, rows + 1) if rows % d == 0), reverse=True):
            if block * per_row + reserve <= capacity:
                return block
        raise MemorySpaceError(f"a single row of this tensor expression needs {per_row:.0f} B of Vec, more than "
                               f"its {capacity} B", span=span, hint="split the columns yourself with slices")

    def leaves(self, nodes, source) -> list[str]:
        out = []
        for name in nodes or [source.name]:
            call = self.defs[name][0] if name in self.defs else None
            args = call.args if call is not None else (n.Var(name),)
            for arg in args:
                if isinstance(arg, n.Var) and arg.name not in self.defs and arg.name not in out \
                        and isinstance(self.types[arg.name], TensorType):
                    out.append(arg.name)
        return out

    def emit_block(self, nodes, source, r: n.Var, block_rows: int, rows: int, span, c: n.Var | None = None,
                   block_cols: int | None = None) -> list:
        body: list = []
        tiles: dict[str, n.Var] = {}

        def block_shape(t: TensorType):
            shape = t.shape
            if len(shape) == 2 and shape[0] == rows:
                shape = (block_rows, shape[1])
            if block_cols is not None:
                shape = (*shape[:-1], block_cols)
            return shape

        def leaf_tile(name: str):
            if name in tiles:
                return tiles[name]
            base, offsets = self.window(name)
            t = self.types[name]
            shape = block_shape(t)
            offs = list(offsets)
            if len(shape) == 2 and shape[0] != t.shape[0]:
                offs[0] = _plus(offs[0], r)
            if block_cols is not None:
                offs[-1] = _plus(offs[-1], c)
            var = self.bind(body, f"{name}_tile", n.Call("tile.load", (n.Var(base), tuple(offs),
                                                                     tuple(n.Const(s) for s in shape), None, None,
                                                                     False)), span)
            tiles[name] = var
            return var

        if all(self.defs[x][0].op == "tensor.slice" for x in nodes):  # a copy of a window
            leaf_tile(source.name)
            return body
        for name in nodes:
            call, _ = self.defs[name]
            if call.op == "tensor.slice":
                continue  # read through by the loads of its consumers
            op = lookup(call.op)
            tile_op = lookup(TILE_OP.get(call.op, "tile." + op.short))
            args = []
            for p, arg in zip(op.params, call.args):
                if isinstance(arg, n.Var) and isinstance(self.types.get(arg.name), TensorType):
                    args.append(tiles[arg.name] if arg.name in tiles and arg.name in self.defs
                                and self.defs[arg.name][0].op != "tensor.slice" else leaf_tile(arg.name))
                elif p.name == "shape":
                    args.append(tuple(n.Const(s) for s in block_shape(self.types[name])))
                else:
                    args.append(arg)
            tiles[name] = self.tile_call(body, name, tile_op.name, tuple(args), span)
        return body

    def through_slices(self, stmt):
        """A tile load from (or store into) a slice addresses the sliced tensor itself, at
        the slice's offset plus its own: slices have no storage of their own."""
        call = getattr(stmt, "value", None)
        if not (isinstance(call, n.Call) and call.op in ("tile.load", "tile.store")):
            return stmt
        k = 0 if call.op == "tile.load" else 2
        x = call.args[k]
        if not (isinstance(x, n.Var) and x.name in self.defs and self.defs[x.name][0].op == "tensor.slice"):
            return stmt
        base, base_off = self.window(x.name)
        offsets = tuple(simplify(b if o == n.Const(0) else (o if b == n.Const(0) else n.BinOp("+", b, o)))
                        for b, o in zip(base_off, call.args[1]))
        args = list(call.args)
        args[k], args[1] = n.Var(base), offsets
        stmt = attrs.evolve(stmt, value=attrs.evolve(call, args=tuple(args)))
        if isinstance(stmt, n.Assign) and call.op == "tile.store":  # the store's result is the tensor written
            self.types[stmt.target] = self.types[base]
            stmt = attrs.evolve(stmt, type=self.types[base])
        return stmt

    def window(self, name: str):
        """(base GM tensor, offsets) of a tensor that may be a chain of slices."""
        offsets = [n.Const(0)] * len(self.types[name].shape)
        while name in self.defs and self.defs[name][0].op == "tensor.slice":
            x, _, off = self.defs[name][0].args
            offsets = [o if b == n.Const(0) else (b if o == n.Const(0) else n.BinOp("+", b, o))
                       for b, o in zip(off, offsets)]
            name = x.name
        return name, tuple(offsets)

    def bind(self, body: list, base: str, call: n.Call, span) -> n.Var:
        from pypto.ir.infer import call_type

        t = call_type(call, self.types, self.ctx.soc)
        name = n.fresh_name(base, self.used)
        self.types[name] = t
        body.append(n.Assign(name, t, call, span=span))
        return n.Var(name)

    # ------------------------------------------------------------------ matmul

    def matmul(self, target: n.Var, source: n.Var, offset, span) -> list:
        call, _ = self.defs[source.name]
        lhs, rhs, out_dtype, a_trans, b_trans = call.args
        lt, rt = self.types[lhs.name], self.types[rhs.name]
        m, k = lt.shape[::-1] if a_trans else lt.shape
        nn = rt.shape[0] if b_trans else rt.shape[1]
        soc = self.ctx.soc
        esize = lt.dtype.nbytes
        mb = _largest_divisor(m, lambda d: d <= 128)
        nb = _largest_divisor(nn, lambda d: d <= 256 and mb * d * 4 <= soc.spec(M.Acc).capacity)
        kb = _largest_divisor(k, lambda d: mb * d * esize <= soc.spec(M.Left).capacity
                              and d * nb * esize <= soc.spec(M.Right).capacity
                              and (mb * d + d * nb) * esize <= soc.spec(M.Mat).capacity)
        (la, lo), (ra, ro) = self.window(lhs.name), self.window(rhs.name)
        mi, ni, ki = (n.fresh_name(x, self.used) for x in ("mi", "ni", "ki"))
        for v in (mi, ni, ki):
            self.types[v] = INDEX

        def plus(base, v):
            return v if base == n.Const(0) else n.BinOp("+", base, v)

        def operands(body, kk):
            a_off = (plus(lo[0], kk), plus(lo[1], n.Var(mi))) if a_trans else (plus(lo[0], n.Var(mi)), plus(lo[1], kk))
            a_ext = (kb, mb) if a_trans else (mb, kb)
            b_off = (plus(ro[0], n.Var(ni)), plus(ro[1], kk)) if b_trans else (plus(ro[0], kk), plus(ro[1], n.Var(ni)))
            b_ext = (nb, kb) if b_trans else (kb, nb)
            a = self.bind(body, f"{lhs.name}_tile", n.Call("tile.load", (la, a_off, tuple(map(n.Const, a_ext)), None,
                                                                         None, bool(a_trans))), span)
            b = self.bind(body, f"{rhs.name}_tile", n.Call("tile.load", (ra, b_off, tuple(map(n.Const, b_ext)), None,
                                                                         None, bool(b_trans))), span)
            return a, b

        la, ra = n.Var(la), n.Var(ra)
        inner: list = []
        a0, b0 = operands(inner, n.Const(0))
        acc = self.bind(inner, "acc", n.Call("tile.matmul", (a0, b0)), span)
        if k // kb > 1:
            acc_t = self.types[acc.name]
            it, res = n.fresh_name("acc_iter", self.used), n.fresh_name("acc_out", self.used)
            self.types[it] = self.types[res] = acc_t
            kbody: list = []
            a, b = operands(kbody, n.Var(ki))
            nxt = self.bind(kbody, "acc", n.Call("tile.matmul_acc", (n.Var(it), a, b)), span)
            kbody.append(n.Yield((nxt,)))
            inner.append(n.For(ki, n.Const(kb), n.Const(k), n.Const(kb), kbody, ForKind.Sequential,
                               iter_args=(n.IterArg(it, acc_t, acc),), results=(n.Binding(res, acc_t),), span=span))
            acc = n.Var(res)
        inner.append(n.Eval(n.Call("tile.store", (acc, (plus(offset[0], n.Var(mi)), plus(offset[1], n.Var(ni))),
                                                  target)), span=span))
        stmts = inner
        stmts = [n.For(ni, n.Const(0), n.Const(nn), n.Const(nb), stmts, ForKind.Sequential, span=span)] \
            if nn // nb > 1 else _subst(stmts, ni)
        stmts = [n.For(mi, n.Const(0), n.Const(m), n.Const(mb), stmts, ForKind.Sequential, span=span)] \
            if m // mb > 1 else _subst(stmts, mi)
        del out_dtype  # the store converts Acc's FP32 to the target's dtype
        return list(stmts)


def body_result(body: list) -> n.Var:
    last = body[-1]
    return n.Var(last.target)


def _plus(a, b):
    return b if a == n.Const(0) else n.BinOp("+", a, b)


def _subst(stmts, name: str) -> list:
    """The block for the one value 0 of a loop index that needs no loop."""
    return list(simplify(substitute(tuple(stmts), {name: n.Const(0)})))


def _largest_divisor(x: int, ok) -> int:
    for d in sorted((d for d in range(1, x + 1) if x % d == 0), reverse=True):
        if ok(d):
            return d
    return 1
