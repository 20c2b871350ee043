"""The cross-core ring a mixed kernel's crossings move through: ``system.reserve_buffer``
reserves ``size`` bytes of the consuming vector core's UB, from ``base``, for the ring's
``slot_num`` slots of the GM buffer ``name`` (the crossing's, which the orchestration
creates). The planners allocate the kernel's tiles above it; the code generator turns the
cube's store into that buffer and the vector core's load from it into a push and a pop:
the producer waits for a free slot, the consumer for a ready one."""

from __future__ import annotations

from pypto.backend import SoC
from pypto.errors import TypeCheckError
from pypto.ir.ops.registry import Kind, OpArgs, ParamSpec as P, register
from pypto.ir.types import DataType, ScalarType


AUTO = -1  # base=pl.AUTO: the planner places the reservation (after the ones before it)


def _reserve(a: OpArgs, soc: SoC) -> ScalarType:
    if a["size"] <= 0 or a["slot_num"] < 1 or a["base"] < AUTO:
        raise TypeCheckError(f"system.reserve_buffer: size {a['size']}, base {a['base']} and slot_num "
                             f"{a['slot_num']} must be positive (base may be 0)")
    return ScalarType(DataType.INT32)


register("system.reserve_buffer", [P("name", Kind.STR), P("size", Kind.INT), P("base", Kind.INT, default=0, show=True),
                                   P("slot_num", Kind.INT, default=1)], _reserve,
         doc="reserve the vector cores' UB bytes [base, base + size) for the cross-core ring of GM buffer 'name'",
         scalar=True)


def reserved(body) -> dict:
    """Buffer name -> (base, size, slot_num) of each ring a kernel body reserves; a base
    left to the planner (``pl.AUTO``) follows the reservations before it, 512-byte aligned."""
    from pypto.ir import nodes as n
    from pypto.ir.ops.registry import argument

    out = {}
    top = 0
    for s in n.walk_stmts(body):
        call = getattr(s, "value", None)
        if isinstance(call, n.Call) and call.op == "system.reserve_buffer":
            base, size, slots = (argument(call, k) for k in ("base", "size", "slot_num"))
            if base == AUTO:
                base = -(-top // 512) * 512
            out[argument(call, "name")] = (base, size, slots)
            top = max(top, base + size)
    return out
