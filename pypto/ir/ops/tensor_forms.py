"""Tensor-level forms of tile ops (``pl.row_argmax(tensor)``, ``pl.cmp(tensor, 0.0)``,
``pl.part_add``, ``pl.fillpad_expand``, ``pl.expands``, ``pl.concat``,
``pl.reinterpret_view`` on tensors): each lowers, window by window, to its tile op —

    r = pl.row_argmax(a)        ->  a_tile = pl.tile.load(a, [i, 0], [rows, N]); r_1 = pl.tile.row_argmax(a_tile)
    m = pl.cmp(a, 0.0, 4)       ->  mask = pl.tile.cmps(a_tile, 0.0, 4); pl.tile.sel(mask, ones, zeros)

A tensor is valid everywhere, so the partial combines are their plain combine here and a
comparison gives the tensor of 0 and 1 in the operand's dtype (a packed mask has no
tensor form)."""

from __future__ import annotations

import math

from pypto.backend import SoC
from pypto.ir import nodes as n
from pypto.ir.ops.families import NUMERIC
from pypto.ir.ops.registry import Kind, OpArgs, Windows, op_call, register, unify
from pypto.ir.ops.type_rules import fail, fmt_shape, same_shape_dtype
from pypto.ir.ops.registry import ParamSpec as P
from pypto.ir.ops.tile import CMP_NAMES, SHAPE_HINT
from pypto.ir.ops.type_rules import static_ints
from pypto.ir.types import DataType, PadValue, TensorType


def _two_d(op: str, t: TensorType) -> None:
    if len(t.shape) != 2:
        raise fail(op, "a 2D operand", f"{len(t.shape)} dimensions")


def _dtype_in(op: str, t: TensorType, allowed, what: str = "a dtype it computes in") -> None:
    if t.dtype not in allowed:
        raise fail(op, f"{what} ({', '.join(d.name for d in allowed)})", t.dtype.name,
                   "convert with pl.cast(x, target_type=...) first")


# --------------------------------------------------------------------------- arg reductions


def _arg(name: str, axis: int):
    op = f"tensor.{name}"

    def infer(a: OpArgs, soc: SoC) -> TensorType:
        x = a.type("x")
        _two_d(op, x)
        _dtype_in(op, x, NUMERIC, "a dtype it compares in")
        return TensorType((x.shape[0], 1) if axis == 1 else (1, x.shape[1]), DataType.INT32)

    # no combine: two partial indices do not merge into one without their values, so the
    # reduced axis is read whole (a window of the other axis at a time)
    register(op, [P("x", Kind.TENSOR)], infer,
             doc=f"{name} over a whole tensor: the INT32 index of the first extreme element along the "
                 f"{'last' if axis == 1 else 'first'} axis",
             windows=Windows("row_reduce" if axis == 1 else "col_reduce"))
    unify(name, tile=f"tile.{name}", tensor=op)


for _name, _axis in (("row_argmax", 1), ("row_argmin", 1), ("col_argmax", 0), ("col_argmin", 0)):
    _arg(_name, _axis)


# --------------------------------------------------------------------------- comparisons


def _check_cmp_type(op: str, code) -> None:
    if not isinstance(code, int) or isinstance(code, bool) or not 0 <= code < len(CMP_NAMES):
        raise fail(op, "cmp_type 0..5 (EQ, NE, LT, LE, GT, GE)", repr(code))


def _infer_cmp(a: OpArgs, soc: SoC) -> TensorType:
    lhs = a.type("lhs")
    if a.op == "tensor.cmp":
        same_shape_dtype(a.op, lhs, a.type("rhs"))
    _two_d(a.op, lhs)
    _check_cmp_type(a.op, a["cmp_type"])
    return lhs


def _as_numbers(tile_op: str):
    """The tile comparison's packed mask turned into 1 and 0 of the operand's dtype: TSEL
    between a tile of ones and one of zeros (what the reference lowers a tensor cmp to)."""
    def lower(args, low):
        lhs = args["lhs"]
        t = low.type_of(lhs)
        shape = tuple(n.Const(e) for e in t.shape)
        mask = low.bind(op_call(tile_op, lhs=lhs, rhs=args["rhs"], cmp_type=args["cmp_type"]))
        one, zero = (n.Const(1.0), n.Const(0.0)) if t.dtype.is_float else (n.Const(1), n.Const(0))
        ones = low.bind(op_call("tile.full", shape=shape, dtype=t.dtype, value=one))
        zeros = low.bind(op_call("tile.full", shape=shape, dtype=t.dtype, value=zero))
        return op_call("tile.sel", mask=mask, lhs=ones, rhs=zeros)
    return lower


_CMP_DOC = "1 where lhs <cmp> rhs, else 0, in lhs's dtype (cmp_type: 0 EQ, 1 NE, 2 LT, 3 LE, 4 GT, 5 GE)"
register("tensor.cmp", [P("lhs", Kind.TENSOR), P("rhs", Kind.TENSOR), P("cmp_type", Kind.INT, default=0)],
         _infer_cmp, doc=_CMP_DOC, windows=Windows("elementwise", lower=_as_numbers("tile.cmp")))
register("tensor.cmps", [P("lhs", Kind.TENSOR), P("rhs", Kind.SCALAR), P("cmp_type", Kind.INT, default=0)],
         _infer_cmp, doc=_CMP_DOC + " (rhs a scalar)", windows=Windows("elementwise", lower=_as_numbers("tile.cmps")))
unify("cmp", tile="tile.cmp", tile_scalar="tile.cmps", tensor="tensor.cmp", tensor_scalar="tensor.cmps")
unify("cmps", tile_scalar="tile.cmps", tensor_scalar="tensor.cmps")


# --------------------------------------------------------------------------- partial combines


def _infer_part(a: OpArgs, soc: SoC) -> TensorType:
    lhs, rhs = a.type("lhs"), a.type("rhs")
    same_shape_dtype(a.op, lhs, rhs)
    _dtype_in(a.op, lhs, NUMERIC)
    return lhs


for _name in ("part_add", "part_mul", "part_max", "part_min"):
    register(f"tensor.{_name}", [P("lhs", Kind.TENSOR), P("rhs", Kind.TENSOR)], _infer_part,
             doc=f"{_name} of two tensors: both valid everywhere, so the plain elementwise "
                 f"{_name.split('_')[1]}", windows=Windows("elementwise"))
    unify(_name, tile=f"tile.{_name}", tensor=f"tensor.{_name}")


# --------------------------------------------------------------------------- fills and joins


def _infer_fillpad_expand(a: OpArgs, soc: SoC) -> TensorType:
    x = a.type("x")
    shape = static_ints(a["shape"])
    _two_d("tensor.fillpad_expand", x)
    if shape is None or len(shape) != 2:
        raise fail("tensor.fillpad_expand", "a static 2D shape", fmt_shape(a["shape"]), SHAPE_HINT)
    if shape[0] < x.shape[0] or shape[1] < x.shape[1]:
        raise fail("tensor.fillpad_expand", f"a shape at least the input's {fmt_shape(x.shape)}", fmt_shape(shape),
                   "fillpad_expand grows a tensor; pl.slice it to shrink")
    if a["pad_value"] is PadValue.null:
        raise fail("tensor.fillpad_expand", "pad_value zero, max or min", "null")
    return TensorType(shape, x.dtype)


register("tensor.fillpad_expand", [P("x", Kind.TENSOR), P("shape", Kind.SHAPE),
                                   P("pad_value", Kind.PAD, default=PadValue.zero)], _infer_fillpad_expand,
         doc="a larger tensor: x at the top left, the pad value everywhere else", windows=Windows("whole"))
unify("fillpad_expand", tile="tile.fillpad_expand", tensor="tensor.fillpad_expand")


def _infer_expands(a: OpArgs, soc: SoC) -> TensorType:
    t = a.type("target")
    value, vt = a["scalar"], a.type("scalar")
    is_float = isinstance(value, n.Const) and isinstance(value.value, float) or \
        vt is not None and getattr(vt, "dtype", None) is not None and vt.dtype.is_float
    if is_float and not t.dtype.is_float:
        raise fail("tensor.expands", f"an integer scalar for a {t.dtype.name} tensor", repr(getattr(value, "value", value)),
                   "write an int, or cast the tensor to a float dtype first")
    return t


register("tensor.expands", [P("target", Kind.TENSOR), P("scalar", Kind.SCALAR)], _infer_expands,
         doc="the scalar in every element of a tensor shaped as target", windows=Windows("elementwise"))
unify("expands", tile="tile.expands", tensor="tensor.expands")


def _infer_concat(a: OpArgs, soc: SoC) -> TensorType:
    x, y = a.type("src0"), a.type("src1")
    if x.dtype is not y.dtype:
        raise fail("tensor.concat", "src0 and src1 of the same dtype", f"{x.dtype.name} and {y.dtype.name}")
    if len(x.shape) != 2 or len(y.shape) != 2:
        raise fail("tensor.concat", "2D tensors", f"{len(x.shape)}D and {len(y.shape)}D")
    if x.shape[0] != y.shape[0]:
        raise fail("tensor.concat", "the same row count", f"{x.shape[0]} vs {y.shape[0]}")
    return TensorType((x.shape[0], x.shape[1] + y.shape[1]), x.dtype)


register("tensor.concat", [P("src0", Kind.TENSOR), P("src1", Kind.TENSOR)], _infer_concat,
         doc="src0 and src1 side by side: the columns of one, then of the other", windows=Windows("whole"))
unify("concat", tile="tile.concat", tensor="tensor.concat")


def _infer_reinterpret(a: OpArgs, soc: SoC) -> TensorType:
    from pypto.ir.ops.tensor import refuse_mx_view

    x, dtype = a.type("data"), a["dtype"]
    refuse_mx_view("tensor.reinterpret_view", x)
    if dtype is x.dtype:
        raise fail("tensor.reinterpret_view", "a dtype other than the tensor's", dtype.name, "drop the reinterpretation")
    nbytes = x.nbytes
    if a["shape"] is None:
        last = x.shape[-1] * x.dtype.nbytes
        if last % dtype.nbytes:
            raise fail("tensor.reinterpret_view", f"a last axis of whole {dtype.name} elements",
                       f"{last} bytes per row", "give shape= explicitly")
        return TensorType((*x.shape[:-1], last // dtype.nbytes), dtype)
    shape = static_ints(a["shape"])
    if shape is None or math.prod(shape) * dtype.nbytes != nbytes:
        raise fail("tensor.reinterpret_view", f"a shape of {nbytes} bytes of {dtype.name}", fmt_shape(a["shape"]))
    return TensorType(shape, dtype)


register("tensor.reinterpret_view", [P("data", Kind.TENSOR), P("dtype", Kind.DTYPE),
                                     P("shape", Kind.SHAPE, default=None, optional=True)], _infer_reinterpret,
         doc="the same bytes read as another dtype (by default the last axis rescaled)", windows=Windows("whole"))
unify("reinterpret_view", tile="tile.reinterpret_view", tensor="tensor.reinterpret_view")
