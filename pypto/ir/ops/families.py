"""The elementwise op families, one row per op: its name, the dtypes it computes in and its
cost class on the vector unit. ``pypto.ir.ops.tile`` and ``pypto.ir.ops.tensor`` make the
tile and the tensor op of each row, and the unified ``pl.<name>`` (which picks the level
from its operands) is made here — so adding an elementwise op is one row here plus its
semantics in ``pypto.sim.semantics``."""

from __future__ import annotations

from pypto.ir.ops.registry import unify
from pypto.ir.types import DataType

FLOATS = (DataType.FP16, DataType.BF16, DataType.FP32)
SIGNED = (DataType.INT8, DataType.INT16, DataType.INT32, DataType.FP16, DataType.BF16, DataType.FP32)
NUMERIC = (*SIGNED, DataType.UINT8, DataType.INT64)
DIVIDES = (DataType.INT16, DataType.INT32, DataType.FP16, DataType.FP32, DataType.BF16)

# tile op tile (and, as "<name>s", tile op scalar): name, dtypes, cost class
BINARY = (("add", NUMERIC, "simple"), ("sub", NUMERIC, "simple"), ("mul", NUMERIC, "simple"),
          ("div", DIVIDES, "divide"), ("maximum", NUMERIC, "simple"), ("minimum", NUMERIC, "simple"))
# op tile
UNARY = (("neg", SIGNED, "simple"), ("abs", SIGNED, "simple"), ("relu", SIGNED, "simple"),
         ("exp", FLOATS, "transcendental"), ("log", FLOATS, "transcendental"), ("sqrt", FLOATS, "transcendental"),
         ("rsqrt", FLOATS, "transcendental"), ("recip", FLOATS, "transcendental"))
# a reduction of the last (axis 1) or first (axis 0) axis; whether the tile form takes a tmp_tile
REDUCTIONS = (("row_sum", 1, True), ("row_max", 1, True), ("row_min", 1, True),
              ("col_sum", 0, True), ("col_max", 0, False), ("col_min", 0, False))
# each row (row_expand_<f>) or column (col_expand_<f>) combined with one element of a vector:
# f, dtypes, cost class, the axes it has
EXPANDS = (("add", NUMERIC, "simple", ("row", "col")), ("sub", NUMERIC, "simple", ("row", "col")),
           ("mul", NUMERIC, "simple", ("row", "col")), ("div", DIVIDES, "divide", ("row", "col")),
           ("expdif", FLOATS, "exp_difference", ("row",)))


def scalar_form(name: str) -> str:
    """The tile-scalar op of a binary family: add -> adds."""
    return name + "s"


def unify_families() -> None:
    """``pl.<name>`` for every family row: tile or tensor by the operands, scalar forms by the rhs."""
    for name, _, _ in BINARY:
        s = scalar_form(name)
        unify(name, tile=f"tile.{name}", tile_scalar=f"tile.{s}", tensor=f"tensor.{name}", tensor_scalar=f"tensor.{s}")
        unify(s, tile_scalar=f"tile.{s}", tensor_scalar=f"tensor.{s}")
    for name in (*(u for u, _, _ in UNARY), *(r for r, _, _ in REDUCTIONS)):
        unify(name, tile=f"tile.{name}", tensor=f"tensor.{name}")
    for f, _, _, axes in EXPANDS:
        for axis in axes:
            unify(f"{axis}_expand_{f}", tile=f"tile.{axis}_expand_{f}", tensor=f"tensor.{axis}_expand_{f}")
