"""One element of a tensor or a tile, read or written by a core's scalar unit (or, in an
orchestration, by the host): ``tensor.read`` / ``tensor.write`` address GM, ``tile.read`` /
``tile.write`` a Vec tile in the unified buffer. A write of a tensor updates it in place;
a write of a tile gives the tile with the element replaced, and written as a statement it
rebinds the tile's name (the reference's ``pl.write(tile, [i, j], v)``)."""

from __future__ import annotations

from pypto.backend import MemorySpace as M
from pypto.backend import SoC
from pypto.errors import TypeCheckError
from pypto.ir.nodes import Const
from pypto.ir.ops.registry import Kind, OpArgs, register, unify
from pypto.ir.ops.type_rules import fail
from pypto.ir.ops.registry import ParamSpec as P
from pypto.ir.types import ScalarType, TensorType, TileType, type_name


def _indices(op: str, what: str, shape, indices) -> None:
    """One index per axis, each constant one inside its extent."""
    level = op.split(".")[0]
    if len(indices) != len(shape):
        raise TypeCheckError(f"{op} takes one index per axis of the {what}: {len(shape)}, not {len(indices)}",
                             hint=f"pl.{level}.{op.split('.')[1]}(x, [{', '.join('0' for _ in shape)}]"
                                  f"{', value' if op.endswith('write') else ''})")
    for k, (i, extent) in enumerate(zip(indices, shape)):
        if isinstance(i, Const) and not 0 <= i.value < extent:
            raise TypeCheckError(f"{op}: index {i.value} on axis {k} is outside the {what}'s {extent}",
                                 hint=f"an index in 0..{extent - 1}")


def _value(op: str, dtype, a: OpArgs) -> None:
    """The value a write stores: a scalar, converted to the element's dtype — but never a
    float into integers (that would drop the fraction silently)."""
    value, vt = a["value"], a.type("value")
    if vt is not None and not isinstance(vt, ScalarType):
        raise fail(op, "a scalar value", type_name(vt), "write one element: pl.read(...) or a scalar expression")
    is_float = isinstance(value, Const) and isinstance(value.value, float) or \
        isinstance(vt, ScalarType) and vt.dtype.is_float
    if is_float and not dtype.is_float:
        raise fail(op, f"an integer value for a {dtype.name} element", "a float",
                   "convert it first: pl.cast(value, pl." + dtype.name + ")")


def _tensor(op: str, a: OpArgs) -> TensorType:
    t = a.type("tensor")
    if not isinstance(t, TensorType):
        raise fail(op, "a tensor", type_name(t), "pl.read / pl.write take a tile too (pl.tile.read)")
    return t


def _tile(op: str, a: OpArgs) -> TileType:
    t = a.type("tile")
    if t.space is not None and t.space is not M.Vec:
        raise fail(op, "a Vec tile (the scalar unit addresses the unified buffer)", f"a {t.space.name} tile",
                   "pl.move the tile to Vec first, or read the tensor it came from")
    return t


def _infer(a: OpArgs, soc: SoC) -> ScalarType | TensorType | TileType:
    """A read gives the element's scalar; a write gives the tensor (or tile) it updates."""
    level = a.op.split(".")[0]  # "tensor" or "tile": also the operand's name
    t = _tensor(a.op, a) if level == "tensor" else _tile(a.op, a)
    _indices(a.op, level, t.shape, a["indices"])
    if a.op.endswith("read"):
        return ScalarType(t.dtype)
    _value(a.op, t.dtype, a)
    return t


# the ops a kernel's scalar unit runs on GM itself: tensor ops that stay in a kernel
GM_ELEMENTS = frozenset({"tensor.read", "tensor.write"})
_INDICES = P("indices", Kind.INDEX_LIST, bare=True)

register("tensor.read", [P("tensor", Kind.TENSOR), _INDICES], _infer,
         doc="one element: read by the orchestrator once the tensor's producer has finished, or in a kernel by "
             "the core's scalar unit from GM (a runtime value for loop bounds, branches and valid shapes)",
         plane="both", scalar=True)
register("tensor.write", [P("tensor", Kind.TENSOR), _INDICES, P("value", Kind.SCALAR)], _infer,
         doc="the tensor with one element set to value, in place: by the orchestrator once every task before that "
             "touches the element has finished, or in a kernel by the core's scalar unit into GM",
         writes_operand="tensor", plane="both")
register("tile.read", [P("tile", Kind.TILE, spaces=(M.Vec,)), _INDICES], _infer,
         doc="one element of a Vec tile, read by the scalar unit once the pipes have written it (a runtime value "
             "for offsets, loop bounds and branches)", mnemonic="SGETVAL", scalar=True)
register("tile.write", [P("tile", Kind.TILE, spaces=(M.Vec,)), _INDICES, P("value", Kind.SCALAR)], _infer,
         doc="the tile with one element set to value (converted to the tile's dtype), written by the scalar unit "
             "in the tile's buffer", in_place=True, mnemonic="SSETVAL", updates="tile")
unify("read", tensor="tensor.read", tile="tile.read")
unify("write", tensor="tensor.write", tile="tile.write")


def _debug_print(a: OpArgs, soc: SoC):
    if not isinstance(a["label"], str):
        raise fail("tile.debug_print", "a string label", type(a["label"]).__name__, 'pl.debug_print(t, "after exp")')
    return None


# the scalar unit reads the tile where the statement runs, once the pipes have written it
# (on a2a3sim at that simulated cycle): what a print on the core would see
register("tile.debug_print", [P("tile", Kind.TILE, spaces=(M.Vec,)), P("label", Kind.STR, default="")], _debug_print,
         doc="print the tile's valid region where this statement runs (on a2a3sim with the simulated cycle and "
             "core), with the source line; RunReport.prints keeps them", mnemonic="SPRINT", effect=True)
unify("debug_print", tile="tile.debug_print")
