"""``tile.gather_row`` (``pl.gather_row`` on a tile): one GM window copied by MTE2 straight
into part of an existing Vec or Mat tile — the per-row step of a paged gather, where the
kernel works out each row's physical offset (a block-table lookup read with ``pl.read``) and
the slot it fills. The tile is rewritten in place: the result is it, with that window
replaced (a statement rebinds its name)."""

from __future__ import annotations

from pypto.backend import MemorySpace as M
from pypto.backend import SoC
from pypto.ir.nodes import Const
from pypto.ir.ops.registry import Kind, OpArgs, register, unify
from pypto.ir.ops.type_rules import check_valid, fail, fmt_shape, static_ints
from pypto.ir.ops.registry import ParamSpec as P
from pypto.ir.ops.transfers import SHAPE_HINT, check_region
from pypto.ir.types import TensorType, TileType

ON_CHIP = (M.Vec, M.Mat)


def check_row_window(op: str, dst, src, a: OpArgs, space) -> None:
    """The window rules shared by the tile and tensor forms: 2D operands, a static window
    inside src, its placement (transposed or not) inside dst; ``space`` is dst's."""
    if not isinstance(src, TensorType):
        raise fail(op, "a GM tensor src (the op reads global memory)", type(src).__name__)
    if len(dst.shape) != 2 or len(src.shape) != 2:
        raise fail(op, "a 2D dst and a 2D src tensor", f"{len(dst.shape)}D and {len(src.shape)}D")
    shape = static_ints(a["shapes"])
    if shape is None or len(shape) != 2 or any(s <= 0 for s in shape):
        raise fail(op, "static positive shapes [rows, cols]", fmt_shape(a["shapes"]), SHAPE_HINT)
    valid = a["valid_shape"]
    if valid is not None:
        if a["transpose"]:
            raise fail(op, "no valid_shape with transpose=True", "both")
        if len(valid) != 2:
            raise fail(op, f"a valid_shape within shapes {fmt_shape(shape)}", fmt_shape(valid))
        check_valid(op, valid, shape, f"a valid_shape within shapes {fmt_shape(shape)}")
    if a["transpose"] and space is not M.Mat:
        raise fail(op, "a Mat dst for transpose=True (only the GM->L1 path transposes)",
                   f"{'a' if space is None else 'a ' + space.name} dst")
    check_region(op, src, a["src_offset"], shape, what="src window", valid=valid)
    if len(a["dst_offset"]) != 2:
        raise fail(op, "a [row, col] dst_offset", f"{len(a['dst_offset'])} offsets")
    placed = shape[::-1] if a["transpose"] else shape
    for axis, (o, e, d) in enumerate(zip(a["dst_offset"], placed, dst.shape)):
        if e > d or isinstance(o, Const) and not 0 <= o.value <= d - e:
            raise fail(op, f"a dst window inside its {fmt_shape(dst.shape)}",
                       f"[{o.value if isinstance(o, Const) else '?'}, +{e}) on axis {axis}")


def _infer_gather_row(a: OpArgs, soc: SoC) -> TileType:
    op = "tile.gather_row"
    dst, src = a.tile("dst"), a.type("src")
    if isinstance(src, TensorType) and dst.dtype is not src.dtype:
        raise fail(op, "dst of src's dtype (the DMA converts nothing)", f"{dst.dtype.name} and {src.dtype.name}")
    check_row_window(op, dst, src, a, dst.space)
    return dst


register("tile.gather_row", [P("dst", Kind.TILE, spaces=ON_CHIP), P("src", Kind.TENSOR),
                             P("dst_offset", Kind.INDEX_LIST), P("src_offset", Kind.INDEX_LIST),
                             P("shapes", Kind.SHAPE), P("transpose", Kind.BOOL, default=False),
                             P("valid_shape", Kind.INDEX_LIST, default=None, optional=True)], _infer_gather_row,
         doc="GM -> part of a Vec|Mat tile: src's window [src_offset, +shapes) written into dst at dst_offset "
             "(as a column with transpose=True)", in_place=True, updates="dst", mnemonic="TLOAD")
unify("gather_row", tile="tile.gather_row", tensor="tensor.gather_row")
