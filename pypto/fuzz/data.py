"""What the program strategies share: a ``Case`` (a program, its inputs, its Out tensors as
they start, what they must hold), the dtypes drawn, the tensors drawn (``random_tensor``,
``sentinel``), how results are compared (``bits_equal``, ``within_bounds``), and the ops the
recipes draw with the torch oracle of each."""

from __future__ import annotations

import attrs
import torch

from pypto.ir import nodes as n
from pypto.ir.types import DataType as D
from pypto.sim.ops import numerics as num
from pypto.sim.ops.numerics import TORCH, bits_equal  # noqa: F401  (the fuzz API's, defined once there)

FLOATS = (D.FP32, D.FP16, D.BF16)
INTS = (D.INT32, D.INT16, D.INT8)


@attrs.frozen
class Case:
    program: n.Program
    entry: str
    inputs: tuple  # tensors for the In parameters, in order
    outputs: tuple  # the Out parameters as they start (``sentinel`` tensors), in order
    expected: tuple  # what the Out tensors must hold afterwards (sentinels where nothing is stored)
    check: str = "exact"  # or "bounded"
    bounds: tuple = ()  # per-output absolute error bounds (tensors) when bounded
    recipe: str = ""  # a one-line description, shown when a case fails

    def args(self) -> tuple:
        """Fresh copies: inputs, then the outputs as they start (runs write into them)."""
        return tuple(t.clone() for t in self.inputs) + tuple(t.clone() for t in self.outputs)


# ----------------------------------------------------------------------------- data

# Bit patterns no op computes: a quiet NaN with a payload (computed NaNs are canonical, see
# pypto.sim.ops.numerics) and, for integers, bytes of 0xA5.
_SENTINEL_BITS = {torch.float32: 0x7FE5A5A5, torch.float16: 0x7EA5, torch.bfloat16: 0x7FE5,
                  torch.float64: 0x7FFCA5A5A5A5A5A5, torch.int64: -0x5A5A5A5A5A5A5A5B,
                  torch.int32: -0x5A5A5A5B, torch.int16: -0x5A5B, torch.int8: -0x5B, torch.uint8: 0xA5}
_BITS_OF = {torch.float32: torch.int32, torch.float16: torch.int16, torch.bfloat16: torch.int16,
            torch.float64: torch.int64}


def sentinel(shape, dtype=torch.float32) -> torch.Tensor:
    """A tensor for an Out parameter to start as (``dtype``: a torch dtype or a DataType):
    an element still holding it after a run was never stored, which zeros cannot show."""
    dtype = TORCH[dtype] if isinstance(dtype, D) else dtype
    if dtype is torch.bool:
        return torch.ones(shape, dtype=torch.bool)
    bits = _SENTINEL_BITS[dtype]
    if dtype.is_floating_point:
        return torch.full(shape, bits, dtype=_BITS_OF[dtype]).view(dtype)
    return torch.full(shape, bits, dtype=dtype)


def _raw_nan(dtype) -> torch.Tensor:
    """A NaN that is not the canonical one (sign set, payload 1): loads and stores must keep
    its bits, every op that computes must turn it canonical."""
    bits = {torch.float32: -0x3FFFFF, torch.float16: -0x1FF, torch.bfloat16: -0x3F}[dtype]
    return torch.tensor([bits], dtype=_BITS_OF[dtype]).view(dtype)[0]


def random_tensor(shape, dtype: D, seed: int, specials: bool = False) -> torch.Tensor:
    """Values that exercise the dtype: mostly moderate, some exact small integers, a few zeros.
    With ``specials``, about one element in eight is a special value instead: +0, -0, +-inf,
    the canonical NaN or another NaN for floats; 0, -1 and the extremes for integers."""
    g = torch.Generator().manual_seed(seed)
    if dtype.is_float:
        base = torch.randn(shape, generator=g, dtype=torch.float64) * 4
        small = torch.randint(-4, 5, shape, generator=g).to(torch.float64)
        pick = torch.rand(shape, generator=g)
        values = torch.where(pick < 0.25, small, base).to(TORCH[dtype])
        if specials:
            dt = TORCH[dtype]
            table = torch.stack([torch.tensor(v, dtype=dt) for v in (0.0, -0.0, float("inf"), float("-inf"))]
                                + [num.canonical_nan(torch.tensor(float("nan"), dtype=dt)), _raw_nan(dt)])
            which = torch.randint(0, len(table), shape, generator=g)
            values = torch.where(torch.rand(shape, generator=g) < 0.125, table[which], values)
        return values
    info = torch.iinfo(TORCH[dtype])
    lo, hi = max(info.min, -1000), min(info.max, 1000)
    values = torch.randint(lo, hi + 1, shape, generator=g).to(TORCH[dtype])
    if specials:
        table = torch.tensor([0, -1, info.min, info.max], dtype=TORCH[dtype])
        which = torch.randint(0, len(table), shape, generator=g)
        values = torch.where(torch.rand(shape, generator=g) < 0.125, table[which], values)
    return values


def within_bounds(got: torch.Tensor, want: torch.Tensor, bound: torch.Tensor) -> bool:
    err = (got.to(torch.float64) - want.to(torch.float64)).abs()
    both_nan = torch.isnan(got.to(torch.float64)) & torch.isnan(want.to(torch.float64))
    same_inf = torch.isinf(want.to(torch.float64)) & (got.to(torch.float64) == want.to(torch.float64))
    return bool(((err <= bound) | both_nan | same_inf).all())


# ----------------------------------------------------------------------------- elementwise

def _rsqrt(x: torch.Tensor) -> torch.Tensor:
    """The rule: in fp16/bf16, 1 / sqrt computed in fp32 and rounded once."""
    if x.dtype == torch.float32:
        return torch.rsqrt(x)
    return (1.0 / torch.sqrt(x.to(torch.float32))).to(x.dtype)


# name -> (torch oracle, dtypes it takes). Each computes, so its NaNs are made canonical
# (num.arith); min/max take the product's signed-zero rule (num.minimum / num.maximum).
UNARY = {name: (num.arith(fn), dtypes) for name, (fn, dtypes) in {
    "neg": (torch.neg, FLOATS + INTS), "abs": (torch.abs, FLOATS + INTS),
    "relu": (lambda x: torch.clamp_min(x, 0), FLOATS + INTS), "exp": (torch.exp, FLOATS),
    "log": (torch.log, FLOATS), "sqrt": (torch.sqrt, FLOATS), "rsqrt": (_rsqrt, FLOATS),
    "recip": (torch.reciprocal, FLOATS), "sin": (torch.sin, FLOATS), "cos": (torch.cos, FLOATS),
    "not": (lambda x: ~x, (D.INT16,)),
}.items()}
BINARY = {
    "add": (num.arith(torch.add), FLOATS + INTS), "sub": (num.arith(torch.sub), FLOATS + INTS),
    "mul": (num.arith(torch.mul), FLOATS + INTS), "div": (num.arith(torch.div), FLOATS),
    "maximum": (num.maximum, FLOATS + INTS), "minimum": (num.minimum, FLOATS + INTS),
    "fmod": (num.arith(torch.fmod), FLOATS), "rem": (num.arith(torch.remainder), FLOATS), "and": (lambda a, b: a & b, INTS), "or": (lambda a, b: a | b, INTS),
    "xor": (lambda a, b: a ^ b, INTS), "shl": (lambda a, b: a << b, INTS), "shr": (lambda a, b: a >> b, INTS),
}
SHIFTS = ("shl", "shr")  # amounts the draws keep in range (the rest is an error, not a value)
SCALAR = {f"{name}s": name for name in BINARY}
REDUCE = {"row": num.reduce_last, "col": num.reduce_first}
