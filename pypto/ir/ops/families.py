"""The elementwise op families, one row per op: its name, the dtypes it computes in and its
cost class on the vector unit. ``pypto.ir.ops.tile`` and ``pypto.ir.ops.tensor`` make the
tile and the tensor op of each row, and the unified ``pl.<name>`` (which picks the level
from its operands) is made here — so adding an elementwise op is one row here plus its
semantics in ``pypto.sim.ops.semantics``."""

from __future__ import annotations

import attrs

from pypto.ir.ops.type_rules import fail
from pypto.ir.ops.registry import unify
from pypto.ir.types import DataType

FLOATS = (DataType.FP16, DataType.BF16, DataType.FP32)
SIGNED = (DataType.INT8, DataType.INT16, DataType.INT32, DataType.FP16, DataType.BF16, DataType.FP32)
NUMERIC = (*SIGNED, DataType.UINT8, DataType.INT64)
# add, sub and mul also wrap in the wider unsigned dtypes (pl.tile.random's UINT32 words)
WRAPS = (*NUMERIC, DataType.UINT16, DataType.UINT32)
DIVIDES = (DataType.INT16, DataType.INT32, DataType.FP16, DataType.FP32, DataType.BF16)

INTEGERS = (DataType.INT8, DataType.INT16, DataType.INT32, DataType.UINT8)
# what tile.ci / tensor.ci count in: the sequence wraps at the dtype's width (pto.tci's lanes)
CI_DTYPES = (DataType.INT16, DataType.INT32, DataType.UINT16, DataType.UINT32)


@attrs.frozen
class Row:
    """One elementwise op: ``tile.<name>`` and ``tensor.<name>``, the dtypes it computes in,
    its cost class on the vector unit (``SoC.costs.vector_cycles``), whether its result may
    overwrite an operand that dies with it, whether the tile form takes a scratch tile
    (``tmp``, as the vector unit's kernel needs), and the unified name where Python has the
    op's own (``pl.and_``).

    ``precise``: the op takes ``high_precision=`` (PTO's slower, more precise algorithm,
    which only Ascend950 has: a2a3's vector unit runs the default one either way, so here
    it changes neither the bits nor the time). A unary op with ``scratch`` selects its
    precise form by the scratch tile itself (``pl.tile.rsqrt(x, tmp)``), and its tensor
    form by ``high_precision=True``, for which the compiler makes the scratch tile."""

    name: str
    dtypes: tuple
    unit: str
    in_place: bool = True
    scratch: bool = False
    unified: str = ""
    shifts: bool = False  # the rhs is a shift amount: 0 up to the lhs's bit width, exclusive
    precise: bool = False
    # the dtypes high_precision=True takes (the reference's: its high-precision templates)
    precise_dtypes: tuple = FLOATS

    @property
    def pl_name(self) -> str:
        return self.unified or self.name


# tile op tile (and, as "<name>s", tile op scalar)
BINARY = (Row("add", WRAPS, "simple"), Row("sub", WRAPS, "simple"), Row("mul", WRAPS, "simple"),
          Row("div", DIVIDES, "divide", precise=True), Row("maximum", NUMERIC, "simple"), Row("minimum", NUMERIC, "simple"),
          # fmod's kernel overwrites its first operand while it still needs it: never in place
          Row("fmod", FLOATS, "divide", in_place=False),
          # rem (floor modulo, the sign of the divisor) takes the kernel's scratch tile
          Row("rem", NUMERIC, "divide", in_place=False, scratch=True),
          Row("and", INTEGERS, "simple", unified="and_"), Row("or", INTEGERS, "simple", unified="or_"),
          Row("xor", INTEGERS, "simple", scratch=True),
          Row("shl", INTEGERS, "simple", shifts=True), Row("shr", INTEGERS, "simple", shifts=True))
# op tile
UNARY = (Row("neg", SIGNED, "simple"), Row("abs", SIGNED, "simple"), Row("relu", SIGNED, "simple"),
         Row("exp", FLOATS, "transcendental"), Row("log", FLOATS, "transcendental", precise=True),
         Row("sqrt", FLOATS, "transcendental"),
         # with its scratch tile a2a3's TRSQRT takes a square root, then divides a block of ones by
         # it: reading the scratch tile while it writes, never in place
         Row("rsqrt", FLOATS, "transcendental", in_place=False, scratch=True),
         Row("recip", FLOATS, "transcendental", precise=True, precise_dtypes=(DataType.FP16, DataType.FP32)), Row("sin", FLOATS, "transcendental"),
         Row("cos", FLOATS, "transcendental"),
         Row("not", (DataType.INT16, DataType.UINT16), "simple", unified="not_"))  # TNOT takes 16-bit lanes
# a reduction of the last (axis 1) or first (axis 0) axis; whether the tile form takes a tmp_tile
REDUCTIONS = (("row_sum", 1, True), ("row_max", 1, True), ("row_min", 1, True), ("row_prod", 1, True),
              ("col_sum", 0, True), ("col_max", 0, False), ("col_min", 0, False), ("col_prod", 0, True))
# each row (row_expand_<f>) or column (col_expand_<f>) combined with one element of a vector:
# f, dtypes, cost class, the axes it has
EXPANDS = (("add", NUMERIC, "simple", ("row", "col")), ("sub", NUMERIC, "simple", ("row", "col")),
           ("mul", NUMERIC, "simple", ("row", "col")), ("div", DIVIDES, "divide", ("row", "col")),
           ("max", NUMERIC, "simple", ("row", "col")), ("min", NUMERIC, "simple", ("row", "col")),
           ("expdif", FLOATS, "exp_difference", ("row", "col")))


def check_amount(op: str, dtype: DataType, amount) -> None:
    """A constant shift amount is one the hardware shifts by: 0 .. bits - 1 (the rest is
    checked as it runs)."""
    value = getattr(amount, "value", None)
    if isinstance(value, bool):
        raise fail(op, "an integer shift amount", repr(value), "shift by an int: 0, 1, ...")
    if isinstance(value, int) and not 0 <= value < dtype.bits:
        raise fail(op, f"a shift amount in 0..{dtype.bits - 1} for {dtype.name}", str(value),
                   "shift by less than the element's width (a negative amount is not a shift the other way)")


def scalar_form(name: str) -> str:
    """The tile-scalar op of a binary family: add -> adds."""
    return name + "s"


def unify_families() -> None:
    """``pl.<name>`` for every family row: tile or tensor by the operands, scalar forms by the rhs."""
    for row in BINARY:
        name, s = row.name, scalar_form(row.name)
        unify(row.pl_name, tile=f"tile.{name}", tile_scalar=f"tile.{s}", tensor=f"tensor.{name}",
              tensor_scalar=f"tensor.{s}")
        unify(s, tile_scalar=f"tile.{s}", tensor_scalar=f"tensor.{s}")
    for row in UNARY:
        unify(row.pl_name, tile=f"tile.{row.name}", tensor=f"tensor.{row.name}")
    for name, _, _ in REDUCTIONS:
        unify(name, tile=f"tile.{name}", tensor=f"tensor.{name}")
    for f, _, _, axes in EXPANDS:
        for axis in axes:
            unify(f"{axis}_expand_{f}", tile=f"tile.{axis}_expand_{f}", tensor=f"tensor.{axis}_expand_{f}")
