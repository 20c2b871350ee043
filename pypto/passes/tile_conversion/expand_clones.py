"""``tensor.expand_clone(input, target)`` as the stores it is: before ConvertTensorToTileOps,
each becomes a nest of loops, one per axis ``input`` has extent 1 on, that assembles
``input`` into ``target`` at every position along those axes (the target carried through
the loops) — so the converter sees only assembles, its sinks.

    y_1 = pl.tensor.expand_clone(x, y)      # x: [1, 8, 32], y: [4, 8, 32]
->  for i in pl.range(4, init_values=(y,)):
        y_2 = pl.tensor.assemble(y_1, x, [i, 0, 0])
        ... yield y_2
"""

from __future__ import annotations

import attrs

from pypto.ir import nodes as n
from pypto.ir.ops import op_call
from pypto.ir.types import INDEX


def expand_clones(fn: n.Function) -> n.Function:
    if not any(_clone(s) for s in n.walk_stmts(fn.body)):
        return fn
    used = set(n.symbols(fn)) | {s.var for s in n.walk_stmts(fn.body) if isinstance(s, n.For)}
    types = n.symbols(fn)
    return attrs.evolve(fn, body=_block(fn.body, used, types))


def _clone(stmt) -> n.Call | None:
    value = getattr(stmt, "value", None)
    return value if isinstance(value, n.Call) and value.op == "tensor.expand_clone" else None


def _block(body, used: set, types: dict) -> tuple:
    out = []
    for stmt in body:
        call = _clone(stmt)
        if call is not None:
            out.extend(_expand(stmt, call, used, types))
            continue
        blocks = n.stmt_children(stmt)
        if isinstance(stmt, n.LOOPS):
            stmt = attrs.evolve(stmt, body=_block(stmt.body, used, types))
        elif isinstance(stmt, n.If):
            stmt = attrs.evolve(stmt, then_body=_block(stmt.then_body, used, types),
                                else_body=_block(stmt.else_body, used, types))
        elif blocks:
            stmt = attrs.evolve(stmt, body=_block(stmt.body, used, types))
        out.append(stmt)
    return tuple(out)


def _expand(stmt, call: n.Call, used: set, types: dict) -> list:
    x, target = call.args
    xs, ts = types[x.name].shape, types[target.name].shape
    ttype = types[target.name]
    axes = [k for k, (d, t) in enumerate(zip(xs, ts)) if d != t]
    result = stmt.target if isinstance(stmt, n.Assign) else n.fresh_name(target.name, used)
    if not axes:
        return [n.Assign(result, ttype, op_call("tensor.assemble", target=target, source=x,
                                                offset=tuple(n.Const(0) for _ in ts)), span=stmt.span)]
    loop_vars = [n.fresh_name("i", used) for _ in axes]
    offsets = [n.Const(0)] * len(ts)
    for k, v in zip(axes, loop_vars):
        offsets[k] = n.Var(v)

    def nest(depth: int, carried: n.Var, bound: str) -> n.For:
        it = n.fresh_name(target.name, used)
        if depth == len(axes) - 1:
            written = n.fresh_name(target.name, used)
            body = (n.Assign(written, ttype, op_call("tensor.assemble", target=n.Var(it), source=x,
                                                     offset=tuple(offsets)), span=stmt.span),
                    n.Yield((n.Var(written),), span=stmt.span))
        else:
            inner = n.fresh_name(target.name, used)
            body = (nest(depth + 1, n.Var(it), inner), n.Yield((n.Var(inner),), span=stmt.span))
        return n.For(loop_vars[depth], n.Const(0), n.Const(ts[axes[depth]]), n.Const(1), body,
                     iter_args=(n.IterArg(it, ttype, carried),), results=(n.Binding(bound, ttype),), span=stmt.span)

    for v in loop_vars:
        types[v] = INDEX
    return [nest(0, target, result)]
