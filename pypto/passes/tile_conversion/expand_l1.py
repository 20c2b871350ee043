"""The tensors a kernel holds whole on chip (``pl.create_l1``, ``pl.paged_gather``) as the
tiles they are, before ConvertTensorToTileOps: a creation becomes ``tile.create`` in Mat, a
``pl.gather_row`` into one the tile op, a paged gather the loop that fills its buffer a row
at a time — the index and the page read by the scalar unit, the row by MTE2 straight into
place. What carries them (loops, ifs, other names) carries tiles; the tensor code that
reads them reads those tiles whole (``tile_emitter``: the cube takes one as its operand).

    g = pl.paged_gather(src, idx, bt, block_size=16, size=128, max_indices=32)
->  g_buf = pl.tile.create([32, 128], dtype=pl.FP16, target_memory=pl.Mem.Mat)
    for i, (g_row,) in pl.range(32, init_values=(g_buf,)):
        logical = pl.tensor.read(idx, [i])
        page = pl.tensor.read(bt, [logical // 16])
        g_next = pl.tile.gather_row(g_row, src, [i, 0], [page * 16 + logical % 16, 0], [1, 128])
        pl.yield_(g_next)
"""

from __future__ import annotations

import attrs

from pypto.backend import MemorySpace as M
from pypto.backend import SoC
from pypto.ir import nodes as n
from pypto.ir.infer import call_type
from pypto.errors import UnsupportedSyntaxError
from pypto.ir.ops import Kind, argument, lookup, op_call
from pypto.ir.rewrite import substitute
from pypto.ir.types import INDEX, TileType

L1_OPS = ("tensor.create_l1", "tensor.gather_row", "tensor.paged_gather")


def expand_l1(fn: n.Function, soc: SoC) -> tuple[n.Function, list]:
    """The function, and its held buffers as (name, TileType, span): what its tensor code's
    blocks must leave free in Vec."""
    if not any(isinstance(getattr(s, "value", None), n.Call) and s.value.op in L1_OPS for s in n.walk_stmts(fn.body)):
        return fn, []
    types = n.symbols(fn)
    used = set(types) | {s.var for s in n.walk_stmts(fn.body) if isinstance(s, n.For)}
    ex = _Expander(types, used, soc)
    return attrs.evolve(fn, body=ex.block(fn.body)), ex.buffers


def user_name(name: str) -> str:
    """The name as the source wrote it: SSA's ``kv_3`` is ``kv``."""
    base, _, suffix = name.rpartition("_")
    return base if base and suffix.isdigit() else name


class _Expander:
    def __init__(self, types: dict, used: set, soc: SoC):
        self.types, self.used, self.soc = types, used, soc
        self.tiles: dict[str, TileType] = {}  # names that now hold an on-chip tile
        self.buffers: list[tuple] = []  # (name, type, span) of each creation
        self.aliases: dict[str, n.Var] = {}  # x = g of a held tile: x is g

    def tile_of(self, expr) -> TileType | None:
        return self.tiles.get(expr.name) if isinstance(expr, n.Var) else None

    def block(self, body) -> tuple:
        out = []
        for stmt in body:
            out.extend(self.stmt(substitute(stmt, self.aliases)))
        return tuple(out)

    def stmt(self, stmt) -> list:
        value = getattr(stmt, "value", None)
        if isinstance(stmt, n.Assign):
            if isinstance(value, n.Call) and value.op == "tensor.create_l1":
                return [self.bind(stmt, op_call("tile.create", shape=argument(value, "shape"),
                                                dtype=argument(value, "dtype"), target_memory=M.Mat))]
            if isinstance(value, n.Call) and value.op == "tensor.gather_row":
                return [self.bind(stmt, self.gather_row(stmt, value))]
            if isinstance(value, n.Call) and value.op == "tensor.paged_gather":
                self.check_reads(stmt, value)
                return self.paged(stmt, value)
            if self.tile_of(value) is not None:  # another name of the tile: the tile itself
                self.aliases[stmt.target] = value
                return []
        if isinstance(value, (n.Call, n.FuncCall)) or isinstance(stmt, n.Return):
            read = self.held_read(stmt, value)
            if read is not None:
                return [read]
            self.check_reads(stmt, value)
            return [stmt]
        if isinstance(stmt, n.LOOPS):
            iter_args = tuple(self.carry(a, self.tile_of(a.init)) for a in stmt.iter_args)
            body = self.block(stmt.body)
            ends = body[-1].values if body and isinstance(body[-1], n.Yield) else ()
            for a, end in zip(iter_args, ends):
                self.same_way(stmt, user_name(a.name), (a.init, end))
            results = tuple(self.carry(b, self.tiles.get(a.name)) for a, b in zip(iter_args, stmt.results))
            return [attrs.evolve(stmt, iter_args=iter_args, body=body, results=results)]
        if isinstance(stmt, n.If):
            then_b, else_b = self.block(stmt.then_body), self.block(stmt.else_body)
            ends = [b[-1].values if b and isinstance(b[-1], n.Yield) else () for b in (then_b, else_b)]
            results = []
            for k, b in enumerate(stmt.results):
                values = [e[k] for e in ends if k < len(e)]
                self.same_way(stmt, user_name(b.name), values)
                results.append(self.carry(b, next((self.tile_of(v) for v in values if self.tile_of(v)), None)))
            return [attrs.evolve(stmt, then_body=then_b, else_body=else_b, results=tuple(results))]
        if n.stmt_children(stmt):
            return [attrs.evolve(stmt, body=self.block(stmt.body))]
        return [stmt]

    def same_way(self, stmt, name: str, values) -> None:
        """A loop or if carries a held tensor on every path, or on none."""
        held = [self.tile_of(v) is not None for v in values]
        if any(held) and not all(held):
            raise UnsupportedSyntaxError(
                f"'{name}' is a tensor held on chip (pl.create_l1 / pl.paged_gather) on one path of this "
                f"{'loop' if isinstance(stmt, n.LOOPS) else 'if'} and a tensor computed otherwise on another",
                span=stmt.span, hint="start and update it the same way on every path: from pl.create_l1 (or "
                                     "pl.paged_gather) and pl.gather_row")

    def gather_row(self, stmt, call: n.Call) -> n.Call:
        acc, src = argument(call, "acc"), argument(call, "src")
        if self.tile_of(acc) is None:
            raise UnsupportedSyntaxError(
                f"pl.gather_row fills an L1 tensor from pl.create_l1, and '{user_name(acc.name)}' is not one "
                "(GM storage, or a tensor computed on chip, has no L1 buffer to fill)", span=stmt.span,
                hint=f"start it with {user_name(acc.name)} = pl.create_l1(shape, dtype), or assemble into GM "
                     "with pl.assemble")
        if self.tile_of(src) is not None:
            raise UnsupportedSyntaxError(
                f"pl.gather_row copies from GM, and its src '{user_name(src.name)}' is held on chip", span=stmt.span,
                hint="gather from the tensor in GM it came from")
        args = dict(zip(("dst", "src", "dst_offset", "src_offset", "shapes", "transpose", "valid_shape"), call.args))
        return op_call("tile.gather_row", **args)

    def held_read(self, stmt, value):
        """``pl.read`` of an element of a held Vec tensor: the scalar unit reads the tile."""
        if isinstance(value, n.Call) and value.op == "tensor.read" and isinstance(stmt, n.Assign):
            t = self.tile_of(argument(value, "tensor"))
            if t is not None and t.space is M.Vec:
                return attrs.evolve(stmt, value=op_call("tile.read", tile=argument(value, "tensor"),
                                                        indices=argument(value, "indices")))
        return None

    def check_reads(self, stmt, value) -> None:
        """Tensor code reads a held tensor window by window (an op, an assemble's source, a
        matmul); whatever addresses a tensor in GM cannot address one."""
        if isinstance(stmt, n.Return) or isinstance(value, n.FuncCall):
            args, what = (stmt.values if isinstance(stmt, n.Return) else value.args), "a kernel's arguments live in GM"
            bad = [a for a in args if self.tile_of(a) is not None]
        else:
            op = lookup(value.op)
            if op is None:
                return
            computes = value.op.startswith("tensor.") and op.windows is not None
            bad = [a for p, a in zip(op.params, value.args) if self.tile_of(a) is not None and p.kind is Kind.TENSOR
                   and not computes and not (value.op == "tensor.assemble" and p.name == "source")]
            what = f"{value.op} addresses a tensor in GM"
        if bad:
            t = self.tile_of(bad[0])
            raise UnsupportedSyntaxError(
                f"'{user_name(bad[0].name)}' is held on chip, in {t.space.name}, and {what}", span=stmt.span,
                hint="assemble it into a GM tensor first (out = pl.assemble(out, value, [0, 0])), or read it with "
                     "tensor ops" + (" (pl.read of a Vec one reads its tile)" if t.space is M.Mat else ""))

    def bind(self, stmt: n.Assign, value) -> n.Assign:
        t = call_type(value, self.types, self.soc)
        if value.op == "tile.create":
            self.buffers.append((stmt.target, t, stmt.span))
        self.tiles[stmt.target] = self.types[stmt.target] = t
        return attrs.evolve(stmt, value=value, type=t)

    def carry(self, node, t: TileType | None):
        """An iter arg or result that carries an on-chip tile: typed as it."""
        if t is None:
            return node
        self.tiles[node.name] = self.types[node.name] = t
        return attrs.evolve(node, type=t)

    def fresh(self, base: str, t) -> str:
        name = n.fresh_name(base, self.used)
        self.types[name] = t
        return name

    def paged(self, stmt: n.Assign, call: n.Call) -> list:
        """A paged gather as its buffer and the loop filling it, one row per index."""
        a = {k: argument(call, k) for k in ("src", "indices", "block_table", "block_size", "size",
                                             "max_indices", "space", "col_off", "is_trans")}
        size, rows, block = a["size"], a["max_indices"], n.Const(a["block_size"])
        src_t = self.types[a["src"].name]
        shape = (size, rows) if a["is_trans"] else (rows, size)
        span = stmt.span
        buf = op_call("tile.create", shape=tuple(map(n.Const, shape)), dtype=src_t.dtype, target_memory=a["space"])
        buf_t = call_type(buf, self.types, self.soc)
        self.buffers.append((stmt.target, buf_t, span))
        start = self.fresh(f"{stmt.target}_buf", buf_t)
        i, row, nxt = self.fresh("i", INDEX), self.fresh(f"{stmt.target}_row", buf_t), self.fresh(stmt.target, buf_t)

        def read(tensor: n.Var, index, base: str) -> tuple[n.Var, n.Assign]:
            at = (index,) if len(self.types[tensor.name].shape) == 1 else (n.Const(0), index)
            r = op_call("tensor.read", tensor=tensor, indices=at)
            name = self.fresh(base, call_type(r, self.types, self.soc))
            return n.Var(name), n.Assign(name, self.types[name], r, span=span)

        logical, read_idx = read(a["indices"], n.Var(i), "logical")
        page, read_page = read(a["block_table"], logical // block, "page")
        phys = page * block + logical % block
        dst = (n.Const(0), n.Var(i)) if a["is_trans"] else (n.Var(i), n.Const(0))
        fill = op_call("tile.gather_row", dst=n.Var(row), src=a["src"], dst_offset=dst,
                       src_offset=(phys, n.Const(a["col_off"])), shapes=(n.Const(1), n.Const(size)),
                       transpose=a["is_trans"])
        count = self.types[a["indices"].name].shape[-1]
        loop = n.For(i, n.Const(0), n.as_expr(count), n.Const(1),
                     (read_idx, read_page, n.Assign(nxt, buf_t, fill, span=span), n.Yield((n.Var(nxt),), span=span)),
                     iter_args=(n.IterArg(row, buf_t, n.Var(start)),), results=(n.Binding(stmt.target, buf_t),),
                     span=span)
        self.tiles[stmt.target] = self.types[stmt.target] = buf_t
        return [n.Assign(start, buf_t, buf, span=span), loop]
