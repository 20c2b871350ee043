"""The meaning of the sort ops (``pypto.ir.ops.sorts``). A (value, index) pair is two FP32
columns whose second holds the index's bits: pairs move as 64-bit words, so the index bits
are never read as a float (a float copy could canonicalize one that looks like a NaN).
Values order descending with a NaN above every number, -0.0 equal to 0.0."""

from __future__ import annotations

import heapq

import torch

from pypto.ir.types import MaskPattern
from pypto.sim.ops.semantics import OutOfRange, TileVal, impl

_BLOCK = 32
_WAYS = 4


def _words(pairs: torch.Tensor) -> torch.Tensor:
    """FP32 columns, two by two, as one int64 word per pair."""
    return pairs.contiguous().view(torch.int64)


def _values(words: torch.Tensor) -> torch.Tensor:
    return words.view(torch.float32)[..., 0::2]


def _order_key(values: torch.Tensor) -> torch.Tensor:
    """An int64 per FP32 value that orders as the merge unit compares: -0.0 as 0.0, a NaN
    above +inf (the signed-magnitude bits folded into two's complement)."""
    v = torch.where(torch.isnan(values), torch.tensor(float("nan")), values + 0.0)  # +0.0: -0.0 is 0.0
    bits = v.view(torch.int32).to(torch.int64)
    return bits ^ ((bits >> 31) & 0x7FFFFFFF)


def _descending(values: torch.Tensor, tiebreak: torch.Tensor) -> torch.Tensor:
    """The order of the last axis by value descending, ties by ``tiebreak`` ascending."""
    by_tie = torch.sort(tiebreak, dim=-1, stable=True).indices
    key = _order_key(values).gather(-1, by_tie)
    return by_tie.gather(-1, torch.sort(key, dim=-1, descending=True, stable=True).indices)


@impl("tile.sort32")
def sort32(src: TileVal, idx: TileVal):
    rows, cols = src.valid
    out = torch.zeros((src.data.shape[0], 2 * src.data.shape[1]), dtype=torch.float32)
    words = _words(out)
    for start in range(0, cols, _BLOCK):
        stop = min(start + _BLOCK, cols)
        values = src.data[:rows, start:stop]
        index = idx.data[:rows, start:stop].view(torch.int32).to(torch.int64) & 0xFFFFFFFF
        order = _descending(values, index)
        bits = values.contiguous().view(torch.int32).to(torch.int64) & 0xFFFFFFFF
        pair = bits | (index << 32)  # little-endian: the value's word first
        words[:rows, start:stop] = pair.gather(-1, order)
    return out


def _merge(lists: list[torch.Tensor], stop_when_one_runs_out: bool) -> torch.Tensor:
    """The merge unit's greedy merge of 1-D word lists: the greatest head next, the earlier
    list's on a tie; with ``stop_when_one_runs_out``, done when any list is."""
    keys = [(-_order_key(_values(ws))).tolist() for ws in lists]  # heapq takes the least first
    words = [ws.tolist() for ws in lists]
    if not stop_when_one_runs_out:
        merged = [w for _, w in heapq.merge(*(list(zip(k, w)) for k, w in zip(keys, words)), key=lambda kw: kw[0])]
        return torch.tensor(merged, dtype=torch.int64)
    at, out = [0] * len(lists), []
    while all(a < len(w) for a, w in zip(at, words)):
        k = min(range(len(lists)), key=lambda i: (keys[i][at[i]], i))
        out.append(words[k][at[k]])
        at[k] += 1
    return torch.tensor(out, dtype=torch.int64)


@impl("tile.mrgsort")
def mrgsort(src0: TileVal, src1=None, src2=None, src3=None, tmp=None, exhausted=False, block_len=None):
    if block_len is not None:
        cols = src0.data.shape[1]
        if block_len <= 0 or block_len % 64 or cols % (_WAYS * block_len):
            raise OutOfRange(f"block_len {block_len} is not a positive multiple of 64 whose 4 runs divide "
                             f"src0's {cols} columns")
        words = _words(src0.data.clone())[0]
        run = block_len // 2  # pairs per run
        out = [_merge([words[g + k * run:g + (k + 1) * run] for k in range(_WAYS)], False)
               for g in range(0, words.numel(), _WAYS * run)]
        return torch.cat(out).view(torch.float32).reshape(1, -1)
    lists = [_words(s.region().clone())[0] for s in (src0, src1, src2, src3) if s is not None]
    merged = _merge(lists, bool(exhausted))
    out = tmp.data.clone()
    _words(out)[0, :merged.numel()] = merged
    return out


@impl("tile.gather_mask")
def gather_mask(src: TileVal, mask_pattern, output_dtype=None):
    pattern = MaskPattern(mask_pattern)
    picked = src.data[:, pattern.first::pattern.stride].contiguous()
    if output_dtype is None:
        return picked
    from pypto.sim.ops.numerics import TORCH

    return picked.view(TORCH[output_dtype])


@impl("tile.scatter_mask")
def scatter_mask(dst: TileVal, src: TileVal, mask_pattern):
    pattern = MaskPattern(mask_pattern)
    out = dst.data.clone()
    out[:, pattern.first::pattern.stride] = src.data
    return out


# ----------------------------------------------------------------------------- tensor forms


def _whole(x: torch.Tensor) -> TileVal:
    return TileVal(x, tuple(x.shape))


@impl("tensor.sort32")
def tensor_sort32(src: torch.Tensor, idx: torch.Tensor):
    return sort32(_whole(src), _whole(idx))


@impl("tensor.mrgsort")
def tensor_mrgsort(src0, src1=None, src2=None, src3=None, exhausted=False, block_len=None):
    if block_len is not None:
        return mrgsort(_whole(src0), block_len=block_len)
    lists = [_whole(s) if s is not None else None for s in (src0, src1, src2, src3)]
    tmp = torch.zeros((1, sum(s.shape[1] for s in (src0, src1, src2, src3) if s is not None)), dtype=torch.float32)
    return mrgsort(*lists, tmp=_whole(tmp), exhausted=exhausted)


@impl("tensor.gather_mask")
def tensor_gather_mask(input: torch.Tensor, mask_pattern, output_dtype=None):  # noqa: A002  (the reference's name)
    return gather_mask(_whole(input), mask_pattern, output_dtype)


@impl("tensor.scatter_mask")
def tensor_scatter_mask(input: torch.Tensor, mask_pattern, dst: torch.Tensor):  # noqa: A002
    return scatter_mask(_whole(dst), _whole(input), mask_pattern)


def _columns(index: torch.Tensor, cols: int, what: str) -> torch.Tensor:
    picked = index.to(torch.int64)
    bad = (picked < 0) | (picked >= cols)
    if bool(bad.any()):
        i, j = (int(x) for x in bad.nonzero()[0])
        raise OutOfRange(f"index {int(picked[i, j])} at [{i}, {j}] is outside {what}'s row of {cols} elements")
    return picked


@impl("tensor.gather")
def tensor_gather(input: torch.Tensor, dim, index: torch.Tensor):  # noqa: A002
    """torch.gather along ``dim``: out[..., k, ...] = input[..., index[..., k, ...], ...]."""
    d = dim % input.dim()
    picked = index.to(torch.int64)
    bad = (picked < 0) | (picked >= input.shape[d])
    if bool(bad.any()):
        at = [int(x) for x in bad.nonzero()[0]]
        raise OutOfRange(f"index {int(picked[tuple(at)])} at {at} is outside input's {input.shape[d]} elements along "
                         f"axis {d}")
    return input.gather(d, picked)


@impl("tensor.scatter")
def tensor_scatter(input: torch.Tensor, dim, index: torch.Tensor, src: torch.Tensor):  # noqa: A002
    from pypto.sim.ops.gathers import _last_wins

    where = _columns(index, input.shape[1], "input")
    out = input.clone()
    for b in range(where.shape[0]):  # of two elements naming one column, the later is written
        wins = _last_wins(where[b], input.shape[1])
        out[b, where[b][wins]] = src[b][wins]
    return out
