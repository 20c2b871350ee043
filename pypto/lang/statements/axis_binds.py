"""The reference's ``@pl.jit`` forms that make a parameter's axis dynamic without writing
it in the annotation: ``x.bind_dynamic(0, M)`` (M a ``pl.dynamic`` axis of the module, or
one the body makes with ``M = pl.dynamic("M")``), read before the parameters are typed, as
the reference's specializer reads them from the source. Here every call is specialized,
so the axis takes the extent the call's tensor has, and the body reads M as that extent.
A mixin of ``FunctionConverter``; the statements themselves compile to nothing.

    @pl.jit
    def k(x: pl.Tensor, out: pl.Out[pl.Tensor]):
        B = pl.dynamic("B")
        x.bind_dynamic(0, B)          # axis 0 of x is B
        out.bind_dynamic(0, B)
        for b in pl.parallel(B): ...  # B: x's extent on axis 0
"""

from __future__ import annotations

import ast

from pypto.errors import SpecializationError, TypeCheckError
from pypto.ir.types import TensorType, type_name
from pypto.lang.vocabulary import names as N

_USAGE = "x.bind_dynamic(0, M) with M = pl.dynamic(\"M\"): axis 0 of the parameter x is the dynamic axis M"


class AxisBinds:
    def scan_axis_binds(self, params: list[str]) -> dict:
        """The body's ``NAME = pl.dynamic("...")`` axes (kept in ``local_axes``) and its
        ``param.bind_dynamic(axis, M)`` statements: param -> {axis: (M, the call)}."""
        self.local_axes = {}
        for node in ast.walk(self.fdef):
            if isinstance(node, ast.Assign) and self._is_dynamic_call(node.value):
                target = node.targets[0] if len(node.targets) == 1 else None
                if not isinstance(target, ast.Name):
                    raise self.error(TypeCheckError, node, "pl.dynamic(...) makes one axis: bind it to one name",
                                     hint='M = pl.dynamic("M")')
                self.local_axes[target.id] = self._dynamic_axis(node.value)
        binds: dict = {}
        for node in ast.walk(self.fdef):
            call = node.value if isinstance(node, ast.Expr) else None
            if not self.is_axis_bind(call):
                continue
            receiver = call.func.value
            if not isinstance(receiver, ast.Name) or receiver.id not in params:
                raise self.error(TypeCheckError, call.func, f"'{ast.unparse(call.func)}' marks an axis of a parameter, "
                                 f"and '{ast.unparse(receiver)}' is not one of "
                                 f"{self.name}'s ({', '.join(params) or 'it has none'})", hint=_USAGE)
            if len(call.args) != 2 or call.keywords:
                raise self.error(TypeCheckError, call, "bind_dynamic takes (dim, var): the axis and its pl.dynamic",
                                 hint=_USAGE)
            dim = self.static_of(call.args[0], int, "bind_dynamic's dim", hint="an int literal: x.bind_dynamic(0, M)")
            var = self._axis_of(call.args[1])
            mine = binds.setdefault(receiver.id, {})
            if dim in mine and mine[dim][0] is not var:
                raise self.error(TypeCheckError, call, f"axis {dim} of '{receiver.id}' is bound to "
                                 f"'{mine[dim][0].name}' already", hint="bind each axis to one pl.dynamic")
            mine[dim] = (var, call)
        return binds

    def is_axis_bind(self, call) -> bool:
        return isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "bind_dynamic"

    def axis_statement(self, node) -> bool:
        """Whether a statement is one of the forms read before the parameters were typed
        (``x.bind_dynamic(...)``, ``M = pl.dynamic("M")``): nothing to compile."""
        if isinstance(node, ast.Expr):
            return self.is_axis_bind(node.value)
        return isinstance(node, ast.Assign) and self._is_dynamic_call(node.value)

    def bind_axes(self, param: str, t, binds: dict, node) -> None:
        """A parameter's axes ``bind_dynamic`` names take the extents of its tensor."""
        for dim, (var, call) in sorted(binds.items()):
            if not isinstance(t, TensorType):
                raise self.error(TypeCheckError, call, f"bind_dynamic marks an axis of a tensor, and '{param}' is "
                                 f"{type_name(t)}", hint=_USAGE)
            rank = len(t.shape)
            if not -rank <= dim < rank:
                raise self.error(SpecializationError, call.args[0], f"'{param}' has {rank} axes, so it has no axis "
                                 f"{dim} to bind", hint=f"an axis from 0 to {rank - 1}")
            extent = t.shape[dim % rank]
            if not isinstance(extent, int):
                raise self.error(SpecializationError, call, f"axis {dim} of '{param}' is sized as the orchestration "
                                 "runs, and a pl.dynamic axis takes its extent when the kernel is compiled",
                                 hint="write the extent, or size the tensor with compile-time constants")
            self.dynamic_extents.setdefault(id(var), (var, extent, param))

    def _is_dynamic_call(self, node) -> bool:
        return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
            and self.resolve_chain(node.func) == N.Path(("dynamic",))

    def _dynamic_axis(self, call: ast.Call) -> N.DynVar:
        args = [*call.args, *(k.value for k in call.keywords if k.arg == "name")]
        name = args[0].value if len(args) == 1 and isinstance(args[0], ast.Constant) else None
        if not isinstance(name, str) or not name.isidentifier():
            raise self.error(TypeCheckError, call, "pl.dynamic takes the axis's name, an identifier in quotes",
                             hint='M = pl.dynamic("M")')
        return N.DynVar(name)

    def _axis_of(self, node) -> N.DynVar:
        if isinstance(node, ast.Name) and node.id in self.local_axes:
            return self.local_axes[node.id]
        _, meaning = self.entity(node) if isinstance(node, (ast.Name, ast.Attribute)) else (None, None)
        if isinstance(meaning, N.Value) and isinstance(meaning.value, N.DynVar):
            return meaning.value
        raise self.error(TypeCheckError, node, f"bind_dynamic binds an axis to a pl.dynamic, and "
                         f"'{ast.unparse(node)}' is not one", hint=_USAGE)
