"""A kernel that returns a tensor it computed (``return pl.add(x, y)``, an L1 gather) as the
destination-passing kernel it is on chip: the value is stored into a new ``pl.Out``
parameter (``ret_out``), which the kernel returns, and each call of it passes a tensor its
caller allocates there — as the reference's ConvertTensorToTileOps does.

    def kernel(self, x) -> pl.Tensor[[16, 128], pl.FP32]:       def kernel(self, x, ret_out: pl.Out[...]):
        y = pl.add(x, x)                                    ->       y = pl.add(x, x)
        return y                                                    ret_store = pl.assemble(ret_out, y, [0, 0])
                                                                    return ret_store
    r = self.kernel(x)                                          ret_out = pl.create_tensor([16, 128], dtype=pl.FP32)
                                                                r = self.kernel(x, ret_out)
"""

from __future__ import annotations

import attrs

from pypto.ir import nodes as n
from pypto.ir.ops import op_call
from pypto.ir.tensors import tensor_roots
from pypto.ir.types import ParamDirection, TensorType


def return_outputs(program: n.Program, kernels) -> n.Program:
    """``kernels``: the names of the functions to rewrite (InCore ones holding tensor code);
    only those something calls (an entry kernel's arguments are the user's: it keeps them)."""
    called = {c.callee for fn in program.functions for s in n.walk_stmts(fn.body)
              if (c := _call_of(s)) is not None}
    added: dict[str, tuple[n.Param, ...]] = {}
    functions = []
    for fn in program.functions:
        if fn.name in kernels and fn.name in called:
            fn, params = _kernel(fn)
            if params:
                added[fn.name] = params
        functions.append(fn)
    if not added:
        return program
    return attrs.evolve(program, functions=tuple(pass_buffers(fn, added) for fn in functions))


def _kernel(fn: n.Function) -> tuple[n.Function, tuple]:
    last = fn.body[-1] if fn.body else None
    if not isinstance(last, n.Return):
        return fn, ()
    roots = tensor_roots(fn)
    params = {p.name for p in fn.params}
    used = set(n.symbols(fn)) | params
    out_params, stmts, values = [], [], []
    for k, v in enumerate(last.values):
        t = fn.returns[k] if k < len(fn.returns) else None
        if not (isinstance(v, n.Var) and isinstance(t, TensorType) and roots.get(v.name) not in params):
            values.append(v)
            continue
        out = n.fresh_name("ret_out", used)
        store = n.fresh_name("ret_store", used)
        out_params.append(n.Param(out, t, ParamDirection.Out))
        stmts.append(n.Assign(store, t, op_call("tensor.assemble", target=n.Var(out), source=v,
                                                 offset=tuple(n.Const(0) for _ in t.shape)), span=last.span))
        values.append(n.Var(store))
    if not out_params:
        return fn, ()
    body = (*fn.body[:-1], *stmts, attrs.evolve(last, values=tuple(values)))
    return attrs.evolve(fn, params=(*fn.params, *out_params), body=body), tuple(out_params)


def pass_buffers(fn: n.Function, added: dict) -> n.Function:
    """``fn`` with each call of a kernel in ``added`` (name -> the Out parameters appended to
    it) passing a tensor it creates, just before the call, for each."""
    if not any(getattr(_call_of(s), "callee", None) in added for s in n.walk_stmts(fn.body)):
        return fn
    return attrs.evolve(fn, body=_block(fn.body, added, set(n.symbols(fn))))


def _call_of(stmt) -> n.FuncCall | None:
    value = getattr(stmt, "value", None)
    if isinstance(value, n.Submit):
        value = value.call
    return value if isinstance(value, n.FuncCall) else None


def _block(body, added: dict, used: set) -> tuple:
    out = []
    for stmt in body:
        call = _call_of(stmt)
        if call is not None and call.callee in added:
            extra = []
            for p in added[call.callee]:
                name = n.fresh_name(p.name, used)
                out.append(n.Assign(name, p.type, op_call("tensor.create", shape=tuple(map(n.as_expr, p.type.shape)),
                                                          dtype=p.type.dtype), span=stmt.span))
                extra.append(n.Var(name))
            spans = call.arg_spans
            new = attrs.evolve(call, args=(*call.args, *extra),
                               arg_spans=(*spans, *(None,) * len(extra)) if isinstance(spans, tuple) else spans)
            value = stmt.value
            stmt = attrs.evolve(stmt, value=attrs.evolve(value, call=new) if isinstance(value, n.Submit) else new)
        for field in ("body", "then_body", "else_body"):
            if hasattr(stmt, field):
                stmt = attrs.evolve(stmt, **{field: _block(getattr(stmt, field), added, used)})
        out.append(stmt)
    return tuple(out)
