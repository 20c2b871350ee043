"""CanonicalizeTileSlice: a window of a Mat tile that an L0 load reads becomes the load of
that window from the tile itself, as the hardware's view of L1 bytes (``pto.subview``) is
read by TEXTRACT.

    w = pl.tile.slice(x, [16, 128], [0, 128])                  w_l = pl.tile.extract(x, 0, 128, [16, 128],
    w_l = pl.tile.move(w, target_memory=pl.Mem.Left)    ->                           target_memory=pl.Mem.Left)

An extract of a window is an extract of the tile at the summed offset; a window of a
window is one of the tile. A window no statement reads any more is dropped; one still
read (by something that takes a whole tile) is refused at codegen: L1 has no copy path.
A window of an Acc tile is what the fixpipe reads out (a store of part of a product); an
accumulating MMAD onto one is refused here, located.
"""

from __future__ import annotations

import attrs

from pypto.backend import MemorySpace as M
from pypto.errors import TypeCheckError
from pypto.ir import nodes as n
from pypto.ir.ops import argument, op_call
from pypto.ir.rewrite import rewrite
from pypto.ir.simplify import simplify
from pypto.ir.types import TileType
from pypto.passes.context import PassContext, PassResult, result


def canonicalize_tile_slice(program: n.Program, ctx: PassContext) -> PassResult:
    return result(n.Program(program.name, tuple(_function(fn) for fn in program.functions)))


# cube ops that accumulate in place onto their ``acc`` operand
ACCUMULATING = ("tile.matmul_acc", "tile.gemv_acc", "tile.batch_matmul_acc")


def _refuse_acc_window_accumulation(fn: n.Function, types: dict) -> None:
    """A window of an Acc tile is read out (by the fixpipe); the cube cannot accumulate
    onto one (the reference's MAD into a window writes the whole tile in place)."""
    acc_windows = {}
    for s in n.walk_stmts(fn.body):
        call = s.value if isinstance(s, n.Assign) else None
        if isinstance(call, n.Call) and call.op == "tile.slice":
            src = argument(call, "tile")
            t = types.get(src.name) if isinstance(src, n.Var) else None
            if isinstance(t, TileType) and t.space is M.Acc:
                acc_windows[s.target] = call.span
        elif isinstance(call, n.Call) and call.op in ACCUMULATING:
            acc = argument(call, "acc")
            if isinstance(acc, n.Var) and acc.name in acc_windows:
                raise TypeCheckError(
                    f"{call.op} accumulates onto '{acc.name}', a window of an Acc tile: the cube accumulates "
                    "into a whole Acc tile", span=call.span or acc_windows[acc.name],
                    hint="give each window an accumulator of its own (pl.tile.create([M, n], pl.FP32, "
                         "target_memory=pl.Mem.Acc)), or copy a window out with "
                         "pl.tile.extract(acc, row, col, [m, n], target_memory=pl.Mem.Mat)")


def _function(fn: n.Function) -> n.Function:
    types = n.symbols(fn)
    _refuse_acc_window_accumulation(fn, types)
    windows = {}  # slice name -> (the Mat tile it is a window of, row, col)
    for s in n.walk_stmts(fn.body):
        call = s.value if isinstance(s, n.Assign) else None
        if not (isinstance(call, n.Call) and call.op == "tile.slice"):
            continue
        src = argument(call, "tile")
        t = types.get(src.name) if isinstance(src, n.Var) else None
        offset = argument(call, "offset")
        if not (isinstance(t, TileType) and t.space is M.Mat and len(offset) == 2
                and argument(call, "valid_shape") is None):
            continue
        base, row, col = windows.get(src.name, (src.name, n.Const(0), n.Const(0)))  # (a window of a window)
        windows[s.target] = (base, simplify(row + offset[0]), simplify(col + offset[1]))
    if not windows:
        return fn

    def fold(call: n.Call):
        src = call.args[0]
        if not (isinstance(src, n.Var) and src.name in windows):
            return None
        base, row, col = windows[src.name]
        if call.op == "tile.move" and argument(call, "target_memory") in (M.Left, M.Right):
            shape = tuple(n.Const(d) for d in types[src.name].shape)
            return attrs.evolve(op_call("tile.extract", src=n.Var(base), index_row=row, index_col=col, shape=shape,
                                        target_memory=argument(call, "target_memory")), span=call.span)
        if call.op == "tile.extract":
            return attrs.evolve(call, args=(n.Var(base), simplify(row + argument(call, "index_row")),
                                            simplify(col + argument(call, "index_col")), *call.args[3:]))
        return None

    body = rewrite(fn.body, {n.Call: fold})
    return attrs.evolve(fn, body=_drop_unread(body, set(windows)))


def _drop_unread(body: tuple, windows: set) -> tuple:
    """``body`` without the window slices nothing reads (a window of a dropped window too)."""
    while True:
        read = set()
        for s in n.walk_stmts(body):
            shallow = attrs.evolve(s, **{f: () for f in ("body", "then_body", "else_body") if hasattr(s, f)})
            rewrite(shallow, {n.Var: lambda v: read.add(v.name)})
        dead = {x for x in windows if x not in read}
        if not dead:
            return body
        windows -= dead
        body = _without(body, dead)


def _without(body: tuple, dead: set) -> tuple:
    out = []
    for s in body:
        if isinstance(s, n.Assign) and s.target in dead:
            continue
        for field in ("body", "then_body", "else_body"):
            if hasattr(s, field):
                s = attrs.evolve(s, **{field: _without(getattr(s, field), dead)})
        out.append(s)
    return tuple(out)
