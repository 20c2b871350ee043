"""Static bounds, checked over a converted function: a load, a store, a window or an
assemble whose offset the loop bounds take out of the tensor (a load at ``i * 64`` for
``i`` up to 8), on the iterations the enclosing conditions let through to it
(``if i < 4:``). What depends on a runtime value is left to the run, which checks every
access.

The walk keeps what ``reach`` evaluates with: the values of loop indices with constant
bounds (and of an SPMD scope's block index), the scalar names bound to index expressions,
and the conditions of the branches around the statement.
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from pypto.errors import OutOfBoundsError
from pypto.ir import nodes as n
from pypto.ir.affine import interval
from pypto.ir.ops import argument
from pypto.ir.types import ScalarType
from pypto.lang.checks.permissions import with_notes
from pypto.lang.checks.reach import Unknown, reach

# op -> (the tensor it addresses, its offsets)
ADDRESSED = {"tile.load": ("tensor", "offsets"), "tile.store": ("output_tensor", "offsets"),
             "tensor.slice": ("x", "offset"), "tensor.assemble": ("target", "offset")}


@attrs.frozen
class _Where:
    """What is known of the indices at a statement."""

    ranges: Mapping = attrs.Factory(dict)  # loop index -> (first, last)
    domains: Mapping = attrs.Factory(dict)  # loop index -> its values
    guards: tuple = ()  # (cond, holds) of the branches around it

    def looping(self, var: str, values: range) -> _Where:
        return attrs.evolve(self, ranges={**self.ranges, var: (values[0], values[-1])},
                            domains={**self.domains, var: values})

    def under(self, cond, holds: bool) -> _Where:
        return attrs.evolve(self, guards=(*self.guards, (cond, holds)))


def check_bounds(fn: n.Function, names: Mapping[str, str], sites: Mapping | None = None) -> None:
    """``names``: SSA name -> the Python name it binds, for the message's witness;
    ``sites``: id(call) -> its ``CallSite`` (the inline calls it came through)."""
    types = n.symbols(fn)
    defs = {s.target: s.value for s in n.walk_stmts(fn.body) if isinstance(s, n.Assign)
            and isinstance(s.type, ScalarType) and isinstance(s.value, (n.Const, n.Var, n.BinOp, n.UnaryOp))}
    # what a slice's producer filled (its valid_shape=): all an assemble of it writes
    valid = {s.target: argument(s.value, "valid_shape") for s in n.walk_stmts(fn.body)
             if isinstance(s, n.Assign) and isinstance(s.value, n.Call) and s.value.op == "tensor.slice"
             and argument(s.value, "valid_shape") is not None}
    types = _Types(types, valid)
    try:
        _block(fn.body, _Where(), types, defs, names)
    except _Fault as fault:
        site = (sites or {}).get(id(fault.call))
        raise with_notes(fault.err, site if site is not None and site.call is fault.call else None) from None


class _Types(dict):
    """Every name's type, and the valid region of each slice that says one."""

    def __init__(self, types, valid):
        super().__init__(types)
        self.valid = valid


class _Fault(Exception):
    def __init__(self, err, call):
        self.err, self.call = err, call


def _block(body, where: _Where, types, defs, names) -> None:
    for stmt in body:
        value = getattr(stmt, "value", None)
        if isinstance(value, n.Call) and value.op in ADDRESSED:
            _check(stmt, value, where, types, defs, names)
        if isinstance(stmt, n.For):
            inner = where
            if all(isinstance(e, n.Const) for e in (stmt.start, stmt.stop, stmt.step)):
                values = range(stmt.start.value, stmt.stop.value, stmt.step.value)
                if values:
                    inner = where.looping(stmt.var, values)
            _block(stmt.body, inner, types, defs, names)
        elif isinstance(stmt, n.While):  # its trips are decided as it runs, as a loop's of runtime bounds
            _block(stmt.body, where, types, defs, names)
        elif isinstance(stmt, n.If):
            _block(stmt.then_body, where.under(stmt.cond, True), types, defs, names)
            _block(stmt.else_body, where.under(stmt.cond, False), types, defs, names)
        elif isinstance(stmt, n.Scope) and isinstance(stmt.blocks, n.Const):
            # an SPMD scope binds its block index first (``pl.tile.get_block_idx()``)
            first = stmt.body[0] if stmt.body else None
            inner = where
            if isinstance(first, n.Assign) and isinstance(first.value, n.Call) \
                    and first.value.op == "tile.get_block_idx":
                inner = where.looping(first.target, range(stmt.blocks.value))
            _block(stmt.body, inner, types, defs, names)
        elif isinstance(stmt, n.BLOCKS):
            _block(stmt.body, where, types, defs, names)


def _extents(call: n.Call, types) -> list:
    """How far the access reaches along each axis from its offset (None: known at run time)."""
    def static(shape):
        return [c.value if isinstance(c, n.Const) else None for c in shape]

    if call.op == "tile.load":
        return static(argument(call, "valid_shape") or argument(call, "shapes"))
    if call.op == "tensor.slice":  # a clamped window may run past the end: only its offset must be inside
        if argument(call, "clamp"):
            return [0 for _ in argument(call, "shape")]
        # past its valid region the window's producer filled nothing: only that part must be inside
        return static(argument(call, "valid_shape") or argument(call, "shape"))
    source = argument(call, "tile" if call.op == "tile.store" else "source").name
    src = types[source]
    moved = getattr(src, "valid_shape", None) or types.valid.get(source)
    reach = list(src.shape) if moved is None else static(moved)
    rank = len(types[argument(call, ADDRESSED[call.op][0]).name].shape)
    return [1] * (rank - len(reach)) + reach  # a source of lower rank, led by 1s


def _check(stmt, call: n.Call, where: _Where, types, defs, names) -> None:
    tensor_key, offsets_key = ADDRESSED[call.op]
    tensor = argument(call, tensor_key)
    if not isinstance(tensor, n.Var):
        return
    shape = types[tensor.name].shape
    for axis, (off, extent, dim) in enumerate(zip(argument(call, offsets_key), _extents(call, types), shape)):
        if extent is None or isinstance(off, n.Const) or not isinstance(dim, int):  # known when it runs
            continue
        span = interval(off, where.ranges)
        if span is not None and span[0] >= 0 and span[1] + extent <= dim:
            continue  # in range on every iteration, reached or not
        witness = None
        try:
            found = reach(off, where.guards, where.domains, defs)
        except Unknown:
            if where.guards or span is None:
                continue  # under a condition decided at run time: checked when it runs
            lo, hi = span
        else:
            if found is None:
                continue  # no iteration gets past the enclosing conditions to this op
            lo, lo_at, hi, hi_at = found
            witness = hi_at if hi + extent > dim else lo_at
        if lo < 0 or hi + extent > dim:
            bad = hi if hi + extent > dim else lo
            at = ", ".join(f"{names.get(k, k)} = {v}" for k, v in (witness or {}).items())
            raise _Fault(OutOfBoundsError(
                f"{call.op} region on axis {axis} reaches [{bad}, {bad + extent}) but the tensor's axis is [0, {dim})"
                + (f" (when {at})" if at else ""),
                span=call.span or stmt.span,
                hint="check the loop bounds against the tensor shape (the offset spans "
                     f"{lo}..{hi} over the loop" + (", on the iterations that reach it)" if where.guards else ")")), call)
