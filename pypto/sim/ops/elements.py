"""The meaning of the element ops (``pypto.ir.ops.elements``): one element of a tensor or a
tile read or written; an index outside the extent is a run-time error, never a torch
exception."""

from __future__ import annotations

from pypto.sim.ops import numerics as num
from pypto.sim.ops.semantics import OutOfRange, TileVal, impl


def _inside(indices, extents, what: str) -> tuple:
    indices = tuple(int(i) for i in indices)
    for i, extent in zip(indices, extents):
        if not 0 <= i < extent:
            raise OutOfRange(f"index {list(indices)} is outside the {what} {list(extents)}")
    return indices


@impl("tensor.read")
def tensor_read(tensor, indices):
    return tensor[_inside(indices, tensor.shape, "tensor's")].item()


def element_write(tensor, indices, value) -> tuple:
    """(index, data) of a write of one element of ``tensor``."""
    return _inside(indices, tensor.shape, "tensor's"), num.scalar(value, num.FROM_TORCH[tensor.dtype])


@impl("tensor.write")
def tensor_write(tensor, indices, value):
    index, data = element_write(tensor, indices, value)
    tensor[index] = data
    return tensor


@impl("tile.read")
def tile_read(tile: TileVal, indices):
    # past the valid region a tile holds whatever its buffer held: no value to read
    return tile.data[_inside(indices, tile.valid, "tile's valid region")].item()


@impl("tile.write")
def tile_write(tile: TileVal, indices, value):
    out = tile.data.clone()
    out[_inside(indices, tile.data.shape, "tile's")] = num.scalar(value, num.FROM_TORCH[out.dtype])
    return out


@impl("tile.debug_print")
def debug_print(tile: TileVal, label=""):
    return tile.region().clone()  # what the print shows: the interpreter and the simulator keep it
