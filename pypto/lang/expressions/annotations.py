"""Type annotations of kernel source — ``pl.Tensor[[64, 128], pl.FP32]``, ``pl.Tile[...,
pl.MemRef(...), pl.Mem.Vec]``, ``pl.Scalar[pl.INT32]``, ``pl.Out[...]`` — read as IR types
without running them. A mixin of the expression converter: it resolves names and
evaluates the constants an annotation holds."""

from __future__ import annotations

import ast

import attrs

from pypto.errors import ParseError, SpecializationError, TypeCheckError, UnsupportedSyntaxError
from pypto.ir import nodes as n
from pypto.ir.ops.type_rules import fmt_shape
from pypto.ir.types import (ArrayType, DataType, MemRef, ParamDirection, ScalarType, TensorType, TileType, binds, conforms,
                            type_name)
from pypto.lang.vocabulary import names as N
from pypto.lang.vocabulary.dsl import _MEMREF_KEYWORDS, memref_fields
from pypto.lang.expressions.tensor_views import TensorViews
from pypto.lang.expressions.statics import RUNTIME
from pypto.backend import MemorySpace


class Annotations(TensorViews):
    def annotation(self, node, *, given=None, param: str | None = None):
        """(type, direction) of an annotation; ``given`` is the specializing argument's type."""
        ref, meaning = self.entity(node if not isinstance(node, ast.Subscript) else node.value)
        if isinstance(ref, N.Alias):
            raise self.alias_error(node, ref)
        if isinstance(meaning, N.TypeCtor) and meaning.name in ("Out", "InOut"):
            if not isinstance(node, ast.Subscript):
                raise self.error(TypeCheckError, node, f"pl.{meaning.name} needs the type it wraps",
                                 hint=f"pl.{meaning.name}[pl.Tensor] or pl.{meaning.name}[pl.Tensor[[64, 128], pl.FP32]]")
            _, wrapped = self.entity(node.slice.value if isinstance(node.slice, ast.Subscript) else node.slice)
            if isinstance(wrapped, N.TypeCtor) and wrapped.name in ("Out", "InOut"):
                raise self.error(TypeCheckError, node, f"'{ast.unparse(node)}' nests two parameter directions",
                                 hint=f"write one: pl.{meaning.name}[pl.Tensor[...]]")
            inner, _ = self.annotation(node.slice, given=given, param=param)
            if not isinstance(inner, TensorType):
                raise self.error(TypeCheckError, node, f"pl.{meaning.name} wraps a tensor, not {type_name(inner)}",
                                 hint="only GM tensors are written by a kernel; pass a scalar as a plain parameter")
            return inner, ParamDirection[meaning.name]
        if isinstance(meaning, N.Value) and isinstance(meaning.value, DataType):
            return ScalarType(meaning.value), ParamDirection.In
        if isinstance(ref, N.Path) and meaning is None:
            message, hint = N.unknown(ref)
            raise self.error(ParseError, node, message, hint=hint)
        if not isinstance(meaning, N.TypeCtor):
            raise self.error(TypeCheckError, node, f"'{ast.unparse(node)}' is not a type annotation",
                             hint="annotate with pl.Tensor[[shape], dtype], pl.Tile[...] or pl.Scalar[dtype]")
        ctor = meaning.name
        if ctor == "Tensor":
            if isinstance(given, TensorType) and given.window:
                given = attrs.evolve(given, window=False)  # a window passed where a plain tensor is declared
            return self._tensor_annotation(node, given, param), ParamDirection.In
        if ctor == "DistributedTensor":  # a window is read and written: InOut unless wrapped
            return self._window_annotation(node, given, param), ParamDirection.InOut
        if ctor == "CommCtx":
            raise self.error(TypeCheckError, node, "pld.CommCtx is the handle pld.get_comm_ctx gives, not a "
                             "parameter's type", hint="take the pld.DistributedTensor and call pld.get_comm_ctx(dt)")
        if ctor == "Scalar":
            return self._scalar_annotation(node, given, param), ParamDirection.In
        if ctor == "Tile":
            if not isinstance(node, ast.Subscript):
                if isinstance(given, TileType):  # an inline function's bare pl.Tile
                    return given, ParamDirection.In
                raise self.error(TypeCheckError, node, "pl.Tile needs a shape and a dtype",
                                 hint="pl.Tile[[64, 128], pl.FP32, pl.Mem.Vec]")
            declared = self._tile_annotation(node)
            if given is not None:  # an inline function's argument
                if not (isinstance(given, TileType) and (given.shape, given.dtype) == (declared.shape, declared.dtype)
                        and declared.space in (None, given.space)):
                    raise self.error(SpecializationError, node,
                                     f"argument '{param}' is {type_name(given)} but the parameter is declared "
                                     f"{type_name(declared)}")
                return given, ParamDirection.In
            return declared, ParamDirection.In
        if ctor == "Array":
            return self._array_annotation(node, given, param), ParamDirection.In
        raise self.error(TypeCheckError, node, f"pl.{ctor} is not a type", hint="use it inside pl.Tile[...]")

    def _array_annotation(self, node, given, param) -> ArrayType:
        """``pl.Array[n, dtype]``: an orchestration's array of ``n`` scalars (TaskIds, integers)."""
        items = node.slice.elts if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Tuple) else None
        if items is None or len(items) != 2:
            raise self.error(TypeCheckError, node, "Array subscript requires [extent, dtype], got: "
                             f"{ast.unparse(node.slice) if isinstance(node, ast.Subscript) else ast.unparse(node)}",
                             hint="Use pl.Array[N, pl.INT32]")
        extent = self.static_of(items[0], int, "an Array's extent",
                                hint="Use a positive integer literal for the extent (or a module-level constant)")
        if isinstance(extent, bool) or extent < 1:
            raise self.error(TypeCheckError, items[0], f"an Array's extent is a positive int, not {extent!r}",
                             hint="pl.Array[4, pl.TASK_ID]")
        declared = ArrayType(extent, self._dtype(items[1]))
        if not (declared.dtype is DataType.TASK_ID or declared.dtype.is_int):
            raise self.error(TypeCheckError, items[1], f"an Array holds TaskIds or integers, not {declared.dtype.name}",
                             hint="pl.Array[4, pl.TASK_ID]")
        if given is not None and given != declared:
            raise self.error(SpecializationError, node, f"argument '{param}' is {type_name(given)} but the "
                             f"parameter is declared {type_name(declared)}",
                             hint=f"pass a pl.array.create({extent}, pl.{declared.dtype.name})")
        return declared

    def _window_annotation(self, node, given, param) -> TensorType:
        """``pld.DistributedTensor[shape, dtype]``: a tensor annotation whose argument must be a
        window every rank allocated (``pld.window(...)`` in the host orchestrator)."""
        if given is not None and not (isinstance(given, TensorType) and given.window):
            raise self.error(SpecializationError, node,
                             f"argument '{param}' is {type_name(given)}, but the parameter is a window-bound "
                             "pld.DistributedTensor",
                             hint="pass pld.window(buf, shape, dtype=...) from the @pl.jit.host orchestrator")
        plain = attrs.evolve(given, window=False) if given is not None else None
        return attrs.evolve(self._tensor_annotation(node, plain, param), window=True)

    def _scalar_annotation(self, node, given, param) -> ScalarType:
        if not isinstance(node, ast.Subscript):
            if isinstance(given, ScalarType):  # a bare pl.Scalar takes the argument's dtype, as pl.Tensor does
                return given
            if given is not None:
                raise self.error(SpecializationError, node, f"argument '{param}' is {type_name(given)}, not a scalar")
            raise self.error(TypeCheckError, node, "pl.Scalar needs a dtype", hint="pl.Scalar[pl.INT32]")
        declared = ScalarType(self._dtype(node.slice))
        if given is None:
            return declared
        # A Python int widens to a float parameter, and a 0/1 flag to a bool one; a float never
        # narrows to an int one.
        fits = isinstance(given, ScalarType) and (
            given.dtype.is_int == declared.dtype.is_int and given.dtype.is_bool == declared.dtype.is_bool
            or given.dtype.is_int and (declared.dtype.is_float or declared.dtype.is_bool))
        if not fits:
            got = f"a {given.dtype} scalar" if isinstance(given, ScalarType) else type_name(given)
            raise self.error(SpecializationError, node,
                             f"argument '{param}' is {got} but the parameter is declared {declared.dtype}",
                             hint=f"pass a {'number' if declared.dtype.is_float else 'Python int'}, or declare "
                                  f"the parameter as a bare pl.Scalar")
        return declared

    def is_dynamic(self, node) -> bool:
        """Whether the annotation node names a ``pl.dynamic`` axis."""
        return self._dynamic(node) is not None

    def _dynamic(self, node) -> N.DynVar | None:
        if not isinstance(node, (ast.Name, ast.Attribute)) or isinstance(node, ast.Name) and node.id in self.env:
            return None
        _, meaning = self.entity(node)
        return meaning.value if isinstance(meaning, N.Value) and isinstance(meaning.value, N.DynVar) else None

    def _mentioned(self, node) -> list:
        """The ``pl.dynamic`` axes an extent's expression names (``M * 2`` names M), once each."""
        found = {}
        for part in ast.walk(node):
            dyn = self._dynamic(part)
            if dyn is not None:
                found.setdefault(id(dyn), dyn)
        return list(found.values())

    def _bind_dynamic(self, node, dims, dtype: DataType, given, param) -> TensorType:
        """A shape with ``pl.dynamic`` axes: the extents of the call's tensor, each dynamic
        axis bound once for the whole function (the same object, the same extent)."""
        written = "[" + ", ".join(ast.unparse(d) for d in dims) + "]"
        if given is None and all(id(v) in self.dynamic_extents for d in dims for v in self._mentioned(d)):
            # a return type, in extents the parameters bound
            given = TensorType(tuple(self.static_of(d, int, "a tensor extent") for d in dims), dtype)
        if not isinstance(given, TensorType):
            if param is None:  # a return type's axis no parameter has
                raise self.error(TypeCheckError, node, f"the return type has a pl.dynamic axis ({written}) that no "
                                 "parameter has, so no call gives its extent",
                                 hint="write the extent, or use an axis a parameter's annotation also has")
            raise self.error(SpecializationError if given is not None else TypeCheckError, node,
                             f"'{param}' has a pl.dynamic axis ({written}), whose extent a call's tensor gives; "
                             "here no call gives one",
                             hint="call (or compile) the kernel with sample tensors, or write the extent")
        if len(given.shape) != len(dims) or given.dtype is not dtype:
            raise self.error(SpecializationError, node, f"argument '{param}' is {type_name(given)} but the kernel "
                             f"declares pl.Tensor[{written}, pl.{dtype.name}]")
        marked = getattr(self, "bound_axes", {})
        composite = []  # axes written as expressions of pl.dynamic axes: after the bare ones bind
        for axis, (d, extent) in enumerate(zip(dims, given.shape)):
            dyn = self._dynamic(d)
            if axis in marked or axis - len(dims) in marked:  # param.bind_dynamic(axis, M)
                var = marked.get(axis, marked.get(axis - len(dims)))
                if dyn is not None and dyn is not var:
                    raise self.error(TypeCheckError, d, f"axis {axis} of '{param}' is the pl.dynamic '{dyn.name}' "
                                     f"here and '{var.name}' in its bind_dynamic", hint="name one axis once")
                dyn = var
            if dyn is None and self._mentioned(d):
                composite.append((axis, d, extent))
                continue
            if dyn is None:
                want = self.static_of(d, int, "a tensor extent")
                if want != extent:
                    raise self.error(SpecializationError, node, f"argument '{param}' is {type_name(given)} but the "
                                     f"kernel declares extent {want} on axis {axis}")
                continue
            # each parameter's axis is its own tensor's extent; the axis read as a value in the
            # body is the first parameter's, as the reference reads a pl.dynamic symbol from the
            # first parameter declaring it (and checks no agreement between them)
            self.dynamic_extents.setdefault(id(dyn), (dyn, extent, param))
        for axis, d, extent in composite:
            self._solve_axis(d, axis, extent, param)
        if composite:  # an expression of bound axes is the extent it evaluates to
            declared = TensorType(tuple(self.static_of(d, int, "a tensor extent") for d in dims), dtype)
            if declared.shape != given.shape:
                raise self.error(SpecializationError, node, f"argument '{param}' is {type_name(given)} but the "
                                 f"kernel declares {type_name(declared)}")
        return given

    def _solve_axis(self, d, axis: int, extent: int, param) -> None:
        """An axis written as an expression of ``pl.dynamic`` axes (``M * 2``): the one axis
        no other gives is the value that makes the expression the call's extent. The
        expression is read as affine in it (its slope and intercept from two values), and the
        value checked by evaluating it. An expression of axes bound already is checked
        against the extent by the caller."""
        free = [v for v in self._mentioned(d) if id(v) not in self.dynamic_extents]
        text = ast.unparse(d)
        if not free:
            return
        if len(free) > 1:
            raise self.error(TypeCheckError, d, f"axis {axis} of '{param}' is {text}, whose extent binds two "
                             f"pl.dynamic axes ({', '.join(repr(v.name) for v in free)}) that no other axis gives",
                             hint=f"give '{free[0].name}' an axis of its own in some parameter, e.g. "
                                  f"x: pl.Tensor[[{free[0].name}, 128], pl.FP32]")
        dyn = free[0]

        def at(value: int) -> int:
            self.dynamic_extents[id(dyn)] = (dyn, value, param)
            try:
                return self.static_of(d, int, "a tensor extent")
            finally:
                del self.dynamic_extents[id(dyn)]

        one, two = at(1), at(2)
        slope, intercept = two - one, one - (two - one)
        value = (extent - intercept) // slope if slope and (extent - intercept) % slope == 0 else None
        if value is None or value < 1 or at(value) != extent:
            raise self.error(SpecializationError, d, f"argument '{param}' has extent {extent} on axis {axis}, which "
                             f"is {text} for no positive '{dyn.name}'",
                             hint=f"pass a tensor whose axis {axis} is {text} for some {dyn.name} >= 1, or give "
                                  f"'{dyn.name}' an axis of its own (an affine a * {dyn.name} + b is solved)")
        self.dynamic_extents[id(dyn)] = (dyn, value, param)

    def _dtype(self, node) -> DataType:
        return self.static_of(node, DataType, "a dtype")

    def _tensor_annotation(self, node, given, param) -> TensorType:
        if not isinstance(node, ast.Subscript):
            if isinstance(given, TensorType) and given.runtime_sized:
                raise self.error(SpecializationError, node,
                                 f"a bare pl.Tensor takes its shape from the call, and '{param}' gets a tensor sized "
                                 f"as the orchestration runs ({fmt_shape(given.shape)})",
                                 hint="write the extents the function works on, e.g. pl.Tensor[[16, 128], pl.FP32]: "
                                      "the call checks its tensor's when it runs")
            if isinstance(given, TensorType):
                return given
            raise self.error(SpecializationError if given is not None else TypeCheckError, node,
                             "a bare pl.Tensor takes its shape and dtype from a call's argument"
                             + (f", and '{param}' got {type_name(given)}" if given is not None else ""),
                             hint="spell it out: pl.Tensor[[128, 128], pl.FP32]")
        items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if len(items) not in (2, 3):
            raise self.error(TypeCheckError, node, "pl.Tensor takes [shape, dtype] or [shape, dtype, pl.TensorView(...)]",
                             hint="pl.Tensor[[128, 128], pl.FP32]")
        dims = items[0].elts if isinstance(items[0], (ast.List, ast.Tuple)) else None
        if isinstance(given, TensorType) and given.dtype is not DataType.INDEX \
                and binds(self._dtype(items[1]), given.dtype):  # an int64 tensor for a pl.INDEX one
            given = attrs.evolve(given, dtype=self._dtype(items[1]))
        if dims is not None and (any(self._mentioned(d) for d in dims) or getattr(self, "bound_axes", {})):
            if isinstance(given, TensorType) and given.runtime_sized:
                raise self.error(SpecializationError, node,
                                 f"'{param}' has a pl.dynamic axis, whose extent is fixed when the kernel is "
                                 f"compiled, and the call passes a tensor sized as the orchestration runs "
                                 f"({fmt_shape(given.shape)})",
                                 hint="write the extents the kernel works on (the call checks its tensor's when it "
                                      "runs), or size the tensor with compile-time constants")
            bound = self._bind_dynamic(node, dims, self._dtype(items[1]), given, param)
            if len(items) == 3:  # (checked in the extents the call gave)
                mx = self._tensor_view(items[2], items[0], self._dtype(items[1]))
                if mx is not None and isinstance(bound, TensorType):
                    bound = attrs.evolve(bound, mx_layout=mx)
            return bound
        mx = self._tensor_view(items[2], items[0], self._dtype(items[1])) if len(items) == 3 else None
        runtime = self._runtime_dims(dims) if given is None else None
        if runtime is not None:  # an orchestration's local, sized as it runs (a dump's annotation)
            return TensorType(runtime, self._dtype(items[1]), mx_layout=mx)
        shape = self.static_dims(items[0], "a tensor shape")
        declared = TensorType(shape, self._dtype(items[1]))
        if isinstance(given, TensorType) and given.mx_layout is not None:
            given = attrs.evolve(given, mx_layout=None)  # (compared as plain tensors; the declaration tags it)
        if conforms(given, declared):  # its other extents are checked when the call runs
            return attrs.evolve(declared, mx_layout=mx)
        if given is not None and given != declared:
            raise self.error(SpecializationError, node,
                             f"argument '{param}' is {type_name(given)} but the kernel declares {type_name(declared)}",
                             hint=f"pass {param}.to(torch.int64): an int64 tensor binds pl.INDEX"
                             if declared.dtype is DataType.INDEX and isinstance(given, TensorType)
                             and given.shape == declared.shape and given.dtype.is_int
                             else "pass a tensor of the declared shape and dtype, or annotate with a bare pl.Tensor")
        return attrs.evolve(declared, mx_layout=mx)

    def _runtime_dims(self, dims) -> tuple | None:
        """An orchestration's tensor extents naming scalars it computes (``[16, n]``): their
        expressions; None where every extent is a compile-time constant (or in a kernel)."""
        if self.incore or dims is None or all(self.maybe_static(d) is not RUNTIME for d in dims):
            return None
        return self.extents(dims, "a tensor extent")

    def _tile_annotation(self, node: ast.Subscript) -> TileType:
        items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if len(items) < 2:
            raise self.error(TypeCheckError, node, "pl.Tile takes [shape, dtype, memref?, space?, view?]")
        shape = self.static_dims(items[0], "a tile shape")
        dtype = self._dtype(items[1])
        memref = space = valid = None
        for item in items[2:]:
            head = item.value if isinstance(item, ast.Subscript) else item
            head = head.func if isinstance(head, ast.Call) else head
            ref, meaning = self.entity(head)
            if isinstance(ref, N.Alias):
                raise self.alias_error(item, ref)
            if isinstance(ref, N.Declared):
                memref = self._declared_memref(item, ref)
            elif isinstance(meaning, N.TypeCtor) and meaning.name == "MemRef":
                memref = self._memref(item)
            elif isinstance(meaning, N.TypeCtor) and meaning.name == "TileView":
                valid = self._tile_view(item)
            elif isinstance(meaning, N.Value) and isinstance(meaning.value, MemorySpace):
                space = meaning.value
            elif isinstance(ref, N.Path) and meaning is None:
                message, hint = N.unknown(ref)
                raise self.error(ParseError, item, message, hint=hint)
            else:
                raise self.error(TypeCheckError, item, f"'{ast.unparse(item)}' does not belong in pl.Tile[...]",
                                 hint="pl.Tile[[shape], dtype, pl.MemRef(...)?, pl.Mem.<space>?, pl.TileView(...)?]")
        return TileType(shape=shape, dtype=dtype, space=space, memref=memref, valid_shape=valid)

    def _memref(self, node) -> MemRef:
        call = node.value if isinstance(node, ast.Subscript) else node
        if not isinstance(call, ast.Call):
            raise self.error(TypeCheckError, node, "pl.MemRef is called with its name",
                             hint='pl.MemRef("ub", slots=2)[i % 2]')
        for k in call.keywords:
            if k.arg is None:
                raise self.error(UnsupportedSyntaxError, k, "pl.MemRef takes no **keywords",
                                 hint='pl.MemRef("name", slots=N)')
            if k.arg not in _MEMREF_KEYWORDS:
                raise self.error(TypeCheckError, k, f"pl.MemRef got an unexpected keyword '{k.arg}'",
                                 hint='pl.MemRef("name", slots=N)')
        # Placement is decided before the kernel runs: the planners lay out on-chip memory
        # from these values, so none of them may come from a runtime value.
        why = "the compiler lays out on-chip memory before the kernel runs"
        args = [self.required(a, f"pl.MemRef's {what}", why)
                for a, what in zip(call.args, ("name", "address", "size", "argument", "argument"))]
        kw = {k.arg: self.required(k.value, f"pl.MemRef's {k.arg}=", why) for k in call.keywords}
        try:
            f = memref_fields(args, kw, named=True)
        except ValueError as exc:
            message, hint = exc.args
            raise self.error(TypeCheckError, call, message, hint=hint) from None
        return self._slotted(node, f["name"], f["slots"], f, 'pl.MemRef("{name}", slots={slots})')

    def _slotted(self, node, name: str, slots: int, f: dict, spelled: str) -> MemRef:
        """The MemRef of one use of an allocation: a slot when it is subscripted."""
        index = self._slot_index(node.slice) if isinstance(node, ast.Subscript) else None
        shown = spelled.format(name=name, slots=slots)
        if slots > 1 and index is None:
            raise self.error(TypeCheckError, node, f"a {slots}-slot MemRef needs a slot index",
                             hint=f"select one per use: {shown}[i % {slots}]")
        if slots == 1 and index is not None:
            raise self.error(TypeCheckError, node, f"'{name}' has a single slot, so it takes no slot index",
                             hint=f"declare it with slots=N to subscript it, or write {shown} without [...]")
        if isinstance(index, n.Const) and not 0 <= index.value < slots:
            raise self.error(TypeCheckError, node.slice, f"slot {index.value} is out of range for '{name}', "
                             f"which has {slots} slot{'s' if slots != 1 else ''}",
                             hint=f"select a slot in 0..{slots - 1}, or declare more slots")
        return MemRef(name=name, slots=slots, index=index, addr=f["addr"], size=f["size"],
                      pipeline=f.get("pipeline", False), reusable=f.get("reusable", False))

    def _declared_memref(self, node, ref: N.Declared) -> MemRef:
        """A use of an allocation declared outside the kernel (``buf = pl.MemRef(slots=2)``):
        it goes by its own name, else by the variable's, which therefore must stay one to
        one with the declaration within a function."""
        decl = ref.decl
        name = decl.name or ref.name
        names = self.__dict__.setdefault("_declared_names", {})  # declaration -> the name it goes by
        owners = self.__dict__.setdefault("_declared_owners", {})  # name -> its declaration
        seen = names.setdefault(id(decl), (name, decl))[0]
        if seen != name:
            raise self.error(TypeCheckError, node, f"the allocation '{seen}' is also reached as '{ref.name}'",
                             hint=f"an unnamed pl.MemRef() takes its variable's name, so two names make two "
                                  f"allocations of one: use '{seen}' throughout, or name it, "
                                  f"pl.MemRef(\"{seen}\", ...)")
        owner = owners.setdefault(name, decl)
        if owner is not decl:
            raise self.error(TypeCheckError, node, f"two pl.MemRef declarations both go by the name '{name}'",
                             hint="allocations are told apart by name within a function: give one of them its "
                                  "own, pl.MemRef(\"other\", ...)")
        f = {"addr": decl.addr, "size": decl.size}
        return self._slotted(node, name, decl.slots, f, ref.name)

    def _slot_index(self, node) -> n.Expr:
        """Which slot of a multi-slot MemRef a tile takes: an integer expression (a float
        or a bool would select a slot the planners and the simulator cannot agree on)."""
        e = self.scalar(node)
        t = self.expr_type(e, node)
        if not (isinstance(t, ScalarType) and t.dtype.is_int):
            raise self.error(TypeCheckError, node,
                             f"a slot index is an integer, but '{ast.unparse(node)}' is {type_name(t)}",
                             hint="select the slot with an integer expression, e.g. "
                                  'pl.MemRef("ub", slots=2)[i % 2] (use // to divide)')
        return e

    def _tile_view(self, node) -> tuple:
        if not isinstance(node, ast.Call) or node.args or [k.arg for k in node.keywords] != ["valid_shape"]:
            raise self.error(TypeCheckError, node, "pl.TileView takes valid_shape=[...] here")
        value = node.keywords[0].value
        if not isinstance(value, (ast.List, ast.Tuple)):
            raise self.error(TypeCheckError, value, "valid_shape is a list of extents")
        return tuple(self.scalar(e) for e in value.elts)
