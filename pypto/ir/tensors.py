"""Which GM tensor each tensor-typed name of a function is. Tensors are never copied on
chip: a store's result, a loop's carried tensor and an if's result are the tensor they
come from, under a new SSA name.

    out_1 = pl.tile.store(t, [0, 0], out)          # out_1 -> out
    for i, (o,) in pl.range(4, init_values=(out,)):   # o -> out, and the result -> out
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

from pypto.ir import nodes as n
from pypto.ir.ops import argument, lookup
from pypto.ir.types import TensorType


def tensor_roots(fn: n.Function, outer: dict[str, str] | None = None) -> dict[str, str]:
    """Tensor name -> the name it is another SSA name of (a parameter, or a tensor the
    function computes at tensor level). ``outer`` seeds names bound outside ``fn``'s body.
    A name an if binds to different tensors on its two branches has no entry."""
    roots: dict[str, str] = {p.name: p.name for p in fn.params if isinstance(p.type, TensorType)}
    roots.update(outer or {})
    _block(fn.body, roots)
    return roots


def block_roots(body, outer: dict[str, str]) -> dict[str, str]:
    """``tensor_roots`` for a block whose free tensor names are ``outer``'s keys."""
    roots = dict(outer)
    _block(body, roots)
    return roots


def _root(e, roots):
    return roots.get(e.name) if isinstance(e, n.Var) else None


def _block(body, roots: dict) -> None:
    for stmt in body:
        if isinstance(stmt, n.Assign) and isinstance(stmt.type, TensorType):
            value = stmt.value
            if isinstance(value, n.Var):
                root = _root(value, roots)
            elif isinstance(value, n.Call) and lookup(value.op).writes_operand is not None:
                op = lookup(value.op)
                args = dict(zip((p.name for p in op.params), value.args))
                root = _root(args[op.writes_operand], roots)
            else:
                root = stmt.target  # a tensor computed here is its own
            if root is not None:
                roots[stmt.target] = root
        elif isinstance(stmt, n.LOOPS):
            for a in stmt.iter_args:
                if isinstance(a.type, TensorType) and _root(a.init, roots) is not None:
                    roots[a.name] = _root(a.init, roots)
            _block(stmt.body, roots)
            yields = stmt.body[-1].values if stmt.body and isinstance(stmt.body[-1], n.Yield) else ()
            for a, b, y in zip(stmt.iter_args, stmt.results, yields):
                if a.name in roots and _root(y, roots) == roots[a.name]:
                    roots[b.name] = roots[a.name]
                else:  # the loop hands on another tensor: no one tensor throughout
                    roots.pop(a.name, None)
        elif isinstance(stmt, n.If):
            _block(stmt.then_body, roots)
            _block(stmt.else_body, roots)
            yields = [body[-1].values for body in (stmt.then_body, stmt.else_body)
                      if body and isinstance(body[-1], n.Yield)]
            for k, b in enumerate(stmt.results):
                if isinstance(b.type, TensorType):
                    found = {_root(values[k], roots) for values in yields}
                    if len(found) == 1 and None not in found:
                        roots[b.name] = found.pop()
        elif isinstance(stmt, n.BLOCKS):
            _block(stmt.body, roots)


# ops whose result is (a part of) their operand ``x`` under another shape: writing it writes x
VIEWS = frozenset({"tensor.slice", "tensor.transpose", "tensor.reshape", "tensor.set_validshape", "tensor.aiv_shard"})


class Sources:
    """Which tensors each tensor-typed name of a function may be, on some path: unlike
    ``tensor_roots`` (the one tensor a name is on every path), an if's result may be either
    branch's value, a loop's carried value its init or whatever the body hands on, and a
    window is a view of the tensor it slices. ``leaves`` are the tensors with no source of
    their own: parameters, and tensors the function computes."""

    def __init__(self, fn: n.Function, returned: Callable[[str], int | None] = lambda callee: None):
        # returned(callee): the index of the parameter a kernel returns (it returns the
        # tensor it was handed to write), or None
        self._types = n.symbols(fn)
        self._edges: dict[str, set[str]] = {}
        self._returned = returned
        for stmt in n.walk_stmts(fn.body):
            if isinstance(stmt, n.Assign):
                self._add(stmt.target, self._source(stmt.value))
            elif isinstance(stmt, n.LOOPS):
                for a, y in itertools.zip_longest(stmt.iter_args, _yielded(stmt.body)):
                    if a is not None:
                        self._add(a.name, a.init)
                        self._add(a.name, y)  # the next iteration sees what the body leaves
                for a, b in zip(stmt.iter_args, stmt.results):
                    self._add(b.name, n.Var(a.name))
            elif isinstance(stmt, n.If):
                for body in (stmt.then_body, stmt.else_body):
                    for b, y in zip(stmt.results, _yielded(body)):
                        self._add(b.name, y)

    def _source(self, value):
        if isinstance(value, n.Call):
            op = lookup(value.op)
            key = "x" if op.name in VIEWS else op.writes_operand
            return argument(value, key) if key is not None else None
        if isinstance(value, n.FuncCall):
            k = self._returned(value.callee)
            return value.args[k] if k is not None else None
        return value

    def _add(self, name: str, e) -> None:
        if isinstance(e, n.Var) and isinstance(self._types.get(e.name), TensorType):
            self._edges.setdefault(name, set()).add(e.name)

    def leaves(self, name: str) -> frozenset[str]:
        out, seen, todo = set(), set(), [name]
        while todo:
            x = todo.pop()
            if x in seen:
                continue
            seen.add(x)
            more = self._edges.get(x, set()) - {x}
            if not more:
                out.add(x)
            todo.extend(more)
        return frozenset(out)


def _yielded(body) -> tuple:
    return body[-1].values if body and isinstance(body[-1], n.Yield) else ()
