"""Write permission in kernel source (a mixin of the call converter): what a store or an
assemble writes must not trace back to an input parameter (a plain ``pl.Tensor``, not
``pl.Out`` / ``pl.InOut``), through every SSA name derived from one — views, in-place
results, a name that is one tensor on one path and another on the next."""

from __future__ import annotations

import re

from pypto.errors import TypeCheckError
from pypto.ir import nodes as n
from pypto.ir.ops import lookup
from pypto.ir.types import TensorType


class Writes:
    def check_writable(self, value, node, what: str) -> None:
        """A kernel writes only the tensors its caller hands it to write: pl.Out / pl.InOut
        parameters, under whatever name they reach the write. (Dump text is read as
        printed: passes answer for what they produce.)"""
        if self.source.exact or not isinstance(value, n.Var):
            return
        name = next((k for k, v in self.env.items() if v == value.name), None)  # the user's name for it
        self.writes.append((value.name, name, node, what))
        self._check_write(value.name, name, node, what)

    def recheck_writes(self) -> None:
        for write in self.writes:
            self._check_write(*write)

    def _check_write(self, ssa: str, name: str | None, node, what: str) -> None:
        leaves = self.leaves(ssa)
        params = [self.inputs[x] for x in leaves if x in self.inputs]
        if not params:
            return
        param = params[0]
        hint = (f"declare it written: '{param}: pl.Out[pl.Tensor[...]]' (written only) or "
                f"'{param}: pl.InOut[pl.Tensor[...]]' (read and written)")
        if ssa in self.inputs or name == param and len(leaves) == 1:
            message = f"{what} the input parameter '{param}'"
        elif name is None:
            message = f"{what} {'' if len(leaves) == 1 else 'on some path '}the input parameter '{param}'"
        elif len(leaves) == 1:
            message = f"{what} '{name}', another name for the input parameter '{param}'"
        else:
            message = f"{what} '{name}', and on some path '{name}' is the input parameter '{param}'"
        raise self.error(TypeCheckError, node, message, hint=hint)

    def derive(self, ssa: str, value) -> None:
        """Record which tensors ``ssa`` may be when it is bound to ``value``."""
        if isinstance(value, n.Var):
            if isinstance(self.types.get(value.name), TensorType):
                self.sources.setdefault(ssa, set()).add(value.name)
        elif isinstance(value, n.Call):
            op = lookup(value.op)
            args = dict(zip((p.name for p in op.params), value.args))
            # A window is a view of its tensor; a store's result is the tensor it wrote.
            key = "x" if op.name == "tensor.slice" else op.writes_operand
            if key is not None:
                self.derive(ssa, args[key])
        elif isinstance(value, n.FuncCall) and value in self.returned_args:
            self.derive(ssa, self.returned_args[value])

    def leaves(self, ssa: str) -> set[str]:
        """The tensors with no source of their own (parameters, op results) ``ssa`` may be."""
        out, seen, todo = set(), set(), [ssa]
        while todo:
            x = todo.pop()
            if x in seen:
                continue
            seen.add(x)
            more = self.sources.get(x, set()) - {x}
            if not more:
                out.add(x)
            todo.extend(more)
        return out

    def user_name(self, ssa: str) -> str:
        """The Python name an SSA name stands for, for messages."""
        for k, v in self.env.items():
            if v == ssa:
                return k
        return re.sub(r"_\d+$", "", ssa)
