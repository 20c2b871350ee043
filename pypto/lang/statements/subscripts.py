"""Subscripts and operators in kernel source on the orchestration's values: an element of
a ``pl.array`` (read, stored, arithmetic on arrays), and a window of a tensor
(``x[0:8, :]`` read as a slice, ``out[0:8, :] = y`` written as an assemble). A mixin of the
function converter."""

from __future__ import annotations

import ast

from pypto.errors import ParseError, TypeCheckError, UnsupportedSyntaxError
from pypto.ir import nodes as n
from pypto.ir.affine import static_difference
from pypto.ir.ops import lookup
from pypto.ir.ops.registry import scalar_valued
from pypto.ir.types import DataType, ScalarType, TensorType, TileType, type_name
from pypto.lang.vocabulary import names as N

ARITH = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "div"}
OPERATOR_TEXT = {ast.Pow: "**", ast.FloorDiv: "//", ast.Mod: "%", ast.MatMult: "@", ast.LShift: "<<",
                  ast.RShift: ">>", ast.BitAnd: "&", ast.BitOr: "|", ast.BitXor: "^", ast.USub: "-",
                  ast.Not: "not", ast.Invert: "~"}


class Subscripts:
    def array_element(self, node: ast.Subscript):
        """``arr[i]``: one element of an orchestration array."""
        self.require_incore(node, "array.get")
        arr, t = self.var(node.value.id)
        if self.incore and t.dtype is DataType.TASK_ID:
            raise self.error(ParseError, node, "pl.array.get is the orchestration's for an array of TaskIds: tasks are "
                             "submitted and awaited on the host, not on a core",
                             hint="read the TaskId in the @pl.jit entry, outside the pl.at scopes (deps=[...] takes it)")
        return self.checked_call(lookup("array.get"), {"array": arr, "index": self.index(node.slice, "an array index")},
                                 {"array": t}, node)

    def array_store(self, target: ast.Subscript, value_node, node) -> None:
        """``arr[i] = v``: the name now holds the array with element i replaced."""
        self.require_incore(target, "array.set")
        arr, t = self.var(target.value.id)
        value, vt = self.operand(value_node)
        call, rt = self.checked_call(lookup("array.set"),
                                     {"array": arr, "index": self.index(target.slice, "an array index"),
                                      "value": value}, {"array": t, "value": vt}, node)
        self.bind(target.value.id, rt, call, node)

    def assemble(self, target: ast.Subscript, value_node, node) -> None:
        """``out[:] = x`` / ``out[a:b, c:d] = x``: write a tensor value into a window of out
        (of a tile: the name then holds the tile with the window written, ``pl.assemble``)."""
        dst, dst_t = self.operand(target.value)
        if isinstance(dst_t, TileType) and isinstance(target.value, ast.Name):
            return self.tile_assemble(target, dst, dst_t, value_node, node)
        if not isinstance(dst_t, TensorType):
            raise self.error(TypeCheckError, target, f"only tensors and tiles take slice assignment, not "
                             f"{type_name(dst_t)}")
        offsets, shape, dropped = self.window(target, dst_t)
        src, src_t = self.operand(value_node)
        kept = [e for axis, e in enumerate(shape) if axis not in dropped]  # out[b, 0:4, :] = t: t is [4, ...]
        led = (1,) * (len(shape) - len(src_t.shape)) + tuple(src_t.shape) if isinstance(src_t, TensorType) else None
        if isinstance(src_t, TensorType) and tuple(src_t.shape) != tuple(kept) and led != tuple(shape):
            raise self.error(TypeCheckError, node,
                             f"the window is {list(kept)} but the value is {list(src_t.shape)}")
        self.require_incore(target, "tensor.assemble")
        if isinstance(src_t, TensorType) and led != tuple(shape):
            src, src_t = self._reshaped(src, src_t, shape, node)  # the value as the window it fills
        call, _ = self.checked_call(lookup("tensor.assemble"), {"target": dst, "source": src, "offset": offsets},
                                    {"target": dst_t, "source": src_t}, node)
        self.emit(n.Eval(call, span=self.span(node)))

    def stored_into(self, body) -> list[str]:
        """Names the statements rebind by storing into them: an array's element
        (``arr[i] = v``) or a tile's window or element (``t[0:8, :] = u``) — a tensor's
        ``out[...] = x`` writes it in place and rebinds nothing."""
        out = list(self.arrays_stored(body))
        for stmt in body:
            for node in ast.walk(stmt):
                if isinstance(node, ast.Assign):
                    for t in node.targets:
                        if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name) \
                                and isinstance(self.local_type(t.value), TileType) and t.value.id not in out:
                            out.append(t.value.id)
        return out

    def tile_assemble(self, target: ast.Subscript, dst, dst_t, value_node, node) -> None:
        items = target.slice.elts if isinstance(target.slice, ast.Tuple) else [target.slice]
        src, src_t = self.operand(value_node)
        if not any(isinstance(i, ast.Slice) for i in items):  # t[i, j] = v: one element
            call, rt = self.checked_call(lookup("tile.write"),
                                         {"tile": dst, "indices": tuple(self.index(i, "an element index")
                                                                        for i in items), "value": src},
                                         {"tile": dst_t, "value": src_t}, node)
            return self.bind(target.value.id, rt, call, node)
        offsets, shape, _ = self.window(target, dst_t)
        if isinstance(src_t, TileType) and src_t.shape != shape:
            raise self.error(TypeCheckError, node, f"the window is {list(shape)} but the value is {list(src_t.shape)}")
        call, rt = self.checked_call(lookup("tile.assemble"), {"target": dst, "source": src, "offset": offsets},
                                     {"target": dst_t, "source": src_t}, node)
        self.bind(target.value.id, rt, call, node)

    def window(self, sub: ast.Subscript, t):
        """(offsets, static shape, the axes a scalar index drops) of a subscript window over a
        tensor or tile: as in numpy, ``C[i, 0:8]`` of a tensor is the window of extent 1 on
        axis 0, seen without it (a tile keeps its rank: its windows are slices on every axis)."""
        items = sub.slice.elts if isinstance(sub.slice, ast.Tuple) else [sub.slice]
        what = "tile" if isinstance(t, TileType) else "tensor"
        if len(items) > len(t.shape):
            raise self.error(TypeCheckError, sub, f"{len(items)} indices for a {what} of rank {len(t.shape)}")
        items = list(items) + [ast.Slice()] * (len(t.shape) - len(items))
        offsets, shape, dropped = [], [], []
        for axis, item in enumerate(items):
            if not isinstance(item, ast.Slice):
                offsets.append(self._from_end(self.index(item, "an index"), item, t.shape[axis], axis, sub.value))
                shape.append(1)
                dropped.append(axis)
                continue
            if not isinstance(item, ast.Slice) or item.step is not None:
                raise self.error(UnsupportedSyntaxError, item, f"{what} windows are written with start:stop slices",
                                 hint="a[i * 64:(i + 1) * 64, :] (a window of one row: a[i:i + 1, :])")
            lo = self.index(item.lower, "window bounds") if item.lower is not None else n.Const(0)
            hi = self.index(item.upper, "window bounds") if item.upper is not None else n.Const(t.shape[axis])
            lo, hi = (self._from_end(b, bound, t.shape[axis], axis, sub.value) for b, bound in ((lo, item.lower),
                                                                                               (hi, item.upper)))
            extent = static_difference(hi, lo)
            if extent is None or extent <= 0:
                raise self.error(TypeCheckError, item, "a window's extent (stop - start) must be a positive constant",
                                 hint="write both bounds from the same index, e.g. i * 64:(i + 1) * 64")
            offsets.append(lo)
            shape.append(extent)
        if dropped and isinstance(t, TileType):
            axis = dropped[0]
            raise self.error(TypeCheckError, sub, f"tile windows are written with start:stop slices on every axis; "
                             f"index {axis} is a scalar", hint=f"write the row or column as a slice of extent 1 "
                                            f"({ast.unparse(items[axis])}:{ast.unparse(items[axis])} + 1)")
        if len(dropped) == len(shape):
            raise self.error(TypeCheckError, sub, "an index on every axis is one element, not a window",
                             hint="read it with pl.tensor.read(t, [...]) (in an orchestration: t[i, j]), or keep an "
                                  "axis as a slice: t[i:i + 1, j]")
        return tuple(offsets), tuple(shape), tuple(dropped)

    def _reshaped(self, x, t: TensorType, shape, node):
        """``x`` seen as ``shape`` (a view in an orchestration), bound to a temporary."""
        call, rt = self.checked_call(lookup("tensor.reshape"), {"x": x, "shape": tuple(n.Const(e) for e in shape)},
                                     {"x": t}, node)
        ssa = self.fresh("reshape", temp=True)
        self.types[ssa] = rt
        self.emit(n.Assign(ssa, rt, call, span=self.span(node)))
        return n.Var(ssa), rt

    def _from_end(self, bound, node, dim, axis: int, tensor):
        """A negative constant bound counts from the axis's end, as in Python (``a[:, :-1]``)."""
        if not (isinstance(bound, n.Const) and isinstance(bound.value, int) and bound.value < 0):
            return bound
        if not isinstance(dim, int):
            raise self.error(TypeCheckError, node,
                             f"a negative bound counts from the end of axis {axis}, whose extent is known only at "
                             "run time", hint=f"write the bound from the extent: pl.tensor.dim({ast.unparse(tensor)}, "
                                              f"{axis}) - {-bound.value}")
        if -bound.value > dim:
            raise self.error(TypeCheckError, node, f"bound {bound.value} is before the start of axis {axis} "
                                                   f"(extent {dim})", hint=f"a bound from -{dim} to {dim}")
        return n.Const(dim + bound.value)

    # ------------------------------------------------------------------ values

    def array_operator(self, node: ast.BinOp):
        """``a + b``, ``t * 2``, ``2 * t`` on tiles/tensors are the unified ops; the forms
        with no op behind them are explained."""
        op = ARITH.get(type(node.op))
        left, right = node.left, node.right
        if op is None:
            hint = f"write pl.mul({ast.unparse(left)}, {ast.unparse(left)})" if isinstance(node.op, ast.Pow) \
                else "kernels compute on tiles with pl.* ops (pl.add, pl.mul, ...)"
            raise self.error(UnsupportedSyntaxError, node,
                             f"operator '{OPERATOR_TEXT.get(type(node.op), '?')}' is not an op on tiles or tensors",
                             hint=hint)
        if not self._is_array(left):
            if op in ("add", "mul"):  # commutative: t + 1 computes the same bits as 1 + t
                left, right = right, left
            else:
                return self.reversed_operator(op, left, right, node)
        fake = ast.copy_location(ast.Call(func=None, args=[left, right], keywords=[]), node)
        return self.op_call(N.Op(op, unified=True), fake)

    def reversed_operator(self, op: str, left, right, node):
        """``s - t`` and ``s / t`` with a scalar on the left: each element's ``s - x`` (the
        negation then the scalar added: exact, as a subtraction is) and ``s / x`` (a tile or
        tensor of ``s`` divided elementwise: one rounding, as Python's division has)."""
        x, t = self.operand(right)
        if not isinstance(t, (TileType, TensorType)):
            raise self.error(TypeCheckError, right, f"'{ast.unparse(right)}' is {type_name(t)}, not a tile or tensor")
        s, st = self.operand(left)
        if not isinstance(st, ScalarType):
            raise self.error(TypeCheckError, left, f"'{ast.unparse(left)}' is {type_name(st)}, not a scalar")
        level, arg = ("tile", "tile") if isinstance(t, TileType) else ("tensor", "x")
        if op == "sub":
            neg, nt = self.temp_call(f"{level}.neg", {arg: x}, {arg: t}, node)
            return self.checked_call(lookup(f"{level}.adds"), {"lhs": neg, "rhs": s}, {"lhs": nt, "rhs": st}, node)
        if any(not isinstance(d, int) for d in t.shape):
            raise self.error(TypeCheckError, node, f"'{ast.unparse(node)}': the scalar becomes a {level} of "
                             f"{ast.unparse(right)}'s shape, which is known only as the orchestration runs",
                             hint=f"divide in a kernel, where {ast.unparse(right)} has a static shape")
        full, ft = self.temp_call(f"{level}.full", {"shape": tuple(n.Const(d) for d in t.shape), "dtype": t.dtype,
                                                    "value": s}, {"value": st}, node)
        return self.checked_call(lookup(f"{level}.div"), {"lhs": full, "rhs": x}, {"lhs": ft, "rhs": t}, node)

    def temp_call(self, opname: str, values: dict, types: dict, node):
        """An op's result bound to a fresh temporary: (its Var, its type)."""
        self.require_incore(node, opname)
        call, t = self.checked_call(lookup(opname), values, types, node)
        ssa = self.fresh(opname.split(".")[-1], temp=True)
        self.types[ssa] = t
        self.emit(n.Assign(ssa, t, call, span=self.span(node)))
        return n.Var(ssa), t

    def _is_array(self, node) -> bool:
        """Whether an expression denotes a tile or tensor (so `a + b` is pl.add), decided
        without converting it."""
        if isinstance(node, ast.Name):
            return isinstance(self.local_type(node), (TileType, TensorType))
        if isinstance(node, ast.BinOp):
            return self._is_array(node.left) or self._is_array(node.right)
        if isinstance(node, ast.UnaryOp):
            return self._is_array(node.operand)
        if self.element_read(node):  # one element of a tensor: a scalar
            return False
        if isinstance(node, ast.Subscript):  # a window (an element is an element_read)
            return self._is_array(node.value) if not isinstance(node.value, ast.Name) else isinstance(
                self.local_type(node.value), (TileType, TensorType))
        if isinstance(node, ast.Call):
            _, meaning = self.entity(node.func)
            if isinstance(meaning, N.Op) and meaning.name.rsplit(".", 1)[-1] == "cast":
                # a scalar's cast is a scalar (pl.cast(pl.read(t, 0), pl.INDEX) + 1)
                return bool(node.args) and self._is_array(node.args[0])
            if isinstance(meaning, N.Op) and scalar_valued(meaning.name):  # pl.tile.get_block_idx() * 16
                return False
            return isinstance(meaning, N.Op) or isinstance(self.resolve_chain(node.func), N.Kernel) or (
                self.has_self and isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name)
                and node.func.value.id == "self")
        return False

    def subscript(self, node: ast.Subscript):
        """``x[a:b, c:d]`` of a tile or tensor — a name, or any expression that gives one — is
        its window (``pl.slice``); ``x[i, j]`` one element (``pl.tile.read``; of a tensor,
        in an orchestration)."""
        base = node.value
        t = self.local_type(base)
        if isinstance(t, TensorType):
            self.sized_on_core(base, t)
        items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        element = not any(isinstance(i, ast.Slice) for i in items)
        if isinstance(t, TensorType) and self.element_read(node):  # t[i, j]: one element
            x, t = self.var(base.id)
            return self.checked_call(lookup("tensor.read"),
                                     {"tensor": x, "indices": tuple(self.index(i, "an element index") for i in items)},
                                     {"tensor": t}, node)
        src, t = self.operand(base)
        if not isinstance(t, (TensorType, TileType)):
            raise self.error(TypeCheckError, node, f"'{ast.unparse(base)}' is {type_name(t)}: only tiles, tensors "
                             "and arrays take a subscript", hint="x[0:16, :] is a window of a tile or tensor")
        if isinstance(t, TileType) and element and len(items) == len(t.shape):
            return self.checked_call(lookup("tile.read"),
                                     {"tile": src, "indices": tuple(self.index(i, "an element index") for i in items)},
                                     {"tile": t}, node)
        offsets, shape, dropped = self.window(node, t)
        if isinstance(t, TensorType):
            self.require_incore(node, "tensor.slice")
            call, st = self.checked_call(lookup("tensor.slice"),
                                         {"x": src, "shape": tuple(n.Const(s) for s in shape), "offset": offsets},
                                         {"x": t}, node)
            if not dropped:
                return call, st
            ssa = self.fresh("slice", temp=True)
            self.types[ssa] = st
            self.emit(n.Assign(ssa, st, call, span=self.span(node)))
            kept = [e for axis, e in enumerate(shape) if axis not in dropped]  # C[i] of a 4-D C: a 3-D view
            return self.checked_call(lookup("tensor.reshape"),
                                     {"x": n.Var(ssa), "shape": tuple(n.Const(e) for e in kept)}, {"x": st}, node)
        return self.checked_call(lookup("tile.slice"),
                                 {"tile": src, "shape": tuple(n.Const(s) for s in shape), "offset": offsets},
                                 {"tile": t}, node)

    # ------------------------------------------------------------------ control flow
