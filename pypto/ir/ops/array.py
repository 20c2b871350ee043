"""Array ops: an orchestration's small arrays of scalars (TaskIds for ``deps=``, integers),
updated functionally — ``arr[i] = v`` is ``arr = array.set(arr, i, v)``, so a loop carries
the array like any value."""

from __future__ import annotations

from pypto.backend import SoC
from pypto.errors import TypeCheckError
from pypto.ir.ops.registry import Kind, OpArgs, register
from pypto.ir.ops.registry import ParamSpec as P
from pypto.ir.types import ArrayType, DataType, ScalarType, type_name


def _array(a: OpArgs, name: str) -> ArrayType:
    t = a.type(name)
    if not isinstance(t, ArrayType):
        raise TypeCheckError(f"{a.op}: '{name}' is an array (pl.array.create), not {type_name(t)}")
    return t


def _const_type(e):
    from pypto.ir.infer import scalar_type

    try:
        return scalar_type(e, {})
    except Exception:  # a name: its type is in the call's operand types
        return None


def _create(a: OpArgs, soc: SoC) -> ArrayType:
    size, dtype = a["size"], a["dtype"]
    if size < 1:
        raise TypeCheckError(f"pl.array.create's size must be a positive int, not {size}",
                             hint="pl.array.create(n, pl.TASK_ID), n >= 1: one slot per task it keeps")
    if not (dtype is DataType.TASK_ID or dtype.is_int):
        raise TypeCheckError(f"pl.array.create holds TaskIds or integers, not {dtype.name}",
                             hint="pl.array.create(n, pl.TASK_ID)")
    return ArrayType(size, dtype)


def _get(a: OpArgs, soc: SoC) -> ScalarType:
    return ScalarType(_array(a, "array").dtype)


def _set(a: OpArgs, soc: SoC) -> ArrayType:
    t = _array(a, "array")
    value = a.type("value") or _const_type(a["value"])
    if t.dtype is DataType.TASK_ID and value != ScalarType(DataType.TASK_ID):
        raise TypeCheckError(f"an Array of TaskIds holds TaskIds, not {type_name(value)}",
                             hint="arr[i] = tid, with tid from 'with pl.at(...) as tid'")
    return t


# In a kernel an array of integers lives on the scalar unit's stack; TaskIds are the host's.
register("array.create", [P("size", Kind.INT), P("dtype", Kind.DTYPE)], _create,
         doc="an array of ``size`` scalars (TaskIds: None, no task; integers: 0)", plane="both")
register("array.get", [P("array", Kind.ARRAY), P("index", Kind.SCALAR, integer=True)], _get,
         doc="one element", plane="both", scalar=True)
register("array.set", [P("array", Kind.ARRAY), P("index", Kind.SCALAR, integer=True), P("value", Kind.SCALAR)],
         _set, doc="the array with one element replaced", plane="both")
