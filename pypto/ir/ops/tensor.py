"""Tensor-level ops (``pl.tensor.*``): whole GM tensors, written inside ``pl.at`` or an
InCore function; ConvertTensorToTileOps turns them into loads, tile ops and stores.
"""

from __future__ import annotations

import math

from pypto.ir.ops.registry import Kind, foreign_keyword, OpArgs, Windows, register, unify
from pypto.ir.ops.type_rules import check_valid, fail, fmt_shape, same_shape_dtype, static_ints
from pypto.ir.ops.families import BINARY, CI_DTYPES, EXPANDS, REDUCTIONS, UNARY, check_amount, scalar_form
from pypto.ir.ops.registry import ParamSpec as P
from pypto.ir.ops.cube import CUBE_IN, acc_dtype, batch_shape
from pypto.ir.ops.registry import op_call
from pypto.ir.ops.tile import (
    CAST_MODES,
    NUMERIC,
    PRECISE_DOC,
    SHAPE_HINT,
    check_mx_cast,
    check_precise,
    check_region,
)
from pypto.errors import TypeCheckError
from pypto.ir.nodes import Const
from pypto.ir.ops.transfers import check_atomic_add
from pypto.ir.types import ATOMIC_ADD_DTYPES, AtomicType, DataType, PadValue, TensorLayout, TensorType, type_name
from pypto.backend import SoC


def _dtype_in(op: str, t: TensorType, allowed) -> None:
    if t.dtype not in allowed:
        raise fail(op, f"a dtype it computes in ({', '.join(d.name for d in allowed)})", t.dtype.name,
                   "convert with pl.cast(x, target_type=...) first")


def _two_d(op: str, t: TensorType) -> None:
    if len(t.shape) != 2:
        raise fail(op, "a 2D operand", f"{len(t.shape)} dimensions")


def _static_shape(op: str, exprs) -> tuple[int, ...]:
    shape = static_ints(exprs)
    if shape is None or any(s <= 0 for s in shape):
        raise fail(op, "static positive shapes", fmt_shape(exprs), SHAPE_HINT)
    return shape


def _extents(op: str, exprs) -> tuple:
    """A shape an orchestration may size at run time (the front end lets only its creations
    and views take one): the constants positive, the rest kept as expressions."""
    for e in exprs:
        if isinstance(e, Const) and (not isinstance(e.value, int) or isinstance(e.value, bool) or e.value <= 0):
            raise fail(op, "positive extents", fmt_shape(exprs), SHAPE_HINT)
    return tuple(e.value if isinstance(e, Const) else e for e in exprs)


_PRECISE = [P("high_precision", Kind.BOOL, default=False)]

for _row in BINARY:
    def _bin(a: OpArgs, soc: SoC, _op=f"tensor.{_row.name}", _row=_row) -> TensorType:
        lhs, rhs = a.type("lhs"), a.type("rhs")
        same_shape_dtype(_op, lhs, rhs)
        _dtype_in(_op, lhs, _row.dtypes)
        if _row.precise:
            check_precise(_op, _row, lhs.dtype, a["high_precision"])
        return lhs

    register(f"tensor.{_row.name}", [P("lhs", Kind.TENSOR), P("rhs", Kind.TENSOR), *(_PRECISE if _row.precise else [])],
             _bin, doc=f"elementwise {_row.name}" + (PRECISE_DOC if _row.precise else ""),
             windows=Windows("elementwise"))

for _row in BINARY:
    _name = scalar_form(_row.name)

    def _sc(a: OpArgs, soc: SoC, _op=f"tensor.{_name}", _row=_row) -> TensorType:
        _dtype_in(_op, a.type("lhs"), _row.dtypes)
        if _row.shifts:
            check_amount(_op, a.type("lhs").dtype, a["rhs"])
        return a.type("lhs")

    register(f"tensor.{_name}", [P("lhs", Kind.TENSOR), P("rhs", Kind.SCALAR)], _sc,
             doc=f"elementwise {_name} with a scalar", windows=Windows("elementwise"))

def _refined(name: str):
    """A tensor op's precise form at tile level: its tile op with a scratch tile the compiler
    makes (``tensor.rsqrt(x, high_precision=True)`` is ``tile.rsqrt(x, tmp)``)."""
    def lower(args, low):
        x = args["x"]
        t = low.type_of(x)
        tmp = low.scratch(t.shape, t.dtype) if args["high_precision"] else None
        return op_call(f"tile.{name}", tile=x, tmp=tmp)
    return lower


for _row in UNARY:
    def _un(a: OpArgs, soc: SoC, _op=f"tensor.{_row.name}", _row=_row) -> TensorType:
        _dtype_in(_op, a.type("x"), _row.dtypes)
        if _row.precise or _row.scratch:
            check_precise(_op, _row, a.type("x").dtype, a["high_precision"])
        return a.type("x")

    _doc = f"elementwise {_row.name}"
    if _row.precise:
        _doc += PRECISE_DOC
    if _row.scratch:  # the tile form takes the scratch tile
        _doc += f"; high_precision=True: pl.tile.{_row.name}'s precise form, with a scratch tile the compiler makes"
    register(f"tensor.{_row.name}", [P("x", Kind.TENSOR), *(_PRECISE if _row.precise or _row.scratch else [])], _un,
             doc=_doc, windows=Windows("elementwise", lower=_refined(_row.name) if _row.scratch else None))

foreign_keyword("tensor.divs", "high_precision", False, "pl.div: high_precision requires a Tensor rhs",
                "a scalar divisor has no precise form: divide by a tensor, pl.div(lhs, rhs, high_precision=True)")

_COMBINE = {"sum": "tile.add", "max": "tile.maximum", "min": "tile.minimum", "prod": "tile.mul"}  # two partial reductions, merged
for _name, _axis, _ in REDUCTIONS:
    def _red(a: OpArgs, soc: SoC, _op=f"tensor.{_name}", _axis=_axis) -> TensorType:
        x = a.type("x")
        _two_d(_op, x)
        _dtype_in(_op, x, NUMERIC)
        return TensorType((x.shape[0], 1) if _axis == 1 else (1, x.shape[1]), x.dtype)

    register(f"tensor.{_name}", [P("x", Kind.TENSOR)], _red, doc=f"{_name} over a whole tensor",
             windows=Windows("row_reduce" if _axis == 1 else "col_reduce", combine=_COMBINE[_name.split("_")[1]]))

for _f, _, _, _axes in EXPANDS:
    for _kind in _axes:
        _axis = 1 if _kind == "row" else 0
        _vec = f"{_kind}_vec"

        def _exp(a: OpArgs, soc: SoC, _op=f"tensor.{_kind}_expand_{_f}", _axis=_axis, _vec=_vec) -> TensorType:
            x, v = a.type("x"), a.type(_vec)
            _two_d(_op, x)
            want = (x.shape[0], 1) if _axis == 1 else (1, x.shape[1])
            if v.shape != want:
                raise fail(_op, f"a vector of shape {fmt_shape(want)}", fmt_shape(v.shape))
            if v.dtype is not x.dtype:
                raise fail(_op, "identical data types", f"{x.dtype.name} and {v.dtype.name}")
            return x

        register(f"tensor.{_kind}_expand_{_f}", [P("x", Kind.TENSOR), P(_vec, Kind.TENSOR)], _exp,
                 doc=f"{_kind}-broadcast {_f}", windows=Windows(f"{_kind}_broadcast", vector=_vec))

for _kind, _axis in (("row", 1), ("col", 0)):
    def _bc(a: OpArgs, soc: SoC, _op=f"tensor.{_kind}_expand", _axis=_axis, _vec=f"{_kind}_vec") -> TensorType:
        x, v = a.type("target"), a.type(_vec)
        want = (x.shape[0], 1) if _axis == 1 else (1, x.shape[1])
        if v.shape != want or v.dtype is not x.dtype:
            raise fail(_op, f"a {x.dtype.name} vector of shape {fmt_shape(want)}",
                       f"{v.dtype.name}{fmt_shape(v.shape)}")
        return x

    register(f"tensor.{_kind}_expand", [P("target", Kind.TENSOR), P(f"{_kind}_vec", Kind.TENSOR)], _bc,
             doc=f"broadcast a {_kind} vector to target's shape", windows=Windows(f"{_kind}_broadcast",
                                                                                 vector=f"{_kind}_vec"))


def _cast(a: OpArgs, soc: SoC) -> TensorType:
    if a["mode"] not in CAST_MODES:
        raise fail("tensor.cast", f"mode one of {', '.join(CAST_MODES)}", repr(a["mode"]))
    check_mx_cast("tensor.cast", a.type("x").dtype, a["target_type"])
    return TensorType(a.type("x").shape, a["target_type"])


register("tensor.cast", [P("x", Kind.TENSOR), P("target_type", Kind.DTYPE), P("mode", Kind.STR, default="round")],
         _cast, doc="convert each element", windows=Windows("elementwise"))


register("tensor.fillpad", [P("x", Kind.TENSOR), P("pad_value", Kind.PAD, default=PadValue.zero)],
         lambda a, soc: a.type("x"), doc="a tensor is valid everywhere: the same values (the tile form pads)",
         windows=Windows("elementwise"))


def _matmul(a: OpArgs, soc: SoC) -> TensorType:
    lhs, rhs = a.type("lhs"), a.type("rhs")
    for t, what in ((lhs, "lhs"), (rhs, "rhs")):
        if len(t.shape) < 2:
            raise fail("tensor.matmul", f"{what} of at least 2 dimensions (the leading ones are batch axes)",
                       f"{len(t.shape)} dimension(s)", "reshape a vector to [1, K] or [K, 1]")
    if any(d == 0 for d in (*lhs.shape, *rhs.shape)):
        raise fail("tensor.matmul", "non-empty operands", f"{fmt_shape(lhs.shape)} and {fmt_shape(rhs.shape)}",
                   "skip the matmul where an extent is 0")
    m, k = lhs.shape[:-3:-1] if a["a_trans"] else lhs.shape[-2:]
    k2, n = rhs.shape[:-3:-1] if a["b_trans"] else rhs.shape[-2:]
    if k != k2:
        raise fail("tensor.matmul", "matching inner dimensions", f"lhs K={k} and rhs K={k2}")
    if lhs.dtype is not rhs.dtype:
        raise fail("tensor.matmul", "identical lhs and rhs data types", f"{lhs.dtype.name} and {rhs.dtype.name}")
    if lhs.dtype not in CUBE_IN:
        raise fail("tensor.matmul", "a cube input dtype (FP16, BF16, INT8, FP32)", lhs.dtype.name)
    out = a["out_dtype"] or acc_dtype(lhs.dtype)
    legal = (DataType.INT32,) if lhs.dtype.is_int else (DataType.FP32, DataType.FP16, DataType.BF16)
    if out not in legal:
        raise fail("tensor.matmul", f"out_dtype in ({', '.join(d.name for d in legal)})", out.name)
    return TensorType((*batch_shape("tensor.matmul", lhs.shape[:-2], rhs.shape[:-2]), m, n), out)


register("tensor.matmul", [P("lhs", Kind.TENSOR), P("rhs", Kind.TENSOR),
                           P("out_dtype", Kind.DTYPE, default=None, optional=True),
                           P("a_trans", Kind.BOOL, default=False), P("b_trans", Kind.BOOL, default=False)],
         _matmul, doc="lhs @ rhs through the cube (FP32 accumulation), cast to out_dtype; past rank 2 page by "
         "page, the batch axes broadcasting", windows=Windows("cube"))


def _matmul_acc(a: OpArgs, soc: SoC) -> TensorType:
    acc = a.type("acc")
    product = _matmul(OpArgs(a.op, {**a.values, "out_dtype": None}, a.types), soc)
    want = acc_dtype(a.type("lhs").dtype)
    if acc.shape != product.shape:
        raise fail("tensor.matmul_acc", f"an accumulator of shape {fmt_shape(product.shape)}", fmt_shape(acc.shape))
    if acc.dtype is not want:
        raise fail("tensor.matmul_acc", f"accumulator dtype {want.name}", acc.dtype.name,
                   f"start the accumulator with pl.matmul(..., out_dtype=pl.{want.name}) or "
                   f"pl.create_tensor(..., dtype=pl.{want.name})")
    return acc


register("tensor.matmul_acc", [P("acc", Kind.TENSOR), P("lhs", Kind.TENSOR), P("rhs", Kind.TENSOR),
                               P("a_trans", Kind.BOOL, default=False), P("b_trans", Kind.BOOL, default=False)],
         _matmul_acc, doc="acc + lhs @ rhs through the cube, accumulated in acc's dtype", windows=Windows("cube"))


def _full(a: OpArgs, soc: SoC) -> TensorType:
    return TensorType(_static_shape("tensor.full", a["shape"]), a["dtype"])


register("tensor.full", [P("shape", Kind.SHAPE), P("dtype", Kind.DTYPE), P("value", Kind.SCALAR)], _full,
         doc="a tensor filled with a scalar", windows=Windows("source", tile="tile.full"))


def _ci(a: OpArgs, soc: SoC) -> TensorType:
    shape = _static_shape("tensor.ci", a["shape"])
    if len(shape) != 2 or shape[0] != 1 or shape[1] == 1:
        raise fail("tensor.ci", "a shape [1, N] with N > 1 (the sequence runs along one row)", fmt_shape(shape),
                   "pl.arange(0, [1, n])")
    if a["dtype"] not in CI_DTYPES:
        raise fail("tensor.ci", "dtype to be one of {INT16, INT32, UINT16, UINT32}", a["dtype"].name, "dtype=pl.INT32")
    if isinstance(a["start"], Const) and not isinstance(a["start"].value, int):
        raise fail("tensor.ci", "an integer start", repr(a["start"].value))
    return TensorType(shape, a["dtype"])


register("tensor.ci", [P("start", Kind.SCALAR, integer=True), P("shape", Kind.SHAPE),
                       P("dtype", Kind.DTYPE, default=DataType.INT32), P("descending", Kind.BOOL, default=False)],
         _ci, doc="consecutive integers start, start + 1, ... (start - k descending) along the row",
         windows=Windows("source", tile="tile.ci", shifts="start"))


def _create(a: OpArgs, soc: SoC) -> TensorType:
    if a["layout"] is not TensorLayout.ND:
        raise TypeCheckError(f"pl.create_tensor(layout=pl.TensorLayout.{a['layout'].name}): tensors here are "
                             "row-major (ND)", hint="drop layout= (or pass pl.TensorLayout.ND); for a transposed "
                             "operand pass pl.tensor.transpose(t, 0, 1), a view")
    return TensorType(_extents("tensor.create", a["shape"]), a["dtype"])


# manual_dep / init_value are the orchestration's (a buffer the runtime allocates): a
# tensor the runtime does not track, a fill other than zero
register("tensor.create", [P("shape", Kind.SHAPE), P("dtype", Kind.DTYPE),
                           P("layout", Kind.LAYOUT, default=TensorLayout.ND),
                           P("manual_dep", Kind.BOOL, default=False),
                           P("init_value", Kind.SCALAR, default=None, optional=True)], _create,
         doc="a zero-filled tensor", windows=Windows("source", tile="tile.create"), plane="both")


def refuse_mx_view(op: str, x: TensorType) -> None:
    """A view of an MX scale tensor reads its packed bytes as if they were row-major logical
    scales (the reference refuses these views too): refused, naming the load that works."""
    if x.mx_layout is not None:
        raise fail(op, f"a tensor that is not a pl.{x.mx_layout.name} MX scale tensor (its bytes are packed: a view "
                   "of them is not a window of the scales)", type_name(x),
                   "load the scales with pl.load(scale, offsets, shapes, target_memory=pl.Mem.Mat) (whole "
                   "16-row bands of pl.MX_A_ZZ, all of pl.MX_B_NN), or pass the window's scales as their own tensor")


def _slice(a: OpArgs, soc: SoC) -> TensorType:
    x = a.type("x")
    refuse_mx_view("tensor.slice", x)
    shape = _extents("tensor.slice", a["shape"])
    # clamp=True sanctions a window that runs past the tensor's end (its valid region stops there)
    check_region("tensor.slice", x, a["offset"], shape, what="window",
                 valid=tuple(Const(0) for _ in shape) if a["clamp"] else None)
    valid = a["valid_shape"]
    if valid is not None:
        if len(valid) != len(shape):
            raise fail("tensor.slice", f"valid_shape of the slice's rank {len(shape)}", f"{len(valid)} entries")
        for axis, (v, extent) in enumerate(zip(valid, shape)):
            if isinstance(v, Const) and isinstance(extent, int) and not 0 <= v.value <= extent:
                raise fail("tensor.slice", f"valid_shape within the slice shape {list(shape)}",
                           f"{v.value} on axis {axis}")
    return TensorType(shape, x.dtype)


# valid_shape / pad_value: the region of the window its producer fills and what lies past it —
# an orchestration's view carries them to the kernel that loads it (which says its own
# valid_shape=); clamp: the window may run past the tensor's end
register("tensor.slice", [P("x", Kind.TENSOR), P("shape", Kind.SHAPE), P("offset", Kind.INDEX_LIST),
                          P("valid_shape", Kind.INDEX_LIST, default=None, optional=True),
                          P("pad_value", Kind.PAD, default=None, optional=True),
                          P("clamp", Kind.BOOL, default=False)], _slice,
         doc="the window [offset, offset+shape) of a tensor (in an orchestration: a view)", windows=Windows("slice"),
         plane="both")


def assembled_shape(target: TensorType, source: TensorType) -> tuple:
    """The window an assemble writes: the source's shape, led by 1s up to the target's rank
    (a [4, 16] source into a [2, 4, 16] target is the window [1, 4, 16], as the reference
    pads it)."""
    return (1,) * (len(target.shape) - len(source.shape)) + tuple(source.shape)


def _assemble(a: OpArgs, soc: SoC) -> TensorType:
    target, source = a.type("target"), a.type("source")
    # an FP32 result of the cube converts on its way out of Acc (the fixpipe rounds it to the
    # target's half dtype, which an atomic add then adds in)
    converts = source.dtype is DataType.FP32 and target.dtype in (DataType.FP16, DataType.BF16)
    if target.dtype is not source.dtype and not converts:
        raise fail("tensor.assemble", "the source dtype to match the target's",
                   f"{source.dtype.name} into {target.dtype.name}", "cast the source first")
    if len(source.shape) > len(target.shape):
        raise fail("tensor.assemble", f"a source of at most the target's rank {len(target.shape)}",
                   f"a source of rank {len(source.shape)}", "pl.reshape the source to the target's rank first")
    check_region("tensor.assemble", target, a["offset"], assembled_shape(target, source), what="window")
    if a["atomic"] is AtomicType.Add and target.dtype not in ATOMIC_ADD_DTYPES:
        raise TypeCheckError("tensor.assemble with atomic=AtomicType.Add requires an fp32/bf16/fp16/int32/int16/int8 "
                             f"target (hardware atomic-add dtypes), but got {target.dtype.name}",
                             hint="accumulate into an FP32 tensor and cast the sum afterwards")
    if a["atomic"] is AtomicType.Add:
        check_atomic_add("tensor.assemble", target.dtype, soc)
    return target


register("tensor.assemble", [P("target", Kind.TENSOR), P("source", Kind.TENSOR), P("offset", Kind.INDEX_LIST),
                             P("atomic", Kind.ATOMIC, AtomicType.None_)],
         _assemble, doc="write source into target at offset (atomic=pl.AtomicType.Add: add it; in an orchestration: "
         "a copy the host makes once the source is computed)", writes_operand="target", plane="both")


def _reshape(a: OpArgs, soc: SoC) -> TensorType:
    x = a.type("x")
    refuse_mx_view("tensor.reshape", x)
    shape = _extents("tensor.reshape", a["shape"])  # (in an orchestration an extent may be computed)
    if all(isinstance(d, int) for d in (*shape, *x.shape)) and math.prod(shape) != math.prod(x.shape):
        raise fail("tensor.reshape", f"the same element count as {fmt_shape(x.shape)}", fmt_shape(shape))
    return TensorType(shape, x.dtype)


register("tensor.reshape", [P("x", Kind.TENSOR), P("shape", Kind.SHAPE)], _reshape,
         doc="a new row-major shape (in an orchestration: a view of the same bytes)", windows=Windows("whole"),
         plane="both")


def _transpose(a: OpArgs, soc: SoC) -> TensorType:
    x = a.type("x")
    refuse_mx_view("tensor.transpose", x)
    rank = len(x.shape)
    axes = []
    for name in ("axis1", "axis2"):
        if not -rank <= a[name] < rank:
            raise fail("tensor.transpose", f"axes within rank {rank}", str(a[name]))
        axes.append(a[name] % rank)
    shape = list(x.shape)
    shape[axes[0]], shape[axes[1]] = shape[axes[1]], shape[axes[0]]
    return TensorType(shape, x.dtype)


register("tensor.transpose", [P("x", Kind.TENSOR), P("axis1", Kind.INT), P("axis2", Kind.INT)], _transpose,
         doc="swap two axes (in an orchestration: a view)", windows=Windows("transpose"), plane="both")

def _set_validshape(a: OpArgs, soc: SoC) -> TensorType:
    x = a.type("x")
    _two_d("tensor.set_validshape", x)
    check_valid("tensor.set_validshape", (a["valid_rows"], a["valid_cols"]), x.shape,
                f"extents within the tensor shape {fmt_shape(x.shape)}")
    return x


# the valid region of a tensor an orchestration hands a kernel: metadata on a view of the same
# bytes, as a slice's valid_shape= (the kernel's loads say the region they move)
register("tensor.set_validshape", [P("x", Kind.TENSOR), P("valid_rows", Kind.SCALAR, integer=True),
                                   P("valid_cols", Kind.SCALAR, integer=True)], _set_validshape,
         doc="the tensor with another valid region (in an orchestration: a view; metadata only)",
         windows=Windows("whole"), plane="both")
unify("set_validshape", tile="tile.set_validshape", tensor="tensor.set_validshape")
unify("slice", tile="tile.slice", tensor="tensor.slice")
unify("assemble", tile="tile.assemble", tensor="tensor.assemble")
unify("create_tensor", tensor="tensor.create")
unify("matmul_acc", tile="tile.matmul_acc", tensor="tensor.matmul_acc")


def _expand_clone(a: OpArgs, soc: SoC) -> TensorType:
    x, target = a.type("input"), a.type("target")
    if len(x.shape) != len(target.shape):
        raise fail("tensor.expand_clone", f"an input of the target's rank {len(target.shape)}", f"rank {len(x.shape)}")
    if x.dtype is not target.dtype:
        raise fail("tensor.expand_clone", "an input of the target's dtype", f"{x.dtype.name} into {target.dtype.name}",
                   f"pl.cast(input, target_type=pl.{target.dtype.name}) first")
    for axis, (d, t) in enumerate(zip(x.shape, target.shape)):
        if d not in (1, t):
            raise fail("tensor.expand_clone", f"input dim {axis} to be 1 or the target's {t}", str(d))
    return target


# DPS, as the reference: target is written (each copy of input a store, ConvertTensorToTileOps
# expands it into loops of assembles over the axes input has 1 on) and the result is it
register("tensor.expand_clone", [P("input", Kind.TENSOR), P("target", Kind.TENSOR)], _expand_clone,
         doc="target filled with copies of input along the axes input has extent 1", writes_operand="target")
unify("expand_clone", tensor="tensor.expand_clone")
