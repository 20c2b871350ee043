"""Print a Program as DSL Python: an ``@pl.program`` class of ``@pl.function`` methods.

Deterministic, one statement per line, and read back by ``pypto.lang.parse`` to an equal
Program. An assignment's type annotation is printed when it says something the op's type
inference would not reproduce (a MemRef, an address) — or always with ``explicit=True``,
which is what tools that size tiles read.
"""

from __future__ import annotations

import io
import keyword
import tokenize

import json

from pypto.errors import PyptoError
from pypto.ir import nodes as n
from pypto.ir.directions import call_directions
from pypto.ir.infer import call_type, scalar_type
from pypto.ir.ops import Kind, lookup, spelled
from pypto.ir.types import (
    TASK_ID,
    NotifyOp,
    ReduceOp,
    WaitCmp,
    ArrayType,
    DataType,
    ForKind,
    FunctionType,
    MemRef,
    AtomicType,
    PadValue,
    ParamDirection,
    ScalarType,
    TensorLayout,
    TensorType,
    TileType,
    dim_text,
)
from pypto.backend import MemorySpace, SoC

INDENT = "    "

# Python precedence, loosest first; a child binding looser than its parent is parenthesized.
_PREC = {"or": 1, "and": 2, "not": 3, "==": 4, "!=": 4, "<": 4, "<=": 4, ">": 4, ">=": 4,
         "<<": 5, ">>": 5, "+": 6, "-": 6, "*": 7, "//": 7, "%": 7, "/": 7, "neg": 8}
_ATOM = 10


def print_program(program: n.Program, soc: SoC, *, explicit: bool = False, notes: tuple = ()) -> str:
    """``notes``: extra ``# key: value`` header lines (the parser reads past comments).
    ``soc``: the backend the program is for (a type is left implicit where the front end
    would infer it there)."""
    lines = [f"# pypto.program: {program.name}", *(f"# {note}" for note in notes), "import pypto.language as pl",
             "", "", "@pl.program", f"class {program.name}:"]
    for i, fn in enumerate(program.functions):
        if i:
            lines.append("")
        lines.extend(_Printer(program, fn, explicit, soc).function())
    if not program.functions:
        lines.append(INDENT + "pass")  # a class body cannot be empty
    return "\n".join(lines) + "\n"


def print_function(program: n.Program, fn: n.Function, soc: SoC, *, explicit: bool = False) -> str:
    return "\n".join(_Printer(program, fn, explicit, soc).function()) + "\n"


def with_prefix(text: str, prefix: str) -> str:
    """Printed text with the language module named ``prefix`` instead of ``pl``: every
    ``pl`` that starts a name chain (never one inside a string, or an attribute)."""
    if prefix == "pl":
        return text
    if not prefix.isidentifier() or keyword.iskeyword(prefix):
        raise ValueError(f"prefix={prefix!r} is not a name the module can be imported as")
    lines = text.splitlines(keepends=True)
    spots, previous = [], None
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type == tokenize.NAME and tok.string == "pl" and not (previous is not None and previous.string == "."):
            spots.append(tok.start)
        if tok.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT):
            previous = tok
    for row, col in reversed(spots):
        line = lines[row - 1]
        lines[row - 1] = line[:col] + prefix + line[col + 2:]
    return "".join(lines)


# --------------------------------------------------------------------------- expressions


def expr(e, parent: int = 0) -> str:
    text, prec = _expr(e)
    return f"({text})" if prec < parent else text


def _expr(e) -> tuple[str, int]:
    if isinstance(e, n.Var):
        return e.name, _ATOM
    if isinstance(e, n.Const):
        return const(e.value), _ATOM
    if isinstance(e, n.BinOp):
        if e.op in ("min", "max"):
            return f"pl.{e.op}({expr(e.lhs)}, {expr(e.rhs)})", _ATOM
        p = _PREC[e.op]
        if p == 4:  # comparisons do not chain in the IR: parenthesize nested ones
            return f"{expr(e.lhs, p + 1)} {e.op} {expr(e.rhs, p + 1)}", p
        return f"{expr(e.lhs, p)} {e.op} {expr(e.rhs, p + 1)}", p
    if isinstance(e, n.UnaryOp):
        if e.op == "-":
            return f"-{expr(e.operand, _PREC['neg'])}", _PREC["neg"]
        return f"not {expr(e.operand, _PREC['not'])}", _PREC["not"]
    raise TypeError(f"not an expression: {e!r}")


def const(v) -> str:
    if v is None:
        return "None"
    if isinstance(v, bool) or isinstance(v, int):
        return repr(v)
    if isinstance(v, float):
        if v != v:
            return 'float("nan")'
        if v in (float("inf"), float("-inf")):
            return 'float("inf")' if v > 0 else 'float("-inf")'
        return repr(v)
    raise TypeError(f"not a constant: {v!r}")


def string(s: str) -> str:
    return json.dumps(s, ensure_ascii=False)


def predicate(p: n.Predicate) -> str:
    return f"({expr(p.tensor)}[{', '.join(expr(i) for i in p.indices)}] {p.op} {p.value})"


def static(v) -> str:
    """A compile-time argument value."""
    if v is None:
        return "None"
    if isinstance(v, DataType):
        return f"pl.{v.name}"
    if isinstance(v, MemorySpace):
        return f"pl.Mem.{v.name}"
    if isinstance(v, PadValue):
        return f"pl.PadValue.{v.name}"
    if isinstance(v, AtomicType):
        return f"pl.AtomicType.{v.name}"
    if isinstance(v, TensorLayout):
        return f"pl.TensorLayout.{v.name}"
    if isinstance(v, (NotifyOp, WaitCmp, ReduceOp)):
        return repr(v)
    if isinstance(v, str):
        return string(v)
    if isinstance(v, (bool, int, float)):
        return const(v)
    raise TypeError(f"not a static value: {v!r}")


def expr_list(items) -> str:
    return "[" + ", ".join(expr(x) for x in items) + "]"


# --------------------------------------------------------------------------- types


def type_(t) -> str:
    if isinstance(t, ArrayType):
        return f"pl.Array[{t.size}, pl.{t.dtype.name}]"
    if isinstance(t, ScalarType):
        return f"pl.Scalar[pl.{t.dtype.name}]"
    if isinstance(t, TensorType):
        kind = "distributed.DistributedTensor" if t.window else "Tensor"
        mx = f", pl.{t.mx_layout.name}" if t.mx_layout is not None else ""
        return f"pl.{kind}[[{', '.join(map(dim_text, t.shape))}], pl.{t.dtype.name}{mx}]"
    if isinstance(t, TileType):
        parts = [f"[{', '.join(map(str, t.shape))}]", f"pl.{t.dtype.name}"]
        if t.memref is not None:
            parts.append(memref(t.memref))
        if t.space is not None:
            parts.append(f"pl.Mem.{t.space.name}")
        if t.valid_shape is not None:
            parts.append(f"pl.TileView(valid_shape={expr_list(t.valid_shape)})")
        return f"pl.Tile[{', '.join(parts)}]"
    raise TypeError(f"not a type: {t!r}")


def memref(m: MemRef) -> str:
    args = [string(m.name)]
    if m.addr is not None:
        args += [str(m.addr), str(m.size)]
    elif m.size is not None:
        args.append(f"size={m.size}")
    if m.slots != 1:
        args.append(f"slots={m.slots}")
    if m.pipeline:
        args.append("pipeline=True")
    if m.reusable:
        args.append("reusable=True")
    text = f"pl.MemRef({', '.join(args)})"
    if m.index is not None:
        text += f"[{expr(m.index)}]"
    return text


def param(p: n.Param) -> str:
    t = type_(p.type)
    if p.direction is ParamDirection.Out:
        t = f"pl.Out[{t}]"
    elif p.direction is ParamDirection.InOut:
        t = f"pl.InOut[{t}]"
    return f"{p.name}: {t}"


# --------------------------------------------------------------------------- statements


def _directions(program: n.Program, fn: n.Function) -> dict:
    try:  # the function's own calls, as it stands alone
        return {path[0]: d for path, d in call_directions(program, fn).items() if len(path) == 1}
    except KeyError:  # a call of a function the program lacks: the verifier says so
        return {}


class _Printer:
    def __init__(self, program: n.Program, fn: n.Function, explicit: bool, soc: SoC):
        self.program = program
        self.soc = soc
        self.fn = fn
        self.explicit = explicit
        self.types = n.symbols(fn)
        self.lines: list[str] = []
        # a task's arguments as the runtime's tracker takes them, shown beside each kernel call
        # of an orchestration (a comment: derived, never parsed back)
        self.directions = {} if fn.type.is_kernel else _directions(program, fn)

    def function(self) -> list[str]:
        fn = self.fn
        options = [] if fn.type is FunctionType.Opaque else [f"type=pl.FunctionType.{fn.type.name}"]
        if not fn.auto_scope:
            options.append("auto_scope=False")
        if fn.dual_aiv:
            options.append('attrs={"dual_aiv_dispatch": True}')
        deco = f"@pl.function({', '.join(options)})" if options else "@pl.function"
        params = ", ".join(["self", *(param(p) for p in fn.params)])
        ret = ""
        if len(fn.returns) == 1:
            ret = f" -> {type_(fn.returns[0])}"
        elif fn.returns:
            ret = f" -> tuple[{', '.join(type_(t) for t in fn.returns)}]"
        self.lines = [INDENT + deco, f"{INDENT}def {fn.name}({params}){ret}:"]
        self.block(fn.body, 2)
        return self.lines

    def task_note(self, s) -> str:
        found = self.directions.get(id(s))
        return f"  # task args: {', '.join(d.value for d in found)}" if found else ""

    def emit(self, depth: int, text: str) -> None:
        self.lines.append(INDENT * depth + text)

    def block(self, body, depth: int, results=()) -> None:
        if not body:
            self.emit(depth, "pass")
        for stmt in body:
            self.stmt(stmt, depth, results)

    def stmt(self, s, depth: int, results) -> None:
        if isinstance(s, n.Assign):
            ann = f": {type_(s.type)}" if self.needs_annotation(s) else ""
            self.emit(depth, f"{s.target}{ann} = {self.value(s.value)}{self.task_note(s)}")
        elif isinstance(s, n.Eval):
            self.emit(depth, f"{self.value(s.value)}{self.task_note(s)}")
        elif isinstance(s, n.For):
            self.for_(s, depth)
        elif isinstance(s, n.While) and not s.iter_args:
            self.emit(depth, f"while {expr(s.cond)}:")
            self.block(s.body, depth + 1)
        elif isinstance(s, n.While):
            names = ", ".join(a.name for a in s.iter_args)
            inits = ", ".join(expr(a.init) for a in s.iter_args)
            trail = "," if len(s.iter_args) == 1 else ""
            self.emit(depth, f"for ({names}{trail}) in pl.while_(init_values=({inits}{trail})):")
            self.emit(depth + 1, f"pl.cond({expr(s.cond)})")
            self.block(s.body, depth + 1, s.results)
        elif isinstance(s, n.If):
            self.emit(depth, f"if {expr(s.cond)}:")
            self.block(s.then_body, depth + 1, _BranchResults(s.results))
            if s.else_body:
                self.emit(depth, "else:")
                self.block(s.else_body, depth + 1, _BranchResults(s.results))
        elif isinstance(s, n.Yield):
            values = ", ".join(expr(v) for v in s.values)
            if results and isinstance(results, _BranchResults) and len(results) == 1 and (
                    (self.types.get(s.values[0].name) if isinstance(s.values[0], n.Var)
                     else self.inferred(s.values[0])) != results[0].type):
                # A branch result's type is read from its yields; say it where this one differs
                # (a placed tile joining an unplaced result, say).
                self.emit(depth, f"{results[0].name}: {type_(results[0].type)} = pl.yield_({values})")
            elif results:
                self.emit(depth, f"{', '.join(b.name for b in results)} = pl.yield_({values})")
            else:
                self.emit(depth, f"pl.yield_({values})")
        elif isinstance(s, n.Return):
            self.emit(depth, ("return " + ", ".join(expr(v) for v in s.values)).rstrip())
        elif isinstance(s, n.RuntimeScope):
            self.emit(depth, "with pl.manual_scope():" if s.manual else "with pl.scope():")
            self.block(s.body, depth + 1)
        elif isinstance(s, n.Cluster) and self.fn.type is FunctionType.Group and s.name_hint == self.fn.name:
            self.block(s.body, depth)  # a Group function is its cluster: the parser wraps its body again
        elif isinstance(s, n.Cluster):
            self.emit(depth, f"with pl.cluster(name_hint={string(s.name_hint)}):" if s.name_hint else
                      "with pl.cluster():")
            if s.blocks is not None:  # the pl.spmd it unwrapped
                depth += 1
                self.emit(depth, f"with pl.spmd({expr(s.blocks)}{', sync_start=True' if s.sync_start else ''}):")
            self.block(s.body, depth + 1)
        elif isinstance(s, n.Scope):
            args = [f"level=pl.Level.{s.level.name}"]
            if s.name_hint:
                args.append(f"name_hint={string(s.name_hint)}")
            task = []  # an SPMD scope's task keywords go on its pl.spmd line
            if s.deps:
                task.append(f"deps=[{', '.join(expr(d) for d in s.deps)}]")
            if s.no_dep_args:
                args.append(f"no_dep_args=[{', '.join(s.no_dep_args)}]")
            if s.split is not None or s.slot_num is not None:
                entries = ([f"pl.split(pl.SplitMode.{s.split.name})"] if s.split is not None else []) + \
                    ([f"pl.cross_core_slot(slot_num={s.slot_num})"] if s.slot_num is not None else [])
                args.append(f"optimizations=[{', '.join(entries)}]")
            if s.allow_early_resolve:
                task.append("allow_early_resolve=True")
            if s.predicate is not None:
                task.append(f"predicate={predicate(s.predicate)}")
            bound = f" as {s.task_id}" if s.task_id is not None else ""
            if s.blocks is not None:
                spmd = [expr(s.blocks)] + (["sync_start=True"] if s.sync_start else []) + task
                self.emit(depth, f"with pl.spmd({', '.join(spmd)}){bound}:")
                depth, bound, task = depth + 1, "", []
            self.emit(depth, f"with pl.at({', '.join(args + task)}){bound}:")
            self.block(s.body, depth + 1)
        else:
            raise TypeError(f"not a statement: {s!r}")

    def for_(self, s: n.For, depth: int) -> None:
        if s.kind is ForKind.SplitAiv:
            self.emit(depth, f"for {s.var} in pl.split_aiv({expr(s.stop)}, mode=pl.SplitMode.{s.split.name}):")
            self.block(s.body, depth + 1)
            return
        args = [expr(s.stop)]
        if s.start != n.Const(0) or s.step != n.Const(1):
            args.insert(0, expr(s.start))
        if s.step != n.Const(1):
            args.append(expr(s.step))
        if s.kind is ForKind.Pipeline:
            args.append(f"stage={s.stage}")
        target = s.var
        if s.iter_args:
            names = ", ".join(a.name for a in s.iter_args)
            inits = ", ".join(expr(a.init) for a in s.iter_args)
            trail = "," if len(s.iter_args) == 1 else ""
            target = f"{s.var}, ({names}{trail})"
            args.append(f"init_values=({inits}{trail})")
        self.emit(depth, f"for {target} in pl.{s.kind.value}({', '.join(args)}):")
        self.block(s.body, depth + 1, s.results)

    def value(self, v) -> str:
        if isinstance(v, n.Call):
            return self.call(v)
        if isinstance(v, n.FuncCall):
            return f"self.{v.callee}({', '.join(f'pl.no_dep({expr(a)})' if k in v.no_dep else expr(a) for k, a in enumerate(v.args))})"
        if isinstance(v, n.Submit) and v.call is None:
            return f"pl.system.task_dummy(deps=[{', '.join(expr(d) for d in v.deps)}])"
        if isinstance(v, n.Submit):
            args = [f"pl.no_dep({expr(a)})" if k in v.no_dep else expr(a) for k, a in enumerate(v.call.args)]
            if v.blocks is not None:
                args.append(f"core_num={expr(v.blocks)}")
                if v.sync_start:
                    args.append("sync_start=True")
            if v.deps:
                args.append(f"deps=[{', '.join(expr(d) for d in v.deps)}]")
            if v.allow_early_resolve:
                args.append("allow_early_resolve=True")
            if v.predicate is not None:
                args.append(f"predicate={predicate(v.predicate)}")
            if v.blocks is not None:
                return f"pl.spmd_submit(self.{v.call.callee}{''.join(', ' + a for a in args)})"
            return f"pl.submit(self.{v.call.callee}{''.join(', ' + a for a in args)})"
        return expr(v)

    def call(self, c: n.Call) -> str:
        op = lookup(c.op)
        if op is None:
            raise TypeError(f"unknown op {c.op!r}")
        parts = []
        named = False  # once one argument is named, the rest must be
        for p, v in zip(op.params, c.args):
            named = named or p.kind in _KEYWORD_KINDS
            if p.required and not named:
                parts.append(_arg(p.kind, v))
            elif p.required:
                parts.append(f"{p.name}={_arg(p.kind, v)}")
            elif p.show or v != p.default:
                parts.append(f"{p.name}={_arg(p.kind, v)}")
                named = True
            else:
                named = True  # left out: what follows it is named
        return f"pl.{op.module}{spelled(c.op)}({', '.join(parts)})"

    def needs_annotation(self, s: n.Assign) -> bool:
        if self.explicit:
            return True
        return s.type != self.inferred(s.value)

    def inferred(self, v):
        try:
            if isinstance(v, n.Call):
                return call_type(v, self.types, self.soc)
            if isinstance(v, n.FuncCall):
                callee = self.program.function(v.callee)
                return callee.returns[0] if len(callee.returns) == 1 else None
            if isinstance(v, n.Submit):
                return TASK_ID
            return scalar_type(v, self.types)
        except (PyptoError, KeyError, TypeError):
            return None


class _BranchResults(tuple):
    """The results of an If, as the yields of its branches see them."""


# Compile-time choices read better named: pl.tile.move(t, target_memory=pl.Mem.Left).
_KEYWORD_KINDS = frozenset({Kind.DTYPE, Kind.SPACE, Kind.PAD, Kind.STR, Kind.LAYOUT, Kind.ATOMIC, Kind.NOTIFY, Kind.WAIT_CMP,
                            Kind.REDUCE})


def _arg(kind: Kind, v) -> str:
    if kind in (Kind.INDEX_LIST, Kind.SHAPE):
        return "None" if v is None else expr_list(v)
    if kind in (Kind.TILE, Kind.TENSOR, Kind.SCALAR, Kind.ARRAY):
        return "None" if v is None else expr(v)
    return static(v)
