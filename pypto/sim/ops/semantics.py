"""What each op computes: one small torch function per registered op, keyed by its name.

Functions take the op's arguments by parameter name — tiles as ``TileVal`` (physical data
plus the valid extents), tensors as torch tensors, scalars and index lists as Python
numbers — and return the result's data (a tile's physical tensor or a GM tensor). The
interpreter runs them on IR; the simulator runs the same ones on its memories.

Each op that computes goes through ``num.arith`` (or a ``numerics`` function that does), so
its NaNs are canonical; an op that only moves data copies bits (``numerics``' NaN policy).
"""

from __future__ import annotations

from collections.abc import Callable

import attrs
import torch

from pypto.ir.ops.tile import mask_cols
from pypto.ir.types import AtomicType, DataType
from pypto.sim.ops import numerics as num
from pypto.sim.ops.fresh import fresh


@attrs.frozen
class TileVal:
    data: torch.Tensor
    valid: tuple[int, ...]

    def region(self) -> torch.Tensor:
        """The valid part (a view)."""
        return self.data[tuple(slice(0, v) for v in self.valid)]


class OutOfRange(Exception):
    """A run-time value outside what the op takes: a GM access outside its tensor, an index
    outside a tile, an empty region to reduce. ``hint``: what to do, where the usual advice
    (keep the index within the extent) does not fit."""

    def __init__(self, message: str, hint: str | None = None):
        super().__init__(message)
        self.hint = hint


INDEX_HINT = "keep the index within the extent (the loop's bounds say how far it goes)"  # OutOfRange's usual advice
EMPTY_HINT = "make each valid extent at least 1 where it is computed, or skip the reduction when one is 0"
# a tile's valid extent computed when the kernel runs, outside its shape: both platforms' words
EXTENT_HINT = "keep each valid extent within 0 and the tile's shape (min(v, extent) where the value is computed)"


def invalid_extent(tile: str, extents, shape) -> str:
    """A valid extent computed when the kernel runs, outside the tile."""
    return f"tile '{tile}' has valid shape {list(extents)} at run time, outside its shape {list(shape)}"


def nonempty(valid) -> None:
    """Refuse a reduction over a valid region with no element (the vector unit's reductions
    take at least one on each axis, and a max of nothing has no value)."""
    if not all(valid):
        raise OutOfRange(f"the valid region it reduces is {list(valid)} here, with no element to reduce",
                         hint=EMPTY_HINT)


IMPLS: dict[str, Callable] = {}


def impl(*names: str):
    def register(fn):
        for name in names:
            IMPLS[name] = fn
        return fn

    return register


def _dtype(t: torch.Tensor) -> DataType:
    return num.FROM_TORCH[t.dtype]


def window(shape, offsets, extents, what: str, holder: str = "tensor"):
    """The index of the window [offsets, offsets + extents) of a tensor (or tile) of
    ``shape``; OutOfRange where it leaves it."""
    index = []
    for axis, (o, e, d) in enumerate(zip(offsets, extents, shape)):
        if e < 0:
            raise OutOfRange(f"{what} has a negative extent {e} on axis {axis}")
        if o < 0 or o + e > d:
            raise OutOfRange(f"{what} [{o}, {o + e}) on axis {axis} is outside the {holder}'s [0, {d})")
        index.append(slice(o, o + e))
    return tuple(index)


# ----------------------------------------------------------------------------- movement


@impl("tile.load")
def load(tensor, offsets, shapes, valid_shape, target_memory, transpose):
    extents = tuple(shapes) if valid_shape is None else tuple(valid_shape)
    if any(e > s for e, s in zip(extents, shapes)):
        raise OutOfRange(f"valid shape {list(extents)} is outside the tile's shape {list(shapes)}")
    data = fresh(shapes, tensor.dtype)  # past the valid shape the load writes nothing
    data[tuple(slice(0, e) for e in extents)] = tensor[window(tensor.shape, offsets, extents, "load region")]
    return data.transpose(-2, -1).contiguous() if transpose else data


@impl("tile.store")
def store(tile: TileVal, offsets, output_tensor, shapes=None, atomic=AtomicType.None_):  # (shapes: the tile's)
    region = tile.region()
    if region.dtype != output_tensor.dtype:  # the fixpipe's conversion out of Acc
        region = num.cast(region, num.FROM_TORCH[output_tensor.dtype], "rint")
    index = window(output_tensor.shape, offsets, region.shape, "store region")
    if atomic is AtomicType.Add:
        num.atomic_add(output_tensor, index, region)
    else:
        output_tensor[index] = region
    return output_tensor


@impl("tile.move")
def move(tile: TileVal, target_memory):
    return tile.data.clone()


@impl("tile.create")
def create(shape, dtype, target_memory):
    return torch.zeros(tuple(shape), dtype=num.TORCH[dtype])


@impl("tile.full")
def full_tile(shape, dtype, value):
    return num.scalar(value, dtype).expand(tuple(shape)).clone()


# ----------------------------------------------------------------------------- elementwise

_BINARY = {"add": num.arith(num.modular(torch.add)), "sub": num.arith(num.modular(torch.sub)),
           "mul": num.arith(num.modular(torch.mul)),
           "div": num.arith(num.div), "maximum": num.maximum, "minimum": num.minimum,
           "fmod": num.arith(num.fmod), "rem": num.arith(num.rem), "and": torch.bitwise_and, "or": torch.bitwise_or,
           "xor": torch.bitwise_xor, "shl": lambda a, b: num.shift(a, b, left=True),
           "shr": lambda a, b: num.shift(a, b, left=False)}
_SCALAR = {f"{name}s": name for name in _BINARY}
_UNARY = {name: num.arith(fn) for name, fn in {
    "neg": torch.neg, "abs": torch.abs, "relu": num.relu, "exp": torch.exp, "log": torch.log,
    "sqrt": torch.sqrt, "rsqrt": num.rsqrt, "recip": num.recip, "sin": torch.sin, "cos": torch.cos,
    "not": num.bitwise_not}.items()}


# (a scratch tile holds nothing of the result; high_precision is Ascend950's: a2a3 runs the
# default algorithm either way)
def _on_tiles(fn):
    return lambda lhs, rhs, tmp=None, high_precision=False: fn(lhs.data, rhs.data)


def _dividing_tiles(fn):
    """An integer quotient or remainder is defined where both operands are valid: past the
    valid region a divisor is whatever the tile held (a load leaves it unwritten), so a zero
    there is no error — it divides by 1 instead (its quotient is padding no store writes)."""
    def op(lhs, rhs, tmp=None, high_precision=False):
        divisor = rhs.data
        if not divisor.dtype.is_floating_point and divisor.dim() == len(lhs.valid) == len(rhs.valid):
            inside = torch.zeros(divisor.shape, dtype=torch.bool)
            inside[tuple(slice(0, min(a, b)) for a, b in zip(lhs.valid, rhs.valid))] = True
            divisor = torch.where(inside, divisor, torch.ones_like(divisor))
        return fn(lhs.data, divisor)

    return op


def _on_tensors(fn):
    return lambda lhs, rhs, high_precision=False: fn(lhs, rhs)


def _with_scalar(fn, tile: bool):
    if tile:
        return lambda lhs, rhs, tmp=None: fn(lhs.data, num.scalar(rhs, _dtype(lhs.data)))
    return lambda lhs, rhs: fn(lhs, num.scalar(rhs, _dtype(lhs)))


for _name, _fn in _BINARY.items():
    IMPLS[f"tile.{_name}"] = (_dividing_tiles if _name in ("div", "fmod", "rem") else _on_tiles)(_fn)
    IMPLS[f"tensor.{_name}"] = _on_tensors(_fn)
for _name, _base in _SCALAR.items():
    IMPLS[f"tile.{_name}"] = _with_scalar(_BINARY[_base], tile=True)
    IMPLS[f"tensor.{_name}"] = _with_scalar(_BINARY[_base], tile=False)
for _name, _fn in _UNARY.items():
    IMPLS[f"tile.{_name}"] = (lambda fn: lambda tile, high_precision=False: fn(tile.data))(_fn)
    IMPLS[f"tensor.{_name}"] = (lambda fn: lambda x, high_precision=False: fn(x))(_fn)
# with its scratch tile (the tensor form: high_precision=True) TRSQRT's precise form
IMPLS["tile.rsqrt"] = lambda tile, tmp=None: num.arith(num.rsqrt)(tile.data, tmp is not None)
IMPLS["tensor.rsqrt"] = lambda x, high_precision=False: num.arith(num.rsqrt)(x, high_precision)


# The elementwise tile ops whose torch kernel can write straight into the destination:
# INTO[op] = (fn, floats only); fn(out, *operands) — tiles as tensors of ``out``'s dtype
# and shape, scalars as numbers, in the op's parameter order — leaves in ``out`` the bits
# IMPLS[op] returns. (maximum, minimum and relu write their rule out in several kernels;
# an integer division checks for zero first: not here.)
INTO: dict[str, tuple[Callable, bool]] = {}
_INTO_UNARY = {"neg": (torch.neg, False), "abs": (torch.abs, False), "exp": (torch.exp, True),
               "log": (torch.log, True), "sqrt": (torch.sqrt, True), "recip": (torch.reciprocal, True)}
# (not rsqrt: in fp16/bf16 it computes in fp32 first, see numerics.rsqrt)
_INTO_BINARY = {"add": (num.modular(torch.add), False), "sub": (num.modular(torch.sub), False),
                "mul": (num.modular(torch.mul), False),
                "div": (torch.div, True)}
# (``options``: the op's flags after its operands, high_precision: the same bits on a2a3)
for _name, (_fn, _floats) in _INTO_UNARY.items():
    INTO[f"tile.{_name}"] = ((lambda fn: lambda out, x, *options: num.canonical_nan_(fn(x, out=out)))(_fn), _floats)
for _name, (_fn, _floats) in _INTO_BINARY.items():
    INTO[f"tile.{_name}"] = ((lambda fn: lambda out, x, y, *options: num.canonical_nan_(fn(x, y, out=out)))(_fn),
                             _floats)
    INTO[f"tile.{_name}s"] = ((lambda fn: lambda out, x, s: num.canonical_nan_(
        fn(x, num.scalar(s, _dtype(x)), out=out)))(_fn), _floats)


@impl("tile.cmp")
def cmp(lhs: TileVal, rhs: TileVal, cmp_type):
    return num.pack_mask(num.CMP[cmp_type](lhs.data, rhs.data), mask_cols(lhs.data.shape[1]))


@impl("tile.cmps")
def cmps(lhs: TileVal, rhs, cmp_type):
    pred = num.CMP[cmp_type](lhs.data, num.scalar(rhs, _dtype(lhs.data)))
    return num.pack_mask(pred, mask_cols(lhs.data.shape[1]))


@impl("tile.sel")
def sel(mask: TileVal, lhs: TileVal, rhs: TileVal, tmp=None):
    pred = num.unpack_mask(mask.data, lhs.data.shape[1])
    return torch.where(pred, lhs.data, rhs.data)


# ----------------------------------------------------------------------------- reductions


def _reduce(kind: str, axis: int, data: torch.Tensor, valid, tree: bool = False) -> torch.Tensor:
    nonempty(valid)
    region = data[: valid[0], : valid[1]]
    if axis == 1:
        out = torch.zeros(data.shape[0], 1, dtype=data.dtype)
        out[: valid[0]] = num.reduce_last(region, kind)
    else:
        out = torch.zeros(1, data.shape[1], dtype=data.dtype)
        out[:, : valid[1]] = num.reduce_first(region, kind, tree)
    return out


for _kind in ("sum", "max", "min", "prod"):
    IMPLS[f"tile.row_{_kind}"] = (lambda k: lambda tile, tmp_tile=None: _reduce(k, 1, tile.data, tile.valid))(_kind)
    IMPLS[f"tensor.row_{_kind}"] = (lambda k: lambda x: num.reduce_last(x, k))(_kind)
    IMPLS[f"tensor.col_{_kind}"] = (lambda k: lambda x: num.reduce_first(x, k))(_kind)  # (no scratch: row by row)
# col_sum's scratch tile selects the binary tree (TCOLSUM's); TCOLPROD has none: col_prod's is unused
IMPLS["tile.col_sum"] = lambda tile, tmp_tile=None: _reduce("sum", 0, tile.data, tile.valid, tmp_tile is not None)
IMPLS["tile.col_max"] = lambda tile: _reduce("max", 0, tile.data, tile.valid)
IMPLS["tile.col_min"] = lambda tile: _reduce("min", 0, tile.data, tile.valid)
IMPLS["tile.col_prod"] = lambda tile, tmp_tile=None: _reduce("prod", 0, tile.data, tile.valid)


def _arg(kind: str, axis: int, tile: TileVal) -> torch.Tensor:
    """The index of the first extreme element along ``axis`` of the valid region (a NaN
    counts as the maximum), as INT32; rows (columns) outside the valid region are 0."""
    data, valid = tile.data, tile.valid
    nonempty(valid)
    region = data[: valid[0], : valid[1]]
    pick = torch.argmax if kind == "max" else torch.argmin
    shape = (data.shape[0], 1) if axis == 1 else (1, data.shape[1])
    out = torch.zeros(shape, dtype=torch.int32)
    found = pick(region, dim=axis, keepdim=True).to(torch.int32)
    out[tuple(slice(0, s) for s in found.shape)] = found
    return out


for _kind in ("max", "min"):
    for _ax, _axis in (("row", 1), ("col", 0)):
        IMPLS[f"tile.{_ax}_arg{_kind}"] = (lambda k, a: lambda tile, tmp_tile=None: _arg(k, a, tile))(_kind, _axis)


# ----------------------------------------------------------------------------- broadcast

_EXPAND = {**{f: _BINARY[f] for f in ("add", "sub", "mul", "div")}, "max": num.maximum, "min": num.minimum,
           "expdif": num.arith(lambda x, vec: torch.exp(torch.sub(x, vec)))}
def _carrier(row_vec: TileVal, cols: int) -> torch.Tensor:
    """A per-row carrier across ``cols`` columns: its one column, or its 32-byte block of
    lanes repeated (TROWEXPANDADD's packed form)."""
    v = row_vec.data
    if v.shape[-1] == 1:
        return v
    return v.repeat(1, -(-cols // v.shape[-1]))[:, :cols]


IMPLS["tile.row_expand_add"] = lambda tile, row_vec, tmp=None: _BINARY["add"](
    tile.data, _carrier(row_vec, tile.data.shape[-1]))
for _f, _fn in _EXPAND.items():
    if _f != "add":
        IMPLS[f"tile.row_expand_{_f}"] = (lambda fn: lambda tile, row_vec: fn(tile.data, row_vec.data))(_fn)
    IMPLS[f"tile.col_expand_{_f}"] = (lambda fn: lambda tile, col_vec: fn(tile.data, col_vec.data))(_fn)
    IMPLS[f"tensor.row_expand_{_f}"] = (lambda fn: lambda x, row_vec: fn(x, row_vec))(_fn)
    IMPLS[f"tensor.col_expand_{_f}"] = (lambda fn: lambda x, col_vec: fn(x, col_vec))(_fn)
IMPLS["tile.row_expand"] = lambda target, row_vec: row_vec.data.expand_as(target.data).clone()
IMPLS["tile.col_expand"] = lambda target, col_vec: col_vec.data.expand_as(target.data).clone()
IMPLS["tensor.row_expand"] = lambda target, row_vec: row_vec.expand_as(target).clone()
IMPLS["tensor.col_expand"] = lambda target, col_vec: col_vec.expand_as(target).clone()


# ----------------------------------------------------------------------------- shape and dtype


@impl("tile.cast")
def cast_tile(tile: TileVal, target_type, mode):
    return num.cast(tile.data, target_type, mode)


@impl("tensor.cast")
def cast_tensor(x, target_type, mode):
    return num.cast(x, target_type, mode)


IMPLS["tile.reshape"] = lambda tile, shape: tile.data.reshape(tuple(shape)).clone()
IMPLS["tensor.reshape"] = lambda x, shape: x.reshape(tuple(shape)).clone()


@impl("tensor.expand_clone")
def expand_clone(input, target):  # noqa: A002  (the reference's name)
    target[...] = input.expand(target.shape)
    return target
IMPLS["tile.transpose"] = lambda tile, axis1, axis2, tmp_tile=None: tile.data.transpose(axis1, axis2).contiguous()
IMPLS["tile.transpose_view"] = lambda tile: tile.data.transpose(-1, -2).contiguous()
IMPLS["tile.concat"] = lambda src0, src1: torch.cat((src0.data, src1.data), dim=1)
IMPLS["tensor.transpose"] = lambda x, axis1, axis2: x.transpose(axis1, axis2).contiguous()
IMPLS["tile.set_validshape"] = lambda tile, valid_rows, valid_cols: tile.data.clone()


# ----------------------------------------------------------------------------- cube


def contracted(lhs: TileVal, rhs: TileVal) -> tuple:
    """The operands an MMAD multiplies: K is the left operand's valid columns (TMATMUL reads
    its K there), so past them neither operand's padding reaches the product — as if zero."""
    k = lhs.valid[-1]
    if k == lhs.data.shape[-1]:
        return lhs.data, rhs.data
    return lhs.data[..., :k], rhs.data[..., :k, :]


def _mm(lhs: TileVal, rhs: TileVal, acc=None):
    return num.matmul(*contracted(lhs, rhs), acc)


IMPLS["tile.matmul"] = lambda lhs, rhs: _mm(lhs, rhs)
# where init_cond holds the MMAD starts afresh, as tile.matmul does (its init bit)
IMPLS["tile.matmul_acc"] = lambda acc, lhs, rhs, init_cond=None: _mm(lhs, rhs, None if init_cond else acc.data)
# the bias row is where the accumulator starts
IMPLS["tile.matmul_bias"] = lambda lhs, rhs, bias: _mm(lhs, rhs, bias.data.expand(lhs.data.shape[0], -1))
IMPLS["tile.matmul_mx"] = lambda lhs, lhs_scale, rhs, rhs_scale: num.matmul_mx(
    lhs.data, lhs_scale.data, rhs.data, rhs_scale.data)
IMPLS["tile.matmul_mx_acc"] = lambda acc, lhs, lhs_scale, rhs, rhs_scale: num.matmul_mx(
    lhs.data, lhs_scale.data, rhs.data, rhs_scale.data, acc.data)
IMPLS["tile.matmul_mx_bias"] = lambda lhs, lhs_scale, rhs, rhs_scale, bias: num.matmul_mx(
    lhs.data, lhs_scale.data, rhs.data, rhs_scale.data, bias.data)
IMPLS["tile.batch_matmul"] = lambda lhs, rhs: num.batch_matmul(*contracted(lhs, rhs))
IMPLS["tile.batch_matmul_acc"] = lambda acc, lhs, rhs: num.batch_matmul(*contracted(lhs, rhs), acc.data)
IMPLS["tile.gemv"] = lambda lhs, rhs, acc_phase="unspecified": _mm(lhs, rhs)
IMPLS["tile.gemv_acc"] = lambda acc, lhs, rhs, acc_phase="unspecified": _mm(lhs, rhs, acc.data)
IMPLS["tile.gemv_bias"] = lambda lhs, rhs, bias, acc_phase="unspecified": _mm(lhs, rhs, bias.data)


@impl("tensor.matmul")
def matmul_tensor(lhs, rhs, out_dtype, a_trans, b_trans):
    a = lhs.transpose(-2, -1) if a_trans else lhs
    b = rhs.transpose(-2, -1) if b_trans else rhs
    acc = num.batch_matmul(a, b)
    return acc if out_dtype is None else num.cast(acc, out_dtype, "rint")


@impl("tensor.matmul_acc")
def matmul_acc_tensor(acc, lhs, rhs, a_trans, b_trans):
    a = lhs.transpose(-2, -1) if a_trans else lhs
    b = rhs.transpose(-2, -1) if b_trans else rhs
    return num.batch_matmul(a, b, acc)


# ----------------------------------------------------------------------------- tensor level


@impl("tensor.full")
def full_tensor(shape, dtype, value):
    return num.scalar(value, dtype).expand(tuple(shape)).clone()


@impl("tensor.create")
def create_tensor(shape, dtype, layout=None, manual_dep=False, init_value=None):
    if init_value is None:
        return torch.zeros(tuple(shape), dtype=num.TORCH[dtype])
    return num.scalar(init_value, dtype).expand(tuple(shape)).clone()


def overhanging(x, shape, offset, valid_shape=None, pad_value=None, clamp=False):
    """An orchestration's slice: the window as far as it is inside the tensor. A window
    whose end runs past the tensor is sanctioned at run time (the reference checks only
    what it can prove when compiling), so a kernel may take a fixed-width view whose
    overhang it never addresses; an access of the overhang is out of the view."""
    if valid_shape is not None:
        for axis, (v, e) in enumerate(zip(valid_shape, shape)):
            if not 0 <= v <= e:
                raise OutOfRange(f"the slice's valid extent {v} on axis {axis} is outside its shape's {e}")
    return x[window(x.shape, offset, [min(e, max(d - o, 0)) for o, e, d in zip(offset, shape, x.shape)],
                    "slice window")]


def reshaped(x, shape):
    """An orchestration's reshape: the same bytes under another shape, which exists only
    where the tensor's strides allow it (a contiguous tensor always does; a window of
    whole rows of one does; a column window or a transposed view does not)."""
    try:
        return x.view(tuple(shape))
    except RuntimeError:
        raise OutOfRange(f"a {list(x.shape)} view with strides {list(x.stride())} cannot be seen as "
                         f"{list(shape)} without copying it: a reshape is a view of the same bytes",
                         hint="reshape the tensor before slicing or transposing it, or copy the view into a "
                              "tensor of its own in a pl.at scope first") from None


# An orchestration's views: the tensor itself seen through other offsets, shapes and
# strides — a task writing one writes the tensor (in a kernel the same ops are values).
VIEWS = {
    "tensor.slice": overhanging,
    "tensor.transpose": lambda x, axis1, axis2: x.transpose(axis1, axis2),
    "tensor.reshape": reshaped,
    "tensor.set_validshape": lambda x, valid_rows, valid_cols: valid_view(x, valid_rows, valid_cols),
}


def valid_view(x, rows, cols):
    """An orchestration's ``set_validshape``: the same bytes, whose valid region the kernels
    that load them say again (``valid_shape=`` on their loads)."""
    for axis, (v, e) in enumerate(zip((rows, cols), x.shape)):
        if not 0 <= v <= e:
            raise OutOfRange(f"the valid extent {v} on axis {axis} is outside the tensor's {e}")
    return x.view(x.shape)


@impl("tensor.slice")
def slice_(x, shape, offset, valid_shape=None, pad_value=None, clamp=False):
    return x[window(x.shape, offset, shape, "slice window")].clone()


IMPLS["tensor.fillpad"] = lambda x, pad_value: x.clone()


@impl("tensor.assemble")
def assemble(target, source, offset, atomic=AtomicType.None_):
    # a source of lower rank is the window led by 1s (a [4, 16] source at [b, 0, 0])
    source = source.reshape((1,) * (target.dim() - source.dim()) + tuple(source.shape))
    index = window(target.shape, offset, source.shape, "assemble window")
    if source.dtype != target.dtype:  # FP32 through the fixpipe, rounding to nearest even
        source = num.cast(source, num.FROM_TORCH[target.dtype], "rint")
    if atomic is AtomicType.Add:
        num.atomic_add(target, index, source)
    else:
        target[index] = source
    return target


@impl("system.syncall")
def _syncall(core_type, mode, gm_workspace, used_cores):
    return None  # orders arrival only; the simulated GM counter is the barrier's own, not the kernel's data


@impl("system.reserve_buffer")
def _reserve_buffer(name, size, base, slot_num):
    return base  # the ring's UB address; reserving moves no data


from pypto.sim.ops import compound as _compound  # noqa: E402,F401  (registers the compound ops' meaning)
from pypto.sim.ops import gathers as _gathers  # noqa: E402,F401  (registers the gather ops' meaning)
from pypto.sim.ops import sorts as _sorts  # noqa: E402,F401  (registers the sort ops' meaning)
from pypto.sim.ops import elements as _elements  # noqa: E402,F401  (registers read / write of one element)
from pypto.sim.ops import arrays as _arrays  # noqa: E402,F401  (registers the orchestration's arrays)
from pypto.sim.ops import crossings as _crossings  # noqa: E402,F401  (registers a pl.split_aiv region's crossings)
from pypto.sim.ops import randoms as _randoms  # noqa: E402,F401  (registers the counter-based generator)
from pypto.sim.ops import comm as _comm  # noqa: E402,F401  (registers the pld ops' meaning on a rank)
