"""Arithmetic whose order and rounding are defined here once, so the reference interpreter
and the simulator compute the same bits.

- Every step runs in the op's dtype with torch's elementwise kernels (IEEE, per element).
- Reductions combine pairwise: halve the width, carrying an odd last column, until one
  column remains (the shape of a vector unit's pairwise reduce).
- Matmul accumulates in FP32 (INT32 for int8) one k at a time, k = 0, 1, ..., K-1; each
  fp16/bf16 product is exact in FP32, so only the accumulation rounds.
- Casts round as their mode says (``round`` = half away from zero, ``rint`` = half to
  even, ``floor``, ``ceil``, ``trunc``, ``odd`` = to odd, ``none`` = the dtype's default:
  half to even for floats, toward zero for float->int); float->int saturates and NaN -> 0.
"""

from __future__ import annotations

import contextlib

import torch

from pypto.ir.types import DataType, PadValue

TORCH = {
    DataType.BOOL: torch.bool,
    DataType.INT8: torch.int8,
    DataType.INT16: torch.int16,
    DataType.INT32: torch.int32,
    DataType.INT64: torch.int64,
    DataType.UINT8: torch.uint8,
    DataType.FP16: torch.float16,
    DataType.BF16: torch.bfloat16,
    DataType.FP32: torch.float32,
    DataType.INDEX: torch.int64,
}
FROM_TORCH = {v: k for k, v in TORCH.items() if k is not DataType.INDEX}


class ArithmeticError_(Exception):
    """A value the hardware model does not define (integer division by zero)."""


@contextlib.contextmanager
def one_thread():
    """Tile-sized torch ops run fastest on one thread (and far faster than on a thread pool
    competing with other processes); the caller's setting is restored afterwards."""
    before = torch.get_num_threads()
    if before == 1:
        yield
        return
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def scalar(value, dtype: DataType) -> torch.Tensor:
    """A Python scalar as a 0-d tensor of ``dtype``: a float rounds to nearest; an integer
    wraps modulo 2**bits, as torch narrows a Python int operand (int32 + 2**31 gives
    -2**31 + 1) and as a scalar register is truncated to the tile's width. (Constants that
    do not fit are rejected where they are written; this is for runtime scalars.)"""
    if dtype.is_float:
        return torch.tensor(float(value), dtype=torch.float64).to(TORCH[dtype])
    if dtype.is_bool:
        return torch.tensor(bool(value))
    info = torch.iinfo(TORCH[dtype])
    span = info.max - info.min + 1
    return torch.tensor((int(value) - info.min) % span + info.min, dtype=TORCH[dtype])


# ----------------------------------------------------------------------------- elementwise


def div(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    if a.dtype.is_floating_point:
        return torch.div(a, b)
    if bool((b == 0).any()):
        raise ArithmeticError_("integer division by zero")
    return torch.div(a, b, rounding_mode="trunc")


def relu(a: torch.Tensor) -> torch.Tensor:
    return torch.clamp_min(a, 0) if not a.dtype.is_floating_point else torch.relu(a)


def rsqrt(a: torch.Tensor) -> torch.Tensor:
    return torch.rsqrt(a)


def recip(a: torch.Tensor) -> torch.Tensor:
    return torch.reciprocal(a)


# ----------------------------------------------------------------------------- reductions

_COMBINE = {"sum": torch.add, "max": torch.maximum, "min": torch.minimum}


def reduce_last(x: torch.Tensor, kind: str) -> torch.Tensor:
    """Reduce the last axis pairwise (see module doc); keeps it as width 1."""
    combine = _COMBINE[kind]
    while x.shape[-1] > 1:
        width = x.shape[-1]
        half = width // 2
        merged = combine(x[..., :half], x[..., half:2 * half])
        x = torch.cat([merged, x[..., 2 * half:]], dim=-1) if width % 2 else merged
    return x.clone()


def reduce_first(x: torch.Tensor, kind: str) -> torch.Tensor:
    return reduce_last(x.transpose(0, 1), kind).transpose(0, 1).contiguous()


# ----------------------------------------------------------------------------- matmul


def matmul(a: torch.Tensor, b: torch.Tensor, acc: torch.Tensor | None = None) -> torch.Tensor:
    """acc + a @ b with FP32 (INT32) accumulation in k order."""
    m, k = a.shape
    n = b.shape[1]
    if not a.dtype.is_floating_point:
        out = a.to(torch.int64) @ b.to(torch.int64)
        if acc is not None:
            out = out + acc.to(torch.int64)
        return out.to(torch.int32)
    out = torch.zeros(m, n, dtype=torch.float32) if acc is None else acc.to(torch.float32).clone()
    a32, b32 = a.to(torch.float32), b.to(torch.float32)
    for i in range(k):
        out = out + a32[:, i:i + 1] * b32[i:i + 1, :]
    return out


# ----------------------------------------------------------------------------- masks


def pack_mask(pred: torch.Tensor, cols: int) -> torch.Tensor:
    """[R, C] bools -> [R, cols] uint8, bit j of byte k is column 8k + j."""
    r, c = pred.shape
    bits = torch.zeros(r, cols * 8, dtype=torch.uint8)
    bits[:, :c] = pred.to(torch.uint8)
    weights = torch.tensor([1 << j for j in range(8)], dtype=torch.uint8)
    return (bits.reshape(r, cols, 8) * weights).sum(dim=-1, dtype=torch.int32).to(torch.uint8)


def unpack_mask(mask: torch.Tensor, cols: int) -> torch.Tensor:
    r = mask.shape[0]
    shifts = torch.arange(8, dtype=torch.int32)
    bits = (mask.to(torch.int32).unsqueeze(-1) >> shifts) & 1
    return bits.reshape(r, -1)[:, :cols].to(torch.bool)


CMP = (torch.eq, torch.ne, torch.lt, torch.le, torch.gt, torch.ge)


# ----------------------------------------------------------------------------- casts


def cast(x: torch.Tensor, target: DataType, mode: str = "round") -> torch.Tensor:
    dst = TORCH[target]
    if x.dtype == dst:
        return x.clone()
    if target.is_bool:
        return x != 0
    if not x.dtype.is_floating_point:
        if dst.is_floating_point:
            # int -> float: through float64 (exact for every int here), then one rounding.
            return _round_float(x.to(torch.float64), dst, mode)
        info = torch.iinfo(dst)
        return torch.clamp(x.to(torch.int64), info.min, info.max).to(dst)
    if dst.is_floating_point:
        return _round_float(x, dst, mode)
    return _float_to_int(x, dst, mode)


def _float_to_int(x: torch.Tensor, dst, mode: str) -> torch.Tensor:
    x64 = x.to(torch.float64)
    if mode in ("round",):
        r = torch.sign(x64) * torch.floor(torch.abs(x64) + 0.5)
    elif mode == "rint":
        r = torch.round(x64)  # half to even
    elif mode == "floor":
        r = torch.floor(x64)
    elif mode == "ceil":
        r = torch.ceil(x64)
    elif mode == "odd":
        t = torch.trunc(x64)
        r = torch.where((t != x64) & (torch.remainder(t, 2) == 0), t + torch.sign(x64 - t), t)
    else:  # trunc, none
        r = torch.trunc(x64)
    info = torch.iinfo(dst)
    r = torch.nan_to_num(r, nan=0.0, posinf=float(info.max), neginf=float(info.min))
    return torch.clamp(r, info.min, info.max).to(dst)


def _round_float(x: torch.Tensor, dst, mode: str) -> torch.Tensor:
    """Narrow (or widen) floats with the mode's rounding, exactly."""
    nearest = x.to(dst)  # round half to even
    if mode in ("rint", "none"):
        return nearest
    wide = x.to(torch.float64)
    back = nearest.to(torch.float64)
    exact = back == wide
    toward_up = torch.nextafter(nearest, torch.full_like(nearest, float("inf")))
    toward_down = torch.nextafter(nearest, torch.full_like(nearest, float("-inf")))
    above = back > wide  # nearest rounded up
    # The neighbour on the other side of x.
    other = torch.where(above, toward_down, toward_up)
    finite = torch.isfinite(wide) & torch.isfinite(back)
    if mode == "floor":
        pick = finite & ~exact & above
    elif mode == "ceil":
        pick = finite & ~exact & ~above
    elif mode == "trunc":
        pick = finite & ~exact & (back.abs() > wide.abs())
    elif mode == "round":
        tie = (wide - back).abs() == (other.to(torch.float64) - wide).abs()
        pick = finite & ~exact & tie & (other.to(torch.float64).abs() > back.abs())
    elif mode == "odd":
        bits = nearest.view(torch.int16) if nearest.element_size() == 2 else nearest.view(torch.int32)
        pick = finite & ~exact & ((bits & 1) == 0)
    else:
        raise ValueError(mode)
    return torch.where(pick, other, nearest)


def pad_value(pad: PadValue, dtype: DataType):
    if pad is PadValue.zero:
        return 0
    if dtype.is_float:
        return float("inf") if pad is PadValue.max else float("-inf")
    info = torch.iinfo(TORCH[dtype])
    return info.max if pad is PadValue.max else info.min
