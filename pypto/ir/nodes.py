"""The IR grammar. Every node is a frozen attrs class; sequences are tuples.

    Expr     = Var(name) | Const(value: int|float|bool)
             | BinOp(op, lhs: Expr, rhs: Expr) | UnaryOp(op, operand: Expr)
    Call     = (op: str, args: Arg*)           an op of the registry, args in signature order
    FuncCall = (callee: str, args: Expr*)      a call of another function of the program
    Submit   = (call: FuncCall, deps: Expr*, no_dep: int*, allow_early_resolve)
                                               a kernel call as a task; its value is the TaskId
    Arg      = Expr | Expr* | DataType | MemorySpace | PadValue | int | float | bool | str | None
    Stmt     = Assign(target, type, value: Expr|Call|FuncCall|Submit)
             | Eval(value: Call|FuncCall|Submit)
             | For(var, start, stop, step, kind, stage?, iter_args: IterArg*, body: Stmt*,
                   results: Binding*)          the body ends in Yield when iter_args
             | While(cond, iter_args: IterArg*, body: Stmt*, results: Binding*)
                                               the body runs while cond holds (checked before each
                                               trip): a data-dependent trip count
             | If(cond, then_body: Stmt*, else_body: Stmt*, results: Binding*)
             | Yield(values: Expr*) | Return(values: Expr*)
             | Scope(level, name_hint, body: Stmt*, task_id?, deps: Expr*, no_dep_args: str*,
                     allow_early_resolve)       ``with pl.at(...) [as task_id]``
             | RuntimeScope(body: Stmt*, manual)  ``with pl.scope()`` / ``pl.manual_scope()``
             | Cluster(body: Stmt*, name_hint, blocks?, sync_start)  ``with pl.cluster()``
    IterArg  = (name, type, init: Expr)        Binding = (name, type)
    Param    = (name, type, direction)
    Function = (name, type, params: Param*, returns: Type*, body: Stmt*, auto_scope)
    Program  = (name, functions: Function*)

Names are plain strings, unique within a function (SSA): every name is bound exactly once
(a parameter, an Assign, a loop variable, an iter arg or a result binding). Types live on
bindings; ``symbols(function)`` derives the name -> type table. Spans of the user's source
ride on statements and functions and take no part in equality.
"""

from __future__ import annotations

import keyword
import math
import struct

import attrs

from pypto.ir.function_table import FunctionTable

from pypto.errors import Span
from pypto.ir.types import DataType, ForKind, FunctionType, Level, ParamDirection, ScalarType


def _span_field():
    return attrs.field(default=None, eq=False, repr=False)


# --------------------------------------------------------------------------- expressions


class _Arith:
    """``i * 64 + 8`` on IR expressions builds BinOps (for builders and passes)."""

    __slots__ = ()

    def __add__(self, other):
        return BinOp("+", self, as_expr(other))

    def __radd__(self, other):
        return BinOp("+", as_expr(other), self)

    def __sub__(self, other):
        return BinOp("-", self, as_expr(other))

    def __rsub__(self, other):
        return BinOp("-", as_expr(other), self)

    def __mul__(self, other):
        return BinOp("*", self, as_expr(other))

    def __rmul__(self, other):
        return BinOp("*", as_expr(other), self)

    def __floordiv__(self, other):
        return BinOp("//", self, as_expr(other))

    def __mod__(self, other):
        return BinOp("%", self, as_expr(other))


@attrs.frozen
class Var(_Arith):
    name: str


def _const_key(value):
    """Floats compare by their bits: every NaN equals every NaN (so a printed and re-read NaN
    is the same constant) and -0.0 differs from 0.0 (they compute differently: 1 / -0.0)."""
    if isinstance(value, float):
        return ("float", "nan") if math.isnan(value) else ("float", struct.pack("<d", value))
    return value


@attrs.frozen
class Const(_Arith):
    value: int | float | bool = attrs.field(eq=_const_key)
    # Python's 1 == 1.0 == True would make these structurally equal; the value's own type
    # is part of the constant.
    kind: str = attrs.field(default=attrs.Factory(lambda self: type(self.value).__name__, takes_self=True))


BIN_OPS = ("+", "-", "*", "//", "%", "/", "<<", ">>", "==", "!=", "<", "<=", ">", ">=", "and", "or", "min", "max")
UNARY_OPS = ("-", "not")


@attrs.frozen
class BinOp(_Arith):
    op: str
    lhs: Expr
    rhs: Expr


@attrs.frozen
class UnaryOp(_Arith):
    op: str
    operand: Expr


Expr = Var | Const | BinOp | UnaryOp


@attrs.frozen
class Call:
    op: str
    args: tuple = attrs.field(converter=tuple)
    span: Span | None = _span_field()  # where the source calls it (checks over the IR name it)


@attrs.frozen
class FuncCall:
    callee: str
    args: tuple = attrs.field(converter=tuple)
    # where the source writes each argument (a check of what the callee writes names one)
    arg_spans: tuple = _span_field()
    # argument positions its task leaves out of tracking: ``self.k(pl.no_dep(x), out)``
    no_dep: tuple = attrs.field(default=(), converter=tuple)


@attrs.frozen
class Predicate:
    """A dispatch predicate: ``tensor[indices] op value`` — one element of an integer
    tensor against an integer literal, which the scheduler evaluates when the task reaches
    dispatch (its deps finished); false retires the task without running it, and its
    consumers are released all the same."""

    tensor: Var
    indices: tuple = attrs.field(converter=tuple)
    op: str = ">"  # one of == != > < >= <=
    value: int = 0


@attrs.frozen
class Submit:
    """A kernel call submitted as a task that carries something a plain call cannot: its
    value is the task's id (``pl.TASK_ID``). ``deps``: TaskId expressions it also waits
    for (``None`` entries wait for nothing); ``no_dep``: the argument positions left out
    of dependency tracking; ``allow_early_resolve``: its consumers may be staged on cores
    before it finishes. Without a call it is ``pl.system.task_dummy(deps=[...])``: a task
    with no work that finishes when its deps have."""

    call: FuncCall | None
    deps: tuple = attrs.field(default=(), converter=tuple)
    no_dep: tuple = attrs.field(default=(), converter=tuple)
    allow_early_resolve: bool = False
    # SPMD (``pl.spmd`` / ``pl.spmd_submit``): one task of ``blocks`` blocks (an integer
    # expression), each running the kernel with its own ``pl.tile.get_block_idx()``;
    # ``sync_start``: all blocks admitted to cores together
    blocks: object = None
    sync_start: bool = False
    predicate: Predicate | None = None


# --------------------------------------------------------------------------- statements


@attrs.frozen
class Binding:
    name: str
    type: object


@attrs.frozen
class IterArg:
    name: str
    type: object
    init: Expr


@attrs.frozen
class Assign:
    target: str
    type: object
    value: Expr | Call | FuncCall | Submit
    span: Span | None = _span_field()


@attrs.frozen
class Eval:
    value: Call | FuncCall | Submit
    span: Span | None = _span_field()


@attrs.frozen
class For:
    var: str
    start: Expr
    stop: Expr
    step: Expr
    body: tuple = attrs.field(converter=tuple)
    kind: ForKind = ForKind.Sequential
    stage: int | None = None
    iter_args: tuple = attrs.field(default=(), converter=tuple)
    results: tuple = attrs.field(default=(), converter=tuple)
    span: Span | None = _span_field()
    # a SplitAiv region's: how its vector work divides between the lanes (a SplitMode);
    # NONE once halved — each lane then runs the body as written, by its own lane index
    split: object = None


@attrs.frozen
class While:
    """``while cond:`` — ``cond`` (an expression of the iter args and of names bound before
    the loop) is checked before each trip; the body, ending in Yield when there are iter
    args, gives the next trip's values, and ``results`` bind the values the last trip leaves
    (the initial ones when no trip runs). Nothing bounds the trip count before it runs."""

    cond: Expr
    body: tuple = attrs.field(converter=tuple)
    iter_args: tuple = attrs.field(default=(), converter=tuple)
    results: tuple = attrs.field(default=(), converter=tuple)
    span: Span | None = _span_field()


@attrs.frozen
class If:
    cond: Expr
    then_body: tuple = attrs.field(converter=tuple)
    else_body: tuple = attrs.field(default=(), converter=tuple)
    results: tuple = attrs.field(default=(), converter=tuple)
    span: Span | None = _span_field()


@attrs.frozen
class Yield:
    values: tuple = attrs.field(converter=tuple)
    span: Span | None = _span_field()


@attrs.frozen
class Return:
    values: tuple = attrs.field(converter=tuple)
    span: Span | None = _span_field()


@attrs.frozen
class Scope:
    body: tuple = attrs.field(converter=tuple)
    level: Level = Level.CORE_GROUP
    name_hint: str = ""
    span: Span | None = _span_field()
    # as a task: ``with pl.at(...) as task_id``, deps=, no_dep_args= (tensor names),
    # allow_early_resolve= (see ``Submit``)
    task_id: str | None = None
    deps: tuple = attrs.field(default=(), converter=tuple)
    no_dep_args: tuple = attrs.field(default=(), converter=tuple)
    allow_early_resolve: bool = False
    blocks: object = None  # ``pl.spmd(n)``: the task's block count (see ``Submit``)
    sync_start: bool = False
    predicate: Predicate | None = None
    # optimizations=[pl.split(mode), pl.cross_core_slot(slot_num=n)]: how a mixed scope's
    # vector work is shared by the cluster's vector cores, and its cross-core ring's slots
    split: object = None  # a SplitMode
    slot_num: int | None = None

    @property
    def submits(self) -> bool:
        """Whether the scope's task is a ``Submit`` rather than a plain call."""
        return bool(self.task_id is not None or self.deps or self.no_dep_args or self.allow_early_resolve
                    or self.blocks is not None or self.predicate is not None)


@attrs.frozen
class RuntimeScope:
    """``with pl.scope():`` / ``with pl.manual_scope():`` in an orchestration: a runtime
    scope. Its tasks take the next ring; in a manual one the runtime derives no
    dependencies (only ``deps=`` order its tasks), and what its tasks wrote is registered
    when it closes, so tasks after it see their data."""

    body: tuple = attrs.field(converter=tuple)
    manual: bool = False
    span: Span | None = _span_field()


@attrs.frozen
class Cluster:
    """``with pl.cluster():`` in an orchestration: the kernels its body calls are one Group
    task, co-scheduled on one physical cluster (the cube core and the two vector cores),
    started together. A ``pl.spmd(n)`` inside it is unwrapped: ``blocks`` Group tasks'
    worth, one cluster each, as one task."""

    body: tuple = attrs.field(converter=tuple)
    name_hint: str = ""
    span: Span | None = _span_field()
    blocks: object = None  # an Expr: the unwrapped pl.spmd's core_num
    sync_start: bool = False


Stmt = Assign | Eval | For | While | If | Yield | Return | Scope | RuntimeScope | Cluster
LOOPS = (For, While)  # statements whose body runs again: what the body binds is carried, not seen after
BLOCKS = (Scope, RuntimeScope, Cluster)  # statements that only group others: what they bind is visible after them


# --------------------------------------------------------------------------- functions


@attrs.frozen
class Param:
    name: str
    type: object
    direction: ParamDirection = ParamDirection.In


@attrs.frozen
class Function:
    name: str
    params: tuple = attrs.field(converter=tuple)
    body: tuple = attrs.field(converter=tuple)
    returns: tuple = attrs.field(default=(), converter=tuple)
    type: FunctionType = FunctionType.Opaque
    span: Span | None = _span_field()
    # an orchestration whose loop bodies and branches are each a runtime scope (the
    # default); False: only its explicit pl.scope() / pl.manual_scope() blocks are
    auto_scope: bool = True
    # an AIV function of a Group both vector cores of the cluster run (attrs={"dual_aiv_dispatch": True})
    dual_aiv: bool = False

    func_type = property(lambda self: self.type, doc="the reference's name for ``type``")

    def __repr__(self) -> str:
        """A line (the tree is the text of ``as_python()``)."""
        return (f"<Function {self.name} ({self.type.name}): {len(self.params)} params "
                f"({', '.join(p.name for p in self.params)}), {sum(1 for _ in walk_stmts(self.body))} statements; "
                ".as_python() for its text>")
    return_types = property(lambda self: self.returns, doc="the reference's name for ``returns``")

    def as_python(self, prefix: str = "pl", concise: bool = False, *, explicit: bool = False, soc=None) -> str:
        """The function as DSL text (a method of a ``@pl.program``), as ``Program.as_python``."""
        from pypto.backend import DEFAULT
        from pypto.ir.printer import print_function, with_prefix

        return with_prefix(print_function(Program(self.name, (self,)), self, soc or DEFAULT, explicit=explicit),
                           prefix)


@attrs.frozen
class Program:
    name: str
    functions: tuple = attrs.field(converter=FunctionTable)

    def function(self, name: str) -> Function:
        return self.functions[name]

    def __repr__(self) -> str:
        """A line: its functions (the whole tree would be thousands of characters in a
        notebook cell); ``as_python()`` is the text."""
        return (f"<Program {self.name}: {', '.join(f'{f.name} ({f.type.name})' for f in self.functions)}; "
                ".as_python() for its text>")

    def as_python(self, prefix: str = "pl", concise: bool = False, *, explicit: bool = False, soc=None) -> str:
        """The program as DSL text, for ``soc`` (the default backend unless given: a
        convenience for reading; the pass dumps print for the backend in force), with the
        language module imported as ``prefix``. A type annotation is printed where the
        front end would not infer it back (``concise`` changes nothing: that is already
        the concise form), or everywhere with ``explicit=True``."""
        from pypto.backend import DEFAULT
        from pypto.ir.printer import print_program, with_prefix

        return with_prefix(print_program(self, soc or DEFAULT, explicit=explicit), prefix)


# --------------------------------------------------------------------------- helpers


def fresh_name(base: str, used: set) -> str:
    """``base``, or ``base_1``, ``base_2``, ...: the first not in ``used`` (which it joins).
    A Python keyword (a temporary named after ``tile.and``) is never a name: ``and_``."""
    if keyword.iskeyword(base):
        base += "_"
    name, k = base, 0
    while name in used:
        k += 1
        name = f"{base}_{k}"
    used.add(name)
    return name


def const(value) -> Const:
    return Const(value)


def as_expr(value) -> Expr:
    """Python ints/floats/bools and Exprs into Exprs (for builders and passes)."""
    if isinstance(value, (Var, Const, BinOp, UnaryOp)):
        return value
    if isinstance(value, (bool, int, float)):
        return Const(value)
    raise TypeError(f"not an expression: {value!r}")


def stmt_children(stmt) -> tuple[tuple, ...]:
    """The nested statement blocks of a statement."""
    if isinstance(stmt, (For, While, *BLOCKS)):
        return (stmt.body,)
    if isinstance(stmt, If):
        return (stmt.then_body, stmt.else_body)
    return ()


def walk_stmts(body):
    """Every statement of a block, depth first, parents before children."""
    for stmt in body:
        yield stmt
        for block in stmt_children(stmt):
            yield from walk_stmts(block)


def bound_names(stmt) -> tuple[str, ...]:
    """The names a statement binds itself (not those of nested blocks)."""
    if isinstance(stmt, Assign):
        return (stmt.target,)
    if isinstance(stmt, For):
        return (stmt.var, *(a.name for a in stmt.iter_args), *(b.name for b in stmt.results))
    if isinstance(stmt, While):
        return (*(a.name for a in stmt.iter_args), *(b.name for b in stmt.results))
    if isinstance(stmt, If):
        return tuple(b.name for b in stmt.results)
    if isinstance(stmt, Scope) and stmt.task_id is not None:
        return (stmt.task_id,)
    return ()


def visible_after(stmt) -> tuple[str, ...]:
    """The names a statement makes available to the statements after it."""
    if isinstance(stmt, Assign):
        return (stmt.target,)
    if isinstance(stmt, For):
        return tuple(b.name for b in stmt.results) + gathered(stmt)
    if isinstance(stmt, (While, If)):
        return tuple(b.name for b in stmt.results)
    if isinstance(stmt, BLOCKS):
        inner = tuple(name for s in stmt.body for name in visible_after(s))
        return inner + ((stmt.task_id,) if getattr(stmt, "task_id", None) is not None else ())
    return ()


def gathered(stmt) -> tuple[str, ...]:
    """The names a ``pl.split_aiv`` region hands the cube after it: what its ``pl.aic_gather``s bind."""
    if not isinstance(stmt, For) or stmt.kind.value != "split_aiv":
        return ()
    return tuple(s.target for s in stmt.body if isinstance(s, Assign) and isinstance(s.value, Call)
                 and s.value.op in GATHERS)


GATHERS = ("tensor.aic_gather", "tile.aic_gather")  # a pl.split_aiv region's crossings out of it


def symbols(function: Function) -> dict:
    """name -> type for every binding of a function."""
    return {**{p.name: p.type for p in function.params}, **block_symbols(function.body)}


def block_symbols(body) -> dict:
    """name -> type for every binding made in a block, nested blocks included."""
    from pypto.ir.types import INDEX

    table = {}
    for stmt in walk_stmts(body):
        if isinstance(stmt, Assign):
            table[stmt.target] = stmt.type
        elif isinstance(stmt, For):
            table[stmt.var] = INDEX
            for a in stmt.iter_args:
                table[a.name] = a.type
            for b in stmt.results:
                table[b.name] = b.type
        elif isinstance(stmt, While):
            for a in stmt.iter_args:
                table[a.name] = a.type
            for b in stmt.results:
                table[b.name] = b.type
        elif isinstance(stmt, If):
            for b in stmt.results:
                table[b.name] = b.type
        elif isinstance(stmt, Scope) and stmt.task_id is not None:
            table[stmt.task_id] = ScalarType(DataType.TASK_ID)
    return table


def value_exprs(value):
    """The expressions a value reads: a call's operands (lists flattened) or the value."""
    if isinstance(value, Submit):
        if value.call is not None:
            yield from value_exprs(value.call)
        yield from value.deps
        if value.blocks is not None:
            yield value.blocks
        if value.predicate is not None:
            yield value.predicate.tensor
            yield from value.predicate.indices
    elif isinstance(value, (Call, FuncCall)):
        for arg in value.args:
            if isinstance(arg, tuple):
                yield from arg
            elif isinstance(arg, (Var, Const, BinOp, UnaryOp)):
                yield arg
    elif isinstance(value, tuple):
        for v in value:
            yield from value_exprs(v)
    elif isinstance(value, (Var, Const, BinOp, UnaryOp)):
        yield value


def expr_vars(expr) -> set[str]:
    if isinstance(expr, Var):
        return {expr.name}
    if isinstance(expr, BinOp):
        return expr_vars(expr.lhs) | expr_vars(expr.rhs)
    if isinstance(expr, UnaryOp):
        return expr_vars(expr.operand)
    return set()


__all__ = [
    "Assign", "BinOp", "Binding", "Call", "Const", "DataType", "Eval", "Expr", "For",
    "BLOCKS", "FuncCall", "Function", "If", "Submit", "IterArg", "Param", "Program", "Return", "RuntimeScope",
    "Scope", "Stmt",
    "UnaryOp", "Var", "While", "Yield",
]
