"""Tile ops over windows of a tile: a window copied out (``tile.slice``), a source written
into a target at an offset (``tile.assemble``: Vec into Vec, or Acc into Mat through the
fixpipe), the other layout of a Mat tile (``tile.transpose_view``), a larger padded tile
(``tile.fillpad_expand``) and the same bytes as another dtype (``tile.reinterpret_view``)."""

from __future__ import annotations

import math

from pypto.backend import MemorySpace as M
from pypto.backend import SoC
from pypto.ir.nodes import Const
from pypto.ir.ops.families import FLOATS
from pypto.ir.ops.registry import Kind, OpArgs, register, unify
from pypto.ir.ops.type_rules import check_valid, fail, fmt_shape, static_ints
from pypto.ir.ops.registry import ParamSpec as P
from pypto.ir.ops.transfers import SHAPE_HINT
from pypto.ir.types import DataType, PadValue, TileType

VEC = (M.Vec,)


def _infer_transpose_view(a: OpArgs, soc: SoC) -> TileType:
    t = a.tile("tile")
    if len(t.shape) < 2:
        raise fail("tile.transpose_view", "a tile of rank 2 or more", fmt_shape(t.shape))
    shape = (*t.shape[:-2], t.shape[-1], t.shape[-2])
    valid = None if t.valid_shape is None else (*t.valid_shape[:-2], t.valid_shape[-1], t.valid_shape[-2])
    return TileType(shape=shape, dtype=t.dtype, space=t.space, valid_shape=valid)


# The hardware reads the same L1 bytes in the other fractal layout (NZ <-> ZN). Tiles here
# are row-major, so the model writes the transposed bytes into a buffer of their own (L1
# the hardware would not need), at one cycle of MTE1.
register("tile.transpose_view", [P("tile", Kind.TILE, spaces=(M.Mat,))], _infer_transpose_view,
         doc="the tile transposed in its last two axes, over the same L1 bytes (a zero-copy layout change)",
         mnemonic="TRANSVIEW")


def _inside(op: str, outer: TileType, offset, shape, what: str) -> None:
    """A window [offset, offset + shape) of a tile, checked where its offsets are constants
    (the rest at run time: an on-chip window has nothing to clamp it)."""
    if len(offset) != len(outer.shape) or len(shape) != len(outer.shape):
        raise fail(op, f"a {what} of the tile's rank {len(outer.shape)}", f"offset {fmt_shape(offset)} and shape "
                   f"{fmt_shape(shape)}")
    for axis, (o, e, d) in enumerate(zip(offset, shape, outer.shape)):
        if isinstance(o, Const) and not (0 <= o.value and o.value + e <= d):
            raise fail(op, f"a {what} inside the tile {fmt_shape(outer.shape)}",
                       f"[{o.value}, {o.value + e}) on axis {axis}", "keep offset + shape within the tile")


def window_valid(shape, valid, offset) -> tuple:
    """The valid extents of the window [offset, offset + shape) of a tile valid on ``valid``:
    its share of that region, clipped to [0, shape)."""
    from pypto.ir.nodes import BinOp
    from pypto.ir.simplify import simplify

    return tuple(simplify(BinOp("max", Const(0), BinOp("min", Const(s), BinOp("-", v, o))))
                 for s, v, o in zip(shape, valid, offset))


def _infer_slice(a: OpArgs, soc: SoC) -> TileType:
    t = a.tile("tile")
    shape = static_ints(a["shape"])
    if shape is None or any(s <= 0 for s in shape):
        raise fail("tile.slice", "static positive shapes", fmt_shape(a["shape"]), SHAPE_HINT)
    _inside("tile.slice", t, tuple(a["offset"]), shape, "window")
    if t.space is M.Acc and a["valid_shape"] is None and t.valid_shape is not None:
        # a window of a product the fixpipe stores: valid where the product is (past its
        # valid region the accumulator holds sums over padding)
        return TileType(shape=shape, dtype=t.dtype, space=t.space,
                        valid_shape=window_valid(shape, t.valid_shape, tuple(a["offset"])))
    if t.valid_shape is not None:
        raise fail("tile.slice", "a fully valid source tile", "a partial valid shape",
                   "pl.fillpad the tile first, or narrow the slice with valid_shape=")
    valid = a["valid_shape"]
    if valid is not None:
        valid = tuple(valid)
        requirement = f"valid_shape within the slice shape {fmt_shape(shape)}"
        if len(valid) != len(shape):
            raise fail("tile.slice", requirement, fmt_shape(valid))
        check_valid("tile.slice", valid, shape, requirement)
    elif a["pad_value"] not in (None, PadValue.null):
        raise fail("tile.slice", "valid_shape= with pad_value= (it fills what lies outside the valid region)",
                   "pad_value alone", "give valid_shape=, or drop pad_value")
    return TileType(shape=shape, dtype=t.dtype, space=t.space, valid_shape=valid)


# A window of a Mat tile is a view of its L1 bytes on the hardware: it reaches the cube through
# the L0 loads (``CanonicalizeTileSlice`` folds it into a tile.extract to Left or Right).
register("tile.slice", [P("tile", Kind.TILE, spaces=(M.Vec, M.Mat, M.Acc)), P("shape", Kind.SHAPE),
                        P("offset", Kind.INDEX_LIST), P("valid_shape", Kind.INDEX_LIST, default=None, optional=True),
                        P("pad_value", Kind.PAD, default=None, optional=True)], _infer_slice,
         doc="a copy of the window [offset, offset + shape) of a tile (pad_value fills it past valid_shape)",
         mnemonic="TEXTRACT")


EXTRACTS = {M.Mat: (M.Left, M.Right), M.Acc: (M.Mat,), M.Vec: (M.Vec,)}  # ISA TEXTRACT: source -> targets


def _infer_extract(a: OpArgs, soc: SoC) -> TileType:
    t = a.tile("src")
    shape = static_ints(a["shape"])
    if shape is None or len(shape) < 2 or any(s <= 0 for s in shape):
        raise fail("tile.extract", "a static shape of positive extents", fmt_shape(a["shape"]), SHAPE_HINT)
    target = a["target_memory"]
    if len(t.shape) != 2 or len(shape) != 2:
        # a stack of pages (a batch_matmul's operand in Mat): the same window of every page
        # into L0, its batch axes whole
        if len(shape) != len(t.shape) or tuple(shape[:-2]) != tuple(t.shape[:-2]) \
                or t.space not in (None, M.Mat) or target not in (M.Left, M.Right):
            raise fail("tile.extract", "a 2-D window of a 2-D tile, or of a stack of Mat pages into Left or Right "
                       "the same window of each page (its batch axes whole)",
                       f"{fmt_shape(shape)} of {fmt_shape(t.shape)} {getattr(t.space, 'name', '')} -> "
                       f"{getattr(target, 'name', target)}")
    if t.space is not None and target not in EXTRACTS.get(t.space, ()):
        legal = ", ".join(f"{s.name} -> {' or '.join(x.name for x in ts)}" for s, ts in EXTRACTS.items())
        raise fail("tile.extract", f"a source and target the TEXTRACT path joins ({legal})",
                   f"{t.space.name} -> {target.name}",
                   "pl.move the tile first" if t.space is M.Vec else None)
    offset = (Const(0),) * (len(shape) - 2) + (a["index_row"], a["index_col"])
    _inside("tile.extract", t, offset, shape, "window")
    valid = None if t.valid_shape is None else window_valid(shape, t.valid_shape, offset)
    return TileType(shape=shape, dtype=t.dtype, space=target, valid_shape=valid)


register("tile.extract", [P("src", Kind.TILE, spaces=tuple(EXTRACTS)), P("index_row", Kind.SCALAR, integer=True),
                          P("index_col", Kind.SCALAR, integer=True), P("shape", Kind.SHAPE),
                          P("target_memory", Kind.SPACE)], _infer_extract,
         doc="the window [row, col] + shape of a tile copied into target_memory (TEXTRACT: Mat -> Left/Right through "
             "MTE1, Acc -> Mat through the fixpipe, Vec -> Vec); of a stack of Mat pages, the same window of each",
         mnemonic="TEXTRACT")


def _infer_assemble(a: OpArgs, soc: SoC) -> TileType:
    target, source = a.tile("target"), a.tile("source")
    spaces = (target.space, source.space)
    if None not in spaces and spaces not in ((M.Vec, M.Vec), (M.Mat, M.Acc)):
        raise fail("tile.assemble", "a Vec source into a Vec target, or an Acc source into a Mat target",
                   f"{source.space.name} into {target.space.name}",
                   "pl.move the source into the target's space first" if target.space is M.Vec else None)
    if source.space is M.Acc:
        if source.dtype is not DataType.FP32 or target.dtype not in FLOATS:
            raise fail("tile.assemble", "an FP32 Acc source into a floating-point Mat target (the fixpipe converts)",
                       f"{source.dtype.name} into {target.dtype.name}")
    elif target.dtype is not source.dtype:
        raise fail("tile.assemble", "the source's dtype to match the target's", f"{source.dtype.name} into "
                   f"{target.dtype.name}", f"cast first: pl.cast(source, target_type=pl.{target.dtype.name})")
    _inside("tile.assemble", target, tuple(a["offset"]), source.shape, "source window")
    return TileType(shape=target.shape, dtype=target.dtype, space=target.space, valid_shape=target.valid_shape)


register("tile.assemble", [P("target", Kind.TILE), P("source", Kind.TILE), P("offset", Kind.INDEX_LIST)],
         _infer_assemble, doc="the target with the source written at offset (Vec into Vec, or Acc into Mat through "
                              "the fixpipe)", in_place=True, mnemonic="TINSERT")


def _infer_fillpad_expand(a: OpArgs, soc: SoC) -> TileType:
    t = a.tile("tile")
    shape = static_ints(a["shape"])
    if shape is None or len(shape) != len(t.shape) or any(s < d for s, d in zip(shape, t.shape)):
        raise fail("tile.fillpad_expand", f"a shape of rank {len(t.shape)}, each extent at least the tile's "
                   f"{fmt_shape(t.shape)}", fmt_shape(a["shape"]))
    if a["pad_value"] is PadValue.null:
        raise fail("tile.fillpad_expand", "pad_value zero, max or min", "null")
    return TileType(shape=shape, dtype=t.dtype, space=t.space)


register("tile.fillpad_expand", [P("tile", Kind.TILE, spaces=VEC), P("shape", Kind.SHAPE),
                                 P("pad_value", Kind.PAD, default=PadValue.zero)], _infer_fillpad_expand,
         doc="a larger tile: the source's valid region at the top left, the pad value everywhere else",
         mnemonic="TFILLPADEXP")


def _infer_reinterpret_view(a: OpArgs, soc: SoC) -> TileType:
    t, dtype = a.tile("data"), a["dtype"]
    if dtype is t.dtype:
        raise fail("tile.reinterpret_view", "a dtype other than the tile's", dtype.name, "drop the reinterpretation")
    if t.valid_shape is not None:
        raise fail("tile.reinterpret_view", "a fully valid tile", "a partial valid shape", "pl.fillpad the tile first")
    nbytes = t.nbytes
    if a["shape"] is None:
        last = t.shape[-1] * t.dtype.nbytes
        if last % dtype.nbytes:
            raise fail("tile.reinterpret_view", f"a last axis of whole {dtype.name} elements",
                       f"{last} bytes per row", "give shape= explicitly")
        shape = (*t.shape[:-1], last // dtype.nbytes)
    else:
        shape = static_ints(a["shape"])
        if shape is None or math.prod(shape) * dtype.nbytes != nbytes:
            raise fail("tile.reinterpret_view", f"a shape of {nbytes} bytes of {dtype.name}", fmt_shape(a["shape"]))
    return TileType(shape=shape, dtype=dtype, space=t.space)


register("tile.reinterpret_view", [P("data", Kind.TILE), P("dtype", Kind.DTYPE),
                                   P("shape", Kind.SHAPE, default=None, optional=True)], _infer_reinterpret_view,
         doc="the same bytes read as another dtype (by default the last axis rescaled)", in_place=True,
         mnemonic="VCOPY")
unify("reinterpret_view", tile="tile.reinterpret_view")
