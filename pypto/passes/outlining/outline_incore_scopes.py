"""OutlineIncoreScopes: each ``with pl.at(level=CORE_GROUP)`` block becomes an InCore
function, called from where the block was.

    def k(self, a, out):                         def k_incore_0(self, a, out):     # InCore
        with pl.at(level=pl.Level.CORE_GROUP):       t = pl.tile.load(a, ...)
            t = pl.tile.load(a, ...)      ->         pl.tile.store(t, ..., out)
            pl.tile.store(t, ..., out)           def k(self, a, out):              # Orchestration
        return out                                   self.k_incore_0(a, out)
                                                     return out

Parameters are the names the block reads from outside, in order of first use; a tensor
the block writes is an Out parameter (InOut if it also reads it). A value the block binds
and the caller reads afterwards is returned (tensors only: tiles do not leave a core).
"""

from __future__ import annotations

import attrs

from pypto.errors import UnsupportedSyntaxError
from pypto.ir import nodes as n
from pypto.ir.ops import lookup, op_call
from pypto.ir.tensors import block_roots
from pypto.ir.types import (TASK_ID, DataType, FunctionType, ParamDirection, ScalarType, TensorType, TileType,
                             type_name)
from pypto.passes.context import PassContext, PassResult, result
from pypto.passes.outlining.crossings import crosses
from pypto.passes.tile_conversion.return_outputs import pass_buffers
from pypto.passes.outlining.crossings import stage as stage_crossings
from pypto.passes.outlining.crossings import unstaged_crossing
from pypto.passes.outlining.lane_rules import check_regions
from pypto.passes.outlining.lanes import share_lanes

DEFAULT_SLOTS = 2  # pl.cross_core_slot(slot_num=...)'s default: the shallowest ring that double-buffers


def outline_incore_scopes(program: n.Program, ctx: PassContext) -> PassResult:
    program = _staged_kernels(program, ctx.soc)
    names = {f.name for f in program.functions}
    out = []
    for fn in program.functions:
        if not any(isinstance(s, n.Scope) for s in n.walk_stmts(fn.body)):
            unstaged_crossing(fn, ctx.soc)
            out.append(fn)
            continue
        outliner = _Outliner(fn, names, ctx.soc)
        body = outliner.block(fn.body, after=())
        kind = FunctionType.Orchestration if fn.type is FunctionType.Opaque else fn.type
        out.extend(outliner.functions)
        out.append(attrs.evolve(fn, body=body, type=kind))
    return result(n.Program(program.name, tuple(out)))


class _Outliner:
    def __init__(self, fn: n.Function, names: set, soc):
        self.fn, self.soc = fn, soc
        self.names = names
        self.types = n.symbols(fn)
        self.used = set(self.types)  # the function's names, and those the buffers made here take
        self.functions: list[n.Function] = []

    def block(self, body, after: tuple) -> tuple:
        out = []
        for i, stmt in enumerate(body):
            rest = (*body[i + 1:], *after)
            if isinstance(stmt, n.Scope):
                out.extend(self.outline(stmt, rest))
            elif isinstance(stmt, (*n.LOOPS, n.RuntimeScope, n.Cluster)):
                out.append(attrs.evolve(stmt, body=self.block(stmt.body, rest)))
            elif isinstance(stmt, n.If):
                out.append(attrs.evolve(stmt, then_body=self.block(stmt.then_body, rest),
                                        else_body=self.block(stmt.else_body, rest)))
            else:
                out.append(stmt)
        return tuple(out)

    def outline(self, scope: n.Scope, rest: tuple) -> list:
        blocks = scope.blocks
        if blocks is not None and not isinstance(blocks, n.Const) and crosses(scope.body, self.types, self.soc):
            raise UnsupportedSyntaxError(
                "a mixed SPMD scope gives each block a GM window of its own for what crosses from the cube to the "
                "vector cores, so its block count must be known when compiling", span=scope.span,
                hint="write the block count as a constant (or pl.system.available_*_count())")
        check_regions(scope.body, scope.split)
        slots = scope.slot_num if scope.slot_num is not None else DEFAULT_SLOTS
        count = blocks.value if isinstance(blocks, n.Const) else None  # an SPMD scope's blocks
        body, crossings = stage_crossings(scope.body, self.types, lambda base: n.fresh_name(base, self.used),
                                          count, slots, self.soc)
        scope = attrs.evolve(scope, body=body)
        for name, t, _, _ in crossings:  # a GM buffer the orchestration creates for each, an Out of the kernel
            self.types[name] = t
        bound = set(_bound(scope.body))
        reads = [v for v in _reads(scope.body) if v not in bound]
        roots = block_roots(scope.body, {x: x for x in reads if isinstance(self.types.get(x), TensorType)})
        written = {roots.get(x, x) for x in _written(scope.body)}
        read_later = set(_reads(rest))
        exported = [name for name in n.visible_after(scope) if name in read_later and name != scope.task_id]
        for name in exported:
            t = self.types[name]
            if not isinstance(t, TensorType):
                raise UnsupportedSyntaxError(
                    f"'{name}' ({type_name(t)}) is bound inside a pl.at scope and read after it; only tensors "
                    "leave an InCore scope", span=scope.span,
                    hint="store the value into an output tensor inside the scope" if isinstance(t, TileType)
                    else "compute the scalar outside the scope")
        params = []
        for name in reads:
            t = self.types[name]
            direction = ParamDirection.In
            if name in written:
                direction = ParamDirection.InOut if _reads_before_write(scope.body, name, roots) else \
                    ParamDirection.Out
            params.append(n.Param(name, t, direction))
        # A tensor the scope computes and a later one reads needs GM to live in between: a
        # buffer the orchestration creates, which the scope writes the value into.
        before, body, handed = [], list(scope.body), {}
        for name, t, _, _ in crossings:
            before.append(n.Assign(name, t, op_call("tensor.create", shape=tuple(n.Const(d) for d in t.shape),
                                                    dtype=t.dtype), span=scope.span))
        for name in exported:
            if roots.get(name, name) in reads:
                handed[name] = name
                continue
            t = self.types[name]
            buf = n.fresh_name(f"{name}_buf", self.used)
            before.append(n.Assign(buf, t, op_call("tensor.create", shape=tuple(n.Const(d) for d in t.shape),
                                                   dtype=t.dtype), span=scope.span))
            params.append(n.Param(buf, t, ParamDirection.Out))
            body.append(n.Eval(op_call("tensor.assemble", target=n.Var(buf), source=n.Var(name),
                                       offset=tuple(n.Const(0) for _ in t.shape)), span=scope.span))
            roots[name] = handed[name] = buf
        body, lanes = share_lanes(tuple(body), scope.split, self.types, lambda base: n.fresh_name(base, self.used))
        body = _reserve_rings(list(body), crossings, count, lanes, lambda base: n.fresh_name(base, self.used),
                              scope.span)
        fname = n.fresh_name(scope.name_hint or f"{self.fn.name}_incore_{len(self.functions)}", self.names)
        returns = tuple(self.types[name] for name in exported)
        if exported:
            body.append(n.Return(tuple(n.Var(handed[x]) for x in exported), span=scope.span))
        self.functions.append(n.Function(fname, tuple(params), tuple(body), returns, FunctionType.InCore,
                                         span=scope.span))
        call = n.FuncCall(fname, tuple(n.Var(p.name) for p in params))
        if scope.submits:
            return before + self.submit(scope, call, [p.name for p in params], exported, roots)
        if len(exported) == 1:
            return before + [n.Assign(exported[0], returns[0], call, span=scope.span)]
        # several: each is a tensor the kernel wrote where the orchestration passed it
        return before + [n.Eval(call, span=scope.span)] + [
            n.Assign(x, self.types[x], n.Var(roots.get(x, x)), span=scope.span) for x in exported]

    def submit(self, scope: n.Scope, call: n.FuncCall, reads: list, exported: list, roots: dict) -> list:
        """The scope's task as a Submit (its id bound when the scope names one); a tensor it
        hands back is the argument it wrote."""
        for name in scope.no_dep_args:
            if name not in reads:
                raise UnsupportedSyntaxError(f"pl.at(no_dep_args=...) names '{name}', which the scope does not use",
                                             span=scope.span, hint="list the tensors the scope reads or writes")
        task = n.Submit(call, scope.deps, tuple(k for k, x in enumerate(reads) if x in scope.no_dep_args),
                        scope.allow_early_resolve, scope.blocks, scope.sync_start, scope.predicate)
        out = [n.Assign(scope.task_id, TASK_ID, task, span=scope.span) if scope.task_id is not None
               else n.Eval(task, span=scope.span)]
        for name in exported:
            out.append(n.Assign(name, self.types[name], n.Var(roots.get(name, name)), span=scope.span))
        return out


def _reserve_rings(body: list, crossings: list, count: int | None, lanes: int, fresh, span) -> list:
    """Each ring's slots in the vector cores' UB, reserved at the top of the kernel's body:
    a lane's share of as many slots as its GM ring has (one for a crossing made once a
    launch); ConvertTensorToTileOps cuts a slot down to the block a pop carries."""
    base = 0
    for name, gm, tile, to_cube in crossings:
        if to_cube:  # the cube reads it from GM: no vector UB holds it
            continue
        depth = gm.shape[0] // (tile.shape[0] * (count or 1))
        size = depth * tile.nbytes // lanes
        body.insert(0, n.Assign(fresh(f"{name}_ring"), ScalarType(DataType.INT32),
                                op_call("system.reserve_buffer", name=name, size=size, base=base, slot_num=depth),
                                span=span))
        base += size
    return body


def _staged_kernels(program: n.Program, soc) -> n.Program:
    """A kernel written by hand (an InCore function) whose cube and vector work cross —
    a matmul of a vector result, vector work on a matmul's, a tile moved between the
    sides — staged as a pl.at scope is: each crossing value goes through a GM buffer that
    becomes a new Out parameter of the kernel, which every call of it creates (as
    ``return_outputs`` does for a returned tensor). A kernel nothing calls, or one an SPMD
    launch calls with a block count not known when compiling (or several), is left as
    written: its crossings are refused where they are (``unstaged_crossing``, the
    conversion's own checks)."""
    calls: dict[str, set] = {}
    for fn in program.functions:
        for stmt in n.walk_stmts(fn.body):
            value = getattr(stmt, "value", None)
            call = value.call if isinstance(value, n.Submit) else value
            if isinstance(call, n.FuncCall):
                blocks = value.blocks if isinstance(value, n.Submit) else None
                calls.setdefault(call.callee, set()).add(
                    None if blocks is None else blocks.value if isinstance(blocks, n.Const) else "dynamic")
    added, functions = {}, []
    for fn in program.functions:
        counts = calls.get(fn.name, set())
        if fn.type is FunctionType.InCore and len(counts) == 1 and "dynamic" not in counts \
                and crosses(fn.body, n.symbols(fn), soc):
            (count,) = counts
            types = n.symbols(fn)
            used = set(types) | {p.name for p in fn.params}

            def fresh(base, used=used):
                return n.fresh_name(base, used)

            body, crossings = stage_crossings(fn.body, types, fresh, count, DEFAULT_SLOTS, soc)
            for name, t, _, _ in crossings:
                types[name] = t
            body, lanes = share_lanes(body, None, types, fresh)
            body = _reserve_rings(list(body), crossings, count, lanes, fresh, fn.span)
            params = tuple(n.Param(name, t, ParamDirection.Out) for name, t, _, _ in crossings)
            fn = attrs.evolve(fn, params=(*fn.params, *params), body=tuple(body))
            added[fn.name] = params
        functions.append(fn)
    if not added:
        return program
    return attrs.evolve(program, functions=tuple(pass_buffers(fn, added) for fn in functions))


def _bound(body) -> list[str]:
    out = []
    for stmt in n.walk_stmts(body):
        out.extend(n.bound_names(stmt))
    return out


def _reads(body) -> list[str]:
    """Names a block reads, in order of first read."""
    seen: dict[str, None] = {}
    for stmt in n.walk_stmts(body):
        for e in _stmt_exprs(stmt):
            for name in sorted(n.expr_vars(e), key=_first_pos(e)):
                seen.setdefault(name, None)
    return list(seen)


def _first_pos(e):
    order = []

    def walk(x):
        if isinstance(x, n.Var):
            order.append(x.name)
        elif isinstance(x, n.BinOp):
            walk(x.lhs)
            walk(x.rhs)
        elif isinstance(x, n.UnaryOp):
            walk(x.operand)

    walk(e)
    return lambda name: order.index(name) if name in order else len(order)


def _stmt_exprs(stmt):
    """Every expression a statement reads itself (types included: valid shapes, slot indices)."""
    if isinstance(stmt, (n.Assign, n.Eval)):
        yield from n.value_exprs(stmt.value)
        if isinstance(stmt, n.Assign):
            yield from _type_exprs(stmt.type)
    elif isinstance(stmt, n.For):
        yield from (stmt.start, stmt.stop, stmt.step)
        for a in stmt.iter_args:
            yield a.init
    elif isinstance(stmt, n.While):
        yield stmt.cond
        for a in stmt.iter_args:
            yield a.init
    elif isinstance(stmt, n.If):
        yield stmt.cond
    elif isinstance(stmt, (n.Yield, n.Return)):
        yield from stmt.values


def _type_exprs(t):
    if isinstance(t, TileType):
        yield from t.valid_shape or ()
        if t.memref is not None and t.memref.index is not None:
            yield t.memref.index


def _written(body) -> set[str]:
    """Tensors the block writes into (store and assemble targets)."""
    out = set()
    for stmt in n.walk_stmts(body):
        call = getattr(stmt, "value", None)
        if isinstance(call, n.Call):
            op = lookup(call.op)
            if op.writes_operand is not None:
                arg = dict(zip((p.name for p in op.params), call.args))[op.writes_operand]
                if isinstance(arg, n.Var):
                    out.add(arg.name)
    return out


def _reads_before_write(body, name: str, roots: dict) -> bool:
    """Whether the block's first access to the tensor ``name`` (under any of its SSA
    names) reads it."""
    for stmt in n.walk_stmts(body):
        call = getattr(stmt, "value", None)
        if isinstance(call, n.Call):
            op = lookup(call.op)
            values = dict(zip((p.name for p in op.params), call.args))
            for pname, arg in values.items():
                if isinstance(arg, n.Var) and roots.get(arg.name, arg.name) == name:
                    return pname != op.writes_operand
    return False
