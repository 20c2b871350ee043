"""Tile ops that read a tile at positions another tile holds: ``tile.gather`` (index form),
``dst[i, j] = src[indices[i, j]]`` with the index into ``src``'s elements in row-major
order. Tile level, as the reference has the index form (its tensor form, the mask and
compare forms, and the scatters are not here yet)."""

from __future__ import annotations

from pypto.backend import MemorySpace as M
from pypto.backend import SoC
from pypto.ir.ops.registry import Kind, OpArgs, fail, register, unify
from pypto.ir.ops.registry import ParamSpec as P
from pypto.ir.ops.tile import _require_2d, _require_dtype, _vec_result
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
