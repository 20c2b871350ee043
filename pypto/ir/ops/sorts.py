"""Sorting on the vector unit, and the fixed-pattern column moves that take its results
apart. ``tile.sort32`` sorts each 32-element block of a row descending into (value, index)
pairs; ``tile.mrgsort`` merges sorted runs of pairs (format 1: four runs of ``block_len``
columns at a time within one row; format 2: two to four rows, one per tile);
``tile.gather_mask`` takes every 2nd or 4th column (a pair's values, or its indices) and
``tile.scatter_mask`` puts columns back.

A pair is the hardware's 8-byte proposal: an FP32 value, then the UINT32 index's bits in
the next FP32 column. (An FP16 proposal is a value, a pad and the index in four FP16
columns, which the reference's result shapes do not hold; FP16 is refused here.)
"""

from __future__ import annotations

from pypto.backend import MemorySpace as M
from pypto.backend import SoC
from pypto.ir.nodes import BinOp, Const
from pypto.ir.simplify import fold
from pypto.ir.ops.registry import Kind, OpArgs, register
from pypto.ir.ops.type_rules import fail, fmt_shape
from pypto.ir.ops.registry import ParamSpec as P
from pypto.ir.ops.tile import _require_2d, _same_valid, _vec_result
from pypto.ir.types import DataType, MaskPattern, TileType

VEC = (M.Vec,)
SORTED = (DataType.FP32,)
SORT_BLOCK = 32  # elements one sort32 block orders
MERGE_WAYS = 4  # runs format 1 merges at a time
INDICES = (DataType.UINT32, DataType.INT32)  # an index's 32 bits, as the sort keeps them


def _pairs(op: str, t: TileType, what: str) -> None:
    if t.dtype not in SORTED:
        hint = ("an FP16 proposal is four FP16 columns, which the reference's shapes do not hold: "
                "pl.cast(x, target_type=pl.FP32) and sort in FP32") if t.dtype is DataType.FP16 else \
            "pl.cast(x, target_type=pl.FP32) first"
        raise fail(op, f"an FP32 {what} (a value and its index's bits per pair of columns)", t.dtype.name, hint)


def _infer_sort32(a: OpArgs, soc: SoC) -> TileType:
    src, idx = a.tile("src"), a.tile("idx")
    _require_2d("tile.sort32", src, "src")
    _pairs("tile.sort32", src, "src")
    if idx.dtype not in INDICES:
        raise fail("tile.sort32", "a UINT32 idx tile (each element's index, carried with it)", idx.dtype.name,
                   "load the indices from a pl.UINT32 tensor")
    if idx.shape != src.shape:
        raise fail("tile.sort32", f"an idx tile of src's shape {fmt_shape(src.shape)}", fmt_shape(idx.shape))
    _same_valid("tile.sort32", src, idx)
    valid = None if src.valid_shape is None else (src.valid_shape[0], _twice(src.valid_shape[1]))
    return _vec_result(src, shape=(src.shape[0], 2 * src.shape[1]), valid_shape=valid)


def _twice(extent):
    return fold(BinOp("*", Const(2), extent))


# idx is read, never written: the sorted indices are in the result's odd columns
register("tile.sort32", [P("src", Kind.TILE, spaces=VEC), P("idx", Kind.TILE, spaces=VEC)], _infer_sort32,
         doc="each row's 32-element blocks sorted descending into (value, index) pairs: the result's "
             "columns 2k and 2k+1 (ties: the smaller index first)", mnemonic="VSORT32", unit="sort")


def _one_row(op: str, t: TileType, what: str) -> None:
    _require_2d(op, t, what)
    _pairs(op, t, what)
    if t.shape[0] != 1:
        raise fail(op, f"a one-row {what} (the merge unit reads one list per row)", fmt_shape(t.shape),
                   "merge each row on its own: pl.slice one row at a time")
    if t.shape[1] % 2:
        raise fail(op, f"a {what} of whole (value, index) pairs: an even column count", fmt_shape(t.shape))


def check_block_len(op: str, n, cols: int) -> None:
    """Format 1's run length, where it is a constant: a positive multiple of 64 whose four
    runs divide the row (``cols`` columns)."""
    if not isinstance(n, Const):
        return
    if n.value <= 0 or n.value % 64:
        raise fail(op, "block_len to be a positive multiple of 64", str(n.value))
    if cols % (MERGE_WAYS * n.value):
        raise fail(op, f"a src0 of whole groups of {MERGE_WAYS} runs ({MERGE_WAYS} * block_len = "
                   f"{MERGE_WAYS * n.value} columns)", f"{cols} columns", "pick a block_len whose 4 runs divide the row")


def _infer_mrgsort(a: OpArgs, soc: SoC) -> TileType:
    op = "tile.mrgsort"
    lists = [a.tile(k) for k in ("src0", "src1", "src2", "src3") if a[k] is not None]
    if a["block_len"] is not None:
        if len(lists) > 1 or a["tmp"] is not None or a["exhausted"]:
            raise fail(op, "either format 1 (block_len=...) or format 2 (src1, ..., tmp)", "both",
                       "drop block_len to merge tiles, or the other tiles to merge runs of one")
        src = lists[0]
        _one_row(op, src, "src0")
        check_block_len(op, a["block_len"], src.shape[1])
        if src.valid_shape is not None:
            raise fail(op, "a fully valid src0 (format 1 merges whole runs)", "a partial valid shape",
                       "pl.fillpad the tile first")
        return _vec_result(src)
    if a["src1"] is None:
        raise fail(op, "block_len=<int> for format 1, or at least (src0, src1, tmp=...) for format 2",
                   "one tile and no block_len")
    if a["src3"] is not None and a["src2"] is None:
        raise fail(op, "src2 before src3", "src3 alone")
    if a["tmp"] is None:
        raise fail(op, "a tmp tile for format 2 (the merge is written there, then copied)", "none",
                   "tmp=pl.tile.create([1, <the lists' columns summed>], dtype=pl.FP32)")
    for k, t in enumerate(lists):
        _one_row(op, t, f"src{k}")
    tmp = a.tile("tmp")
    _one_row(op, tmp, "tmp")
    total = sum(t.shape[1] for t in lists)
    if tmp.shape[1] != total:
        raise fail(op, f"a tmp of the lists' columns summed ({total})", fmt_shape(tmp.shape))
    return _vec_result(tmp, valid_shape=None)


# Format 2 with exhausted=True stops when one list runs out; the result's other columns are
# tmp's, as the merge unit leaves them. Equal values: the earlier list's first.
register("tile.mrgsort", [P("src0", Kind.TILE, spaces=VEC),
                          P("src1", Kind.TILE, default=None, optional=True, spaces=VEC),
                          P("src2", Kind.TILE, default=None, optional=True, spaces=VEC),
                          P("src3", Kind.TILE, default=None, optional=True, spaces=VEC),
                          P("tmp", Kind.TILE, default=None, optional=True, spaces=VEC),
                          P("exhausted", Kind.BOOL, default=False),
                          P("block_len", Kind.SCALAR, default=None, optional=True, integer=True)], _infer_mrgsort,
         doc="merge sorted runs of (value, index) pairs descending: format 1 four runs of block_len columns at "
             "a time within src0; format 2 the tiles src0..src3 into one", mnemonic="VMRGSORT", unit="sort")


MASKED = (DataType.FP16, DataType.FP32, DataType.INT16, DataType.INT32, DataType.UINT32)


def _pattern(op: str, value) -> MaskPattern:
    if value not in MaskPattern._value2member_map_:
        raise fail(op, "mask_pattern one of 1..7 (pl.tile.MaskPattern.P0101 ... P1111)", repr(value))
    return MaskPattern(value)


def _infer_gather_mask(a: OpArgs, soc: SoC) -> TileType:
    op, src = "tile.gather_mask", a.tile("src")
    _require_2d(op, src, "src")
    if src.dtype not in MASKED:
        raise fail(op, f"a src dtype it moves ({', '.join(d.name for d in MASKED)})", src.dtype.name)
    pattern = _pattern(op, a["mask_pattern"])
    out = a["output_dtype"] or src.dtype
    if out.nbytes != src.dtype.nbytes:
        raise fail(op, f"an output_dtype of src's width ({src.dtype.nbytes} bytes: the bits are kept)", out.name)
    if src.shape[1] % pattern.stride:
        raise fail(op, f"a src whose columns are whole groups of {pattern.stride}", fmt_shape(src.shape))
    valid = None
    if src.valid_shape is not None:
        cols = src.valid_shape[1]
        if not isinstance(cols, Const) or cols.value % pattern.stride:
            raise fail(op, f"a src valid width of whole groups of {pattern.stride}", fmt_shape(src.valid_shape),
                       "pl.fillpad the tile first")
        valid = (src.valid_shape[0], Const(cols.value // pattern.stride))
    return _vec_result(src, shape=(src.shape[0], src.shape[1] // pattern.stride), dtype=out, valid_shape=valid)


register("tile.gather_mask", [P("src", Kind.TILE, spaces=VEC), P("mask_pattern", Kind.INT),
                              P("output_dtype", Kind.DTYPE, default=None, optional=True)], _infer_gather_mask,
         doc="the columns a mask pattern selects (P0101: 0, 2, 4, ...; P1010: 1, 3, ...; P0001..P1000: one of "
             "each 4), their bits as output_dtype", mnemonic="VGATHERM")


def _infer_scatter_mask(a: OpArgs, soc: SoC) -> TileType:
    op, dst, src = "tile.scatter_mask", a.tile("dst"), a.tile("src")
    _require_2d(op, dst, "dst")
    _require_2d(op, src, "src")
    if src.dtype not in MASKED:
        raise fail(op, f"a src dtype it moves ({', '.join(d.name for d in MASKED)})", src.dtype.name)
    if dst.dtype is not src.dtype:
        raise fail(op, "dst of src's dtype", f"{dst.dtype.name} and {src.dtype.name}")
    pattern = _pattern(op, a["mask_pattern"])
    want = (src.shape[0], src.shape[1] * pattern.stride)
    if tuple(dst.shape) != want:
        raise fail(op, f"a dst of {fmt_shape(want)} (src's columns times the pattern's stride {pattern.stride})",
                   fmt_shape(dst.shape))
    if src.valid_shape is not None:
        raise fail(op, "a fully valid src", fmt_shape(src.valid_shape), "pl.fillpad the tile first")
    return _vec_result(dst)


# dst is rewritten in place: the columns the pattern selects take src's, the others keep dst's
register("tile.scatter_mask", [P("dst", Kind.TILE, spaces=VEC), P("src", Kind.TILE, spaces=VEC),
                               P("mask_pattern", Kind.INT)], _infer_scatter_mask,
         doc="dst with the columns a mask pattern selects set to src's (the inverse of gather_mask)",
         in_place=True, mnemonic="VSCATTERM")
