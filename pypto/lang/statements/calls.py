"""Calls in kernel source: ``pl`` ops bound to the registry's signatures and checked
where they are written, calls of other kernel functions (``self.f(...)``, a
``@pl.jit.incore`` kernel), and inline kernels spliced in place. A mixin of the function
converter, whose values and statements it uses."""

from __future__ import annotations

import ast
import difflib
from collections.abc import Callable

import attrs
from pyrsistent import pmap

from pypto.errors import (
    ParseError,
    PyptoError,
    SpecializationError,
    TypeCheckError,
    UnsupportedSyntaxError,
)
from pypto.ir import nodes as n
from pypto.ir.tensors import block_roots
from pypto.ir.ops import UNIFIED, all_ops
from pypto.ir.types import (
    FunctionType,
    ParamDirection,
    ScalarType,
    TensorType,
    conforms,
    type_name,
)
from pypto.lang.flow import liveness
from pypto.lang.vocabulary import names as N
from pypto.lang.expressions.exprs import ExprConverter
from pypto.lang.statements.op_calls import OpCalls
from pypto.backend import SoC

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
class Inlined:
    """What an inline function returning a tuple gives: its values, for ``a, b = f(...)``."""

    callee: str
    values: tuple  # (Expr, type) per returned value


@attrs.frozen
class Several:
    """What a call returning several values gives: only ``a, b = f(...)`` takes it apart."""

    callee: Callee
    args: tuple  # the argument Exprs, which the returned parameters name


class ProgramHooks:
    """Calls out of a function body: the program builder decides what they mean. It also
    holds the backend the program is built for (``soc``), whose rules type its ops."""

    kernel_call_hint = "call it from the @pl.jit entry, or make it @pl.jit.inline"  # (an InCore caller's)
    debug = False  # a build run as host Python (pypto.runtime.host): breakpoint() and print() are kept

    def __init__(self, soc: SoC):
        self.soc = soc

    def call_method(self, name: str, arg_types: tuple, node, conv) -> Callee:
        raise conv.error(ParseError, node, f"'self.{name}' is not a function of this program")

    def call_kernel(self, kernel, arg_types: tuple, node, conv) -> Callee:
        raise conv.error(ParseError, node, "kernel calls are only available in @pl.jit source")

    def inline_source(self, kernel, node, conv):
        """(Source, ast.FunctionDef) of an inline kernel."""
        raise conv.error(ParseError, node, "inline kernels are only available in @pl.jit source")


# Python's calls a kernel makes when it runs as host Python (debug=True): a pdb stop, a print
DEBUG_CALLS = ("breakpoint", "print")
DEBUG_HINT = ('run it as host Python: RunConfig(platform="ref", debug=True), or @pl.jit(debug=True); on every '
              'platform, pl.debug_print(t, "label") prints a tile where the statement runs')


class CallConverter(OpCalls, ExprConverter):
    def debug_call(self, node: ast.Call, name: str):
        """``breakpoint()`` / ``print(...)``: kept for the host run of a debug build (a call
        the generated Python makes as written); any other build has no host to stop or print on."""
        if not getattr(self.hooks, "debug", False):
            what = "stops a kernel" if name == "breakpoint" else "prints"
            raise self.error(UnsupportedSyntaxError, node,
                             f"{name}() {what} only where the kernel runs as host Python, and this build compiles "
                             "it for the chip", hint=DEBUG_HINT)
        if node.keywords:
            raise self.error(UnsupportedSyntaxError, node.keywords[0].value,
                             f"{name}() in a kernel takes its values by position", hint=f"{name}(t, i)")
        args = []
        for arg in node.args:
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                args.append(n.Const(arg.value))
            elif name == "breakpoint":
                raise self.error(UnsupportedSyntaxError, arg, "breakpoint() in a kernel takes no arguments",
                                 hint="breakpoint()")
            else:
                args.append(self.operand(arg)[0])
        return n.FuncCall(name, tuple(args)), Nothing(name)

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
            if meaning.name == "get_comm_ctx":
                return self.comm_ctx_call(node)
            if meaning.name == "task_dummy":
                return self.task_dummy_call(node)
            where = {"range": "a for-loop iterator", "pipeline": "a for-loop iterator",
                     "parallel": "a for-loop iterator", "unroll": "a for-loop iterator", "at": "a with statement",
                     "spmd": "a for-loop iterator or a with statement",
                     "split": "an entry of pl.at(optimizations=[...])",
                     "cross_core_slot": "an entry of pl.at(optimizations=[...])",
                     "no_dep": "an argument of a kernel call or of pl.submit(self.kernel, ...) (in a @pl.jit "
                               "entry: pl.at(..., no_dep_args=[t]))",
                     "scope": "a with statement", "manual_scope": "a with statement",
                     "dump_tag": "a statement of its own, in an orchestration",
                     "yield_": "the last statement of a loop or branch body"}.get(meaning.name, "a statement")
            raise self.error(UnsupportedSyntaxError, node, f"pl.{meaning.name} is only valid as {where}",
                             hint={"scope": "with pl.scope():", "manual_scope": "with pl.manual_scope():",
                                   "at": "with pl.at(level=pl.Level.CORE_GROUP):",
                                   "yield_": "x = pl.yield_(value) as the body's last statement",
                                   "no_dep": "self.kernel(a, pl.no_dep(out)); in a @pl.jit entry: "
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
        if isinstance(ref, N.Unknown) and ref.name in DEBUG_CALLS:
            return self.debug_call(node, ref.name)
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
        no_dep = [k for k, a in enumerate(node.args) if self._is_builtin_call(a, "no_dep")]
        if no_dep:
            node = self.without_no_dep(node)
        args = [self.operand(a) for a in node.args]
        callee: Callee = resolve(tuple(t for _, t in args))
        self.callees[callee.name] = callee
        for k, ((e, t), p) in enumerate(zip(args, callee.params)):
            if isinstance(t, ScalarType) and t != p.type:  # an integer the call converts (check_call_types)
                ssa = self.fresh(p.name, temp=True)
                self.types[ssa] = p.type
                value = n.BinOp("!=", e, n.Const(0)) if p.type.dtype.is_bool else e  # a 0/1 flag: its truth
                self.emit(n.Assign(ssa, p.type, value, span=self.span(node.args[k])))
                args[k] = (n.Var(ssa), p.type)
        for k in no_dep:
            if not isinstance(args[k][1], TensorType):
                raise self.error(TypeCheckError, node.args[k], "pl.no_dep marks a tensor argument")
        if no_dep and not callee.kernel:
            raise self.error(TypeCheckError, node, f"pl.no_dep marks an argument of a kernel call's task, and "
                             f"'{callee.display}' is not a kernel", hint="mark the arguments where it calls a kernel")
        call = n.FuncCall(callee.name, tuple(e for e, _ in args), arg_spans=tuple(self.span(a) for a in node.args),
                          no_dep=tuple(no_dep))
        self.note_call(call, any(p.direction is not ParamDirection.In for p in callee.params))
        if not callee.returns:
            return call, Nothing(callee.display)
        if len(callee.returns) == 1 and callee.returned_params and callee.returned_params[0] is not None:
            k = callee.returned_params[0]
            self.returned_args[call] = call.args[k]
            if conforms(args[k][1], callee.returns[0]):  # the tensor handed back is the one the orchestration sized
                return call, args[k][1]
        if len(callee.returns) > 1:
            return call, Several(callee, call.args)
        return call, callee.returns[0]

    def without_no_dep(self, node: ast.Call) -> ast.Call:
        """The call with each ``pl.no_dep(t)`` argument as ``t`` (in an orchestration)."""
        if self.incore:
            raise self.error(ParseError, node, "pl.no_dep marks a task's argument: a kernel submits no tasks",
                             hint="mark it where the orchestration calls the kernel")
        args = []
        for a in node.args:
            if self._is_builtin_call(a, "no_dep"):
                if len(a.args) != 1 or a.keywords:
                    raise self.error(TypeCheckError, a, "pl.no_dep takes one tensor: pl.no_dep(t)")
                a = a.args[0]
            args.append(a)
        return ast.copy_location(ast.Call(node.func, args, []), node)

    def kernel_call(self, kernel, node: ast.Call):
        if getattr(kernel, "function_type", None) is FunctionType.Inline:
            return self.inline_call(kernel, node)
        if self.incore:
            raise self.error(ParseError, node, f"an InCore function cannot call the kernel '{kernel.__name__}'",
                             hint=self.hooks.kernel_call_hint)
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
        saved = (self.source, self.env, self.dropped, self.local_names, self.frames, self.auto_scope)
        self.source, self.env, self.dropped, self.frames = source, pmap(), {}, []
        if getattr(kernel, "auto_scope", True) is False:  # its own hand-placed pl.scope() blocks land in the caller
            self.auto_scope = False
        self.local_names = liveness.first_bindings(fdef.body)
        self.inlining.append(kernel)
        self.sites.append(f"in '{fdef.name}', inlined at {caller.span(node)}")
        try:
            for p, (e, t), where in bound:
                self.check_local_name(p.arg, p)
                if p.annotation is not None:
                    self._check_inline_arg(fdef.name, p, t, where)
                if isinstance(e, n.Var):
                    self.env = self.env.set(p.arg, e.name)
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
                values = tuple(self.operand(e) for e in ret.value.elts)
                self._check_inline_returns(fdef, ret, values)
                return None, Inlined(fdef.name, values)
            result = (None, Nothing(fdef.name)) if ret is None or ret.value is None else self.operand(ret.value)
            self._check_inline_return(fdef, ret, result[1])
            return result
        except PyptoError as err:
            # Which call of the helper went wrong is half the story.
            raise err.with_note(f"in '{fdef.name}', inlined at {caller.span(node)}") from None
        finally:
            self.inlining.pop()
            self.sites.pop()
            self.source, self.env, self.dropped, self.local_names, self.frames, self.auto_scope = saved

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
        self.source, self.env, self.dropped, self.local_names = source, pmap(), {}, {}  # read where it is written
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

    def _check_inline_returns(self, fdef: ast.FunctionDef, ret, values) -> None:
        """The values an inline kernel returns as a tuple against ``-> tuple[A, B]``."""
        where = fdef.returns
        if where is None:
            return
        items = where.slice.elts if isinstance(where, ast.Subscript) and isinstance(where.slice, ast.Tuple) else None
        if items is None or len(items) != len(values):
            raise self.error(TypeCheckError, ret, f"'{fdef.name}' returns {len(values)} values, but its annotation "
                             f"says {ast.unparse(where)}", hint=f"annotate it -> tuple[{', '.join(['...'] * len(values))}]")
        for item, (_, t) in zip(items, values):
            try:
                self.annotation(item, given=t, param="a returned value")
            except SpecializationError:
                raise self.error(TypeCheckError, ret, f"'{fdef.name}' returns {type_name(t)} where its annotation "
                                 f"says {ast.unparse(item)}", hint="make the annotation match the value") from None

    def _check_inline_arg(self, fname: str, param: ast.arg, t, where) -> None:
        """An argument against its parameter's annotation, reported at the call."""
        try:
            self.annotation(param.annotation, given=t, param=param.arg)
        except SpecializationError as err:
            declared = f" (declared at {err.span})" if err.span is not None else ""
            raise TypeCheckError(f"'{fname}': {err.message}{declared}", span=where,
                                 hint=f"pass a value of the declared type, or annotate '{param.arg}' with a bare "
                                      "pl.Tile / pl.Tensor to take any") from None


def _ops_of(module: str):
    return [o for o in all_ops() if o.level == module]
