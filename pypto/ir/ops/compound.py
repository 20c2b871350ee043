"""Tile ops that combine more than two operands elementwise, or an operand with a scalar in
a way the families do not: the rectifiers with a slope (``prelu`` by a tile, ``lrelu`` by
a scalar), the three-input sums and differences (``addc``, ``subc``, ``addsc``, ``subsc``),
a select against a scalar (``sels``), a scalar broadcast to a tile's shape (``expands``),
and the tiles the vector unit generates from scalars: consecutive integers (``ci``, also
spelled ``arange``) and a triangular mask (``tri``). Tile level only, as the reference has
them; ``pl.<name>`` is each."""

from __future__ import annotations

from pypto.backend import MemorySpace as M
from pypto.backend import SoC
from pypto.ir.nodes import Const
from pypto.ir.ops.families import CI_DTYPES, FLOATS, NUMERIC
from pypto.ir.ops.registry import Kind, OpArgs, register, unify
from pypto.ir.ops.type_rules import check_valid, fail, fmt_shape, same_shape_dtype, static_ints
from pypto.ir.ops.registry import ParamSpec as P
from pypto.ir.ops.tile import _require_2d, _require_dtype, _scalar_fits, _vec_result
from pypto.ir.types import DataType, TileType, type_name

VEC = (M.Vec,)


def _like(op: str, what: str, t: TileType, like: TileType) -> None:
    if t.shape != like.shape or t.dtype != like.dtype:
        raise fail(op, f"its {what} to match its operand ({type_name(like)})", type_name(t))


def _infer_prelu(a: OpArgs, soc: SoC) -> TileType:
    t, slope = a.tile("tile"), a.tile("slope")
    _require_dtype("tile.prelu", t, FLOATS, "a dtype it computes in")
    _like("tile.prelu", "slope tile", slope, t)
    return _vec_result(t)  # (tmp: TPRELU's workspace, any Vec tile the target's kernel sizes)


def _infer_lrelu(a: OpArgs, soc: SoC) -> TileType:
    t = a.tile("tile")
    _require_dtype("tile.lrelu", t, FLOATS, "a dtype it computes in")
    return _vec_result(t)


def _three(op: str, scalar: bool):
    def infer(a: OpArgs, soc: SoC) -> TileType:
        lhs, rhs2 = a.tile("lhs"), a.tile("rhs2")
        _require_dtype(op, lhs, NUMERIC, "a dtype it computes in")
        same_shape_dtype(op, lhs, rhs2)
        if scalar:
            _scalar_fits(op, lhs, a["rhs"], a.type("rhs"))
        else:
            same_shape_dtype(op, lhs, a.tile("rhs"))
        return _vec_result(lhs)
    return infer


MASK_CARRIERS = (DataType.INT8, DataType.UINT8, DataType.INT16, DataType.UINT16, DataType.INT32, DataType.UINT32)


def _infer_sels(a: OpArgs, soc: SoC) -> TileType:
    """TSELS reads its mask as packed bits in the bytes of each row, whatever the carrier's
    integer dtype (pl.cmps gives UINT8; a loaded INT16 or UINT32 tile holds the same bytes):
    its rows cover the source's valid rows, each with a bit per valid column."""
    mask, src = a.tile("mask"), a.tile("src")
    _require_2d("tile.sels", src, "a rank-2 src tile")
    if len(mask.shape) != 2 or mask.dtype not in MASK_CARRIERS:
        raise fail("tile.sels", "an 8-, 16-, or 32-bit integer mask of rank 2", type_name(mask),
                   "the mask of pl.tile.cmps(src, ...)")
    rows, cols = src.valid_shape if src.valid_shape is not None else (Const(src.shape[0]), Const(src.shape[1]))
    m_rows, m_cols = mask.valid_shape if mask.valid_shape is not None else (Const(mask.shape[0]),
                                                                            Const(mask.shape[1]))
    if isinstance(rows, Const) and isinstance(m_rows, Const) and m_rows.value < rows.value:
        raise fail("tile.sels", "mask carrier rows to cover src valid rows", f"mask valid_shape "
                   f"{fmt_shape((m_rows, m_cols))} and src valid_shape {fmt_shape((rows, cols))}")
    if isinstance(cols, Const) and isinstance(m_cols, Const) and m_cols.value * mask.dtype.nbytes < -(-cols.value // 8):
        raise fail("tile.sels", "each mask carrier row to hold at least ceil(src valid columns / 8) packed bytes",
                   f"mask valid_shape {fmt_shape((m_rows, m_cols))} with dtype {mask.dtype.name} and src valid_shape "
                   f"{fmt_shape((rows, cols))}")
    if a["tmp"] is not None:
        _require_2d("tile.sels", a.tile("tmp"), "a rank-2 tmp tile")
    _scalar_fits("tile.sels", src, a["scalar"], a.type("scalar"))
    return _vec_result(src)


def _infer_expands(a: OpArgs, soc: SoC) -> TileType:
    t = a.tile("target")
    _scalar_fits("tile.expands", t, a["scalar"], a.type("scalar"))
    return TileType(shape=t.shape, dtype=t.dtype, space=M.Vec if t.space is not None else None)


_TMP = P("tmp", Kind.TILE, default=None, optional=True, spaces=VEC)
register("tile.prelu", [P("tile", Kind.TILE, spaces=VEC), P("slope", Kind.TILE, spaces=VEC), _TMP], _infer_prelu,
         doc="x where x > 0, else x * slope (elementwise, slope a tile)", in_place=True)
register("tile.lrelu", [P("tile", Kind.TILE, spaces=VEC), P("slope", Kind.SCALAR)], _infer_lrelu,
         doc="x where x > 0, else x * slope (a scalar slope)", in_place=True)
for _name, _scalar in (("addc", False), ("subc", False), ("addsc", True), ("subsc", True)):
    _rhs = P("rhs", Kind.SCALAR) if _scalar else P("rhs", Kind.TILE, spaces=VEC)
    _sign = "+" if _name.startswith("add") else "-"
    register(f"tile.{_name}", [P("lhs", Kind.TILE, spaces=VEC), _rhs, P("rhs2", Kind.TILE, spaces=VEC)],
             _three(f"tile.{_name}", _scalar), doc=f"(lhs {_sign} rhs) {_sign} rhs2, elementwise"
             + (" (rhs a scalar)" if _scalar else ""), in_place=True)
register("tile.sels", [P("mask", Kind.TILE, spaces=VEC), P("src", Kind.TILE, spaces=VEC), _TMP,
                       P("scalar", Kind.SCALAR)], _infer_sels,
         doc="src where the mask bit is set, else the scalar", in_place=True, mnemonic="VSELS")
register("tile.expands", [P("target", Kind.TILE, spaces=VEC), P("scalar", Kind.SCALAR)], _infer_expands,
         doc="the scalar in every element of a tile shaped as target", mnemonic="VDUP")



def _static_2d(op: str, a: OpArgs) -> tuple:
    shape = static_ints(a["shape"])
    if shape is None or len(shape) != 2 or any(s <= 0 for s in shape):
        raise fail(op, "a static positive 2-D shape", fmt_shape(a["shape"]))
    return shape


def _infer_ci(a: OpArgs, soc: SoC) -> TileType:
    shape = _static_2d("tile.ci", a)
    if shape[0] != 1 or shape[1] == 1:
        raise fail("tile.ci", "a shape [1, N] with N > 1 (the sequence fills the first row only)", fmt_shape(shape))
    if a["dtype"] not in CI_DTYPES:
        raise fail("tile.ci", "dtype to be one of {INT16, INT32, UINT16, UINT32}", a["dtype"].name, "dtype=pl.INT32")
    if isinstance(a["start"], Const) and not isinstance(a["start"].value, int):
        raise fail("tile.ci", "an integer start", repr(a["start"].value))
    return TileType(shape=shape, dtype=a["dtype"], space=M.Vec)


def _infer_tri(a: OpArgs, soc: SoC) -> TileType:
    shape = _static_2d("tile.tri", a)
    valid = a["valid_shape"]
    if valid is not None:
        if len(valid) != 2:
            raise fail("tile.tri", f"valid_shape within the shape {fmt_shape(shape)}", fmt_shape(valid))
        check_valid("tile.tri", valid, shape, f"valid_shape within the shape {fmt_shape(shape)}")
    if isinstance(a["diagonal"], Const) and not isinstance(a["diagonal"].value, int):
        raise fail("tile.tri", "an integer diagonal", repr(a["diagonal"].value))
    return TileType(shape=shape, dtype=a["dtype"], space=M.Vec, valid_shape=None if valid is None else tuple(valid))


register("tile.ci", [P("start", Kind.SCALAR, integer=True), P("shape", Kind.SHAPE),
                     P("dtype", Kind.DTYPE, default=DataType.INT32), P("descending", Kind.BOOL, default=False)],
         _infer_ci, doc="consecutive integers start, start + 1, ... (start - k descending) along the first row",
         mnemonic="VCI")
register("tile.tri", [P("diagonal", Kind.SCALAR, integer=True), P("shape", Kind.SHAPE),
                      P("valid_shape", Kind.INDEX_LIST, default=None, optional=True),
                      P("dtype", Kind.DTYPE, default=DataType.INT32), P("upper", Kind.BOOL, default=False)],
         _infer_tri, doc="1 where column <= row + diagonal (upper: >=), else 0, over the valid region",
         mnemonic="VTRI")

for _name in ("prelu", "lrelu", "addc", "subc", "addsc", "subsc", "sels", "expands", "tri"):
    unify(_name, tile=f"tile.{_name}")
unify("arange", tensor="tensor.ci")  # the reference's pl.arange: a tensor (pl.tile.arange spells the tile form)


def _valid_extents(t: TileType):
    return tuple(t.shape) if t.valid_shape is None else static_ints(t.valid_shape)


def _part(op: str):
    def infer(a: OpArgs, soc: SoC) -> TileType:
        x, y = a.tile("src0"), a.tile("src1")
        same_shape_dtype(op, x, y)
        _require_dtype(op, x, NUMERIC, "a dtype it computes in")
        vx, vy = _valid_extents(x), _valid_extents(y)
        if vx is None or vy is None:
            raise fail(op, "valid shapes known when it compiles (the result's is the larger of each)",
                       f"{fmt_shape(x.valid_shape or x.shape)} and {fmt_shape(y.valid_shape or y.shape)}")
        valid = tuple(Const(max(p, q)) for p, q in zip(vx, vy))
        return TileType(shape=x.shape, dtype=x.dtype, space=M.Vec if x.space is not None else None, valid_shape=valid)
    return infer


for _name in ("part_add", "part_mul", "part_max", "part_min"):
    register(f"tile.{_name}", [P("src0", Kind.TILE, spaces=VEC), P("src1", Kind.TILE, spaces=VEC)],
             _part(f"tile.{_name}"), doc=f"{_name.split('_')[1]} where both sources are valid; where only one is, "
                                         "that one (the result is valid over the larger of each extent)",
             mnemonic="V" + _name.replace("_", "").upper())
    unify(_name, tile=f"tile.{_name}")
