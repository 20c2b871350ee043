"""A kernel's ``tensor.assemble`` of a source of lower rank than its target, as the window it
writes: the source reshaped to its shape led by 1s (ConvertTensorToTileOps then computes the
sink window by window like any other).

    out_1 = pl.tensor.assemble(out, t, [b, 0, 0])      t_nd = pl.tensor.reshape(t, [1, 4, 64])
      # t: [4, 64], out: [2, 4, 64]               ->    out_1 = pl.tensor.assemble(out, t_nd, [b, 0, 0])
"""

from __future__ import annotations

import attrs

from pypto.ir import nodes as n
from pypto.ir.ops import argument, op_call, with_args
from pypto.ir.ops.tensor import assembled_shape
from pypto.ir.types import TensorType


def pad_assembles(fn: n.Function) -> n.Function:
    types = n.symbols(fn)
    if not any(_lower_rank(s, types) for s in n.walk_stmts(fn.body)):
        return fn
    used = set(types) | {s.var for s in n.walk_stmts(fn.body) if isinstance(s, n.For)}
    return attrs.evolve(fn, body=_block(fn.body, types, used))


def _lower_rank(stmt, types) -> bool:
    value = getattr(stmt, "value", None)
    if not (isinstance(value, n.Call) and value.op == "tensor.assemble"):
        return False
    target, source = (types.get(getattr(argument(value, k), "name", None)) for k in ("target", "source"))
    return isinstance(target, TensorType) and isinstance(source, TensorType) and len(source.shape) < len(target.shape)


def _block(body, types: dict, used: set) -> tuple:
    out = []
    for stmt in body:
        if _lower_rank(stmt, types):
            call = stmt.value
            source = argument(call, "source")
            t = types[source.name]
            shape = assembled_shape(types[argument(call, "target").name], t)
            name = n.fresh_name(f"{source.name}_nd", used)
            used.add(name)
            out.append(n.Assign(name, TensorType(shape, t.dtype),
                                op_call("tensor.reshape", x=source, shape=tuple(n.Const(d) for d in shape)),
                                span=stmt.span))
            out.append(attrs.evolve(stmt, value=with_args(call, source=n.Var(name))))
            continue
        if isinstance(stmt, n.If):
            stmt = attrs.evolve(stmt, then_body=_block(stmt.then_body, types, used),
                                else_body=_block(stmt.else_body, types, used))
        elif n.stmt_children(stmt):
            stmt = attrs.evolve(stmt, body=_block(stmt.body, types, used))
        out.append(stmt)
    return tuple(out)
