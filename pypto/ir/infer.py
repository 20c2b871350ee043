"""Type inference for values: scalar expressions and op calls, given the types of names.

One entry point per value kind, shared by the front end, the printer (to decide whether
an annotation says anything new), the verifier and the passes.
"""

from __future__ import annotations

from pypto.errors import TypeCheckError
from pypto.ir import nodes as n
from pypto.ir.ops import infer_type, lookup
from pypto.ir.ops.registry import OpArgs
from pypto.ir.types import DataType, ScalarType
from pypto.backend import SoC

BOOL = ScalarType(DataType.BOOL)
_PREDICATES = ("==", "!=", "<", "<=", ">", ">=", "and", "or")


def scalar_type(e, types) -> ScalarType:
    """INDEX for integer arithmetic, BOOL for predicates, else the float operand's type."""
    if isinstance(e, n.Var):
        t = types.get(e.name)
        if not isinstance(t, ScalarType):
            raise TypeCheckError(f"'{e.name}' is not a scalar here")
        return t
    if isinstance(e, n.Const):
        if e.value is None:  # no task: what a TaskId carry starts from
            return ScalarType(DataType.TASK_ID)
        if isinstance(e.value, bool):
            return BOOL
        return ScalarType(DataType.FP32 if isinstance(e.value, float) else DataType.INDEX)
    if isinstance(e, n.BinOp):
        lhs, rhs = scalar_type(e.lhs, types), scalar_type(e.rhs, types)
        if DataType.TASK_ID in (lhs.dtype, rhs.dtype):
            raise TypeCheckError("a TaskId is not a number: it only names a task, for deps=[...]",
                                 hint="compare and compute with the loop index or a counter instead")
        if e.op in _PREDICATES:
            return BOOL
        if e.op in ("<<", ">>") and (lhs.dtype.is_float or rhs.dtype.is_float):
            raise TypeCheckError(f"'{e.op}' shifts integers, and an operand is {(lhs if lhs.dtype.is_float else rhs).dtype.name}",
                                 hint="shift an integer: a loop index, an INT32 scalar parameter or a constant")
        if lhs.dtype.is_float:
            return lhs
        if rhs.dtype.is_float:
            return rhs
        if lhs.dtype.is_bool and rhs.dtype.is_bool:  # True + True is 2; min(True, False) is a bool
            return lhs if e.op in ("min", "max") else ScalarType(DataType.INDEX)
        return rhs if lhs.dtype.is_bool else lhs  # arithmetic on a bool is on the int it is
    if isinstance(e, n.UnaryOp):
        operand = scalar_type(e.operand, types)
        if operand.dtype is DataType.TASK_ID:
            raise TypeCheckError("a TaskId is not a number: it only names a task, for deps=[...]",
                                 hint="compare and compute with the loop index or a counter instead")
        return BOOL if e.op == "not" else operand
    raise TypeError(f"not an expression: {e!r}")


def op_args(call: n.Call, types) -> OpArgs:
    op = lookup(call.op)
    # a call built before a parameter was added to its op holds fewer: the rest are defaults
    values = {p.name: call.args[k] if k < len(call.args) else p.default for k, p in enumerate(op.params)}
    kinds = {}
    for name, v in values.items():
        if isinstance(v, n.Var):
            kinds[name] = types.get(v.name)
    return OpArgs(call.op, values, kinds)


def call_type(call: n.Call, types, soc: SoC):
    return infer_type(lookup(call.op), op_args(call, types), soc)
