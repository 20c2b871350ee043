"""What must hold of every Program between passes, checked in one walk.

SSA (each name bound once, used only where bound), names that print as Python, op calls
whose recorded result type is what the registry infers, loop-carried values and branch
results whose types agree with their yields, and calls that match their callees. A
failure is a compiler bug; the error names the function and shows the statement.
"""

from __future__ import annotations

import keyword

from pypto.backend import SoC
from pypto.errors import PyptoError, VerificationError
from pypto.ir import nodes as n
from pypto.ir.infer import call_type, scalar_type
from pypto.ir.ops import lookup
from pypto.ir.printer import expr
from pypto.ir.types import INDEX, TASK_ID, ArrayType, DataType, ScalarType, TensorType, TileType, conforms, joins, type_name


def verify(program: n.Program, soc: SoC, *, stage: str = "", memo: dict | None = None) -> None:
    """Check the IR rules against the backend in force (its legal moves, its spaces).
    ``memo``, kept across the stages of one lowering: the inferred type of each call seen
    with the same operand types — a pass leaves most statements as they were, and
    re-inferring all of them after every pass was a quarter of compile time."""
    names = [f.name for f in program.functions]
    twice = sorted({x for x in names if names.count(x) > 1})
    if twice:
        raise VerificationError(f"{_where(stage)}program '{program.name}' defines a function twice: "
                                f"{', '.join(repr(x) for x in twice)}")
    for fn in program.functions:
        _FunctionChecker(program, fn, stage, soc, memo).check()


def _where(stage: str) -> str:
    return f"after {stage}: " if stage else ""


class _FunctionChecker:
    def __init__(self, program: n.Program, fn: n.Function, stage: str, soc: SoC, memo: dict | None = None):
        self.memo = memo
        self.program = program
        self.soc = soc
        self.fn = fn
        self.stage = stage
        self.bound: dict[str, object] = {}

    def fail(self, message: str, stmt=None) -> VerificationError:
        detail = f"{_where(self.stage)}in function '{self.fn.name}': {message}"
        if stmt is not None:
            shown = _show(self.program, stmt, self.soc)
            detail += f"\n  at: {shown}\n{context(self.program, self.fn, stmt, self.soc)}"
        return VerificationError(detail, span=getattr(stmt, "span", None))

    def bind(self, name: str, t, stmt) -> None:
        if not name.isidentifier() or keyword.iskeyword(name) or name in ("pl", "self"):
            raise self.fail(f"'{name}' is not a usable name", stmt)
        if name in self.bound:
            raise self.fail(f"'{name}' is bound twice (SSA)", stmt)
        self.slot_index(name, t, stmt)
        self.extents_bound(name, t, stmt)
        self.bound[name] = t

    def extents_bound(self, name: str, t, stmt) -> None:
        """A tensor an orchestration sizes as it runs names scalars bound before it."""
        if not (isinstance(t, TensorType) and t.runtime_sized):
            return
        if self.fn.type.is_kernel:
            raise self.fail(f"'{name}' is {type_name(t)}: a kernel's tensors have static extents", stmt)
        for d in t.shape:
            for var in sorted(n.expr_vars(d) if not isinstance(d, int) else ()):
                if var not in self.bound:
                    raise self.fail(f"'{name}' is {type_name(t)}, and '{var}' is not bound there", stmt)

    def slot_index(self, name: str, t, stmt) -> None:
        """A tile's slot of a multi-slot MemRef is an integer expression of bound names: a
        float or a bool would select a slot the planners and the simulator read apart."""
        index = t.memref.index if isinstance(t, TileType) and t.memref is not None else None
        if index is None:
            return
        from pypto.ir.printer import expr

        for var in sorted(n.expr_vars(index)):
            if var not in self.bound:
                raise self.fail(f"'{name}' takes slot {expr(index)} of MemRef '{t.memref.name}', and '{var}' is not "
                                "bound there", stmt)
        got = self.type_of(index)
        if not _is_int(got):
            raise self.fail(f"'{name}' takes slot {expr(index)} of MemRef '{t.memref.name}', which is "
                            f"{_described(got) if got is not None else 'not a scalar'}: a slot index is an integer",
                            stmt)

    def check(self) -> None:
        for p in self.fn.params:
            self.bind(p.name, p.type, None)
        scope = set(self.bound)
        self.block(self.fn.body, scope, results=None, top=True)

    def block(self, body, scope: set, results, top: bool = False) -> None:
        scope = set(scope)
        for i, stmt in enumerate(body):
            last = i == len(body) - 1
            if isinstance(stmt, n.Yield):
                if not last or results is None:
                    raise self.fail("a yield must end a loop or branch body that has results", stmt)
                self.uses(stmt.values, scope, stmt)
                got = tuple(self.type_of(v) for v in stmt.values)
                want = tuple(b.type for b in results)
                if not all(map(joins, got, want)):
                    raise self.fail(f"yields {_types(got)} where {_types(want)} is expected", stmt)
                continue
            if isinstance(stmt, n.Return):
                if not (top and last):
                    raise self.fail("return must be the last statement of the function", stmt)
                self.uses(stmt.values, scope, stmt)
                got = tuple(self.type_of(v) for v in stmt.values)
                if len(got) != len(self.fn.returns) or not all(g == w or conforms(g, w)
                                                                for g, w in zip(got, self.fn.returns)):
                    raise self.fail(f"returns {_types(got)} but the function declares {_types(self.fn.returns)}", stmt)
                continue
            self.stmt(stmt, scope)
        if results and not (body and isinstance(body[-1], n.Yield)):
            raise self.fail("a body with results must end in a yield", body[-1] if body else None)

    def stmt(self, s, scope: set) -> None:
        if isinstance(s, n.Assign):
            if isinstance(s.value, n.Var) and isinstance(s.type, TileType):
                raise self.fail(f"'{s.target}' copies the tile '{s.value.name}' by name; tiles are bound by ops", s)
            got = self.value_type(s.value, scope, s)
            if got is not None and not _compatible(s.type, got):
                raise self.fail(f"'{s.target}' is annotated {type_name(s.type)} but its value is {type_name(got)}", s)
            self.bind(s.target, s.type, s)
            scope.add(s.target)
        elif isinstance(s, n.Eval):
            self.value_type(s.value, scope, s)
        elif isinstance(s, n.For):
            self.uses((s.start, s.stop, s.step), scope, s)
            for e in (s.start, s.stop, s.step):
                if not _is_int(self.type_of(e)):
                    raise self.fail("loop bounds must be integers", s)
            if s.stage is not None and s.stage < 1:
                raise self.fail(f"pipeline stage {s.stage} must be positive", s)
            inner = self._carried(s, scope)
            self.bind(s.var, INDEX, s)
            inner.add(s.var)
            self.block(s.body, inner, s.results if s.iter_args else None)
            for b in s.results:
                self.bind(b.name, b.type, s)
                scope.add(b.name)
            scope.update(n.gathered(s))  # a region's pl.aic_gather values: the cube's after it
        elif isinstance(s, n.While):
            inner = self._carried(s, scope)
            self.uses((s.cond,), inner, s)  # checked before each trip: it reads the trip's values
            cond = self.type_of(s.cond)
            if not (_is_int(cond) or isinstance(cond, ScalarType) and cond.dtype is DataType.BOOL):
                raise self.fail(f"a while condition is a bool or an integer, not {_described(cond)}", s)
            self.block(s.body, inner, s.results if s.iter_args else None)
            for b in s.results:
                self.bind(b.name, b.type, s)
                scope.add(b.name)
        elif isinstance(s, n.If):
            self.uses((s.cond,), scope, s)
            self.block(s.then_body, scope, s.results or None)
            self.block(s.else_body, scope, s.results or None)
            for b in s.results:
                self.bind(b.name, b.type, s)
                scope.add(b.name)
        elif isinstance(s, (n.RuntimeScope, n.Cluster)):
            self.block(s.body, scope, None)
            for inner in s.body:
                scope.update(n.visible_after(inner))
        elif isinstance(s, n.Scope):
            self.uses(s.deps, scope, s)
            if s.blocks is not None:
                self.uses((s.blocks,), scope, s)
            if s.predicate is not None:
                self.uses((s.predicate.tensor, *s.predicate.indices), scope, s)
            self.block(s.body, scope, None)
            for inner in s.body:  # a scope is transparent: what its body binds is visible after it
                scope.update(n.visible_after(inner))
            if s.task_id is not None:
                self.bind(s.task_id, TASK_ID, s)
                scope.add(s.task_id)
        else:
            raise self.fail(f"unexpected statement {type(s).__name__}", s)

    def _carried(self, s, scope: set) -> set:
        """A for or while loop's carried values checked against their starts and results: the
        scope its body sees, with them bound."""
        self.uses(tuple(a.init for a in s.iter_args), scope, s)
        for a in s.iter_args:
            if not joins(self.type_of(a.init), a.type):
                raise self.fail(f"iter arg '{a.name}' is {_described(a.type)} but starts from "
                                f"{_described(self.type_of(a.init))}", s)
        if len(s.results) != len(s.iter_args):
            raise self.fail("a loop has one result per iter arg", s)
        inner = set(scope)
        for a, b in zip(s.iter_args, s.results):
            self.bind(a.name, a.type, s)
            inner.add(a.name)
            if a.type != b.type:
                raise self.fail(f"result '{b.name}' and iter arg '{a.name}' differ in type", s)
        return inner

    def uses(self, exprs, scope: set, stmt) -> None:
        for e in exprs:
            for name in n.expr_vars(e):
                if name not in scope:
                    raise self.fail(f"'{name}' is used where it is not bound", stmt)

    def type_of(self, e):
        if isinstance(e, n.Var):
            return self.bound.get(e.name)
        try:
            return scalar_type(e, self.bound)
        except PyptoError:
            return None

    def value_type(self, v, scope: set, stmt):
        if isinstance(v, n.Call):
            for arg in v.args:
                if isinstance(arg, tuple):
                    self.uses(arg, scope, stmt)
                elif isinstance(arg, (n.Var, n.Const, n.BinOp, n.UnaryOp)):
                    self.uses((arg,), scope, stmt)
            if lookup(v.op) is None:
                raise self.fail(f"unknown op '{v.op}'", stmt)
            # the same call object with operands of the same types infers the same type (the
            # entry keeps the call alive, so its id stays its own); no op's inference reads a
            # MemRef, so the memory passes, which place every tile, do not void the entry
            if self.memo is not None:
                key = (id(v), *(_unplaced(self.bound.get(a.name)) for a in v.args if isinstance(a, n.Var)))
                seen = self.memo.get(key)
                if seen is not None:
                    return seen[1]
            try:
                got = call_type(v, self.bound, self.soc)
            except PyptoError as err:
                raise self.fail(f"{v.op}: {err.message}", stmt) from None
            if self.memo is not None:
                self.memo[key] = (v, got)
            return got
        if isinstance(v, n.Submit):
            if v.call is not None:
                self.value_type(v.call, scope, stmt)
            self.uses(v.deps, scope, stmt)
            for d in v.deps:
                t = self.type_of(d)
                if t != TASK_ID and not (isinstance(t, ArrayType) and t.dtype is TASK_ID.dtype):
                    raise self.fail(f"waits for '{expr(d)}', which is not a TaskId", stmt)
            if v.no_dep and (v.call is None or any(not 0 <= k < len(v.call.args) for k in v.no_dep)):
                raise self.fail(f"no_dep positions {list(v.no_dep)} beyond the call's arguments", stmt)
            if v.blocks is not None:
                self.uses((v.blocks,), scope, stmt)
                if v.call is None:
                    raise self.fail("a task of blocks needs a kernel: task_dummy has none", stmt)
            if v.predicate is not None:
                self.uses((v.predicate.tensor, *v.predicate.indices), scope, stmt)
            return TASK_ID
        if isinstance(v, n.FuncCall):
            self.uses(v.args, scope, stmt)
            try:
                callee = self.program.function(v.callee)
            except KeyError:
                raise self.fail(f"calls '{v.callee}', which the program does not define", stmt) from None
            got = tuple(self.type_of(a) for a in v.args)
            want = tuple(p.type for p in callee.params)
            if not all(g == w or conforms(g, w) for g, w in zip(got, want)) or len(got) != len(want):
                raise self.fail(f"calls '{v.callee}' with {_types(got)} where it takes {_types(want)}", stmt)
            return callee.returns[0] if len(callee.returns) == 1 else None
        self.uses((v,), scope, stmt)
        return self.type_of(v)


def _unplaced(t):
    """What of an operand's type inference may read: all but a tile's MemRef."""
    return (t.shape, t.dtype, t.space, t.valid_shape) if isinstance(t, TileType) else t


def _compatible(declared, inferred) -> bool:
    """An annotation may add placement (a MemRef) to what inference gives; nothing else."""
    if isinstance(declared, TileType) and isinstance(inferred, TileType):
        return (declared.shape, declared.dtype, declared.valid_shape) == (inferred.shape, inferred.dtype,
                                                                          inferred.valid_shape) \
            and (inferred.space is None or declared.space is inferred.space)
    if isinstance(declared, ScalarType) and isinstance(inferred, ScalarType):
        return declared.dtype.is_int == inferred.dtype.is_int or declared == inferred
    return declared == inferred or conforms(declared, inferred)  # a kernel hands back the tensor it was passed


def _is_int(t) -> bool:
    return isinstance(t, ScalarType) and t.dtype.is_int


def _types(ts) -> str:
    return "(" + ", ".join(_described(t) for t in ts) + ")"


def _described(t) -> str:
    """type_name, plus the MemRef a tile is placed in: two tiles that differ only there
    would otherwise read the same in a message."""
    if isinstance(t, TileType) and t.memref is not None:
        from pypto.ir.printer import memref

        return f"{type_name(t)[:-1]} {memref(t.memref)}]"
    return type_name(t)


def context(program: n.Program, fn: n.Function, stmt, soc: SoC, around: int = 2) -> str:
    """The function as printed, ``around`` lines either side of ``stmt``, its line marked:
    where in the program a broken statement sits, not only what it says."""
    from pypto.ir.printer import _Printer

    class Locating(_Printer):
        at = None

        def stmt(self, s, depth, results):
            if s is stmt and self.at is None:
                self.at = len(self.lines)
            super().stmt(s, depth, results)

    try:
        p = Locating(program, fn, explicit=False, soc=soc)
        lines = p.function()
    except Exception:  # a function too broken to print: the statement alone
        return f"  > {_show(program, stmt, soc)}"
    if p.at is None:
        return f"  > {_show(program, stmt, soc)}"
    lo, hi = max(0, p.at - around), min(len(lines), p.at + around + 1)
    return "\n".join(f"  {'>' if k == p.at else ' '} {lines[k]}" for k in range(lo, hi))


def _show(program: n.Program, stmt, soc: SoC) -> str:
    from pypto.ir.printer import _Printer

    try:
        p = _Printer(program, n.Function("f", (), ()), explicit=True, soc=soc)
        p.stmt(stmt, 0, ())
        return p.lines[0] if p.lines else type(stmt).__name__
    except Exception:  # a node too broken to print: its repr still says what it is
        return repr(stmt)[:200]
