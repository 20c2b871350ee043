"""Arithmetic whose order and rounding are defined here once, so the reference interpreter,
the simulator and the fuzz oracle (``pypto.fuzz``) compute the same bits.

- Every step runs in the op's dtype with torch's elementwise kernels (IEEE, per element).
- A scalar operand of a tile (or tensor) op is first converted to the tile's dtype, a float
  rounding once to nearest (ties to even) from its exact value, an integer wrapping
  (``scalar``); the op then runs in the tile's dtype.
- ``minimum`` / ``maximum`` follow IEEE 754-2019 ``minimum`` / ``maximum``: -0 is below +0
  (``min(+0, -0) = -0``, ``max(+0, -0) = +0`` in either operand order) and a NaN operand gives
  NaN. torch leaves the zero's sign to its kernel (the first operand in its scalar loop, the
  second in its vector loop), so the rule is written here, not inherited.
- Integer division truncates toward zero (``div``), ``fmod`` keeps the dividend's sign and
  ``rem`` the divisor's; MIN / -1 wraps to MIN and MIN rem -1 is 0 in every integer dtype
  (``_int_divide``); a zero divisor is an error.
- Row reductions combine pairwise: halve the width, carrying an odd last column, until one
  column remains. Column reductions take the vector unit's order (the reference's goldens
  "to match hardware TCOLSUM", and pto-isa's column reduce): row by row (row 0, then each
  next row added in the dtype), or for ``col_sum`` given a scratch tile a binary tree of
  adjacent rows (row 2i + row 2i+1, an odd count's last row added to the first pair's sum,
  level by level). With the min/max rule above, a max/min reduction does not depend on the
  order, nor does an integer one; a float sum or product does.
- Matmul is the cube's (``cube_math``): K is cut into fractal blocks of 32 bytes of the
  operand dtype (16 fp16/bf16, 8 fp32, 32 int8) from k = 0; each block's dot product is
  exact, rounded once (to nearest, ties to even) to FP32; the block sums are added to the
  FP32 accumulator in K order (the first block, with no accumulator, starts it). So a
  matmul_acc over a K slice starting at a block multiple continues the unsliced product
  bit for bit. int8 accumulates exactly in INT32, wrapping.
- Casts round as their mode says (``round`` = half away from zero, ``rint`` = half to
  even, ``floor``, ``ceil``, ``trunc``, ``odd`` = to odd, ``none`` = the dtype's default:
  half to even for floats, toward zero for float->int), once from the exact value (torch
  narrows float64 to fp16/bf16 through fp32, which can round twice; ``_round_float``
  corrects it). Past a float's range IEEE 754 decides: the nearest modes overflow to
  infinity, a mode rounding toward zero gives the largest finite value. float->int and a
  tile's int->int saturate (``narrow_int``) and NaN -> 0; a scalar's int->int keeps the
  low bits (``scalar``).

NaN policy: every op that computes — elementwise arithmetic, tile-scalar ops, row/col
broadcasts, reductions, matmul, casts, scalar conversion — returns the one canonical NaN
of its dtype for any NaN result: the positive quiet NaN with an empty payload (fp32
0x7FC00000, fp16 0x7E00, bf16 0x7FC0; ``canonical_nan``). Ops that only move data — load,
store, move, reshape, transpose, expand, select, fillpad, slice, assemble — copy bits as
they are, so a NaN in a kernel's input reaches its output unchanged unless an op computes
with it. Without the rule a NaN's sign and payload would be whatever torch's kernel and the
host CPU produce (0.0 / 0.0 is 0xFFC00000 on x86 and 0x7FC00000 on ARM; ``torch.maximum``
and ``torch.amax`` give 0x7FC00000), so "bit for bit" would depend on the machine. With it,
the bits of every result — NaNs included — are defined by the program and its inputs.
"""

from __future__ import annotations

import contextlib
import functools
import math

import torch

from pypto.ir.types import DataType, PadValue

TORCH = {
    DataType.BOOL: torch.bool,
    DataType.INT8: torch.int8,
    DataType.INT16: torch.int16,
    DataType.INT32: torch.int32,
    DataType.INT64: torch.int64,
    DataType.UINT8: torch.uint8,
    DataType.UINT16: torch.uint16,
    DataType.UINT32: torch.uint32,
    DataType.FP16: torch.float16,
    DataType.BF16: torch.bfloat16,
    DataType.FP32: torch.float32,
    DataType.INDEX: torch.int64,
    DataType.FP8E4M3FN: torch.float8_e4m3fn,
    DataType.FP8E5M2: torch.float8_e5m2,
    DataType.FP8E8M0: torch.float8_e8m0fnu,
}
FROM_TORCH = {v: k for k, v in TORCH.items() if k is not DataType.INDEX}

# The positive quiet NaN with an empty payload, per float dtype (see the module doc).
CANONICAL_NAN_BITS = {torch.float32: 0x7FC00000, torch.float16: 0x7E00, torch.bfloat16: 0x7FC0,
                      torch.float64: 0x7FF8000000000000}
_SAME_WIDTH_INT = {8: torch.int64, 4: torch.int32, 2: torch.int16}


class ArithmeticError_(Exception):
    """A value the hardware model does not define (integer division by zero); ``hint``:
    what to do."""

    def __init__(self, message: str, hint: str | None = None):
        super().__init__(message)
        self.hint = hint


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
    """A Python scalar as a 0-d tensor of ``dtype``: a float rounds once to nearest (ties
    to even; a NaN is the canonical one); an integer wraps modulo 2**bits, as torch narrows
    a Python int operand (int32 + 2**31 gives -2**31 + 1) and as a scalar register is
    truncated to the tile's width. (Constants that do not fit are rejected where they are
    written; this is for runtime scalars.)"""
    if dtype.is_float:
        return _float_scalar(float(value).hex(), dtype).clone()
    if dtype.is_bool:
        return torch.tensor(bool(value))
    info = torch.iinfo(TORCH[dtype])
    span = info.max - info.min + 1
    return torch.tensor((int(value) - info.min) % span + info.min, dtype=TORCH[dtype])


@functools.lru_cache(maxsize=1024)
def _float_scalar(value: str, dtype: DataType) -> torch.Tensor:
    """Keyed by ``float.hex`` so that -0.0 and 0.0 are two keys (they are equal floats);
    the rounding is many torch calls, and the same constant is converted at every op."""
    exact = torch.tensor(float.fromhex(value), dtype=torch.float64)
    return canonical_nan(_round_float(exact, TORCH[dtype], "rint"))


# ----------------------------------------------------------------------------- NaN


def canonical_nan(x: torch.Tensor) -> torch.Tensor:
    """``x`` with every NaN replaced by its dtype's canonical NaN (the module doc's policy)."""
    if not x.dtype.is_floating_point:
        return x
    # a sum is NaN if any element is (and at times when none is: inf - inf), and one
    # reduction costs a tenth of testing every element
    if not math.isnan(x.sum().item()):
        return x
    nan = torch.isnan(x)
    if not bool(nan.any()):
        return x
    return torch.where(nan, _canonical(x.dtype), x)


def canonical_nan_(x: torch.Tensor) -> torch.Tensor:
    """``canonical_nan`` in place."""
    if x.dtype.is_floating_point and math.isnan(x.sum().item()):
        x[torch.isnan(x)] = _canonical(x.dtype)
    return x


def _canonical(dtype) -> torch.Tensor:
    bits = CANONICAL_NAN_BITS[dtype]
    width = torch.empty((), dtype=dtype).element_size()
    signed = bits - (1 << 8 * width) if bits >= 1 << (8 * width - 1) else bits
    return torch.tensor([signed], dtype=_SAME_WIDTH_INT[width]).view(dtype)[0]


def arith(fn):
    """``fn`` with the NaN policy applied to its result: for every op that computes."""
    def computed(*args, **kwargs):
        return canonical_nan(fn(*args, **kwargs))

    computed.__name__ = computed.__qualname__ = getattr(fn, "__name__", "computed")
    computed.__doc__ = fn.__doc__
    return computed


# ----------------------------------------------------------------------------- elementwise

_WRAPPED = {torch.uint16: 0xFFFF, torch.uint32: 0xFFFFFFFF}


def modular(fn):
    """``fn(a, b)`` (add, sub, mul) as the vector unit computes it on integers: wrapping at the
    width. torch's CPU kernels lack uint16 / uint32 arithmetic, so those compute in int64 (whose
    own wrap keeps the low bits) and are cut back to the width; ``out=`` as torch takes it."""
    def op(a, b, out=None):
        mask = _WRAPPED.get(a.dtype)
        if mask is None:
            return fn(a, b) if out is None else fn(a, b, out=out)
        r = (fn(a.to(torch.int64), b.to(torch.int64) if isinstance(b, torch.Tensor) else int(b)) & mask).to(a.dtype)
        return r if out is None else out.copy_(r)

    op.__name__ = op.__qualname__ = getattr(fn, "__name__", "modular")
    return op



def atomic_add(target: torch.Tensor, index, data: torch.Tensor) -> None:
    """An atomic-add store: ``target[index] += data``, one add in the target's dtype (an
    integer wraps); it computes, so the NaN policy applies."""
    target[index] = canonical_nan(torch.add(target[index], data))


def minimum(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """IEEE 754-2019 minimum: -0 < +0 whichever operand it is; NaN in, canonical NaN out."""
    r = torch.minimum(a, b)
    if r.dtype.is_floating_point:
        r = _signed_zero(r, lambda: torch.signbit(a) | torch.signbit(b))
    return canonical_nan(r)


def maximum(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """IEEE 754-2019 maximum: +0 > -0 whichever operand it is; NaN in, canonical NaN out."""
    r = torch.maximum(a, b)
    if r.dtype.is_floating_point:
        r = _signed_zero(r, lambda: torch.signbit(a) & torch.signbit(b))
    return canonical_nan(r)


def _signed_zero(r: torch.Tensor, negative) -> torch.Tensor:
    """Where ``r`` is a zero, the zero whose sign is ``negative()``. A zero result of min
    takes -0 when either operand has a set sign bit (the other is then -0 or below zero),
    of max only when both have (the other is -0 or above)."""
    zero = r == 0
    if not bool(zero.any()):
        return r
    magnitude = r.abs()
    return torch.where(zero, torch.where(negative(), -magnitude, magnitude), r)


def div(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Floats: IEEE division. Integers: the quotient truncated toward zero (C's ``/``, the
    vector unit's), in the operands' dtype (see ``_int_divide``)."""
    if a.dtype.is_floating_point:
        return torch.div(a, b)
    return _int_divide(a, b, "division")


def fmod(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """The remainder of a / b truncated toward zero: its sign is the dividend's (C's
    fmod and ``%``, torch.fmod); a float x fmod 0 is NaN, an integer one an error."""
    if a.dtype.is_floating_point:
        return torch.fmod(a, b)
    return _int_divide(a, b, "fmod")


def rem(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """The remainder of a / b rounded toward minus infinity: its sign is the divisor's
    (Python's %, torch.remainder); a float x rem 0 is NaN, an integer one an error."""
    if a.dtype.is_floating_point:
        return torch.remainder(a, b)
    return _int_divide(a, b, "remainder")


_INT_DIVIDE = {"division": lambda a, b: torch.div(a, b, rounding_mode="trunc"),
               "fmod": torch.fmod, "remainder": torch.remainder}


def _int_divide(a: torch.Tensor, b: torch.Tensor, kind: str) -> torch.Tensor:
    """An integer quotient or remainder in ``a``'s dtype, for every integer dtype. The one
    quotient past the dtype's range, MIN / -1, wraps to MIN (two's complement, as a C
    compiler's vector code computes it; the reference documents no other), and MIN rem -1
    is 0 — torch's kernels trap on both with SIGFPE for int32 and int64, which would kill
    the process. A zero divisor is an error (the hardware leaves it target-defined)."""
    if bool((b == 0).any()):
        raise ArithmeticError_(f"integer {kind} by zero", hint="keep every divisor nonzero where it is computed "
                               "(the hardware leaves an integer quotient by zero undefined)")
    fn = _INT_DIVIDE[kind]
    if a.dtype != torch.int64:
        # every quotient of 32 bits or fewer is exact in int64; narrowing keeps the low
        # bits, which is the wrap (and int64 is the width torch divides every dtype in)
        return fn(a.to(torch.int64), b.to(torch.int64)).to(a.dtype)
    by_minus_one = b == -1
    if not bool(by_minus_one.any()):
        return fn(a, b)
    got = fn(a, torch.where(by_minus_one, 1, b))  # x rem 1 and x fmod 1 are 0, as x rem -1 is
    return torch.where(by_minus_one, torch.neg(a), got) if kind == "division" else got


def shift(a: torch.Tensor, b: torch.Tensor, left: bool) -> torch.Tensor:
    """``a`` shifted by ``b`` bits, within its own width (a left shift drops what passes
    the top; a right shift of a signed dtype brings in copies of the sign bit). An amount
    outside 0 .. bits - 1 is no shift the hardware makes: an error, not a guess."""
    bits = torch.iinfo(a.dtype).bits
    if bool(((b < 0) | (b >= bits)).any()):
        bad = b[(b < 0) | (b >= bits)].flatten()[0].item()
        raise ArithmeticError_(f"shift amount {bad} is outside 0..{bits - 1} for {a.dtype}",
                               hint="shift by less than the element's width (a negative amount is not a shift "
                                    "the other way)")
    return torch.bitwise_left_shift(a, b) if left else torch.bitwise_right_shift(a, b)


def relu(a: torch.Tensor) -> torch.Tensor:
    """``a`` unless it is below zero: relu(-0) is -0 and relu(NaN) is NaN (written out, not
    left to torch.relu's kernel)."""
    return torch.where(a < 0, torch.zeros((), dtype=a.dtype), a)


def bitwise_not(a: torch.Tensor) -> torch.Tensor:
    """Each bit flipped. An unsigned dtype is flipped through its signed view (torch has no
    unsigned 16/32-bit kernel): the bits are the same."""
    if a.dtype in (torch.uint16, torch.uint32):
        return torch.bitwise_not(a.view(_SAME_WIDTH_INT[a.element_size()])).view(a.dtype)
    return torch.bitwise_not(a)


def rsqrt(a: torch.Tensor, refined: bool = False) -> torch.Tensor:
    """The reciprocal square root. fp16/bf16: 1 / sqrt in fp32, rounded once to the dtype
    (torch's own half-precision rsqrt gives other bits in its vector loop than in its scalar
    tail, so an element's result would depend on where it sits in the tile).

    ``refined``: TRSQRT's form with a scratch tile, as a2a3 runs it — two vector
    instructions, ``sqrt`` then a division of 1 by its result, each rounded to the dtype
    (what ``tile.sqrt`` then ``tile.recip`` give)."""
    if refined:
        return torch.reciprocal(torch.sqrt(a))
    if a.dtype in (torch.float16, torch.bfloat16):
        return torch.reciprocal(torch.sqrt(a.to(torch.float32))).to(a.dtype)
    return torch.rsqrt(a)


def recip(a: torch.Tensor) -> torch.Tensor:
    return torch.reciprocal(a)


# ----------------------------------------------------------------------------- reductions

_COMBINE = {"sum": torch.add, "max": maximum, "min": minimum, "prod": torch.mul}


def reduce_last(x: torch.Tensor, kind: str) -> torch.Tensor:
    """Reduce the last axis (a row reduction) pairwise (see module doc); keeps it as width 1."""
    if kind in ("max", "min") and x.shape[-1] > 1:
        return _extreme(x, kind)
    combine = _COMBINE[kind]
    while x.shape[-1] > 1:
        width = x.shape[-1]
        half = width // 2
        merged = combine(x[..., :half], x[..., half:2 * half])
        x = torch.cat([merged, x[..., 2 * half:]], dim=-1) if width % 2 else merged
    return canonical_nan(x.clone())  # one column is reduced too: a NaN in it comes out canonical


def _extreme(x: torch.Tensor, kind: str) -> torch.Tensor:
    """The max or min of the last axis. IEEE 754-2019 max and min (``maximum``, ``minimum``)
    give the same bits in every order, so the pairwise tree's result is one reduction's
    with the zero's sign by the rule: a zero max is +0 when a +0 is there, a zero min -0
    when a -0 is; any NaN makes the canonical NaN."""
    ext = (torch.amax if kind == "max" else torch.amin)(x, dim=-1, keepdim=True)
    if x.dtype.is_floating_point:
        zero = ext == 0
        if bool(zero.any()):
            zeros = x == 0
            if kind == "max":
                negative = ~(zeros & ~torch.signbit(x)).any(-1, keepdim=True)
            else:
                negative = (zeros & torch.signbit(x)).any(-1, keepdim=True)
            magnitude = ext.abs()
            ext = torch.where(zero, torch.where(negative, -magnitude, magnitude), ext)
    return canonical_nan(ext)


def reduce_first(x: torch.Tensor, kind: str, tree: bool = False) -> torch.Tensor:
    """Reduce the first axis (a column reduction) of a 2-D ``x`` in the vector unit's order
    (see module doc): row by row, or with ``tree`` (``col_sum`` given a scratch tile) as a
    binary tree of adjacent rows; keeps it as height 1."""
    if kind in ("max", "min") or not x.dtype.is_floating_point:
        # IEEE min/max with the signed-zero rule, and wrapping integer add/mul, give the
        # same bits in every order: the fewest torch calls (the rows' halves) then
        return reduce_last(x.transpose(0, 1), kind).transpose(0, 1).contiguous()
    combine = _COMBINE[kind]
    if tree:
        level, count = x, x.shape[0]
        while count > 1:  # adjacent pairs; an odd count's last row joins the first pair's sum
            half = count // 2
            pairs = combine(level[0:2 * half:2], level[1:2 * half:2])
            if count % 2:
                pairs[0] = combine(pairs[0], level[count - 1])
            level, count = pairs, half
        return canonical_nan(level[0:1].clone())
    acc = x[0:1].clone()
    for i in range(1, x.shape[0]):
        acc = combine(acc, x[i:i + 1])
    return canonical_nan(acc)


# ----------------------------------------------------------------------------- matmul


@arith
def matmul(a: torch.Tensor, b: torch.Tensor, acc: torch.Tensor | None = None) -> torch.Tensor:
    """acc + a @ b as the cube computes it: ``cube_math.mmad`` (the module doc)."""
    from pypto.sim.ops import cube_math  # (loaded with the first matmul: the dtype table above is read at import)

    return cube_math.mmad(a, b, acc)


@arith
def matmul_mx(a: torch.Tensor, a_scale: torch.Tensor, b: torch.Tensor, b_scale: torch.Tensor,
              acc: torch.Tensor | None = None) -> torch.Tensor:
    """acc + (sa * a) @ (sb * b) as the MX cube computes it (``mx_math.mmad_mx``): ``a`` and
    ``b`` FP8 tensors, their scales E8M0 tensors in the scale buffers' packings (MX_A_ZZ,
    MX_B_NN), ``acc`` an FP32 accumulator or bias row."""
    from pypto.sim.ops import mx_math

    def codes(x):
        return x.contiguous().view(torch.uint8)

    fmt = {torch.float8_e4m3fn: mx_math.E4M3, torch.float8_e5m2: mx_math.E5M2}
    return mx_math.mmad_mx(codes(a), mx_math.unpack_a(codes(a_scale)), fmt[a.dtype], codes(b),
                           mx_math.unpack_b(codes(b_scale)), fmt[b.dtype], acc)


@arith
def batch_matmul(a: torch.Tensor, b: torch.Tensor, acc: torch.Tensor | None = None) -> torch.Tensor:
    """``matmul`` page by page over the trailing two axes, the leading (batch) axes
    broadcasting NumPy-style."""
    from pypto.sim.ops import cube_math

    if a.dim() == b.dim() == 2:
        return cube_math.mmad(a, b, acc)
    batch = torch.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    a = a.expand(*batch, *a.shape[-2:]).reshape(-1, *a.shape[-2:])
    b = b.expand(*batch, *b.shape[-2:]).reshape(-1, *b.shape[-2:])
    pages = None if acc is None else acc.reshape(-1, *acc.shape[-2:])
    return cube_math.mmad(a, b, pages).reshape(*batch, a.shape[-2], b.shape[-1])


# ----------------------------------------------------------------------------- masks


def pack_mask(pred: torch.Tensor, cols: int) -> torch.Tensor:
    """[R, C] bools -> [R, cols] uint8, bit j of byte k is column 8k + j."""
    r, c = pred.shape
    bits = torch.zeros(r, cols * 8, dtype=torch.uint8)
    bits[:, :c] = pred.to(torch.uint8)
    weights = torch.tensor([1 << j for j in range(8)], dtype=torch.uint8)
    return (bits.reshape(r, cols, 8) * weights).sum(dim=-1, dtype=torch.int32).to(torch.uint8)


def unpack_mask(mask: torch.Tensor, cols: int) -> torch.Tensor:
    """[R, ?] of any integer carrier -> [R, cols] bools: the bits of each row's bytes in
    memory order, bit j of byte k column 8k + j (the layout ``pack_mask`` writes)."""
    if mask.dtype != torch.uint8:
        mask = mask.contiguous().view(torch.uint8)
    r = mask.shape[0]
    shifts = torch.arange(8, dtype=torch.int32)
    bits = (mask.to(torch.int32).unsqueeze(-1) >> shifts) & 1
    return bits.reshape(r, -1)[:, :cols].to(torch.bool)


CMP = (torch.eq, torch.ne, torch.lt, torch.le, torch.gt, torch.ge)


# ----------------------------------------------------------------------------- casts


@arith
def cast(x: torch.Tensor, target: DataType, mode: str = "round") -> torch.Tensor:
    dst = TORCH[target]
    if x.dtype == dst:
        return x.clone()
    if target.is_bool:
        return x != 0
    if not x.dtype.is_floating_point:
        if dst.is_floating_point:
            return _round_float(_int_as_float64(x), dst, mode)
        return narrow_int(x, dst)
    if dst.is_floating_point:
        return _round_float(x, dst, mode)
    return _float_to_int(x, dst, mode)


def narrow_int(x: torch.Tensor, dst) -> torch.Tensor:
    """A tile's integer -> integer conversion: saturating at ``dst``'s range. On a2a3 a cast
    to INT8 or UINT8 is the chain through FP16 whose float -> integer hop saturates (the
    reference's LegalizeTileCast table); the native INT32 -> INT16 and INT64 -> INT32 are
    taken to saturate alike. (A scalar's ``pl.cast`` keeps the low bits instead: the scalar
    unit converts as C does; ``scalar``.)"""
    info = torch.iinfo(dst)
    return torch.clamp(x.to(torch.int64), info.min, info.max).to(dst)


def _int_as_float64(x: torch.Tensor) -> torch.Tensor:
    """Integers as float64 from which one more rounding is the right one: exact up to
    2**53 (every int32), and past it an int64 rounded to odd — 53 bits, inexact only with
    an odd last bit, which no narrower format's rounding of any mode can tell from the
    integer itself."""
    wide = x.to(torch.float64)
    if x.dtype != torch.int64 or not bool((x.abs() > 2**53).any()):
        return wide
    values = [_odd_float(v) if abs(v) > 2**53 else float(v) for v in x.reshape(-1).tolist()]
    return torch.tensor(values, dtype=torch.float64).reshape(x.shape)


def _odd_float(v: int) -> float:
    f = float(v)
    if int(f) == v:
        return f
    toward = math.nextafter(f, math.inf if v > int(f) else -math.inf)
    return f if int(math.frexp(f)[0] * 2**53) & 1 else toward


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
    # int64's max is not a float64 (it rounds up to 2**63, past the range): the top is
    # compared in floats and set as an integer
    top = r >= float(info.max)
    r = torch.clamp(torch.nan_to_num(r, nan=0.0), float(info.min), float(info.max))
    return torch.where(top, info.max, torch.where(top, 0.0, r).to(dst))


def _round_float(x: torch.Tensor, dst, mode: str) -> torch.Tensor:
    """Narrow (or widen) floats with the mode's rounding, once from the exact value, IEEE
    754's way past the range too: a nearest mode overflows to infinity from half an ulp
    past the largest finite value (the point 2**(emax+1) would stand), a directed one gives
    the largest finite value where it rounds toward zero (floor of a positive, ceil of a
    negative, trunc, odd)."""
    if x.dtype == torch.float32 and dst == torch.bfloat16 and mode in _BF16_HALF:
        return _fp32_to_bf16(x, _BF16_HALF[mode])
    nearest = x.to(dst)  # round half to even; from float64 to fp16/bf16 torch goes through fp32
    twice = x.dtype == torch.float64 and dst in (torch.float16, torch.bfloat16)
    if mode in ("rint", "none") and not twice:
        return nearest
    wide = x.to(torch.float64)
    back = nearest.to(torch.float64)
    inexact = (back != wide) & ~torch.isnan(wide)
    if not bool(inexact.any()):
        return nearest
    # the two neighbours of x in dst (x's nearest, even one rounded twice, is one of them)
    above = back > wide
    lo = torch.where(above, torch.nextafter(nearest, torch.full_like(nearest, -math.inf)), nearest)
    hi = torch.where(above, nearest, torch.nextafter(nearest, torch.full_like(nearest, math.inf)))
    lo_odd = _last_bit(lo) == 1
    if mode == "floor":
        pick = lo
    elif mode == "ceil":
        pick = hi
    elif mode == "trunc":
        pick = torch.where(wide > 0, lo, hi)
    elif mode == "odd":
        pick = torch.where(lo_odd, lo, hi)
    elif mode in ("rint", "none", "round"):
        top = _past_max(dst)  # where an infinite neighbour stands for the distance to it
        lo64 = torch.where(torch.isinf(lo), -top, lo.to(torch.float64))
        hi64 = torch.where(torch.isinf(hi), top, hi.to(torch.float64))
        below, tie = wide - lo64 < hi64 - wide, wide - lo64 == hi64 - wide
        if mode == "round":
            at_tie = torch.where(wide > 0, hi, lo)  # away from zero
        else:
            at_tie = torch.where(lo_odd, hi, lo)  # to even
        pick = torch.where(tie, at_tie, torch.where(below, lo, hi))
    else:
        raise ValueError(mode)
    return torch.where(inexact, pick, nearest)


# bf16 is fp32's upper half: a nearest mode adds half its ulp to the magnitude's bits
# (0x8000 less one where a tie goes toward zero) and keeps the upper half
_BF16_HALF = {"round": 0x8000}


def _fp32_to_bf16(x: torch.Tensor, half: int) -> torch.Tensor:
    """``_round_float`` from fp32 to bf16 in a nearest mode (``half``: what the magnitude's
    bits gain before the lower half goes; 0x8000 rounds a tie away from zero) as integer
    arithmetic on the bits: a magnitude's bits are ordered and spaced as its values are,
    subnormals and the step to infinity included, so the carry is the rounding and the
    overflow past the largest finite value lands on infinity. A NaN stays a NaN (the
    canonical one, where the policy applies)."""
    bits = x.view(torch.int32)
    magnitude = (bits & 0x7FFFFFFF) + half  # (a NaN's may wrap: NaNs are taken apart below)
    upper = (magnitude >> 16) | ((bits >> 16) & -0x8000)  # the sign, arithmetic-shifted down
    out = upper.to(torch.int16).view(torch.bfloat16)
    nan = torch.isnan(x)
    return torch.where(nan, x.to(torch.bfloat16), out) if bool(nan.any()) else out


def _last_bit(x: torch.Tensor) -> torch.Tensor:
    return x.view(_SAME_WIDTH_INT[x.element_size()]) & 1


@functools.lru_cache(maxsize=None)
def _past_max(dtype) -> float:
    """2**(emax + 1): the largest finite value plus one ulp of it."""
    big = torch.tensor(torch.finfo(dtype).max, dtype=dtype)
    below = torch.nextafter(big, torch.tensor(0.0, dtype=dtype))
    return float(big) + (float(big) - float(below))


def pad_value(pad: PadValue, dtype: DataType):
    if pad is PadValue.zero:
        return 0
    if dtype.is_float:
        return float("inf") if pad is PadValue.max else float("-inf")
    info = torch.iinfo(TORCH[dtype])
    return info.max if pad is PadValue.max else info.min


def bits_equal(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Bit-for-bit equality (NaNs included, +0 and -0 told apart): how two platforms' results,
    or a pass's before and after, are compared."""
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.dtype.is_floating_point:
        view = {2: torch.int16, 4: torch.int32, 8: torch.int64}[a.element_size()]
        return torch.equal(a.contiguous().view(view), b.contiguous().view(view))
    return torch.equal(a, b)
