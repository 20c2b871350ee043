"""The cube's K chain for a window of a tensor-level matmul (ConvertTensorToTileOps).

    c[mi:mi+128, ni:ni+256] of pl.matmul(a, b)    a_tile = pl.tile.load(a, [mi, 0], [128, kb], ...)
                                             ->   b_tile = pl.tile.load(b, [0, ni], [kb, 256], ...)
                                                  acc = pl.tile.matmul(a_tile, b_tile)
                                                  for ki, (acc_iter,) in pl.range(kb, K, kb, init_values=(acc,)):
                                                      ...  acc_1 = pl.tile.matmul_acc(acc_iter, a_tile_1, b_tile_1)

K slices are as long as Left, Right and Mat hold beside the window (from the SoC table), and
start at multiples of the cube's fractal block of K (32 bytes of the operand dtype): the
accumulator then takes the same block sums, in the same order, as one matmul over the whole
K (``pypto.sim.ops.cube_math``), so the interpreter's tensor-level matmul and the chain agree
bit for bit. Operands come from GM (or slices of it) and are read through the emitter's
``load``, with its checks; their loads leave the landing space (Mat) to InferTileMemorySpace.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from pypto.errors import UnsupportedSyntaxError
from pypto.ir import nodes as n
from pypto.ir.ops import lookup, op_call
from pypto.ir.types import INDEX, TileType
from pypto.passes.tile_conversion.regions import batch_window, block_sizes, plus, region_vars
from pypto.passes.tile_conversion.tensor_graph import Op
from pypto.backend import CUBE_K_BYTES
from pypto.backend import MemorySpace as M

if TYPE_CHECKING:
    from pypto.passes.tile_conversion.tile_emitter import Emitter


def emit(em: Emitter, name: str, call: n.Call, region, d: Op) -> n.Var:
    """``region`` of a matmul (or of an accumulation into ``acc``) as the cube chain over
    K: the first K slice starts the accumulator (or ``acc``'s tile is it), the rest
    accumulate in a loop that carries it."""
    args = dict(zip((p.name for p in lookup(call.op).params), call.args))
    a_trans, b_trans = bool(args["a_trans"]), bool(args["b_trans"])
    held = _held(em, args, a_trans, b_trans, region, d)
    lhs, rhs = (("held", None, None) if p in held else em.g.source_window(args[p].name, em.env)
                for p in ("lhs", "rhs"))
    if lhs is None or rhs is None:
        raise UnsupportedSyntaxError("on a2a3 the cube reads its operands from GM (or slices of it)",
                                     span=d.span, hint="assemble the operand into a tensor in a kernel before")
    *batch, (m0, mb), (n0, nb) = region
    lt, rt = em.g.types[args["lhs"].name], em.g.types[args["rhs"].name]
    k = lt.shape[-2] if a_trans else lt.shape[-1]
    esize = lt.dtype.nbytes
    soc = em.soc
    pages = math.prod(e for _, e in batch)  # past rank 2, a stack of pages in each buffer
    # an operand held on chip is read whole, so K is one slice; a slice starts at a multiple
    # of the cube's fractal block (cube_math), so the chain adds the blocks the whole K has
    fractal = CUBE_K_BYTES // esize
    kb = next((b for b in block_sizes(k) if (b == k or b % fractal == 0)
               and pages * mb * b * esize <= soc.spec(M.Left).capacity
               and pages * b * nb * esize <= soc.spec(M.Right).capacity
               and pages * (mb * b + b * nb) * esize <= soc.spec(M.Mat).capacity and (b == k or not held)), None)
    if kb is None:
        p = next(iter(held))
        need = {M.Left: pages * mb * k * esize, M.Right: pages * k * nb * esize,
                M.Mat: pages * (mb * k + k * nb) * esize}
        short = ", ".join(f"{space.name} {b} B of its {soc.spec(space).capacity} B" for space, b in need.items()
                          if b > soc.spec(space).capacity)
        raise UnsupportedSyntaxError(
            f"the {p} of this matmul is held whole in Mat, so the cube reads all of K ({k}) at once, in blocks of "
            f"{mb}x{nb} of the result: that takes {short}", span=d.span,
            hint="a shorter K for the held operand (fewer gathered rows or columns), or split the matmul along K")
    fresh, onto = ("tile.batch_matmul", "tile.batch_matmul_acc") if batch else ("tile.matmul", "tile.matmul_acc")

    (la, lo, lr), (ra, ro, rr) = lhs, rhs
    # the page(s) each operand's batch axes give, the same for every K slice
    a_pages, b_pages = (() if offs is None else
                        tuple((plus(o, b0), e) for o, (b0, e) in zip(offs, batch_window(tuple(batch), shape[:-2])))
                        for offs, shape in ((lo, lt.shape), (ro, rt.shape)))

    def operands(kk, kb=kb):
        """The K slice at ``kk`` (``kb`` long) of both operands, as windows of their GM
        (transposed on the way into Mat where the matmul transposes them); a held one whole."""
        if "lhs" in held:
            a = em.bind(f"{held['lhs'].name}_Left", op_call("tile.move", tile=held["lhs"], target_memory=M.Left),
                        d.span)
        else:
            a_win = ((plus(lo[-2], kk), kb), (plus(lo[-1], m0), mb)) if a_trans else \
                ((plus(lo[-2], m0), mb), (plus(lo[-1], kk), kb))
            a = em.load(la, a_pages + a_win, lr or d.stmt, args["lhs"].name, None, a_trans,
                        em.g.valid_ends(args["lhs"].name, em.env))
        if "rhs" in held:
            b = em.bind(f"{held['rhs'].name}_Right", op_call("tile.move", tile=held["rhs"], target_memory=M.Right),
                        d.span)
        else:
            b_win = ((plus(ro[-2], n0), nb), (plus(ro[-1], kk), kb)) if b_trans else \
                ((plus(ro[-2], kk), kb), (plus(ro[-1], n0), nb))
            b = em.load(ra, b_pages + b_win, rr or d.stmt, args["rhs"].name, None, b_trans,
                        em.g.valid_ends(args["rhs"].name, em.env))
        return {"lhs": a, "rhs": b}

    deps = region_vars(region) | set().union(*(n.expr_vars(o) for _, offs, _ in (lhs, rhs) for o in offs or ()))
    deps |= {v.name for v in held.values()}
    with em.at(em.level(deps)) as frame:
        if "acc" in args:
            if em.g.gm_root(args["acc"].name) is not None:
                raise UnsupportedSyntaxError(
                    f"pl.matmul_acc accumulates on chip, in Acc, but '{args['acc'].name}' is GM storage, and on "
                    "a2a3 GM does not load into Acc", span=d.span,
                    hint="start the accumulator on chip — acc = pl.matmul(a, b), or acc = pl.create_tensor(shape, "
                         "dtype=pl.FP32) — accumulate into it, then assemble it into the output")
            acc, start = em.value(args["acc"].name, region, d.stmt), 0
        else:
            acc, start = em.bind("acc", op_call(fresh, **operands(n.Const(0))), d.span), kb
        loop_end = start + (k - start) // kb * kb
        if loop_end - start > kb:
            t = em.types[acc.name]
            ki, carried = em.fresh("ki", INDEX), em.fresh("acc_iter", t)
            em.ranges[ki] = (start, loop_end - kb)
            fold = em.push("fold", (ki, carried))
            nxt = em.bind("acc", op_call(onto, acc=n.Var(carried), **operands(n.Var(ki))), d.span)
            fold.stmts.append(n.Yield((nxt,)))
            em.pop()
            out = em.fresh("acc_out", t)
            em.emit_loop(frame, ki, n.Const(start), n.Const(loop_end), n.Const(kb), fold,
                         iter_args=(n.IterArg(carried, t, acc),), results=(n.Binding(out, t),), span=d.span)
            em.adopt(frame, out)
            acc = n.Var(out)
        elif loop_end > start:  # one slice: no loop
            acc = em.bind("acc", op_call(onto, acc=acc, **operands(n.Const(start))), d.span)
        if loop_end < k:  # what is left of K, one shorter slice
            acc = em.bind("acc", op_call(onto, acc=acc, **operands(n.Const(loop_end), k - loop_end)),
                          d.span)
        return acc


def _held(em: Emitter, args: dict, a_trans: bool, b_trans: bool, region, d: Op) -> dict:
    """The operands the kernel holds whole in Mat (``pypto.passes.tile_conversion.expand_l1``): each read
    as it is laid out, all of it — so its side of the result must be one block."""
    held = {}
    *batch, (m0, mb), (n0, nb) = region
    for p, trans, (o, e), axis in (("lhs", a_trans, (m0, mb), -2), ("rhs", b_trans, (n0, nb), -1)):
        name = em.g.resolve(args[p].name)
        t = em.g.types.get(name)
        if not isinstance(t, TileType):
            continue
        if t.space is not M.Mat:
            raise UnsupportedSyntaxError(
                f"the {p} of this matmul is held in {t.space.name}, and the cube reads its operands from Mat",
                span=d.span, hint="gather it into pl.Mem.Mat (the default space of pl.paged_gather)")
        if trans:
            raise UnsupportedSyntaxError(
                f"the {p} of this matmul is held on chip and is read as it is laid out: "
                f"{'a_trans' if p == 'lhs' else 'b_trans'} would transpose it, which only the GM->L1 path does",
                span=d.span, hint="gather its rows transposed instead (pl.gather_row(..., transpose=True) into "
                                  "pl.create_l1(..., transpose=True), or is_trans=True) and drop the flag")
        if batch or o != n.Const(0) or e != t.shape[axis]:
            raise UnsupportedSyntaxError(
                f"the {p} of this matmul is held whole in Mat and read whole, but the result is computed in "
                f"blocks of {mb}x{nb}" + (" per page" if batch else ""), span=d.span,
                hint="compute a result whose side of the held operand fits one cube block (its "
                     f"{'rows' if p == 'lhs' else 'columns'}), or slice the matmul")
        held[p] = n.Var(name)
    return held
