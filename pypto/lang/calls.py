"""Calls in kernel source: ``pl`` ops bound to the registry's signatures and checked
where they are written, calls of other kernel functions (``self.f(...)``, a
``@pl.jit.incore`` kernel), and inline kernels spliced in place. A mixin of the function
converter, whose values and statements it uses."""

from __future__ import annotations

import ast
import difflib
import re
from collections.abc import Callable

import attrs

from pypto.errors import (
    OutOfBoundsError,
    ParseError,
    PyptoError,
    SpecializationError,
    TypeCheckError,
    UnsupportedSyntaxError,
)
from pypto.ir import nodes as n
from pypto.ir.tensors import block_roots
from pypto.ir.affine import interval
from pypto.ir.ops.pipes import POPS
from pypto.ir.ops import UNIFIED, Kind, all_ops, infer_type, lookup
from pypto.ir.ops.registry import OpArgs, OpDef, ParamSpec
from pypto.ir.types import (
    TASK_ID,
    DataType,
    TensorLayout,
    FunctionType,
    AtomicType,
    PadValue,
    ParamDirection,
    ScalarType,
    TensorType,
    TileType,
    type_name,
)
from pypto.lang import liveness
from pypto.lang import names as N
from pypto.lang.exprs import ExprConverter
from pypto.lang.reach import Unknown, reach
from pypto.backend import MemorySpace, SoC

# Older spellings of keyword names the reference language accepted.
_KEYWORD_ALIASES = {"valid_shapes": "valid_shape"}
# Keywords of a unified op's signature that its tile form has no parameter for.
_TILE_OPTIONS = {
    "tile.matmul": ("out_dtype", "a_trans", "b_trans", "c_matrix_nz"),
    "tile.matmul_acc": ("a_trans", "b_trans"),
}


@attrs.frozen
class Callee:
    """What the program builder returns for a call of another function."""

    name: str
    returns: tuple
    params: tuple = ()  # the callee's Params: their directions say which arguments it writes
    # Per returned value, the index of the parameter it is (a kernel returns the tensors it
    # was handed to write), or None.
    returned_params: tuple = ()
    # The name the user calls it by (a specialization's IR name may be 'two_1').
    display: str = attrs.field(default=attrs.Factory(lambda self: self.name, takes_self=True))
    kernel: bool = False  # it runs on a core: a call of it is a task

    @classmethod
    def of(cls, fn: n.Function, display: str | None = None) -> Callee:
        index = {p.name: k for k, p in enumerate(fn.params)}
        ret = fn.body[-1] if fn.body and isinstance(fn.body[-1], n.Return) else None
        # a returned name is the parameter, or what an in-place write of it named it (y = pl.store(..., y))
        roots = block_roots(fn.body, {p.name: p.name for p in fn.params if isinstance(p.type, TensorType)}) \
            if ret else {}
        returned = tuple(index.get(roots.get(v.name, v.name)) if isinstance(v, n.Var) else None
                         for v in ret.values) if ret else ()
        return cls(fn.name, fn.returns, fn.params, returned, display or fn.name, fn.type.is_kernel)


@attrs.frozen
class Nothing:
    """The type of a call of a function that returns nothing: only a statement takes it."""

    callee: str


@attrs.frozen
class Several:
    """What a call returning several values gives: only ``a, b = f(...)`` takes it apart."""

    callee: Callee
    args: tuple  # the argument Exprs, which the returned parameters name


class ProgramHooks:
    """Calls out of a function body: the program builder decides what they mean. It also
    holds the backend the program is built for (``soc``), whose rules type its ops."""

    def __init__(self, soc: SoC):
        self.soc = soc

    def call_method(self, name: str, arg_types: tuple, node, conv) -> Callee:
        raise conv.error(ParseError, node, f"'self.{name}' is not a function of this program")

    def call_kernel(self, kernel, arg_types: tuple, node, conv) -> Callee:
        raise conv.error(ParseError, node, "kernel calls are only available in @pl.jit source")

    def inline_source(self, kernel, node, conv):
        """(Source, ast.FunctionDef) of an inline kernel."""
        raise conv.error(ParseError, node, "inline kernels are only available in @pl.jit source")


class ArgThunk:
    """A call argument converted on first use, in the form its parameter wants."""

    def __init__(self, conv, node):
        self.conv, self.node = conv, node
        self._operand = None

    def operand(self):
        if self._operand is None:
            self._operand = self.conv.operand(self.node)
        return self._operand


class CallConverter(ExprConverter):
    def _is_builtin_call(self, node, name: str) -> bool:
        if not isinstance(node, ast.Call):
            return False
        _, meaning = self.entity(node.func)
        return isinstance(meaning, N.Builtin) and meaning.name == name

    def call(self, node: ast.Call):
        func = node.func
        if self.has_self and isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) \
                and func.value.id == "self" and "self" not in self.env:
            return self.function_call(node, lambda types: self.hooks.call_method(func.attr, types, node, self))
        ref, meaning = self.entity(func)
        if isinstance(ref, N.Alias):
            raise self.alias_error(func, ref)
        if isinstance(meaning, N.Op):
            return self.op_call(meaning, node)
        if isinstance(meaning, N.Builtin):
            if meaning.name in ("min", "max"):
                e = self.scalar(node)
                return e, self.expr_type(e, node)
            if meaning.name == "const":
                return self._const_call(node)
            if meaning.name in ("submit", "spmd_submit"):
                return self.submit_call(node, spmd=meaning.name == "spmd_submit")
            if meaning.name in ("available_cluster_count", "available_aiv_count"):
                return self.available_count(node, meaning.name)
            if meaning.name == "dim":
                return self.dim_call(node)
            if meaning.name == "task_dummy":
                return self.task_dummy_call(node)
            where = {"range": "a for-loop iterator", "pipeline": "a for-loop iterator",
                     "parallel": "a for-loop iterator", "unroll": "a for-loop iterator", "at": "a with statement",
                     "spmd": "a for-loop iterator or a with statement",
                     "split": "an entry of pl.at(optimizations=[...])",
                     "cross_core_slot": "an entry of pl.at(optimizations=[...])",
                     "no_dep": "an argument of pl.submit(self.kernel, ...) (in a @pl.jit entry: "
                               "pl.at(..., no_dep_args=[t]))",
                     "scope": "a with statement", "manual_scope": "a with statement",
                     "yield_": "the last statement of a loop or branch body"}.get(meaning.name, "a statement")
            raise self.error(UnsupportedSyntaxError, node, f"pl.{meaning.name} is only valid as {where}",
                             hint={"scope": "with pl.scope():", "manual_scope": "with pl.manual_scope():",
                                   "at": "with pl.at(level=pl.Level.CORE_GROUP):",
                                   "yield_": "x = pl.yield_(value) as the body's last statement",
                                   "no_dep": "pl.submit(self.kernel, a, pl.no_dep(out)); in a @pl.jit entry: "
                                             "pl.at(level=..., no_dep_args=[out])"}.get(
                                 meaning.name, f"for i in pl.{meaning.name}(n):" if "loop" in where else None))
        if isinstance(ref, N.Kernel):
            return self.kernel_call(ref.obj, node)
        if isinstance(ref, N.Path):
            parts = ref.parts
            module = parts[0] if len(parts) == 2 and parts[0] in N.NAMESPACES else None
            opname = parts[-1]
            pool = [o.short for o in _ops_of(module)] if module else list(UNIFIED)
            close = difflib.get_close_matches(opname, pool, n=1)
            what = f"Unknown {module} operation: {opname}" if module else f"Unknown operation: {ref}"
            raise self.error(ParseError, func, what,
                             hint=f"did you mean {'pl.' + module + '.' if module else 'pl.'}{close[0]}?" if close
                             else f"Check if '{opname}' is a valid {module or 'pl'} operation")
        if isinstance(meaning, N.Pure):  # abs, math.sqrt, Python's min/max of scalars
            e = self.scalar(node)
            return e, self.expr_type(e, node)
        if isinstance(func, ast.Name) and func.id == "range":
            raise self.error(UnsupportedSyntaxError, node, "Python's range() is not a kernel loop",
                             hint="use pl.range(...) (or pl.pipeline / pl.parallel)")
        if isinstance(ref, N.Unknown):
            raise self.error(ParseError, func, f"'{ref.name}' is {ref.what}, not a kernel-language operation",
                             hint="kernels call pl.* operations and @pl.jit.incore / @pl.jit.inline functions")
        if isinstance(func, ast.Name) and func.id not in self.env:
            raise self.undefined(func)
        raise self.error(UnsupportedSyntaxError, node, f"cannot call '{ast.unparse(func)}' in a kernel")

    def _const_call(self, node):
        if len(node.args) != 2 or node.keywords:
            raise self.error(TypeCheckError, node, "pl.const takes (value, dtype)")
        value = self.static_of(node.args[0], (int, float, bool), "a constant")
        self._dtype(node.args[1])  # checked; a constant takes its dtype from where it is used
        return n.Const(value), self.expr_type(n.Const(value), node)

    def function_call(self, node: ast.Call, resolve: Callable):
        if node.keywords:
            raise self.error(UnsupportedSyntaxError, node, "kernel functions take positional arguments")
        args = [self.operand(a) for a in node.args]
        callee: Callee = resolve(tuple(t for _, t in args))
        self.callees[callee.name] = callee
        for k, ((e, t), p) in enumerate(zip(args, callee.params)):
            if isinstance(t, ScalarType) and t != p.type:  # an integer the call converts (check_call_types)
                ssa = self.fresh(p.name)
                self.types[ssa] = p.type
                self.emit(n.Assign(ssa, p.type, e, span=self.span(node.args[k])))
                args[k] = (n.Var(ssa), p.type)
        for (e, _), p, arg_node in zip(args, callee.params, node.args):
            if p.direction is not ParamDirection.In:
                self.check_writable(e, arg_node, f"'{callee.display}' writes its parameter '{p.name}' "
                                                 f"(pl.{p.direction.name}), and this argument is")
        call = n.FuncCall(callee.name, tuple(e for e, _ in args))
        if not callee.returns:
            return call, Nothing(callee.display)
        if len(callee.returns) == 1 and callee.returned_params and callee.returned_params[0] is not None:
            self.returned_args[call] = call.args[callee.returned_params[0]]
        if len(callee.returns) > 1:
            return call, Several(callee, call.args)
        return call, callee.returns[0]

    def kernel_call(self, kernel, node: ast.Call):
        if getattr(kernel, "function_type", None) is FunctionType.Inline:
            return self.inline_call(kernel, node)
        if self.incore:
            raise self.error(ParseError, node, f"an InCore function cannot call the kernel '{kernel.__name__}'",
                             hint="call it from the @pl.jit entry, or make it @pl.jit.inline")
        if node.keywords:  # bound by the kernel's signature, as a Python call binds them
            node = ast.copy_location(ast.Call(node.func, self._by_position(node, kernel.param_names, kernel.__name__),
                                              []), node)
        return self.function_call(node, lambda types: self.hooks.call_kernel(kernel, types, node, self))

    def _by_position(self, node: ast.Call, names, fname: str) -> list:
        """A call's argument nodes in parameter order (keywords placed by name)."""
        if len(node.args) > len(names):
            raise self.error(TypeCheckError, node, f"'{fname}' takes {len(names)} arguments, got {len(node.args)}")
        given = self._with_keywords(node, dict(zip(names, node.args)), names, fname)
        missing = [x for x in names if x not in given]
        if missing:
            raise self.error(TypeCheckError, node, f"'{fname}' is missing its '{missing[0]}' argument",
                             hint=f"{fname}({', '.join(names)})")
        return [given[x] for x in names]

    def _with_keywords(self, node: ast.Call, given: dict, names, fname: str) -> dict:
        """``given`` (parameter -> argument node, from positions) with the call's keywords."""
        for k in node.keywords:
            if k.arg is None:
                raise self.error(UnsupportedSyntaxError, k, "**kwargs are not supported in kernel calls")
            if k.arg not in names:
                close = difflib.get_close_matches(k.arg, names, n=1)
                raise self.error(TypeCheckError, k, f"'{fname}' got an unexpected keyword '{k.arg}'",
                                 hint=f"did you mean '{close[0]}'?" if close else f"its parameters are: {', '.join(names)}")
            if k.arg in given:
                raise self.error(TypeCheckError, k, f"'{fname}' got '{k.arg}' twice")
            given[k.arg] = k.value
        return given

    def inline_call(self, kernel, node: ast.Call):
        """Splice an inline kernel's body here, its parameters bound to the arguments."""
        source, fdef = self.hooks.inline_source(kernel, node, self)
        if any(k is kernel for k in self.inlining):
            raise self.error(UnsupportedSyntaxError, node,
                             f"function '{fdef.name}' calls itself (recursion is not supported)",
                             hint="inline functions are spliced in at compile time; "
                                  "write the repetition as a pl.range loop")
        caller = self.source
        bound = self._bind_inline_args(fdef, source, node)
        saved = (self.source, self.env, self.dropped, self.local_names, self.frames)
        self.source, self.env, self.dropped, self.frames = source, {}, {}, []
        self.local_names = liveness.first_bindings(fdef.body)
        self.inlining.append(kernel)
        try:
            for p, (e, t), where in bound:
                self.check_local_name(p.arg, p)
                if p.annotation is not None:
                    self._check_inline_arg(fdef.name, p, t, where)
                if isinstance(e, n.Var):
                    self.env[p.arg] = e.name
                else:
                    self.bind(p.arg, t, e, p, span=where)
            body = self._body_statements(fdef.body)
            ret = None
            if body and isinstance(body[-1], ast.Return):
                body, ret = body[:-1], body[-1]
            for stmt, later in zip(body, liveness.live_after_each(body, tail=[ret] if ret is not None else [])):
                if isinstance(stmt, ast.Return):
                    raise self.error(UnsupportedSyntaxError, stmt, "an inline function returns only at its end")
                self.statement(stmt, later, top=False)
            if ret is not None and isinstance(ret.value, ast.Tuple):
                raise self.error(UnsupportedSyntaxError, ret, "an inline function returns one value")
            result = (None, Nothing(fdef.name)) if ret is None or ret.value is None else self.operand(ret.value)
            self._check_inline_return(fdef, ret, result[1])
            return result
        except PyptoError as err:
            # Which call of the helper went wrong is half the story.
            raise err.with_note(f"in '{fdef.name}', inlined at {caller.span(node)}") from None
        finally:
            self.inlining.pop()
            self.source, self.env, self.dropped, self.local_names, self.frames = saved

    def _bind_inline_args(self, fdef: ast.FunctionDef, source, node: ast.Call) -> list:
        """(parameter, (Expr, type), span) per parameter of an inline kernel, bound the way
        Python binds a call: positions, then keywords, then the defaults."""
        a = fdef.args  # its signature was checked where the source was read (check_signature)
        params = [*a.args, *a.kwonlyargs]
        names = [p.arg for p in params]
        defaults = dict(zip([p.arg for p in a.args[len(a.args) - len(a.defaults):]], a.defaults))
        defaults.update({p.arg: d for p, d in zip(a.kwonlyargs, a.kw_defaults) if d is not None})
        if len(node.args) > len(a.args):
            raise self.error(TypeCheckError, node, f"'{fdef.name}' takes {len(a.args)} positional argument"
                                                   f"{'s' if len(a.args) != 1 else ''}, got {len(node.args)}")
        given = self._with_keywords(node, {p.arg: arg for p, arg in zip(a.args, node.args)}, names, fdef.name)
        missing = [x for x in names if x not in given and x not in defaults]
        if missing:
            raise self.error(TypeCheckError, node, f"'{fdef.name}' is missing its '{missing[0]}' argument",
                             hint=f"{fdef.name}({', '.join(names)})")
        bound = []
        for p in params:  # call-site arguments convert where they are written, in order
            if p.arg in given:
                bound.append((p, self.operand(given[p.arg]), self.span(given[p.arg])))
        saved = (self.source, self.env, self.dropped, self.local_names)
        self.source, self.env, self.dropped, self.local_names = source, {}, {}, {}  # read where it is written
        try:
            for p in params:
                if p.arg not in given:
                    bound.append((p, self.operand(defaults[p.arg]), self.span(defaults[p.arg])))
        finally:
            self.source, self.env, self.dropped, self.local_names = saved
        order = {p.arg: k for k, p in enumerate(params)}
        return sorted(bound, key=lambda b: order[b[0].arg])

    def _check_inline_return(self, fdef: ast.FunctionDef, ret, t) -> None:
        """The value an inline kernel returns against its return annotation."""
        if fdef.returns is None:
            return
        where = fdef.returns
        if isinstance(where, ast.Constant) and where.value is None:
            if not isinstance(t, Nothing):
                raise self.error(TypeCheckError, ret, f"'{fdef.name}' is annotated '-> None' but returns {type_name(t)}",
                                 hint="drop the annotation, or the returned value")
            return
        if isinstance(t, Nothing):
            raise self.error(TypeCheckError, where, f"'{fdef.name}' is annotated to return "
                                                    f"{ast.unparse(where)} but returns nothing",
                             hint="return the value at the end of the function")
        try:
            self.annotation(where, given=t, param="the returned value")
        except SpecializationError:
            raise self.error(TypeCheckError, ret, f"'{fdef.name}' returns {type_name(t)}, but its annotation says "
                                                  f"{ast.unparse(where)}",
                             hint="make the annotation match the value, or convert the value (pl.cast) "
                                  "before returning it") from None

    def _check_inline_arg(self, fname: str, param: ast.arg, t, where) -> None:
        """An argument against its parameter's annotation, reported at the call."""
        try:
            self.annotation(param.annotation, given=t, param=param.arg)
        except SpecializationError as err:
            declared = f" (declared at {err.span})" if err.span is not None else ""
            raise TypeCheckError(f"'{fname}': {err.message}{declared}", span=where,
                                 hint=f"pass a value of the declared type, or annotate '{param.arg}' with a bare "
                                      "pl.Tile / pl.Tensor to take any") from None

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
        op = self.pick_op(meaning, thunks, keywords, node) if meaning.unified else lookup(meaning.name)
        self.require_incore(node, op.name)
        if op.name == "tensor.create":
            self.check_create(keywords)
        options = self.unified_options(meaning, op, keywords) if meaning.unified else {}
        values, types = self.bind_args(op, thunks, keywords, node)
        declared = getattr(self, "declared", None)
        if op.name in POPS and values["shape"] is None and isinstance(declared, TileType):
            values["shape"], values["dtype"] = tuple(n.Const(s) for s in declared.shape), declared.dtype
        call, t = self.checked_call(op, values, types, node)
        if "out_dtype" in options:
            want, where = options["out_dtype"]
            if want is not None and want is not t.dtype:
                raise self.error(TypeCheckError, where,
                                 f"pl.{meaning.name}: out_dtype=pl.{want.name} on Tile operands, but the Cube "
                                 f"accumulator fixes the result dtype to {t.dtype.name}",
                                 hint=f"drop out_dtype (or write out_dtype=pl.{t.dtype.name}); a store from Acc "
                                      "converts to the output tensor's dtype")
        return call, t

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
        if p.optional and isinstance(thunk.node, ast.Constant) and thunk.node.value is None:
            return None, None
        if p.kind is Kind.SCALAR and p.integer:
            return self.index(thunk.node, what, "an integer"), None
        if p.kind in (Kind.TILE, Kind.TENSOR, Kind.SCALAR, Kind.ARRAY):
            e, t = thunk.operand()
            if t == TASK_ID and not op.name.startswith("array."):
                raise self.error(TypeCheckError, thunk.node, f"{what} is a TaskId, which is not a number: it only "
                                 "names a task", hint="pass TaskIds to deps=[...] (or keep them in a pl.array)")
            return e, t
        if p.kind is Kind.INDEX_LIST:
            if not isinstance(thunk.node, (ast.List, ast.Tuple)):
                raise self.error(TypeCheckError, thunk.node, f"{what} is a list of indices", hint="[i * 64, 0]")
            return tuple(self.index(e, what) for e in thunk.node.elts), None
        if p.kind is Kind.SHAPE:
            return tuple(n.Const(v) for v in self.static_ints(thunk.node, what)), None
        kinds = {Kind.DTYPE: DataType, Kind.SPACE: MemorySpace, Kind.PAD: PadValue, Kind.BOOL: bool,
                 Kind.INT: int, Kind.STR: str, Kind.LAYOUT: TensorLayout, Kind.ATOMIC: AtomicType}
        if p.kind is Kind.INT and isinstance(thunk.node, ast.Constant) and isinstance(thunk.node.value, bool):
            raise self.error(TypeCheckError, thunk.node, f"{what} must be an int")
        examples = {Kind.DTYPE: "pl.FP32", Kind.SPACE: "pl.Mem.Vec", Kind.PAD: "pl.PadValue.zero", Kind.BOOL: "True",
                    Kind.INT: "1", Kind.STR: '"name"', Kind.LAYOUT: "pl.TensorLayout.ND", Kind.ATOMIC: "pl.AtomicType.Add"}
        return self.static_of(thunk.node, kinds[p.kind], what, hint=f"e.g. {p.name}={examples[p.kind]}"), None

    def checked_call(self, op: OpDef, values: dict, types: dict, node):
        values = {**{p.name: p.default for p in op.params if not p.required}, **values}
        try:
            t = infer_type(op, OpArgs(op.name, values, types), self.hooks.soc)
        except PyptoError as err:
            raise err.with_span(self.span(node)) from None
        if op.writes_operand is not None:
            self.check_writable(values[op.writes_operand], node, f"{op.name} writes its '{op.writes_operand}', which is")
        self.check_scalar_constants(op, values, types, t, node)
        self.check_bounds(op, values, types, node)
        return n.Call(op.name, tuple(values[p.name] for p in op.params)), t

    def check_scalar_constants(self, op: OpDef, values: dict, types: dict, result, node) -> None:
        """An integer constant an op narrows to its operand's integer dtype (pl.adds on an
        INT32 tile, pl.full of an INT8 tile) must fit it: a constant that does not is a
        mistake, caught where it is written rather than wrapped at run time. On a float
        operand, an integer constant must be a number some float holds (10 ** 400 is not)."""
        operand = next((types[p.name] for p in op.params if p.kind in (Kind.TILE, Kind.TENSOR)
                        and isinstance(types.get(p.name), (TileType, TensorType))), result)
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

    def check_bounds(self, op: OpDef, values: dict, types: dict, node) -> None:
        """Offsets that loop bounds make go out of range, e.g. a load at i * 64 for i up to 8,
        on the iterations the enclosing conditions let through to the op (``if i < 4:``). What
        depends on a runtime value is left to the run, which checks every access."""
        tensor_key = {"tile.load": "tensor", "tile.store": "output_tensor", "tensor.slice": "x",
                      "tensor.assemble": "target"}.get(op.name)
        if tensor_key is None:
            return
        tensor_t = types[tensor_key]
        offsets = values["offsets" if op.name.startswith("tile.") else "offset"]
        if op.name == "tile.load":
            moved = values["valid_shape"] or values["shapes"]
            extents = [c.value if isinstance(c, n.Const) else None for c in moved]
        elif op.name == "tensor.slice":
            extents = [c.value for c in values["shape"]]
        else:
            src = types["tile" if op.name == "tile.store" else "source"]
            moved = getattr(src, "valid_shape", None)
            extents = list(src.shape) if moved is None else [c.value if isinstance(c, n.Const) else None for c in moved]
        for axis, (off, extent, dim) in enumerate(zip(offsets, extents, tensor_t.shape)):
            if extent is None or isinstance(off, n.Const):
                continue
            span = interval(off, self.ranges)
            if span is not None and span[0] >= 0 and span[1] + extent <= dim:
                continue  # in range on every iteration, reached or not
            witness = None
            try:
                found = reach(off, self.guards, self.domains, self.scalar_defs)
            except Unknown:
                if self.guards or span is None:
                    continue  # under a condition decided at run time: checked when it runs
                lo, hi = span
            else:
                if found is None:
                    continue  # no iteration gets past the enclosing conditions to this op
                lo, lo_at, hi, hi_at = found
                witness = hi_at if hi + extent > dim else lo_at
            if lo < 0 or hi + extent > dim:
                bad = hi if hi + extent > dim else lo
                at = ", ".join(f"{self.user_name(k)} = {v}" for k, v in (witness or {}).items())
                raise self.error(
                    OutOfBoundsError, node,
                    f"{op.name} region on axis {axis} reaches [{bad}, {bad + extent}) but the tensor's axis is [0, {dim})"
                    + (f" (when {at})" if at else ""),
                    hint="check the loop bounds against the tensor shape (the offset spans "
                         f"{lo}..{hi} over the loop"
                         + (", on the iterations that reach it)" if self.guards else ")"),
                )

    def user_name(self, ssa: str) -> str:
        """The Python name an SSA name stands for, for messages."""
        for k, v in self.env.items():
            if v == ssa:
                return k
        return re.sub(r"_\d+$", "", ssa)


def _float_holds(v: int) -> bool:
    try:
        float(v)
    except OverflowError:
        return False
    return True


def _ops_of(module: str):
    return [o for o in all_ops() if o.level == module]
