"""The meaning of the gather ops (``pypto.ir.ops.gathers``): an index outside the source's
elements is a run-time error, never a torch exception."""

from __future__ import annotations

import torch

from pypto.sim.semantics import OutOfRange, TileVal, impl


@impl("tile.gather")
def gather(src: TileVal, indices: TileVal, tmp=None):
    flat = src.data.reshape(-1)
    rows, cols = indices.valid
    picked = indices.data[:rows, :cols].to(torch.int64)
    bad = (picked < 0) | (picked >= flat.numel())
    if bool(bad.any()):
        i, j = (int(x) for x in bad.nonzero()[0])
        raise OutOfRange(f"index {int(picked[i, j])} at [{i}, {j}] is outside the src tile's "
                         f"{flat.numel()} elements")
    out = torch.zeros(indices.data.shape, dtype=src.data.dtype)
    out[:rows, :cols] = flat[picked]
    return out


@impl("tile.scatter")
def scatter(dst: TileVal, src: TileVal, indexes: TileVal):
    out = dst.data.clone()
    flat = out.view(-1)
    rows, cols = src.valid
    where = indexes.data[:rows, :cols].to(torch.int64).reshape(-1)
    bad = (where < 0) | (where >= flat.numel())
    if bool(bad.any()):
        k = int(bad.nonzero()[0])
        raise OutOfRange(f"index {int(where[k])} at [{k // cols}, {k % cols}] is outside the dst tile's "
                         f"{flat.numel()} elements")
    values = src.data[:rows, :cols].reshape(-1)
    order = torch.arange(where.numel())
    last = torch.full((flat.numel(),), -1, dtype=torch.int64).scatter_reduce(0, where, order, "amax")
    wins = last[where] == order  # of the elements that name one position, the later one
    flat[where[wins]] = values[wins]
    return out
