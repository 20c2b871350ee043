"""Regions of tensor values — the window of a value a reader needs, ``(offset Expr,
extent)`` per axis — and their algebra: the whole value, a window's extents and names,
the block sizes to try along an axis, and ``operand_regions``: from each op's ``windows``
rule in the registry, which window of each operand a window of its result reads."""

from __future__ import annotations

import functools

from pypto.ir import nodes as n
from pypto.ir.ops import lookup
from pypto.ir.simplify import simplify
from pypto.ir.types import TensorType, TileType

Region = tuple  # ((offset Expr, extent int), ...) per axis


def whole(shape) -> Region:
    return tuple((n.Const(0), int(s)) for s in shape)


def extents(region: Region) -> tuple[int, ...]:
    return tuple(e for _, e in region)


def region_vars(region: Region) -> set[str]:
    return set().union(*(n.expr_vars(o) for o, _ in region)) if region else set()


def plus(a, b):
    return simplify(n.BinOp("+", a, b))


def substituted(node, env):
    from pypto.ir.rewrite import substitute

    return simplify(substitute(node, env))


@functools.lru_cache(maxsize=4096)
def block_sizes(extent: int) -> tuple[int, ...]:
    """Block extents to try along an axis, largest first: the whole axis, its divisors
    that make at most 16 blocks, and the powers of two below it (a block that does not
    divide the axis leaves a shorter last block)."""
    sizes = {extent} | {1 << j for j in range(extent.bit_length())}
    sizes |= {d for k in range(2, 17) if extent % k == 0 for d in (extent // k,)}
    return tuple(sorted((x for x in sizes if 1 <= x <= extent), reverse=True))


def substitute_expr(e, env: dict):
    if not env:
        return e
    from pypto.ir.rewrite import substitute

    return simplify(substitute(e, env))


def batch_window(batch: tuple, operand: tuple) -> tuple:
    """The window of an operand's batch axes that a product's batch window reads: the axes
    right-aligned, one of extent 1 (it may broadcast) read at 0."""
    batch = batch[len(batch) - len(operand):]
    return tuple((n.Const(0), 1) if d == 1 else w for w, d in zip(batch, operand))


def operand_regions(call: n.Call, region: Region, types: dict, result_shape: tuple) -> dict[str, Region] | None:
    """The window of each tensor operand of ``call`` that ``region`` of its result (of
    ``result_shape``) reads; None when any window may read all of an operand and ``region`` is
    not the whole result (a reshape)."""
    op = lookup(call.op)
    args = dict(zip((p.name for p in op.params), call.args))
    # (a tensor the kernel holds whole on chip is a tile by now: pypto.passes.tile_conversion.expand_l1)
    tensors = [p.name for p in op.params if p.name in args and isinstance(args[p.name], n.Var)
               and isinstance(types.get(args[p.name].name), (TensorType, TileType))]

    def shape(p):
        return types[args[p].name].shape

    rule = op.windows.kind
    if rule == "elementwise":
        return {p: region for p in tensors}
    if rule == "source":
        return {}
    if rule == "slice":
        return {"x": tuple((plus(o, s), e) for (o, e), s in zip(region, args["offset"]))}
    if rule == "row_reduce":
        return {"x": (region[0], (n.Const(0), shape("x")[1]))}
    if rule == "col_reduce":
        return {"x": ((n.Const(0), shape("x")[0]), region[1])}
    if rule in ("row_broadcast", "col_broadcast"):
        vec = op.windows.vector
        main = next(p for p in tensors if p != vec)
        one = (n.Const(0), 1)
        return {main: region, vec: (region[0], one) if rule == "row_broadcast" else (one, region[1])}
    if rule in ("rows", "row"):  # rows: the last axis whole, the leading ones as the window has them
        last = len(region) - 1
        if region[last] != (n.Const(0), result_shape[last]) or rule == "row" and any(e != 1 for _, e in region[:last]):
            return None
        out = {p: (*region[:last], (n.Const(0), shape(p)[-1])) for p in tensors}
        if op.windows.along is not None:  # read whole along an axis (a gather along a leading one)
            operand, axis = op.windows.along
            if operand in out:
                d = args[axis] % len(region)
                out[operand] = tuple((n.Const(0), shape(operand)[d]) if k == d else w
                                     for k, w in enumerate(out[operand]))
        return out
    if rule == "transpose":
        axes = [a % len(region) for a in (args["axis1"], args["axis2"])]
        swapped = list(region)
        swapped[axes[0]], swapped[axes[1]] = region[axes[1]], region[axes[0]]
        return {"x": tuple(swapped)}
    if rule == "cube":
        *batch, m, nn = region
        lhs, rhs = shape("lhs"), shape("rhs")
        k_lhs = (n.Const(0), lhs[-2] if args["a_trans"] else lhs[-1])
        k_rhs = (n.Const(0), rhs[-1] if args["b_trans"] else rhs[-2])
        out = {"lhs": (*batch_window(batch, lhs[:-2]), *((k_lhs, m) if args["a_trans"] else (m, k_lhs))),
               "rhs": (*batch_window(batch, rhs[:-2]), *((nn, k_rhs) if args["b_trans"] else (k_rhs, nn)))}
        if "acc" in args:
            out["acc"] = region
        return out
    # "whole" (reshape): any window of the result may come from anywhere in the operand
    return {p: whole(shape(p)) for p in tensors} if region == whole(result_shape) else None
