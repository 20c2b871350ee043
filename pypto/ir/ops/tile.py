"""Tile-level ops (``pl.tile.*``): operands and results live in on-chip memory spaces. The
elementwise families come from ``pypto.ir.ops.families``, the transfers and creation are
``pypto.ir.ops.transfers``.

Vector ops read and write Vec tiles; the cube reads Left x Right into Acc; transfers obey
the SoC table's legal moves.
"""

from __future__ import annotations

from pypto.errors import TypeCheckError
from pypto.ir.nodes import Const
from pypto.ir.ops.registry import REQUIRED, Kind, foreign_keyword, OpArgs, register, unify
from pypto.ir.ops.type_rules import check_valid, fail, fmt_shape, same_shape_dtype, static_ints
from pypto.ir.ops.transfers import SHAPE_HINT, check_region  # noqa: F401  (registers the transfers; re-exported)
from pypto.ir.ops.families import (BINARY, check_amount, DIVIDES, EXPANDS, FLOATS, NUMERIC, REDUCTIONS, SIGNED, UNARY,  # noqa: F401
                                   scalar_form, unify_families)
from pypto.ir.ops.registry import (
    ParamSpec as P,
)
from pypto.ir.types import DataType, PadValue, ScalarType, TileType, type_name
from pypto.backend import MemorySpace as M
from pypto.backend import SoC

VEC = (M.Vec,)
CMP_NAMES = ("EQ", "NE", "LT", "LE", "GT", "GE")
CAST_MODES = ("none", "rint", "round", "floor", "ceil", "trunc", "odd")


def mask_cols(cols: int) -> int:
    """Bytes per row of a packed compare mask: one bit per column, rows padded to 32 B."""
    return -(-(-(-cols // 8)) // 32) * 32


def _vec_result(t: TileType, **changes) -> TileType:
    base = dict(shape=t.shape, dtype=t.dtype, space=M.Vec if t.space is not None else None,
                valid_shape=t.valid_shape)
    base.update(changes)
    return TileType(**base)


def _same_valid(op: str, a: TileType, b: TileType) -> None:
    if a.valid_shape != b.valid_shape:
        show = lambda t: "full" if t.valid_shape is None else fmt_shape(t.valid_shape)  # noqa: E731
        raise fail(op, "operands with the same valid shape", f"{show(a)} and {show(b)}",
                   "pl.fillpad the partial operand, or pl.set_validshape both alike")


def _scalar_fits(op: str, t: TileType, scalar, scalar_type=None) -> None:
    """A scalar the tile's dtype holds. The vector unit narrows the scalar register to the
    tile's dtype, so a float constant with no fraction (``pl.const(2.0, pl.FP32)``) is its
    integer exactly; a fraction, or a float known only as the kernel runs, would be dropped
    silently, and is refused."""
    if isinstance(scalar, Const) and isinstance(scalar.value, float) and not t.dtype.is_float:
        if scalar.value.is_integer():
            return
        raise fail(op, f"an integer scalar for a {t.dtype.name} tile", repr(scalar.value),
                   "write an int, or cast the tile to a float dtype first")
    if isinstance(scalar_type, ScalarType) and scalar_type.dtype.is_float and not t.dtype.is_float:
        raise fail(op, f"an integer scalar for a {t.dtype.name} tile", f"a {scalar_type.dtype.name} value",
                   "read or compute an integer, or cast the tile to a float dtype first")


def _require_dtype(op: str, t: TileType, allowed, what: str) -> None:
    if t.dtype not in allowed:
        names = ", ".join(d.name for d in allowed)
        raise fail(op, f"{what} ({names})", t.dtype.name,
                   "convert with pl.cast(tile, target_type=...) first")


def _require_2d(op: str, t: TileType, what: str = "its operand") -> None:
    if len(t.shape) != 2:
        raise fail(op, f"{what} to be 2D", f"{len(t.shape)} dimensions")




# --------------------------------------------------------------------------- elementwise


def _scratch(op: str, a: OpArgs, like: TileType) -> None:
    """A scratch tile the vector unit's kernel needs: optional here (the simulator models
    no scratch), but when given, one like the operand."""
    if a["tmp"] is not None:
        t = a.tile("tmp")
        if t.shape != like.shape or t.dtype != like.dtype:
            raise fail(op, f"its tmp tile to match its operand ({type_name(like)})", type_name(t))


def check_precise(op: str, row, dtype: DataType, high_precision) -> None:
    """``high_precision=True`` only where PTO has a precise algorithm for the dtype."""
    if not isinstance(high_precision, bool):
        raise fail(op, "high_precision True or False", repr(high_precision))
    if high_precision and dtype not in row.precise_dtypes:
        names = ", ".join(d.name for d in row.precise_dtypes[:-1]) + " or " + row.precise_dtypes[-1].name
        raise TypeCheckError(f"The operator {op} supports high_precision only for {names} because the PTOAS "
                             f"high-precision template does not implement {dtype.name}",
                             hint=f"drop high_precision, or pl.cast the operand to {row.precise_dtypes[-1].name} first")


PRECISE_DOC = ("; high_precision=True selects PTO's slower, more precise algorithm, which only Ascend950 runs: "
               "a2a3's vector unit ignores it, so here the result and the time are the default's")


def _binary(row):
    op = f"tile.{row.name}"

    def infer(a: OpArgs, soc: SoC) -> TileType:
        lhs, rhs = a.tile("lhs"), a.tile("rhs")
        same_shape_dtype(op, lhs, rhs)
        _same_valid(op, lhs, rhs)
        _require_dtype(op, lhs, row.dtypes, "a dtype it computes in")
        if row.scratch:
            _scratch(op, a, lhs)
        if row.precise:
            check_precise(op, row, lhs.dtype, a["high_precision"])
        return _vec_result(lhs)

    tmp = [P("tmp", Kind.TILE, default=None, optional=True, spaces=VEC)] if row.scratch else []
    precise = [P("high_precision", Kind.BOOL, default=False)] if row.precise else []
    register(op, [P("lhs", Kind.TILE, spaces=VEC), P("rhs", Kind.TILE, spaces=VEC), *tmp, *precise], infer,
             doc=f"elementwise {row.name}" + (PRECISE_DOC if row.precise else ""), in_place=row.in_place,
             unit=row.unit)


def _scalar(row):
    op = f"tile.{scalar_form(row.name)}"

    def infer(a: OpArgs, soc: SoC) -> TileType:
        lhs = a.tile("lhs")
        _require_dtype(op, lhs, row.dtypes, "a dtype it computes in")
        _scalar_fits(op, lhs, a["rhs"], a.type("rhs"))
        if row.shifts:
            check_amount(op, lhs.dtype, a["rhs"])
        if row.scratch:
            _scratch(op, a, lhs)
        return _vec_result(lhs)

    tmp = [P("tmp", Kind.TILE, default=None, optional=True, spaces=VEC)] if row.scratch else []
    register(op, [P("lhs", Kind.TILE, spaces=VEC), P("rhs", Kind.SCALAR), *tmp], infer,
             doc=f"elementwise {row.name} with a scalar (converted to the tile's dtype)", in_place=row.in_place,
             unit=row.unit)


for _row in BINARY:
    _binary(_row)
    _scalar(_row)


def _refining_scratch(op: str, t: TileType, tmp: TileType) -> None:
    """The scratch tile of a unary op's precise form: the operand's dtype, rank and shape."""
    if tmp.dtype is not t.dtype:
        raise TypeCheckError(f"{op}: tmp tile dtype ({tmp.dtype.name}) must match input dtype ({t.dtype.name})",
                             hint=f"pl.tile.create({list(t.shape)}, dtype=pl.{t.dtype.name}, "
                                  "target_memory=pl.Mem.Vec)")
    if len(tmp.shape) != len(t.shape):
        raise TypeCheckError(f"{op}: tmp tile rank ({len(tmp.shape)}) must match input rank ({len(t.shape)})",
                             hint="a scratch tile shaped like the input")
    for axis, (x, y) in enumerate(zip(tmp.shape, t.shape)):
        if x != y:
            raise TypeCheckError(f"{op}: tmp tile shape mismatch at dimension {axis} (tmp: {x}, input: {y})",
                                 hint="a scratch tile shaped like the input")


# a2a3's TRSQRT with its scratch tile: the square root rounded to the dtype, then a block of
# ones divided by it (sqrt_divide: the two vector passes, row by row)
REFINED_DOC = {"rsqrt": "; with tmp (a scratch tile of the input's shape and dtype) PTO's precise form: "
                        "1 / sqrt(x) as a square root and a division, each rounded to the dtype"}


def _unary(row):
    op = f"tile.{row.name}"

    def infer(a: OpArgs, soc: SoC) -> TileType:
        t = a.tile("tile")
        _require_dtype(op, t, row.dtypes, "a dtype it computes in")
        if row.precise:
            check_precise(op, row, t.dtype, a["high_precision"])
        if row.scratch and a["tmp"] is not None:
            _refining_scratch(op, t, a.tile("tmp"))
        return _vec_result(t)

    extra = [P("high_precision", Kind.BOOL, default=False)] if row.precise else []
    if row.scratch:
        extra.append(P("tmp", Kind.TILE, default=None, optional=True, spaces=VEC))
    doc = f"elementwise {row.name}" + (PRECISE_DOC if row.precise else "") + REFINED_DOC.get(row.name, "")
    register(op, [P("tile", Kind.TILE, spaces=VEC), *extra], infer, doc=doc, in_place=row.in_place, unit=row.unit,
             units={"tmp": "sqrt_divide"} if row.scratch else None)


for _row in UNARY:
    _unary(_row)

foreign_keyword("tile.divs", "high_precision", False, "pl.div: high_precision requires a Tile rhs",
                "a scalar divisor has no precise form: divide by a tile, pl.tile.div(lhs, rhs, high_precision=True)")
foreign_keyword("tile.rsqrt", "high_precision", False,
                "pl.rsqrt: high_precision is Tensor-only; a tile selects the precise form by passing its scratch tile",
                "pl.tile.rsqrt(tile, tmp), tmp a Vec tile of the input's shape and dtype (pl.tile.create)")


def _check_cmp_type(op: str, code) -> None:
    if not isinstance(code, int) or not 0 <= code < len(CMP_NAMES):
        raise fail(op, "cmp_type 0..5 (EQ, NE, LT, LE, GT, GE)", repr(code))


def _mask_type(op: str, t: TileType) -> TileType:
    _require_2d(op, t)
    return TileType(shape=(t.shape[0], mask_cols(t.shape[1])), dtype=DataType.UINT8,
                    space=M.Vec if t.space is not None else None)


def _infer_cmp(a: OpArgs, soc: SoC) -> TileType:
    lhs, rhs = a.tile("lhs"), a.tile("rhs")
    same_shape_dtype("tile.cmp", lhs, rhs)
    _check_cmp_type("tile.cmp", a["cmp_type"])
    return _mask_type("tile.cmp", lhs)


def _infer_cmps(a: OpArgs, soc: SoC) -> TileType:
    _check_cmp_type("tile.cmps", a["cmp_type"])
    return _mask_type("tile.cmps", a.tile("lhs"))


register("tile.cmp", [P("lhs", Kind.TILE, spaces=VEC), P("rhs", Kind.TILE, spaces=VEC),
                      P("cmp_type", Kind.INT, default=0)], _infer_cmp,
         doc="packed predicate mask (UINT8, one bit per column) of lhs <cmp> rhs", mnemonic="VCMP")
register("tile.cmps", [P("lhs", Kind.TILE, spaces=VEC), P("rhs", Kind.SCALAR),
                       P("cmp_type", Kind.INT, default=0)], _infer_cmps,
         doc="packed predicate mask of lhs <cmp> scalar", mnemonic="VCMPS")


def _infer_sel(a: OpArgs, soc: SoC) -> TileType:
    mask, lhs, rhs = a.tile("mask"), a.tile("lhs"), a.tile("rhs")
    same_shape_dtype("tile.sel", lhs, rhs)
    want = _mask_type("tile.sel", lhs)
    if mask.dtype is not DataType.UINT8 or mask.shape != want.shape:
        raise fail("tile.sel", f"a packed mask of shape {fmt_shape(want.shape)} (from pl.cmp/pl.cmps)",
                   f"{mask.dtype.name}{fmt_shape(mask.shape)}")
    return _vec_result(lhs)


register("tile.sel", [P("mask", Kind.TILE, spaces=VEC), P("lhs", Kind.TILE, spaces=VEC),
                      P("rhs", Kind.TILE, spaces=VEC), P("tmp", Kind.TILE, default=None, optional=True, spaces=VEC)],
         _infer_sel, doc="lhs where the mask bit is set, else rhs (tmp: TSEL's scratch tile, UINT8 [1, 32])",
         in_place=True, mnemonic="VSEL")


# --------------------------------------------------------------------------- reductions


def _nonempty(op: str, t: TileType) -> None:
    """A reduction needs an element on each axis of its operand's valid region (the
    reference's rule: the vector unit's reductions assert on an empty one, and a max of
    nothing has no value); an extent computed as the kernel runs is checked then."""
    if t.valid_shape is not None and any(isinstance(v, Const) and v.value == 0 for v in t.valid_shape):
        raise fail(op, "a valid region with an element on each axis to reduce", fmt_shape(t.valid_shape),
                   "make each valid extent at least 1: a reduction over none has no value")


def _reduction(name: str, axis: int, allowed, tmp: bool):
    op = f"tile.{name}"

    def infer(a: OpArgs, soc: SoC) -> TileType:
        t = a.tile("tile")
        _require_2d(op, t)
        _require_dtype(op, t, allowed, "a dtype it reduces in")
        _nonempty(op, t)
        if tmp and a["tmp_tile"] is not None:
            s = a.tile("tmp_tile")
            if s.dtype is not t.dtype or len(s.shape) != 2:
                raise fail(op, "tmp_tile with the same dtype and rank as the input",
                           f"{s.dtype.name}{fmt_shape(s.shape)}")
        shape = (t.shape[0], 1) if axis == 1 else (1, t.shape[1])
        valid = None
        if t.valid_shape is not None:
            valid = (t.valid_shape[0], Const(1)) if axis == 1 else (Const(1), t.valid_shape[1])
        return _vec_result(t, shape=shape, valid_shape=valid)

    params = [P("tile", Kind.TILE, spaces=VEC)]
    if tmp:
        params.append(P("tmp_tile", Kind.TILE, default=None, optional=True, spaces=VEC))
    register(op, params, infer, doc=f"{name}: reduce the {'last' if axis == 1 else 'first'} axis over the valid region",
             reduces=True)


for _name, _axis, _tmp in REDUCTIONS:
    _reduction(_name, _axis, NUMERIC, _tmp)


def _arg_reduction(name: str, axis: int):
    op = f"tile.{name}"

    def infer(a: OpArgs, soc: SoC) -> TileType:
        t = a.tile("tile")
        _require_2d(op, t)
        _require_dtype(op, t, NUMERIC, "a dtype it compares in")
        _nonempty(op, t)
        if a["tmp_tile"] is not None and (a.tile("tmp_tile").shape != t.shape or a.tile("tmp_tile").dtype != t.dtype):
            raise fail(op, f"tmp_tile of the input's shape and dtype ({type_name(t)})", type_name(a.tile("tmp_tile")))
        shape = (t.shape[0], 1) if axis == 1 else (1, t.shape[1])
        valid = None
        if t.valid_shape is not None:
            valid = (t.valid_shape[0], Const(1)) if axis == 1 else (Const(1), t.valid_shape[1])
        return _vec_result(t, shape=shape, dtype=DataType.INT32, valid_shape=valid)

    register(op, [P("tile", Kind.TILE, spaces=VEC), P("tmp_tile", Kind.TILE, default=None, optional=True, spaces=VEC)],
             infer, doc=f"{name}: the INT32 index of the first extreme element along the "
                        f"{'last' if axis == 1 else 'first'} axis of the valid region", reduces=True)
    unify(name, tile=op)


for _name, _axis in (("row_argmax", 1), ("row_argmin", 1), ("col_argmax", 0), ("col_argmin", 0)):
    _arg_reduction(_name, _axis)


# --------------------------------------------------------------------------- broadcast


def _check_vector(op: str, t: TileType, v: TileType, axis: int) -> None:
    _require_2d(op, t)
    _require_2d(op, v, "the broadcast operand")
    want = (t.shape[0], 1) if axis == 1 else (1, t.shape[1])
    if v.shape != want:
        raise fail(op, f"a {'row' if axis == 1 else 'column'} vector of shape {fmt_shape(want)}",
                   fmt_shape(v.shape))
    if v.dtype is not t.dtype:
        raise fail(op, "identical data types", f"{t.dtype.name} and {v.dtype.name}",
                   "convert one side with pl.cast(tile, target_type=...)")


def packed_lanes(dtype: DataType) -> int:
    """Elements in one 32-byte block: the lanes of a packed per-row carrier ([M, 8] FP32)."""
    return 32 // dtype.nbytes


def _packed_carrier(op: str, t: TileType, v: TileType) -> None:
    """TROWEXPANDADD's carriers: [M, 1], one scalar per row, or [M, 32 B / element], a
    32-byte block per row that repeats across the row; its valid rows those of the tile."""
    _require_2d(op, t)
    _require_2d(op, v, "the broadcast operand")
    if v.dtype is not t.dtype:
        raise fail(op, "src0 and src1 to have the same dtype", f"{t.dtype.name} and {v.dtype.name}",
                   "convert one side with pl.cast(tile, target_type=...)")
    lanes = packed_lanes(t.dtype)
    if v.shape[0] != t.shape[0] or v.shape[1] not in (1, lanes):
        raise fail(op, f"a row vector of shape [{t.shape[0]}, 1] (a scalar per row) or [{t.shape[0]}, {lanes}] "
                       f"(a 32-byte {t.dtype.name} block per row, repeated across it)", fmt_shape(v.shape))
    rows = lambda x: x.valid_shape[0] if x.valid_shape is not None else Const(x.shape[0])  # noqa: E731
    cols = v.valid_shape[1] if v.valid_shape is not None else Const(v.shape[1])
    for got, want, what in ((rows(v), rows(t), "src1 valid row extent to match src0/dst"),
                            (cols, Const(v.shape[1]), f"src1 valid last dimension to be {v.shape[1]}")):
        if isinstance(got, Const) and isinstance(want, Const) and got != want:
            raise fail(op, what, f"src0 valid_shape {_valid_text(t)} and src1 valid_shape {_valid_text(v)}",
                       "load the row vector with the tile's valid rows and all of its columns")


def _valid_text(t: TileType) -> str:
    return fmt_shape(t.valid_shape if t.valid_shape is not None else t.shape)


def _expand(name: str, axis: int, vec_param: str, allowed=NUMERIC, unit: str = "simple"):
    op = f"tile.{name}"
    packed = name == "row_expand_add"  # the one the reference gives a packed carrier and a scratch tile

    def infer(a: OpArgs, soc: SoC) -> TileType:
        t = a.tile("tile")
        v = a.tile(vec_param)
        if packed:
            _packed_carrier(op, t, v)
        else:
            _check_vector(op, t, v, axis)
        _require_dtype(op, t, allowed, "a dtype it computes in")
        return _vec_result(t)

    doc = f"{name}: combine each {'row' if axis == 1 else 'column'} with one element of a vector"
    tmp = []
    if packed:
        doc += (f"; or, with a row vector of [M, 32 B / element], a 32-byte block per row repeated across the row "
                "(dst[i, j] = tile[i, j] + row_vec[i, j % lanes]); tmp: the vector unit's scratch tile")
        tmp = [P("tmp", Kind.TILE, default=None, optional=True, spaces=VEC)]
    register(op, [P("tile", Kind.TILE, spaces=VEC), P(vec_param, Kind.TILE, spaces=VEC), *tmp], infer,
             doc=doc, in_place=True, unit=unit)


for _f, _allowed, _unit, _axes in EXPANDS:
    for _axis in _axes:
        _expand(f"{_axis}_expand_{_f}", 1 if _axis == "row" else 0, f"{_axis}_vec", _allowed, _unit)


def _broadcast(name: str, axis: int, vec_param: str):
    op = f"tile.{name}"

    def infer(a: OpArgs, soc: SoC) -> TileType:
        t, v = a.tile("target"), a.tile(vec_param)
        _check_vector(op, t, v, axis)
        return _vec_result(t)

    register(op, [P("target", Kind.TILE, spaces=VEC), P(vec_param, Kind.TILE, spaces=VEC)], infer,
             doc=f"{name}: a tile shaped like target, each {'row' if axis == 1 else 'column'} one vector element")


_broadcast("row_expand", 1, "row_vec")
_broadcast("col_expand", 0, "col_vec")


# --------------------------------------------------------------------------- shape and dtype


def _infer_cast(a: OpArgs, soc: SoC) -> TileType:
    t = a.tile("tile")
    if a["mode"] not in CAST_MODES:
        raise fail("tile.cast", f"mode one of {', '.join(CAST_MODES)}", repr(a["mode"]))
    target = a["target_type"]
    if target is DataType.INDEX:
        raise fail("tile.cast", "a tile dtype", "INDEX")
    if t.space is M.Acc:  # the fixpipe's narrowing on the way into L1 (AutoTileMatmulL0)
        if t.dtype is not DataType.FP32 or target not in (DataType.BF16, DataType.FP16) or a["mode"] != "rint":
            raise fail("tile.cast", "of a matmul's result (in Acc): FP32 to BF16 or FP16 with mode=\"rint\", the "
                       "fixpipe's narrowing as it writes the result into Mat", f"{t.dtype.name} to {target.name} "
                       f"with mode={a['mode']!r}", "cast with mode=\"rint\" to BF16/FP16 (the result is a Mat tile "
                       "another matmul reads), or store the result and cast it on the vector cores")
        return TileType(shape=t.shape, dtype=target, space=M.Mat, valid_shape=t.valid_shape)
    check_mx_cast("tile.cast", t.dtype, target)
    return _vec_result(t, dtype=target)


def check_mx_cast(op: str, source: DataType, target: DataType) -> None:
    """A conversion to or from an MX format (FP8, E8M0) is not modeled: MX data arrive
    quantized from the host, as the reference's MX matmuls take them."""
    for d in (source, target):
        if d.value[2] == "m":
            raise fail(op, "a conversion between the vector unit's dtypes", f"{source.name} to {target.name}",
                       f"{d.name} values are loaded, moved and multiplied (pl.matmul_mx), not converted here: "
                       "quantize on the host and pass the FP8 / E8M0 tensors")


# A cast of a matmul's FP32 result to BF16/FP16 with mode="rint" is the fixpipe's narrowing on
# its way into L1: an Acc operand, a Mat result (AutoTileMatmulL0 writes it as tile.assemble).
register("tile.cast", [P("tile", Kind.TILE, spaces=VEC, staged=(M.Acc,)), P("target_type", Kind.DTYPE),
                       P("mode", Kind.STR, default="round")], _infer_cast,
         doc="convert each element to target_type with the given rounding mode", in_place=True, mnemonic="VCONV")


def _infer_reshape(a: OpArgs, soc: SoC) -> TileType:
    t = a.tile("tile")
    shape = static_ints(a["shape"])
    if shape is None or any(s <= 0 for s in shape):
        raise fail("tile.reshape", "static positive shapes", fmt_shape(a["shape"]), SHAPE_HINT)
    import math

    if math.prod(shape) != math.prod(t.shape):
        raise fail("tile.reshape", f"the same element count as {fmt_shape(t.shape)}", fmt_shape(shape))
    if t.valid_shape is not None:
        raise fail("tile.reshape", "a fully valid tile", "a partial valid shape",
                   "pl.fillpad the tile first")
    return TileType(shape=shape, dtype=t.dtype, space=t.space)


register("tile.reshape", [P("tile", Kind.TILE), P("shape", Kind.SHAPE)], _infer_reshape,
         doc="the same elements in row-major order under a new shape", in_place=True, mnemonic="VCOPY")


def _infer_transpose(a: OpArgs, soc: SoC) -> TileType:
    t = a.tile("tile")
    if a["tmp_tile"] is not None and (a.tile("tmp_tile").shape != t.shape or a.tile("tmp_tile").dtype is not t.dtype):
        raise fail("tile.transpose", f"tmp_tile of the input's shape and dtype ({type_name(t)})",
                   type_name(a.tile("tmp_tile")))
    rank = len(t.shape)
    axes = []
    for name in ("axis1", "axis2"):
        ax = a[name]
        if not -rank <= ax < rank:
            raise fail("tile.transpose", f"axes within rank {rank}", str(ax))
        axes.append(ax % rank)
    shape = list(t.shape)
    shape[axes[0]], shape[axes[1]] = shape[axes[1]], shape[axes[0]]
    valid = None
    if t.valid_shape is not None:
        valid = list(t.valid_shape)
        valid[axes[0]], valid[axes[1]] = valid[axes[1]], valid[axes[0]]
    return _vec_result(t, shape=tuple(shape), valid_shape=valid)


register("tile.transpose", [P("tile", Kind.TILE, spaces=VEC), P("axis1", Kind.INT), P("axis2", Kind.INT),
                            P("tmp_tile", Kind.TILE, default=None, optional=True, spaces=VEC)],
         _infer_transpose, doc="swap two axes (tmp_tile: TTRANS's scratch tile, of the input's shape and dtype)",
         unit="transpose")


def _infer_concat(a: OpArgs, soc: SoC) -> TileType:
    t0, t1 = a.tile("src0"), a.tile("src1")
    if t0.dtype is not t1.dtype:
        raise fail("tile.concat", "src0 and src1 of the same dtype", f"{t0.dtype.name} and {t1.dtype.name}")
    if len(t0.shape) != 2 or len(t1.shape) != 2:
        raise fail("tile.concat", "2D tiles", f"{len(t0.shape)}D and {len(t1.shape)}D")
    if t0.shape[0] != t1.shape[0]:
        raise fail("tile.concat", "the same row count", f"{t0.shape[0]} vs {t1.shape[0]}")
    if t0.valid_shape is not None or t1.valid_shape is not None:
        raise fail("tile.concat", "whole tiles (no valid region of their own)", "a tile with a valid_shape",
                   "pl.fillpad the tile first")
    return _vec_result(t0, shape=(t0.shape[0], t0.shape[1] + t1.shape[1]))


# Not in place: the result's rows are longer than either source's, so writing it over one
# would overwrite rows of the source before they are read.
register("tile.concat", [P("src0", Kind.TILE, spaces=VEC), P("src1", Kind.TILE, spaces=VEC)], _infer_concat,
         doc="src0 and src1 side by side: the columns of one, then of the other", mnemonic="TCONCAT")


def _infer_set_validshape(a: OpArgs, soc: SoC) -> TileType:
    t = a.tile("tile")
    _require_2d("tile.set_validshape", t)
    valid = (a["valid_rows"], a["valid_cols"])
    check_valid("tile.set_validshape", valid, t.shape, f"extents within the tile shape {fmt_shape(t.shape)}")
    sv = static_ints(valid)
    return TileType(shape=t.shape, dtype=t.dtype, space=t.space,
                    valid_shape=None if sv == t.shape else valid)


register("tile.set_validshape", [P("tile", Kind.TILE), P("valid_rows", Kind.SCALAR, integer=True),
                                  P("valid_cols", Kind.SCALAR, integer=True)],
         _infer_set_validshape, doc="change the valid region (metadata only; contents outside stay as they are)",
         in_place=True, mnemonic="VCOPY")


def _infer_fillpad(a: OpArgs, soc: SoC) -> TileType:
    t = a.tile("tile")
    if a["pad_value"] is PadValue.null:
        raise fail(a.op, "pad_value zero, max or min", "null")
    return _vec_result(t, valid_shape=None)


register("tile.fillpad", [P("tile", Kind.TILE, spaces=VEC), P("pad_value", Kind.PAD, default=PadValue.zero)],
         _infer_fillpad, doc="fill outside the valid region with the pad value; the whole tile becomes valid",
         in_place=True)
# TFILLPAD_INPLACE: the same fill in the tile's own buffer. What it overwrites lies outside
# the valid region, which nothing reads through the old tile, so the result may share it.
register("tile.fillpad_inplace", [P("tile", Kind.TILE, spaces=VEC), P("pad_value", Kind.PAD, default=PadValue.zero)],
         lambda a, soc: _infer_fillpad(OpArgs("tile.fillpad_inplace", a.values, a.types), soc),
         doc="pl.fillpad in the tile's own buffer (TFILLPAD_INPLACE): outside the valid region the pad value; "
             "the whole tile becomes valid", in_place=True, mnemonic="VFILLPAD")


# --------------------------------------------------------------------------- unified names

unify_families()
for _n in ("row_expand", "col_expand", "cast", "reshape", "transpose", "matmul"):
    unify(_n, tile=f"tile.{_n}", tensor=f"tensor.{_n}")
unify("cmp", tile="tile.cmp", tile_scalar="tile.cmps")
unify("cmps", tile_scalar="tile.cmps")
for _n in ("load", "store", "move", "sel", "set_validshape"):
    unify(_n, tile=f"tile.{_n}")
unify("fillpad", tile="tile.fillpad", tensor="tensor.fillpad")
unify("fillpad_expand", tile="tile.fillpad_expand")
unify("fillpad_inplace", tile="tile.fillpad_inplace")
unify("create_tile", tile="tile.create")
unify("create", tile="tile.create")
unify("concat", tile="tile.concat")
unify("full", tensor="tensor.full")  # pl.tile.full spells the tile form

__all__ = ["REQUIRED", "mask_cols", "CMP_NAMES", "CAST_MODES", "check_region", "TypeCheckError"]
