"""A mixed scope's crossings: cube work whose result vector work reads, inside one
``pl.at``. On a2a3 a matmul's result reaches the vector cores only through GM, so each
crossing value is assembled into a GM buffer the orchestration creates for the scope, and
the vector work reads that buffer instead. The scope stays one kernel — its cube and
vector programs run together on one cluster, ordered by the cross-core flags sync
insertion places for the GM dependence — and one task.

    acc = pl.matmul(a, b)                  acc = pl.matmul(a, b)
    out[:] = pl.add(acc, bias)     ->      acc_gm_1 = pl.assemble(acc_gm, acc, [0, 0])
                                           out[:] = pl.add(acc_gm_1, bias)

``stage(body, types, fresh) -> (body, [(buffer name, TensorType)])``; the outliner makes
each buffer an Out parameter of the kernel and creates it in the orchestration.
"""

from __future__ import annotations

import attrs

from pypto.ir import nodes as n
from pypto.ir.ops import lookup, op_call
from pypto.ir.rewrite import substitute

# where a cube value may go without leaving the cube: into GM, on into the accumulator,
# or viewed (a slice of it is as much the cube's)
_STAYS = {("tensor.assemble", "source"), ("tensor.matmul_acc", "acc"), ("tensor.slice", "x"),
          # the cube's own operands are another matter (its chain lowering decides)
          ("tensor.matmul", "lhs"), ("tensor.matmul", "rhs"), ("tensor.matmul_acc", "lhs"),
          ("tensor.matmul_acc", "rhs")}


def stage(body: tuple, types: dict, fresh) -> tuple[tuple, list]:
    """``types``: the type of every name; ``fresh(base)``: a new name. The body with its
    crossings through GM, and the GM buffers they need."""
    buffers: list = []
    return tuple(_Stager(types, fresh, buffers).block(body, set(), {})), buffers


class _Stager:
    def __init__(self, types: dict, fresh, buffers: list):
        self.types, self.fresh, self.buffers = types, fresh, buffers

    def block(self, body, cube: set, subst: dict) -> list:
        return _block(self, body, cube, subst)

    def through_gm(self, name: str, at):
        """A GM buffer for cube value ``name`` and the statement that fills it."""
        t = self.types[name]
        buf, staged = self.fresh(f"{name}_gm"), self.fresh(f"{name}_gm")
        self.buffers.append((buf, t))
        assemble = n.Assign(staged, t, op_call("tensor.assemble", target=n.Var(buf), source=n.Var(name),
                                               offset=tuple(n.Const(0) for _ in t.shape)), span=at.span)
        return staged, assemble


def _block(st: _Stager, body, cube: set, subst: dict) -> list:
    subst = dict(subst)  # what this block stages holds from here to its end
    out = []
    for stmt in body:
        stmt = substitute(stmt, {k: n.Var(v) for k, v in subst.items()})
        if isinstance(stmt, n.For):
            for a in stmt.iter_args:
                if isinstance(a.init, n.Var) and a.init.name in cube:
                    cube.add(a.name)
            stmt = attrs.evolve(stmt, body=tuple(st.block(stmt.body, cube, subst)))
            yields = stmt.body[-1].values if stmt.body and isinstance(stmt.body[-1], n.Yield) else ()
            for b, v in zip(stmt.results, yields):
                if isinstance(v, n.Var) and v.name in cube:
                    cube.add(b.name)
            out.append(stmt)
            continue
        if isinstance(stmt, n.If):
            stmt = attrs.evolve(stmt, then_body=tuple(st.block(stmt.then_body, cube, subst)),
                                else_body=tuple(st.block(stmt.else_body, cube, subst)))
            for k, b in enumerate(stmt.results):
                if any(body and isinstance(body[-1], n.Yield) and isinstance(body[-1].values[k], n.Var)
                       and body[-1].values[k].name in cube for body in (stmt.then_body, stmt.else_body)):
                    cube.add(b.name)
            out.append(stmt)
            continue
        call = getattr(stmt, "value", None)
        if isinstance(call, n.Call):
            op = lookup(call.op)
            crossing = [a.name for p, a in zip(op.params, call.args)
                        if isinstance(a, n.Var) and a.name in cube and (op.name, p.name) not in _STAYS]
            for name in dict.fromkeys(crossing):
                staged, assemble = st.through_gm(name, stmt)
                out.append(assemble)
                subst[name] = staged
            if crossing:
                stmt = substitute(stmt, {k: n.Var(subst[k]) for k in crossing})
            target = getattr(stmt, "target", None)
            if target is not None and (op.windows is not None and op.windows.kind == "cube"
                                       or op.name == "tensor.slice" and call.args[0].name in cube):
                cube.add(target)
        out.append(stmt)
    return out
