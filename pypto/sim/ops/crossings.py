"""What a ``pl.split_aiv`` region's named crossings compute (``pl.aiv_shard`` into it,
``pl.aic_gather`` out of it). A region's tensor code is written whole (the compiler halves
it), so the tensor forms are the value itself; its tile code is each lane's own, so the tile
forms take and give back the lane's half: ``aiv_shard`` reads it out of the cube's tile, and
``aic_gather`` places it in the whole tile — the lanes' tiles rejoined after the region
(``rejoin``) are what the cube reads."""

from __future__ import annotations

from pypto.ir.ops.spmd import SPLITS, lane_window
from pypto.ir.types import SplitMode
from pypto.sim.ops.fresh import fresh
from pypto.sim.ops.semantics import TileVal, impl, window


@impl("tensor.aiv_shard", "tensor.aic_gather")
def _whole(x):
    return x  # the crossing itself: the compiler stages it through GM


@impl("tile.aiv_shard")
def aiv_shard(x: TileVal, split, lane_stride=None, lane: int = 0):
    offsets, extents = lane_window(tuple(x.data.shape), SPLITS[split], lane)
    return x.data[window(x.data.shape, offsets, extents, "lane's half")].clone()


@impl("tile.aic_gather")
def aic_gather(x: TileVal, split, lane: int = 0):
    """The whole tile as this lane leaves it: its half in place, the other lane's still to come."""
    mode = SPLITS[split]
    if mode is SplitMode.NONE:
        return x.data.clone()
    axis = 0 if mode is SplitMode.UP_DOWN else 1
    shape = tuple(d * 2 if k == axis else d for k, d in enumerate(x.data.shape))
    data = fresh(shape, x.data.dtype)
    offsets, extents = lane_window(shape, mode, lane)
    data[window(shape, offsets, extents, "lane's half")] = x.data
    return data


def rejoin(tiles, split: int) -> TileVal:
    """The cube's tile after the region: each lane's half from that lane's tile (under NONE,
    where both hold all of it, lane 0's — the reference leaves which one unspecified)."""
    mode = SPLITS[split]
    first = tiles[0]
    if mode is SplitMode.NONE:
        return first
    data = first.data.clone()
    for lane, t in enumerate(tiles[1:], start=1):
        offsets, extents = lane_window(tuple(data.shape), mode, lane)
        index = window(data.shape, offsets, extents, "lane's half")
        data[index] = t.data[index]
    return TileVal(data, first.valid)
