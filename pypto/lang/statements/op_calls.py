"""Calls of ``pl`` ops in kernel source: the unified name resolved to a level's op, the
arguments bound to the registry's signature by name, and the call checked where it is
written (operand types and spaces, static bounds, scalar constants that fit, an atomic
assemble's destination). A mixin of the call converter."""

from __future__ import annotations

import ast
import difflib

from pypto.errors import ParseError, PyptoError, TypeCheckError, UnsupportedSyntaxError
from pypto.ir import nodes as n
from pypto.ir.ops import UNIFIED, Kind, infer_type, lookup
from pypto.ir.ops.registry import FOREIGN_KEYWORDS, SCALAR_FORMS, TENSOR_OPERAND_FORMS, keyword_form
from pypto.ir.ops.pipes import POPS
from pypto.ir.simplify import simplify
from pypto.ir.ops.spmd import LANED, REGION_HINT, SPLITS
from pypto.ir.ops.registry import OpArgs, OpDef, ParamSpec
from pypto.ir.types import (TASK_ID, AtomicType, NotifyOp, ReduceOp, WaitCmp, DataType, PadValue, ScalarType, TensorLayout, TensorType, TileType,
                            type_name)
from pypto.lang.vocabulary import names as N
from pypto.backend import MemorySpace

# Older spellings of keyword names the reference language accepted.
_KEYWORD_ALIASES = {"valid_shapes": "valid_shape"}
# Keywords of a unified op's signature that its tile form has no parameter for.
_TILE_OPTIONS = {
    "tile.matmul": ("out_dtype", "a_trans", "b_trans", "c_matrix_nz"),
    "tile.matmul_acc": ("a_trans", "b_trans"),
}



class ArgThunk:
    """A call argument converted on first use, in the form its parameter wants."""

    def __init__(self, conv, node):
        self.conv, self.node = conv, node
        self._operand = None

    def operand(self):
        if self._operand is None:
            self._operand = self.conv.operand(self.node)
        return self._operand



class OpCalls:
    def require_incore(self, node, opname: str) -> None:
        """An op is written on the plane it belongs to (``OpDef.plane``)."""
        plane = lookup(opname).plane
        if self.incore and plane == "orchestration":
            raise self.error(ParseError, node, f"pl.{opname} is the orchestration's: it runs on the host, not on a "
                             "core", hint="write it in the @pl.jit entry, outside the pl.at scopes")
        if not self.incore and plane == "core":
            raise self.error(
                ParseError, node,
                f"Misplaced tensor op '{opname}' in Orchestration function (should be inside InCore block)",
                hint="wrap it in `with pl.at(level=pl.Level.CORE_GROUP):` or move it into a @pl.jit.incore function",
            )

    def op_call(self, meaning: N.Op, node: ast.Call):
        thunks = [ArgThunk(self, a) for a in node.args]
        keywords = {}
        for k in node.keywords:
            if k.arg is None:
                raise self.error(UnsupportedSyntaxError, k, "**kwargs are not supported in op calls")
            keywords[_KEYWORD_ALIASES.get(k.arg, k.arg)] = (ArgThunk(self, k.value), k)
        if "atomic" in keywords and meaning.name in ("assemble", "tensor.assemble"):
            self.check_atomic_assemble(thunks, keywords, node)
        if meaning.unified and meaning.name == "cast" and thunks and isinstance(thunks[0].operand()[1], ScalarType):
            return self.scalar_cast(thunks, keywords, node)
        op = keyword_form(self.pick_op(meaning, thunks, keywords, node) if meaning.unified
                          else self.scalar_rhs_form(lookup(meaning.name), thunks, keywords), keywords)
        op = self.tensor_operand_form(op, thunks, keywords)
        self.require_incore(node, op.name)
        if op.name == "tensor.set_validshape" and self.incore:
            return self.narrow(op, thunks, keywords, node)
        if op.name == "tensor.fillpad" and self.incore and thunks and \
                self.narrowed_shape(thunks[0].operand()[0]) is not None:
            return self.fill_narrowed(thunks, keywords, node)
        if op.name == "tensor.create":
            self.check_create(keywords)
        options = self.unified_options(meaning, op, keywords) if meaning.unified else {}
        if meaning.name in ("aiv_shard", "aic_gather") and "mode" in keywords:
            raise self.error(TypeCheckError, keywords["mode"][1], f"pl.{meaning.name} does not take a mode: it "
                             "inherits the enclosing pl.split_aiv region's", hint=f"pl.{meaning.name}(x)")
        clamp = self.load_clamp(keywords) if op.name == "tile.load" and "clamp" in keywords else False
        values, types = self.bind_args(op, thunks, keywords, node)
        if clamp:
            values["offsets"], values["valid_shape"] = self.clamped(values, types.get("tensor"))
        if op.name == "array.create" and self.incore and values["dtype"] is DataType.TASK_ID:
            raise self.error(ParseError, node, "pl.array.create of TaskIds is the orchestration's: tasks are "
                             "submitted and awaited on the host, not on a core",
                             hint="keep TaskIds in an array of the @pl.jit entry; a kernel's array holds integers")
        if op.name == "tile.store":
            values, types = self.lead_with_ones(values, types, node)
        if op.name in LANED:
            values["split"] = self.region_split(op, values["split"], types.get("x"), node)
        declared = self.declared
        if op.name in POPS and values["shape"] is None and isinstance(declared, TileType):
            values["shape"], values["dtype"] = tuple(n.Const(s) for s in declared.shape), declared.dtype
        values, types = self.cube_tiles_to_vec(op, values, types, node)
        call, t = self.checked_call(op, values, types, node)
        if self.narrowed and isinstance(t, TensorType) and op.windows is not None and op.windows.kind == "elementwise":
            self.carry_narrowing(call, t, values, types)
        if "out_dtype" in options:
            want, where = options["out_dtype"]
            if want is not None and want is not t.dtype:
                raise self.error(TypeCheckError, where,
                                 f"pl.{meaning.name}: out_dtype=pl.{want.name} on Tile operands, but the Cube "
                                 f"accumulator fixes the result dtype to {t.dtype.name}",
                                 hint=f"drop out_dtype (or write out_dtype=pl.{t.dtype.name}); a store from Acc "
                                      "converts to the output tensor's dtype")
        return call, t

    # ------------------------------------------------------------ set_validshape in a kernel

    def narrowed_shape(self, value):
        """The full shape of a kernel's tensor narrowed by pl.set_validshape (None if not)."""
        if not self.narrowed:
            return None
        if isinstance(value, n.Var):
            return self.narrowed.get(value.name)
        return self.narrowed.get(value) if isinstance(value, n.Call) else None

    def narrow(self, op: OpDef, thunks, keywords, node):
        """``pl.set_validshape(x, rows, cols)`` of a tensor in a kernel: its valid part, the
        window [0, rows) x [0, cols) (what an assemble of it writes and an elementwise op of it
        computes), remembering x's shape for pl.fillpad to grow it back to with pad values.
        The extents must be constants here: a kernel's tensor shapes are static."""
        values, types = self.bind_args(op, thunks, keywords, node)
        self.checked_call(op, values, types, node)  # (the extents within the tensor, 2-D)
        rows, cols = (simplify(values[k]) for k in ("valid_rows", "valid_cols"))
        if not (isinstance(rows, n.Const) and isinstance(cols, n.Const)):
            raise self.error(UnsupportedSyntaxError, node, "pl.set_validshape of a tensor in a kernel takes constant "
                             "extents: a kernel's tensors have static shapes",
                             hint="narrow what is loaded instead: pl.load(t, offsets, shapes, valid_shape=[rows, "
                                  "cols]), then pl.fillpad the tile")
        rows, cols = rows.value, cols.value
        x, xt = values["x"], types["x"]
        full = self.narrowed_shape(x) or tuple(xt.shape)
        call, t = self.checked_call(lookup("tensor.slice"), {"x": x, "shape": (n.Const(rows), n.Const(cols)),
                                                             "offset": (n.Const(0), n.Const(0))}, {"x": xt}, node)
        self.narrowed[call] = full
        return call, t

    def fill_narrowed(self, thunks, keywords, node):
        """``pl.fillpad`` of a narrowed tensor: its full shape again, the pad value past the
        valid part."""
        values, types = self.bind_args(lookup("tensor.fillpad"), thunks, keywords, node)
        x, xt = values["x"], types["x"]
        shape = tuple(n.Const(d) for d in self.narrowed_shape(x))
        return self.checked_call(lookup("tensor.fillpad_expand"),
                                 {"x": x, "shape": shape, "pad_value": values.get("pad_value", PadValue.zero)},
                                 {"x": xt}, node)

    def carry_narrowing(self, call: n.Call, t: TensorType, values: dict, types: dict) -> None:
        """An elementwise op of a narrowed tensor is narrowed alike (its valid part)."""
        for name, v in values.items():
            full = self.narrowed_shape(v)
            if full is not None and tuple(types[name].shape) == tuple(t.shape):
                self.narrowed[call] = full
                return

    def lead_with_ones(self, values: dict, types: dict, node):
        """A store of a tile of lower rank than its tensor writes the region led by 1s (a
        [1, 16] tile at [1, 2, 0] of a [2, 4, 16] tensor, as the reference injects the
        shapes): the tile is reshaped to that rank first."""
        tile, out = types.get("tile"), types.get("output_tensor")
        if not (isinstance(tile, TileType) and isinstance(out, TensorType) and len(tile.shape) < len(out.shape)
                and tile.valid_shape is None and len(values["offsets"]) == len(out.shape)):
            return values, types
        shape = (1,) * (len(out.shape) - len(tile.shape)) + tuple(tile.shape)
        call, t = self.checked_call(lookup("tile.reshape"), {"tile": values["tile"],
                                                              "shape": tuple(n.Const(d) for d in shape)},
                                    {"tile": tile}, node)
        ssa = self.fresh("reshape", temp=True)
        self.types[ssa] = t
        self.emit(n.Assign(ssa, t, call, span=self.span(node)))
        return {**values, "tile": n.Var(ssa)}, {**types, "tile": t}

    def static_none(self, node) -> bool:
        """Whether a name denotes None when compiling (a closure's ``valid_shape = None``)."""
        if isinstance(node, ast.Name) and node.id in self.env:
            return False
        try:
            return self.maybe_static(node) is None
        except PyptoError:
            return False

    def load_clamp(self, keywords: dict) -> bool:
        thunk, _ = keywords.pop("clamp")
        return self.static_of(thunk.node, bool, "pl.load's clamp", hint="clamp=True")

    @staticmethod
    def clamped(values: dict, tensor) -> tuple:
        """``pl.load(..., clamp=True)``: (offsets, valid shape) of the region read, which stops
        at the tensor's end — each valid extent cut to what lies between the offset and the
        edge, an offset past the edge brought back to it (nothing is read there)."""
        wanted = values["valid_shape"] if values["valid_shape"] is not None else values["shapes"]
        offsets = values["offsets"]
        if not isinstance(tensor, TensorType) or len(wanted) != len(tensor.shape) or len(offsets) != len(tensor.shape):
            return offsets, values["valid_shape"]  # (the load's own check says what is wrong)
        dims = [d if isinstance(d, int) else None for d in tensor.shape]
        valid = tuple(v if d is None else simplify(n.BinOp("max", n.Const(0), n.BinOp("min", v, n.BinOp(
            "-", n.Const(d), o)))) for v, d, o in zip(wanted, dims, offsets))
        at = tuple(o if d is None else simplify(n.BinOp("min", o, n.Const(d))) for o, d in zip(offsets, dims))
        return at, valid

    def region_split(self, op: OpDef, split, x, node) -> int:
        """A tile crossing's split: its pl.split_aiv region's mode (as the reference encodes
        it), which a written ``split=`` must agree with."""
        if self.region_mode is None:
            raise self.error(TypeCheckError, node, f"pl.{op.short} must be used inside a 'for aiv_id in "
                             "pl.split_aiv(...)' loop, which supplies the split mode", hint=REGION_HINT)
        mode = SPLITS.index(self.region_mode)
        if op.name == "tile.aiv_shard" and isinstance(x, TileType) and x.space is MemorySpace.Vec:
            raise self.error(TypeCheckError, node, "pl.aiv_shard names a cube tile's crossing into the region, and "
                             f"this is {type_name(x)}, a tile the vector cores hold already",
                             hint="read it as it is; for this lane's half, pl.slice it at the lane's offset "
                                  "(aiv_id * half)")
        if split is not None and split != mode:
            raise self.error(TypeCheckError, node, f"{op.name}(split={split}) in a pl.split_aiv region of "
                             f"mode=pl.SplitMode.{self.region_mode.name} (split={mode})",
                             hint="drop split= (the region's mode is the crossing's)")
        return mode

    def scalar_cast(self, thunks, keywords: dict, node):
        """``pl.cast(x, pl.INDEX)`` of a scalar: between integer types the value stays (a
        scalar's value is its integer; the type says how it is used); an integer to a float
        type is the number it is, as a float (rounded to the type where it is used, as any
        float scalar is)."""
        value, t = thunks[0].operand()
        target = thunks[1] if len(thunks) > 1 else keywords.get("target_type", (None,))[0]
        if target is None:
            raise self.error(TypeCheckError, node, "pl.cast takes the target dtype: pl.cast(x, pl.INDEX)")
        dtype = self.static_of(target.node, DataType, "pl.cast's target_type")
        if dtype.is_float and (t.dtype.is_int or t.dtype.is_float):
            if t.dtype.is_float:
                return value, ScalarType(dtype)
            folded = simplify(n.BinOp("*", value, n.Const(1.0)))  # (Python's int * 1.0 is the float of the int)
            return folded, ScalarType(dtype)
        if not (t.dtype.is_int and dtype.is_int):
            raise self.error(UnsupportedSyntaxError, node,
                             f"pl.cast of a scalar from {t.dtype.name} to {dtype.name} is not supported: between "
                             "integer types, or from a number to a float type",
                             hint="cast the tile the value is used with instead")
        bits = 8 * dtype.nbytes
        (lo, hi), (to_lo, to_hi) = _int_range(t.dtype), _int_range(dtype)
        if bits >= 64 or to_lo <= lo and hi <= to_hi:
            return value, ScalarType(dtype)
        # a narrower type keeps the low bits, two's complement: (x + 2^(b-1)) mod 2^b - 2^(b-1)
        low = -(1 << (bits - 1)) if _signed(dtype) else 0
        wrapped = n.BinOp("+", n.BinOp("%", n.BinOp("-", value, n.Const(low)), n.Const(1 << bits)), n.Const(low))
        return wrapped, ScalarType(dtype)

    def check_atomic_assemble(self, thunks, keywords: dict, node) -> None:
        """``pl.assemble(..., atomic=pl.AtomicType.Add)`` adds into GM, so it needs a
        store: inside an InCore scope, into a tensor."""
        thunk, where = keywords["atomic"]
        if self.static_of(thunk.node, AtomicType, "atomic") is not AtomicType.Add:
            return
        if not self.incore:
            raise self.error(TypeCheckError, where, "pl.assemble(..., atomic=pl.AtomicType.Add) is only supported inside "
                             "an InCore function — typically a pl.at(level=pl.Level.CORE_GROUP, ...) scope — where it "
                             "lowers to an atomic-add tile.store into global memory. This assemble sits at the "
                             "orchestration level, where no atomic-combine instruction exists.",
                             hint="Move it inside the scope that produces the partial result.")
        target = thunks[0] if thunks else keywords.get("target", (None,))[0]
        if target is not None and isinstance(target.operand()[1], TileType):
            raise self.error(TypeCheckError, where, "tensor.assemble with atomic=AtomicType.Add requires a global-memory "
                             "destination (a function output tensor), but this assemble targets an on-chip tile",
                             hint="An atomic combine needs a global-memory destination, and a tile-to-tile assemble has "
                                  "none. Write the accumulation into a Tensor target instead — inside an InCore "
                                  "function that is pl.assemble(out_tensor, tile, offset, atomic=...).")

    def unified_options(self, meaning: N.Op, op: OpDef, keywords: dict) -> dict:
        """Keywords the unified ``pl.<op>`` takes for every level but a tile op has no
        parameter for (``pl.matmul(l, r, out_dtype=pl.FP32, b_trans=False)``): their
        defaults are what the tile op does; anything else is explained, not ignored."""
        names = _TILE_OPTIONS.get(op.name, ())
        options = {}
        for key in names:
            if key not in keywords:
                continue
            thunk, where = keywords.pop(key)
            if key == "out_dtype":
                value = None if isinstance(thunk.node, ast.Constant) and thunk.node.value is None else \
                    self.static_of(thunk.node, DataType, f"pl.{meaning.name}'s out_dtype")
                options[key] = (value, where)
                continue
            if self.static_of(thunk.node, bool, f"pl.{meaning.name}'s {key}"):
                hint = {"a_trans": "transpose on the way into L1 instead: pl.load(..., target_memory=pl.Mem.Mat, "
                                   "transpose=True), then pl.move it to pl.Mem.Left; or use the tensor-level "
                                   f"pl.{meaning.name}(a, b, a_trans=True)",
                        "b_trans": "transpose on the way into L1 instead: pl.load(..., target_memory=pl.Mem.Mat, "
                                   "transpose=True), then pl.move it to pl.Mem.Right; or use the tensor-level "
                                   f"pl.{meaning.name}(a, b, b_trans=True)",
                        "c_matrix_nz": "the accumulator's layout is not selectable here"}[key]
                raise self.error(TypeCheckError, where, f"pl.{meaning.name}: {key}=True is not supported for Tile "
                                                        "operands", hint=hint)
        return options

    def pick_op(self, meaning: N.Op, thunks, keywords, node) -> OpDef:
        forms = UNIFIED[meaning.name]
        if forms.only is not None:
            return lookup(forms.only)
        first = thunks[0] if thunks else next((t for t, _ in keywords.values()), None)
        level = "tile"
        if forms.tensor is not None and forms.tile is None and forms.tile_scalar is None:
            level = "tensor"
        elif first is not None and (forms.tensor or forms.tensor_scalar) and (forms.tile or forms.tile_scalar):
            _, t = first.operand()
            if isinstance(t, TensorType):
                level = "tensor"
            elif not isinstance(t, TileType):
                raise self.error(TypeCheckError, first.node,
                                 f"pl.{meaning.name}: expected Tensor or Tile operands, got {type_name(t)}")
        plain, scalar = (forms.tensor, forms.tensor_scalar) if level == "tensor" else (forms.tile, forms.tile_scalar)
        name = plain
        if scalar is not None:
            second = thunks[1] if len(thunks) > 1 else keywords.get("rhs", (None,))[0]
            if plain is None or (second is not None and isinstance(second.operand()[1], ScalarType)):
                name = scalar
        if name is None:
            raise self.error(TypeCheckError, node, f"pl.{meaning.name} has no {level}-level form",
                             hint=f"use pl.{'tile' if level == 'tensor' else 'tensor'}.{meaning.name} operands")
        return lookup(name)

    def tensor_operand_form(self, op: OpDef, thunks, keywords) -> OpDef:
        """``pl.tile.mgather(mem, idx_tensor, ...)``: a Tensor where the op takes a tile picks
        the form that takes it (``TENSOR_OPERAND_FORMS``)."""
        param, other = TENSOR_OPERAND_FORMS.get(op.name, (None, None))
        if param is None:
            return op
        k = op.index(param)
        arg = thunks[k] if k < len(thunks) else keywords.get(param, (None,))[0]
        return lookup(other) if arg is not None and isinstance(arg.operand()[1], TensorType) else op

    def scalar_rhs_form(self, op: OpDef, thunks, keywords) -> OpDef:
        """``pl.tensor.add(x, 2.0)``: a level's op with a scalar rhs is its scalar form."""
        other = SCALAR_FORMS.get(op.name)
        second = thunks[1] if len(thunks) > 1 else keywords.get("rhs", (None,))[0]
        if other is not None and second is not None and isinstance(second.operand()[1], ScalarType):
            return lookup(other)
        return op

    def bind_args(self, op: OpDef, thunks, keywords, node):
        params = op.params
        if len(thunks) > len(params):
            raise self.error(TypeCheckError, node, f"{op.name} takes at most {len(params)} arguments, got {len(thunks)}",
                             hint=f"pl.{op.name}({', '.join(p.name for p in params)})")
        chosen: dict[str, tuple] = {}
        for p, t in zip(params, thunks):
            chosen[p.name] = (t, t.node)
        names = [p.name for p in params]
        for key, (t, kwnode) in keywords.items():
            if key in FOREIGN_KEYWORDS.get(op.name, {}):  # another form's keyword: its default is a no-op
                default, message, hint = FOREIGN_KEYWORDS[op.name][key]
                if self.static_of(t.node, type(default), f"{op.name}'s {key}") == default:
                    continue
                raise self.error(TypeCheckError, kwnode, message, hint=hint)
            if key not in names:
                close = difflib.get_close_matches(key, names, n=1)
                raise self.error(TypeCheckError, kwnode, f"{op.name} got an unexpected keyword '{key}'",
                                 hint=f"did you mean '{close[0]}'?" if close else f"its parameters are: {', '.join(names)}")
            if key in chosen:
                raise self.error(TypeCheckError, kwnode, f"{op.name} got '{key}' twice")
            chosen[key] = (t, kwnode)
        values, types = {}, {}
        for p in params:
            if p.name not in chosen:
                if p.required:
                    raise self.error(TypeCheckError, node, f"{op.name} is missing its '{p.name}' argument",
                                     hint=f"pl.{op.name}({', '.join(x.name for x in params if x.required)})")
                values[p.name] = p.default
                continue
            thunk, where = chosen[p.name]
            values[p.name], t = self.convert_arg(op, p, thunk, where)
            if t is not None:
                types[p.name] = t
        return values, types

    def convert_arg(self, op: OpDef, p: ParamSpec, thunk: ArgThunk, node):
        what = f"{op.name}'s '{p.name}'"
        if p.optional and (isinstance(thunk.node, ast.Constant) and thunk.node.value is None
                           or isinstance(thunk.node, (ast.Name, ast.Attribute)) and self.static_none(thunk.node)):
            return None, None
        if p.kind is Kind.SCALAR and p.integer:
            e, t = thunk.operand()  # with its dtype (pl.cast(i, pl.INT32) says it), which an op may check
            if isinstance(t, ScalarType) and t.dtype.is_int:
                return e, t
            return self.index(thunk.node, what, "an integer"), None  # (what it is not, said where it is written)
        if p.kind in (Kind.TILE, Kind.TENSOR, Kind.SCALAR, Kind.ARRAY):
            e, t = thunk.operand()
            if t == TASK_ID and not op.name.startswith("array."):
                raise self.error(TypeCheckError, thunk.node, f"{what} is a TaskId, which is not a number: it only "
                                 "names a task", hint="pass TaskIds to deps=[...] (or keep them in a pl.array)")
            return e, t
        if p.kind is Kind.INDEX_LIST:
            if p.bare and not isinstance(thunk.node, (ast.List, ast.Tuple)):
                return (self.index(thunk.node, what),), None
            if not isinstance(thunk.node, (ast.List, ast.Tuple)):
                # a list the kernel's module or closure holds (OFFSETS = [0, 0]) is as written
                value = self.maybe_static(thunk.node)
                if isinstance(value, (list, tuple)) and all(type(v) is int for v in value):
                    return tuple(n.Const(v) for v in value), None
                raise self.error(TypeCheckError, thunk.node, f"{what} must be a list of indices, written [a, b, ...] "
                                 "(or a constant list of ints)", hint="[i * 64, 0]")
            return tuple(self.index(e, what) for e in thunk.node.elts), None
        if p.kind is Kind.SHAPE:
            if not self.incore and op.plane != "core" and isinstance(thunk.node, (ast.List, ast.Tuple)):
                # the orchestration runs on the host: a tensor it creates or views may be sized by
                # a scalar it has computed (read from a tensor, say) — known when the statement runs
                return self.extents(thunk.node.elts, what), None
            return tuple(n.Const(v) for v in self.static_ints(thunk.node, what)), None
        kinds = {Kind.DTYPE: DataType, Kind.SPACE: MemorySpace, Kind.PAD: PadValue, Kind.BOOL: bool,
                 Kind.INT: int, Kind.STR: str, Kind.LAYOUT: TensorLayout, Kind.ATOMIC: AtomicType,
                 Kind.NOTIFY: NotifyOp, Kind.WAIT_CMP: WaitCmp, Kind.REDUCE: ReduceOp}
        if p.kind is Kind.INT and isinstance(thunk.node, ast.Constant) and isinstance(thunk.node.value, bool):
            raise self.error(TypeCheckError, thunk.node, f"{what} must be an int")
        examples = {Kind.DTYPE: "pl.FP32", Kind.SPACE: "pl.Mem.Vec", Kind.PAD: "pl.PadValue.zero", Kind.BOOL: "True",
                    Kind.INT: "1", Kind.STR: '"name"', Kind.LAYOUT: "pl.TensorLayout.ND", Kind.ATOMIC: "pl.AtomicType.Add",
                    Kind.NOTIFY: "pld.NotifyOp.AtomicAdd", Kind.WAIT_CMP: "pld.WaitCmp.Ge",
                    Kind.REDUCE: "pld.ReduceOp.Sum"}
        value = self.static_of(thunk.node, kinds[p.kind], what, hint=f"e.g. {p.name}={examples[p.kind]}")
        return (int(value) if p.kind is Kind.INT else value), None  # an IntEnum member is its int

    def cube_tiles_to_vec(self, op: OpDef, values: dict, types: dict, node) -> tuple:
        """A vector op computing a tile from a cube tile (an Acc result, a Mat tile) in a
        kernel: the move into Vec the reference's ExpandMixedKernel inserts there, made as
        ``pl.move(t, target_memory=pl.Mem.Vec)`` (through GM on a2a3, a crossing that a pl.at
        scope or a called kernel stages, and an entry kernel refuses). An op that computes
        no tile (``pl.debug_print``) keeps its operand, and its refusal."""
        soc = self.hooks.soc
        movable = [p.name for p in op.params if p.kind is Kind.TILE and p.spaces == (MemorySpace.Vec,)
                   and isinstance(t := types.get(p.name), TileType) and t.space in (MemorySpace.Acc, MemorySpace.Mat)
                   and t.space not in p.staged  # (an Acc the op itself takes: the fixpipe's cast)
                   and soc is not None and (soc.can_move(t.space, MemorySpace.Vec) or soc.crosses(t.space, MemorySpace.Vec))]
        if not movable:
            return values, types
        moved = {k: TileType(shape=types[k].shape, dtype=types[k].dtype, space=MemorySpace.Vec, valid_shape=types[k].valid_shape)
                 for k in movable}
        try:
            result = infer_type(op, OpArgs(op.name, {**{p.name: p.default for p in op.params if not p.required},
                                                    **values}, {**types, **moved}), soc)
        except PyptoError:
            return values, types  # refused either way: as written
        if not isinstance(result, TileType):
            return values, types
        values, types = dict(values), dict(types)
        for k in movable:
            values[k], types[k] = self.temp_call("tile.move", {"tile": values[k], "target_memory": MemorySpace.Vec},
                                                 {"tile": types[k]}, node)
        return values, types

    def checked_call(self, op: OpDef, values: dict, types: dict, node):
        values = {**{p.name: p.default for p in op.params if not p.required}, **values}
        try:
            t = infer_type(op, OpArgs(op.name, values, types), self.hooks.soc)
        except PyptoError as err:
            raise err.with_span(self.span(node)) from None
        self.check_scalar_constants(op, values, types, t, node)
        call = n.Call(op.name, tuple(values[p.name] for p in op.params), span=self.span(node))
        self.note_call(call, op.writes_operand is not None)
        return call, t

    def check_scalar_constants(self, op: OpDef, values: dict, types: dict, result, node) -> None:
        """An integer constant an op narrows to its operand's integer dtype (pl.adds on an
        INT32 tile, pl.full of an INT8 tile) must fit it: a constant that does not is a
        mistake, caught where it is written rather than wrapped at run time. On a float
        operand, an integer constant must be a number some float holds (10 ** 400 is not)."""
        operands = [types[p.name] for p in op.params if p.kind in (Kind.TILE, Kind.TENSOR)
                    and isinstance(types.get(p.name), (TileType, TensorType))]
        # the operand the scalar joins: the one of the result's dtype (pl.tile.sels's src, not
        # its mask), else the first (pl.cmps's lhs)
        same = [t for t in operands if t.dtype is getattr(result, "dtype", None)]
        operand = (same or operands or [result])[0]
        dtype = getattr(operand, "dtype", None)
        if dtype is not None and dtype.is_float:
            for p in op.params:
                v = values.get(p.name)
                if p.kind is Kind.SCALAR and not p.integer and isinstance(v, n.Const) \
                        and isinstance(v.value, int) and not _float_holds(v.value):
                    raise self.error(TypeCheckError, node,
                                     f"{op.name}'s '{p.name}' is an integer of {v.value.bit_length()} bits, which no "
                                     f"float holds (the {dtype.name} values it applies to)",
                                     hint="use a constant a float can hold (a float64 reaches about 1.8e308)")
        if dtype is None or not dtype.is_int:
            return
        lo, hi = dtype.int_range
        for p in op.params:
            v = values.get(p.name)
            if p.kind is Kind.SCALAR and not p.integer and isinstance(v, n.Const) \
                    and isinstance(v.value, int) and not isinstance(v.value, bool) and not lo <= v.value <= hi:
                raise self.error(TypeCheckError, node,
                                 f"{op.name}'s '{p.name}' is {v.value}, which does not fit the {dtype.name} values "
                                 f"it applies to ({lo}..{hi})",
                                 hint=f"use a constant in {lo}..{hi}, or compute in a wider dtype (pl.cast the tile "
                                      "first)")


def _float_holds(v: int) -> bool:
    try:
        float(v)
    except OverflowError:
        return False
    return True


def _signed(dtype: DataType) -> bool:
    return not dtype.name.startswith("UINT")


def _int_range(dtype: DataType) -> tuple[int, int]:
    """The least and greatest values an integer dtype holds (INDEX: a signed 64-bit integer)."""
    bits = 8 * dtype.nbytes
    return (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if _signed(dtype) else (0, (1 << bits) - 1)
