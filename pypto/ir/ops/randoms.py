"""Counter-based random numbers (``pl.tile.random`` / ``pl.tensor.random`` / ``pl.random``;
the reference's ``pto.trandom``): a tile or tensor of 32-bit words, each a function of the
64-bit key ``(key0, key1)``, the 128-bit counter ``(counter0 .. counter3)`` and the
element's position — the same seeds give the same values, on every run and platform. The
generator (Philox4x32) is defined once, in ``pypto.sim.ops.randoms``.

``pto.trandom`` is an Ascend950 (A5) instruction: the a2a3 SoC table lacks it, so the
simulator refuses a kernel holding one, and ``ref`` computes it."""

from __future__ import annotations

from pypto.backend import MemorySpace, SoC
from pypto.ir.nodes import Const, Var
from pypto.ir.ops.registry import Kind, OpArgs, Windows, op_call, register, unify
from pypto.ir.ops.type_rules import fail, fmt_shape, static_ints
from pypto.ir.ops.registry import ParamSpec as P
from pypto.ir.types import DataType, ScalarType, TensorType, TileType

SEEDS = ("key0", "key1", "counter0", "counter1", "counter2", "counter3")
WORD = (-(1 << 31), (1 << 32) - 1)  # a 32-bit word written as a signed or an unsigned int
ROUNDS = (7, 10)


def _check(op: str, a: OpArgs) -> tuple[int, int]:
    """The reference's rules, shared by both levels: INT32 seeds, a static 2-D shape, an
    INT32 or UINT32 result, 7 or 10 rounds. The shape."""
    for k, name in enumerate(SEEDS):
        v, t = a[name], a.type(name)
        if isinstance(v, Const):
            if not isinstance(v.value, int) or isinstance(v.value, bool) or not WORD[0] <= v.value <= WORD[1]:
                raise fail(op, f"seed argument {k} ({name}) to be a 32-bit integer word", repr(v.value),
                           "write an int in -2**31 .. 2**32 - 1 (it is taken modulo 2**32)")
        elif t is not None and not (isinstance(t, ScalarType) and t.dtype is DataType.INT32):
            # (an expression the IR holds untyped was checked where it was written: pl.cast(i, pl.INT32))
            got = t.dtype.name if isinstance(t, ScalarType) else type(t).__name__
            raise fail(op, f"seed argument {k} ({name}) to have INT32 dtype", got,
                       f"pl.cast({name}, pl.INT32) first (a loop index is an INDEX)")
    shape = static_ints(a["shape"])
    if shape is None or any(s <= 0 for s in shape):
        raise fail(op, "a shape of positive compile-time constants", fmt_shape(a["shape"]))
    if len(shape) != 2:
        raise fail(op, "a 2D shape (rows, cols)", f"rank {len(shape)}", "the generator fills rows and columns")
    if a["dtype"] not in (DataType.INT32, DataType.UINT32):
        raise fail(op, "dtype to be one of {INT32, UINT32}", a["dtype"].name, "dtype=pl.UINT32 (the default)")
    if a["rounds"] not in ROUNDS:
        raise fail(op, "rounds to be 7 or 10", str(a["rounds"]))
    return shape


def _tile(a: OpArgs, soc: SoC) -> TileType:
    shape = _check("tile.random", a)
    valid = a["valid_shape"]
    if valid is not None:
        sv = static_ints(valid)
        if sv is None:
            raise fail("tile.random", "valid_shape of compile-time constants", fmt_shape(valid))
        if len(sv) != len(shape):
            raise fail("tile.random", f"valid_shape of the shape's rank {len(shape)}", f"rank {len(sv)}")
        for axis, (v, d) in enumerate(zip(sv, shape)):
            if not 0 < v <= d:
                raise fail("tile.random", f"valid_shape element {axis} in (0, {d}]", str(v))
    return TileType(shape=shape, dtype=a["dtype"], space=MemorySpace.Vec,
                    valid_shape=None if valid is None else tuple(valid))


def _tensor(a: OpArgs, soc: SoC) -> TensorType:
    return TensorType(_check("tensor.random", a), a["dtype"])


_SEED_PARAMS = [P(name, Kind.SCALAR, integer=True) for name in SEEDS]  # words, not values of the result


def _lower(args: dict, low):
    """A window's tile: its counters moved by the window's offset (index arithmetic) are
    bound as the INT32 words the op takes."""
    for name in SEEDS:
        v = args[name]
        if not isinstance(v, Const) and not (isinstance(v, Var) and low.type_of(v) == ScalarType(DataType.INT32)):
            args[name] = low.scalar(v, DataType.INT32)
    return op_call("tile.random", **args)  # by name: the tile form has valid_shape where the tensor's has dtype
_TAIL = [P("dtype", Kind.DTYPE, default=DataType.UINT32), P("rounds", Kind.INT, default=10)]

# (the vector unit's, on A5; a2a3's SoC table lacks it)
register("tile.random", [*_SEED_PARAMS, P("shape", Kind.SHAPE), P("valid_shape", Kind.INDEX_LIST, default=None,
                                                                   optional=True), *_TAIL],
         _tile, doc="counter-based random 32-bit words (Philox4x32, `rounds` rounds): element [r, c] is word 0 of "
                    "the block for key (key0, key1) and counter (counter0 + c, counter1 + r, counter2, counter3); "
                    "only the valid region is written. pto.trandom: Ascend950 (A5) only — runs on platform='ref'",
         mnemonic="TRANDOM")
# a window at [r0, c0] of the tensor is the tile generated with counter0 + c0, counter1 + r0
register("tensor.random", [*_SEED_PARAMS, P("shape", Kind.SHAPE), *_TAIL], _tensor,
         doc="a tensor of counter-based random 32-bit words, as pl.tile.random over its whole shape",
         windows=Windows("source", tile="tile.random", shifts=("counter1", "counter0"),
                         lower=_lower))
unify("random", tensor="tensor.random")  # the reference's pl.random is the tensor form
