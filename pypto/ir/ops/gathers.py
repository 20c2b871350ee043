"""Tile ops that address a tile by positions another tile holds, each position an index
into the tile's elements in row-major order: ``tile.gather`` (index form) reads
``dst[i, j] = src[indices[i, j]]``; ``tile.scatter`` (index form) writes
``dst.flat[indexes[i, j]] = src[i, j]`` into ``dst`` in place. Tile level, as the
reference has the index forms (its tensor forms and the mask and compare forms are not
here yet)."""

from __future__ import annotations

from pypto.backend import MemorySpace as M
from pypto.backend import SoC
from pypto.ir.ops.registry import Kind, OpArgs, fail, register, unify
from pypto.ir.ops.registry import ParamSpec as P
from pypto.ir.ops.tile import _require_2d, _require_dtype, _same_valid, _vec_result
from pypto.ir.types import DataType, TileType

VEC = (M.Vec,)
GATHERED = (DataType.FP16, DataType.FP32, DataType.INT16, DataType.INT32)
_SIXTEEN = (DataType.FP16, DataType.INT16)


def _infer_gather(a: OpArgs, soc: SoC) -> TileType:
    src, idx = a.tile("src"), a.tile("indices")
    _require_2d("tile.gather", src, "src")
    _require_2d("tile.gather", idx, "indices")
    _require_dtype("tile.gather", src, GATHERED, "a dtype the gather moves")
    allowed = (DataType.INT32, DataType.INT16) if src.dtype in _SIXTEEN else (DataType.INT32,)
    if idx.dtype not in allowed:
        raise fail("tile.gather", f"indices of {' or '.join(d.name for d in allowed)} for a {src.dtype.name} src",
                   idx.dtype.name, "pl.cast(indices, target_type=pl.INT32)")
    if src.valid_shape is not None:
        raise fail("tile.gather", "a fully valid src tile (an index reads any of its elements)",
                   "a partial valid shape", "pl.fillpad the src tile first")
    return _vec_result(idx, shape=idx.shape, dtype=src.dtype, valid_shape=idx.valid_shape)


# tmp: the vector unit's workspace (any Vec tile; the simulator needs none)
register("tile.gather", [P("src", Kind.TILE, spaces=VEC), P("indices", Kind.TILE, spaces=VEC),
                         P("tmp", Kind.TILE, spaces=VEC)], _infer_gather,
         doc="dst[i, j] = src[indices[i, j]], the index into src's elements in row-major order", mnemonic="VGATHER")
unify("gather", tile="tile.gather")


SCATTERED = (DataType.FP16, DataType.FP32, DataType.BF16, DataType.INT8, DataType.INT16, DataType.INT32)


def _infer_scatter(a: OpArgs, soc: SoC) -> TileType:
    dst, src, idx = a.tile("dst"), a.tile("src"), a.tile("indexes")
    for t, what in ((dst, "dst"), (src, "src"), (idx, "indexes")):
        _require_2d("tile.scatter", t, what)
    _require_dtype("tile.scatter", src, SCATTERED, "a dtype the scatter moves")
    if dst.dtype is not src.dtype:
        raise fail("tile.scatter", "dst of src's dtype", f"{dst.dtype.name} and {src.dtype.name}",
                   "pl.cast(src, target_type=...) first")
    want = DataType.INT32 if src.dtype.nbytes == 4 else DataType.INT16  # the element width decides
    if idx.dtype is not want:
        raise fail("tile.scatter", f"{want.name} indexes for a {src.dtype.nbytes}-byte dst", idx.dtype.name,
                   f"pl.cast(indexes, target_type=pl.{want.name})")
    if idx.shape != src.shape:
        raise fail("tile.scatter", f"indexes of src's shape {list(src.shape)}", str(list(idx.shape)))
    _same_valid("tile.scatter", src, idx)  # (each element written has its index)
    return _vec_result(dst)


# dst is rewritten in place (the result is it); of two elements that name one position the
# later one in row-major order is the one written
register("tile.scatter", [P("dst", Kind.TILE, spaces=VEC), P("src", Kind.TILE, spaces=VEC),
                          P("indexes", Kind.TILE, spaces=VEC)], _infer_scatter,
         doc="dst.flat[indexes[i, j]] = src[i, j] (in place)", in_place=True, mnemonic="VSCATTER")
unify("scatter", tile="tile.scatter")
