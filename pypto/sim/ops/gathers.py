"""The meaning of the gather ops (``pypto.ir.ops.gathers``): an index outside the source's
elements is a run-time error, never a torch exception."""

from __future__ import annotations

import torch

from pypto.sim.ops import numerics as num
from pypto.sim.ops.semantics import OutOfRange, TileVal, impl, window


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


@impl("tile.gatherb")
def gatherb(src: TileVal, offset: TileVal, output_dtype=None):
    from pypto.sim.ops.numerics import TORCH

    blocks = src.data.contiguous().view(torch.uint8).reshape(-1, 32)
    rows, cols = offset.valid
    at = offset.data[:rows, :cols].view(torch.int32).to(torch.int64) & 0xFFFFFFFF
    bad = (at % 32 != 0) | (at >= blocks.shape[0] * 32)
    if bool(bad.any()):
        i, j = (int(x) for x in bad.nonzero()[0])
        raise OutOfRange(f"byte offset {int(at[i, j])} at [{i}, {j}] is not the start of one of the src tile's "
                         f"{blocks.shape[0]} 32-byte blocks")
    dtype = TORCH[output_dtype] if output_dtype is not None else src.data.dtype
    per = 32 // torch.empty((), dtype=dtype).element_size()
    out = torch.zeros((offset.data.shape[0], offset.data.shape[1] * per), dtype=dtype)
    out[:rows, :cols * per] = blocks[at // 32].reshape(rows, cols * 32).view(dtype)
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
    wins = _last_wins(where, flat.numel())
    flat[where[wins]] = values[wins]
    return out


@impl("tile.scatter_update", "tensor.scatter_update")
def scatter_update(input, dim, index, src):  # noqa: A002  (the reference's name)
    x, idx, rows_of = (v.data if isinstance(v, TileVal) else v for v in (input, index, src))
    where = idx.reshape(-1).to(torch.int64)
    bad = (where < 0) | (where >= x.shape[0])
    if bool(bad.any()):
        k = int(bad.nonzero()[0])
        raise OutOfRange(f"index {int(where[k])} at [{k // idx.shape[1]}, {k % idx.shape[1]}] is outside input's "
                         f"{x.shape[0]} rows")
    out = x.clone()
    wins = _last_wins(where, x.shape[0])
    out[where[wins]] = rows_of[wins]
    return out

def _last_wins(where: torch.Tensor, n: int) -> torch.Tensor:
    """Which of the positions ``where`` (into ``n`` places) are written: of the elements
    that name one position, the later one in row-major order."""
    order = torch.arange(where.numel())
    last = torch.full((n,), -1, dtype=torch.int64).scatter_reduce(0, where, order, "amax")
    return last[where] == order


def _positions(picked: torch.Tensor, n: int, policy: str, what: str) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Indices into ``n`` places under an out-of-range policy; and where ``zero`` reads 0.
    The hardware reads an INT32 index as an unsigned 32-bit offset (the reference's goldens
    mask it with 0xFFFFFFFF), so a negative one is past every table: -1 clamps to the last
    place, wraps as 2**32 - 1 does, reads 0 under ``zero`` and is an error under
    ``undefined``."""
    offset = picked & 0xFFFFFFFF
    bad = offset >= n
    if policy == "clamp":
        return offset.clamp(max=n - 1), None
    if policy == "wrap":
        return offset.remainder(n), None
    if policy == "zero":
        return offset.where(~bad, torch.zeros_like(offset)), bad
    if bool(bad.any()):  # "undefined" on the device: reported here, where it happens
        i, j = (int(x) for x in bad.nonzero()[0])
        read = "" if picked[i, j] >= 0 else f" (read as the unsigned offset {int(offset[i, j])})"
        raise OutOfRange(f"index {int(picked[i, j])}{read} at [{i}, {j}] is outside mem's {n} {what} "
                         "(gather_oob='clamp', 'wrap' or 'zero' says what such an index reads)")
    return offset, None


@impl("tile.mgather")
def mgather(mem: torch.Tensor, idx: TileVal, coalesce="row", gather_oob="undefined", target_memory=None,
            scratch=None, valid_shape=None):
    rows, cols = idx.valid
    picked = idx.data[:rows, :cols].to(torch.int64)
    if coalesce == "elem":
        flat = mem.reshape(-1)
        where, zero = _positions(picked, flat.numel(), gather_oob, "elements")
        out = torch.zeros(idx.data.shape, dtype=mem.dtype)
        got = flat[where]
        out[:rows, :cols] = got if zero is None else got.masked_fill(zero, 0)
        return out
    table = mem.reshape(-1, mem.shape[-1])
    column = idx.data.shape[0] != 1  # an [R, 1] idx: its rows index; a [1, R]: its columns
    picked = picked.reshape(-1, 1) if column else picked.reshape(1, -1)
    where, zero = _positions(picked, table.shape[0], gather_oob, "rows")
    out = torch.zeros((idx.data.shape[0] if column else idx.data.shape[1], mem.shape[-1]), dtype=mem.dtype)
    got = table[where.reshape(-1)]
    if zero is not None:
        got = got.masked_fill(zero.reshape(-1, 1), 0)
    out[:got.shape[0]] = got
    return out


@impl("tile.mgather_mat")
def mgather_mat(mem: torch.Tensor, idx: torch.Tensor, coalesce="row", gather_oob="undefined", target_memory=None,
                scratch=None, valid_shape=None):
    """The Vec gather's rows or elements, into L1: over ``valid_shape`` of the result (the
    region written; zeros past it), the indices read from the GM tensor."""
    if coalesce == "elem":
        shape = tuple(idx.shape)
    else:
        shape = (idx.numel(), mem.shape[-1])
    vr, vc = tuple(valid_shape) if valid_shape is not None else shape
    out = torch.zeros(shape, dtype=mem.dtype)
    if coalesce == "elem":
        flat = mem.reshape(-1)
        where, zero = _positions(idx[:vr, :vc].to(torch.int64), flat.numel(), gather_oob, "elements")
        got = flat[where]
    else:
        table = mem.reshape(-1, mem.shape[-1])
        where, zero = _positions(idx.reshape(1, -1)[:, :vr].to(torch.int64), table.shape[0], gather_oob, "rows")
        got = table[where.reshape(-1)][:, :vc]
        zero = None if zero is None else zero.reshape(-1, 1).expand(-1, vc)
    out[:vr, :vc] = got if zero is None else got.masked_fill(zero, 0)
    return out


def scatter_write(src: TileVal, idx: TileVal, output_tensor: torch.Tensor) -> tuple:
    """(index, values) that ``tile.mscatter`` writes into ``output_tensor``: of two
    elements naming one position, the later in row-major order."""
    rows, cols = src.valid
    where = idx.data[:rows, :cols].to(torch.int64).reshape(-1)
    n = output_tensor.numel()
    bad = (where < 0) | (where >= n)
    if bool(bad.any()):
        k = int(bad.nonzero()[0])
        raise OutOfRange(f"index {int(where[k])} at [{k // cols}, {k % cols}] is outside output_tensor's "
                         f"{n} elements")
    wins = _last_wins(where, n)
    index = torch.unravel_index(where[wins], tuple(output_tensor.shape))
    return index, src.data[:rows, :cols].reshape(-1)[wins]


@impl("tile.mscatter")
def mscatter(src: TileVal, idx: TileVal, output_tensor: torch.Tensor):
    index, values = scatter_write(src, idx, output_tensor)
    output_tensor[index] = values
    return output_tensor


def row_into(dst: torch.Tensor, src, dst_offset, src_offset, shapes, transpose=False, valid_shape=None):
    """``dst`` with GM ``src``'s window copied into it at ``dst_offset`` (a new tensor)."""
    extents = tuple(shapes) if valid_shape is None else tuple(valid_shape)
    if any(v > s for v, s in zip(extents, shapes)):
        raise OutOfRange(f"valid shape {list(extents)} is outside the window's shapes {list(shapes)}")
    rows = src[window(src.shape, src_offset, extents, "src window")]
    if transpose:
        rows = rows.T
    out = dst.clone()
    out[window(out.shape, dst_offset, rows.shape, "dst window", holder="tile")] = rows
    return out


@impl("tile.gather_row")
def gather_row(dst: TileVal, src, dst_offset, src_offset, shapes, transpose=False, valid_shape=None):
    return row_into(dst.data, src, dst_offset, src_offset, shapes, transpose, valid_shape)


@impl("tensor.create_l1")
def create_l1(shape, dtype, transpose=False):
    return torch.zeros(tuple(shape), dtype=num.TORCH[dtype])


@impl("tensor.gather_row")
def gather_row_tensor(acc, src, dst_offset, src_offset, shapes, transpose=False, valid_shape=None):
    return row_into(acc, src, dst_offset, src_offset, shapes, transpose, valid_shape)


def paged_row(indices, block_table, i: int, block_size: int) -> int:
    """The physical row of the ``i``-th logical index through the block table."""
    logical = int(indices.reshape(-1)[i])
    if logical < 0:
        raise OutOfRange(f"index {logical} at [{i}] is negative")
    table = block_table.reshape(-1)
    block = logical // block_size
    if block >= table.numel():
        raise OutOfRange(f"index {logical} at [{i}] is in logical block {block}, past the block table's "
                         f"{table.numel()} entries")
    return int(table[block]) * block_size + logical % block_size


@impl("tensor.paged_gather")
def paged_gather(src, indices, block_table, block_size, size, max_indices, space=None, col_off=0,
                 is_trans=False, is_b_matrix=False):
    shape = (size, max_indices) if is_trans else (max_indices, size)
    out = torch.zeros(shape, dtype=src.dtype)
    for i in range(indices.shape[-1]):
        out = row_into(out, src, (0, i) if is_trans else (i, 0), (paged_row(indices, block_table, i, block_size),
                                                                  col_off), (1, size), is_trans)
    return out
