"""What the generators and compound vector ops compute (``tile.ci``, ``tile.tri``, the
partial combines, the activations with a slope, the three-operand adds, the selects and
fills, windows of tiles), and the tensor-level forms of tile ops that a kernel lowers to
them — one small torch function per op, as in ``pypto.sim.ops.semantics``."""

from __future__ import annotations

import torch

from pypto.ir.types import PadValue
from pypto.sim.ops import numerics as num
from pypto.sim.ops.semantics import IMPLS, TileVal, _dtype, impl, window


@impl("tile.ci", "tensor.ci")
def ci(start, shape, dtype, descending):
    k = torch.arange(shape[-1], dtype=torch.int64)
    row = start - k if descending else start + k
    return row.to(num.TORCH[dtype]).reshape(tuple(shape))  # (wrapping at the dtype's width)


@impl("tile.tri")
def tri(diagonal, shape, valid_shape, dtype, upper):
    rows, cols = torch.arange(shape[0]).unsqueeze(1), torch.arange(shape[1]).unsqueeze(0)
    ones = cols >= rows + diagonal if upper else cols <= rows + diagonal
    out = torch.zeros(tuple(shape), dtype=num.TORCH[dtype])
    vr, vc = valid_shape if valid_shape is not None else shape
    out[:vr, :vc] = ones[:vr, :vc].to(out.dtype)
    return out


def _valid_mask(t: TileVal) -> torch.Tensor:
    mask = torch.zeros(t.data.shape, dtype=torch.bool)
    mask[tuple(slice(0, v) for v in t.valid)] = True
    return mask


def _part(fn):
    """Combined where both sources are valid, the one valid source elsewhere (0 where neither is)."""
    def run(src0: TileVal, src1: TileVal):
        x, y = src0.data, src1.data
        in_x, in_y = _valid_mask(src0), _valid_mask(src1)
        out = torch.zeros_like(x)
        both = in_x & in_y
        out[both] = fn(x[both], y[both])
        out[in_x & ~in_y] = x[in_x & ~in_y]
        out[in_y & ~in_x] = y[in_y & ~in_x]
        return out
    return run


IMPLS["tile.part_add"] = _part(num.arith(torch.add))
IMPLS["tile.part_mul"] = _part(num.arith(torch.mul))
IMPLS["tile.part_max"] = _part(num.maximum)
IMPLS["tile.part_min"] = _part(num.minimum)


IMPLS["tile.reinterpret_view"] = lambda data, dtype, shape=None: data.data.contiguous().view(
    num.TORCH[dtype]).reshape(tuple(shape) if shape is not None else data.data.shape[:-1] + (-1,)).clone()


@impl("tile.prelu")
def prelu(tile: TileVal, slope: TileVal, tmp=None):
    x = tile.data
    return num.canonical_nan(torch.where(x > 0, x, x * slope.data))


@impl("tile.lrelu")
def lrelu(tile: TileVal, slope):
    x = tile.data
    return num.canonical_nan(torch.where(x > 0, x, x * num.scalar(slope, _dtype(x))))


def _three(sign, scalar: bool):
    def run(lhs: TileVal, rhs, rhs2: TileVal):
        b = num.scalar(rhs, _dtype(lhs.data)) if scalar else rhs.data
        first = lhs.data + b if sign > 0 else lhs.data - b  # in the tile's dtype, then the third
        return num.canonical_nan(first + rhs2.data if sign > 0 else first - rhs2.data)
    return run


for _name, _sign, _s in (("addc", 1, False), ("subc", -1, False), ("addsc", 1, True), ("subsc", -1, True)):
    IMPLS[f"tile.{_name}"] = _three(_sign, _s)


@impl("tile.sels")
def sels(mask: TileVal, src: TileVal, tmp, scalar):
    rows, cols = src.data.shape
    bits = num.unpack_mask(mask.data, min(cols, mask.data.nbytes // mask.data.shape[0] * 8))
    pred = torch.zeros(rows, cols, dtype=torch.bool)  # (a carrier covers the valid region only)
    pred[:min(rows, bits.shape[0]), :bits.shape[1]] = bits[:rows]
    return torch.where(pred, src.data, num.scalar(scalar, _dtype(src.data)))


@impl("tile.expands")
def expands(target: TileVal, scalar):
    return num.scalar(scalar, _dtype(target.data)).expand(target.data.shape).clone()


@impl("tile.slice")
def tile_slice(tile: TileVal, shape, offset, valid_shape=None, pad_value=None):
    out = tile.data[window(tile.data.shape, offset, shape, "window", "tile")].clone()
    if valid_shape is not None and pad_value not in (None, PadValue.null):
        filled = torch.full_like(out, num.pad_value(pad_value, _dtype(out)))
        region = tuple(slice(0, v) for v in valid_shape)
        filled[region] = out[region]
        out = filled
    return out


@impl("tile.extract")
def tile_extract(src: TileVal, index_row, index_col, shape, target_memory):
    offsets = (0,) * (len(shape) - 2) + (index_row, index_col)  # (a stack of pages: each page's window)
    return src.data[window(src.data.shape, offsets, shape, "window", "tile")].clone()


@impl("tile.assemble")
def tile_assemble(target: TileVal, source: TileVal, offset):
    out = target.data.clone()
    data = source.data
    if data.dtype != out.dtype:  # Acc's FP32 through the fixpipe, rounding to nearest even
        data = num.cast(data, num.FROM_TORCH[out.dtype], "rint")
    out[window(out.shape, offset, data.shape, "source window", "target tile")] = data
    return out


@impl("tile.fillpad_expand")
def fillpad_expand(tile: TileVal, shape, pad_value):
    out = torch.full(tuple(shape), num.pad_value(pad_value, _dtype(tile.data)), dtype=tile.data.dtype)
    region = tuple(slice(0, v) for v in tile.valid)
    out[region] = tile.data[region]
    return out


@impl("tile.fillpad", "tile.fillpad_inplace")
def fillpad(tile: TileVal, pad_value):
    out = torch.full_like(tile.data, num.pad_value(pad_value, _dtype(tile.data)))
    region = tuple(slice(0, v) for v in tile.valid)
    out[region] = tile.data[region]
    return out


# ----------------------------------------------------------------------------- tensor forms
# A tensor is valid everywhere: each is its tile op on the whole tensor.


def _whole(x: torch.Tensor) -> TileVal:
    return TileVal(x, tuple(x.shape))


for _kind in ("max", "min"):
    for _ax, _axis in (("row", 1), ("col", 0)):
        IMPLS[f"tensor.{_ax}_arg{_kind}"] = (lambda op: lambda x: IMPLS[op](_whole(x)))(f"tile.{_ax}_arg{_kind}")


@impl("tensor.cmp")
def cmp_tensor(lhs, rhs, cmp_type):
    return num.CMP[cmp_type](lhs, rhs).to(lhs.dtype)


@impl("tensor.cmps")
def cmps_tensor(lhs, rhs, cmp_type):
    return num.CMP[cmp_type](lhs, num.scalar(rhs, _dtype(lhs))).to(lhs.dtype)


for _name in ("add", "mul", "max", "min"):
    IMPLS[f"tensor.part_{_name}"] = (lambda op: lambda lhs, rhs: IMPLS[op](_whole(lhs), _whole(rhs)))(
        f"tile.part_{_name}")
IMPLS["tensor.fillpad_expand"] = lambda x, shape, pad_value: fillpad_expand(_whole(x), shape, pad_value)
IMPLS["tensor.expands"] = lambda target, scalar: expands(_whole(target), scalar)
IMPLS["tensor.concat"] = lambda src0, src1: torch.cat((src0, src1), dim=1)
IMPLS["tensor.reinterpret_view"] = lambda data, dtype, shape=None: IMPLS["tile.reinterpret_view"](
    _whole(data), dtype, shape)
