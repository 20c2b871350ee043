"""Expressions of kernel source: names, compile-time constants, index arithmetic and type
annotations (``pypto.lang.expressions.annotations``), converted from ``ast`` without running any of it
(a constant expression is computed on its values, as Python computes it:
``pypto.lang.expressions.statics``).

``ExprConverter`` holds what a function body's conversion needs to look names up (the SSA
environment and the module's resolver) and is extended by the statement converter.
"""

from __future__ import annotations

import ast

import attrs
from pyrsistent import PMap, pmap

from pypto.errors import (
    PyptoError,
    Span,
    TypeCheckError,
    UnsupportedSyntaxError,
)
from pypto.ir import nodes as n
from pypto.ir.infer import scalar_type
from pypto.ir.ops.registry import scalar_valued
from pypto.ir.simplify import fold
from pypto.ir.types import (
    ScalarType,
    TensorType,
    TileType,
    type_name,
)
from pypto.lang.expressions.annotations import Annotations
from pypto.lang.expressions.lookups import Lookups
from pypto.lang.checks.permissions import CallSite
from pypto.lang.expressions.statics import RUNTIME, Statics, _NotStatic  # noqa: F401  (RUNTIME: re-exported)
from pypto.lang.vocabulary import names as N


@attrs.frozen
class Source:
    """Where kernel text came from, so spans name the user's own file, line and column."""

    file: str
    lines: tuple[str, ...]  # the whole file's lines (or the parsed text's)
    line_offset: int = 0  # ast line 1 is file line 1 + line_offset
    col_offset: int = 0  # columns removed by dedenting
    resolver: N.Resolver = attrs.field(factory=N.Resolver)
    # Dump text, read back exactly as printed: nothing is folded away (an ``if True:`` the
    # printer wrote stays an If), so print -> parse gives the same Program.
    exact: bool = False

    def span(self, node) -> Span | None:
        line = getattr(node, "lineno", None)
        if line is None:
            return None
        line += self.line_offset
        col = node.col_offset + self.col_offset + 1
        end_line = (node.end_lineno or node.lineno) + self.line_offset
        end_col = (node.end_col_offset or node.col_offset) + self.col_offset + 1
        text = self.lines[line - 1] if 0 < line <= len(self.lines) else None
        return Span(self.file, line, col, end_line, end_col, text)


_BINOPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.FloorDiv: "//", ast.Mod: "%", ast.LShift: "<<",
           ast.RShift: ">>", ast.Div: "/"}
# Expressions that may be constant as a whole though they are not literals.
_COMPOUND = (ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare, ast.Call)
_CMPOPS = {ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">="}


@attrs.frozen
class Dropped:
    """Why a name is no longer in scope: it was bound inside a loop or branch."""

    line: int
    where: str
    # A reason other than "bound only inside" (a loop header's names are scoped to its body).
    message: str | None = None
    hint: str | None = None


class ExprConverter(Lookups, Statics, Annotations):
    def __init__(self, source: Source):
        self.source = source
        # Python name -> SSA name, persistent: a loop or branch starts from the scope around
        # it and hands back what it binds, with no copy to make or restore
        self.env: PMap = pmap()
        self.types: dict[str, object] = {}  # SSA name -> type
        self.used: set[str] = set()  # every SSA name handed out in this function
        self.dropped: dict[str, Dropped] = {}
        # Python names the function body assigns anywhere, with the line of the first
        # assignment: as in Python, such a name is local throughout the body, so where it
        # has no value yet it is undefined, not the module-level name it shadows.
        self.local_names: dict[str, int] = {}
        self.ranges: dict[str, tuple[int, int]] = {}  # static inclusive ranges of loop vars
        self.pynames: dict[str, str] = {}
        self.dynamic_extents: dict = {}  # id(pl.dynamic axis) -> (it, its extent, the parameter that bound it)  # SSA name -> the Python name it binds (not temporaries')
        self.returned_args: dict = {}  # FuncCall -> the argument Expr the callee returns
        self.callees: dict = {}  # IR name of each function called -> its Callee
        self.submitted: dict = {}  # Submit -> the type its kernel call has (what it returns)
        self.inlining: list = []  # inline kernels being spliced in (one inside another is fine, itself is not)
        self.sites: list[str] = []  # ... each one's note ("in 'f', inlined at ..."), outermost first
        self.call_sites: dict = {}  # id(call) -> its CallSite, for the checks over the IR
        # SSA names whose value is known at compile time. ``folded`` ones (bound by
        # unpacking, ``M, N = a.shape``) have no binding statement: every use is the
        # constant itself. ``known`` ones (``R = 8``) are bound as usual, so dumps read
        # back exactly, and their value also serves where a constant is required (a shape).
        # Both live in ``env`` like any other name, so rebinding one in a loop or a branch
        # carries it like any other value.
        self.folded: dict[str, object] = {}
        self.known: dict[str, object] = {}

    # ------------------------------------------------------------------ errors and names

    def span(self, node) -> Span | None:
        return self.source.span(node)

    def error(self, cls, node, message: str, hint: str | None = None) -> PyptoError:
        return cls(message, span=self.span(node), hint=hint)

    def fresh(self, base: str, temp: bool = False) -> str:
        ssa = n.fresh_name(base if base.isidentifier() and base != "pl" else "v", self.used)
        if not temp:
            self.pynames[ssa] = base
        return ssa

    def note_call(self, call, writes: bool) -> None:
        """Keep what the checks over the IR need of ``call`` (``permissions.CallSite``): the
        inline calls around it, and — when it writes — the scope it is written in (kept
        as it is: the scope is persistent, and read only when a check faults the call)."""
        if self.sites or writes:
            self.call_sites[id(call)] = CallSite(call, tuple(reversed(self.sites)), self.env)

    def var(self, name: str) -> tuple[n.Expr, object]:
        return self.ssa_value(self.env[name])

    def ssa_value(self, ssa: str) -> tuple[n.Expr, object]:
        """The Expr reading an SSA name: the constant itself when it has no binding."""
        if ssa in self.folded:
            return n.Const(self.folded[ssa]), self.types[ssa]
        return n.Var(ssa), self.types[ssa]

    # ------------------------------------------------------------------ static values

    def scalar(self, node) -> n.Expr:
        """An index/scalar expression; compile-time parts fold to constants."""
        e = self._scalar(node)
        t = self.expr_type(e, node)
        if not isinstance(t, ScalarType):
            raise self.error(TypeCheckError, node, f"expected a scalar here, got {type_name(t)}")
        return e

    def index(self, node, what: str, noun: str = "integers") -> n.Expr:
        """An integer scalar expression: an offset, an extent, a valid size."""
        e = self.scalar(node)
        t = self.expr_type(e, node)
        if not (isinstance(t, ScalarType) and t.dtype.is_int):
            raise self.error(TypeCheckError, node,
                             f"{what} must be {noun}, but '{ast.unparse(node)}' is {type_name(t)}",
                             hint="index with integer expressions (loop variables, int scalars, '//' to divide); "
                                  "a float cannot address elements")
        return e

    def expr_type(self, e, node):
        try:
            return scalar_type(e, self.types)
        except PyptoError as err:
            if isinstance(e, n.Var):
                return self.types.get(e.name)
            raise err.with_span(self.span(node)) from None

    def element_read(self, node) -> bool:
        """Whether ``node`` reads one element of a tensor (``pl.tensor.read``, ``pl.tile.read``, ``pl.read``;
        in an orchestration also ``t[i, j]``): a scalar, once bound to a name."""
        if isinstance(node, ast.Subscript) and (not self.incore and isinstance(self.local_type(node.value), TensorType)
                                                or isinstance(self.local_type(node.value), TileType)):
            items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            # (fewer indices than axes is a view without them: C[i] of a 3-D C)
            return not any(isinstance(i, ast.Slice) for i in items) \
                and len(items) == len(self.local_type(node.value).shape)
        if isinstance(node, ast.Call):
            _, meaning = self.entity(node.func)
            return isinstance(meaning, N.Op) and meaning.name in ("tensor.read", "tile.read", "read")
        return False

    def _scalar(self, node) -> n.Expr:
        if self.element_read(node):
            return self.operand(node)[0]
        if isinstance(node, _COMPOUND) and not self.source.exact:
            # A constant expression is what Python computes (1.0 / HIDDEN, math.sqrt(2.0));
            # only expressions of runtime values keep the index rules below. (Dump text is
            # read as printed: a name bound to a constant stays the name.)
            value = self.maybe_static(node)
            if value is not RUNTIME:
                return self._number(node, value)
        if isinstance(node, ast.Constant):
            if isinstance(node.value, (bool, int, float)) or node.value is None:  # None: no task (a TaskId)
                return n.Const(node.value)
            raise self.error(TypeCheckError, node, f"{node.value!r} is not a number")
        if isinstance(node, ast.Name):
            if node.id in self.env:
                e, t = self.var(node.id)
                if not isinstance(t, ScalarType):
                    raise self.error(TypeCheckError, node, f"'{node.id}' is {type_name(t)}, not a scalar",
                                     hint="scalar expressions (conditions, offsets, bounds) read loop indices, scalar "
                                          "parameters and constants; compare tiles elementwise with pl.cmp / pl.cmps")
                return e
            return self._static_const(node)
        if isinstance(node, ast.BinOp):
            op = _BINOPS.get(type(node.op))
            if op is None:
                symbol = {ast.Pow: "**", ast.LShift: "<<", ast.RShift: ">>", ast.BitAnd: "&", ast.BitOr: "|",
                          ast.BitXor: "^", ast.MatMult: "@"}.get(type(node.op), type(node.op).__name__)
                try:  # compile-time operands: Python computes it here (2 ** 4)
                    return self._static_const(node)
                except PyptoError:
                    pass
                raise self.error(UnsupportedSyntaxError, node,
                                 f"'{symbol}' is computed only on compile-time values, and "
                                 f"'{ast.unparse(node)}' depends on a runtime value",
                                 hint="write it with + - * // % (e.g. i * i for i ** 2)" if symbol == "**"
                                 else "index arithmetic has + - * // % << >> and min/max")
            return fold(n.BinOp(op, self._scalar(node.left), self._scalar(node.right)))
        if isinstance(node, ast.Subscript) and isinstance(self.local_type(node.value), TileType):
            raise self.error(TypeCheckError, node, f"'{ast.unparse(node)}' is a window of a tile, not a scalar",
                             hint=f"read one element as {ast.unparse(node.value)}[i, j]")
        if isinstance(node, ast.Compare):
            if len(node.ops) != 1:
                raise self.error(UnsupportedSyntaxError, node, "chained comparisons are not supported",
                                 hint="write 'a < b and b < c'")
            op = _CMPOPS.get(type(node.ops[0]))
            if op is None:
                raise self.error(UnsupportedSyntaxError, node, f"unsupported comparison {type(node.ops[0]).__name__}")
            return fold(n.BinOp(op, self._scalar(node.left), self._scalar(node.comparators[0])))
        if isinstance(node, ast.BoolOp):
            op = "and" if isinstance(node.op, ast.And) else "or"
            out = self._scalar(node.values[0])
            for v in node.values[1:]:
                out = n.BinOp(op, out, self._scalar(v))
            return out
        if isinstance(node, ast.UnaryOp):
            inner = self._scalar(node.operand)
            if isinstance(node.op, ast.USub):
                if isinstance(inner, n.Const) and not isinstance(inner.value, bool):
                    return n.Const(-inner.value)
                return n.UnaryOp("-", inner)
            if isinstance(node.op, ast.UAdd):
                return inner
            if isinstance(node.op, ast.Not):
                return n.UnaryOp("not", inner)
        if isinstance(node, ast.Call):
            minmax = self._minmax(node)
            if minmax is not None:
                return minmax
            _, meaning = self.entity(node.func)
            if isinstance(meaning, N.Builtin) and meaning.name in ("available_cluster_count", "available_aiv_count"):
                return self.available_count(node, meaning.name)[0]
            if isinstance(meaning, N.Builtin) and meaning.name == "dim":  # an extent known as the orchestration runs
                return self.dim_call(node)[0]
            if isinstance(meaning, N.Op) and scalar_valued(meaning.name):  # a register, an array element
                return self.operand(node)[0]
            if isinstance(meaning, N.Op) and meaning.name.rsplit(".", 1)[-1] == "cast" and node.args \
                    and not self._is_array(node.args[0]):  # a scalar's cast, inside an expression
                return self.operand(node)[0]
            pure = self.pure_function(node.func)
            if pure is not None and self.maybe_static(node) is RUNTIME:
                raise self.error(UnsupportedSyntaxError, node,
                                 f"{ast.unparse(node.func)}() is computed only on compile-time values, and "
                                 f"'{ast.unparse(node)}' depends on a runtime value",
                                 hint="index arithmetic has + - * // % and min/max")
        return self._static_const(node)

    def _minmax(self, node: ast.Call):
        pure = self.pure_function(node.func)
        if pure is None or pure.name not in ("min", "max"):
            return None
        which = pure.name
        if len(node.args) < 2 or node.keywords:
            raise self.error(TypeCheckError, node, f"{ast.unparse(node.func)} takes two or more scalars")
        out = self._scalar(node.args[0])
        for arg in node.args[1:]:  # min(a, b, c) is min(min(a, b), c), as Python folds it
            out = fold(n.BinOp(which, out, self._scalar(arg)))
        return out

    def _static_const(self, node) -> n.Const:
        value = self.maybe_static(node)
        if value is RUNTIME:
            if isinstance(node, ast.Name):
                raise self.undefined(node)
            raise self.error(TypeCheckError, node, f"'{_short(ast.unparse(node))}' is not a scalar expression",
                             hint="write a number, a scalar parameter or loop variable, or arithmetic on them")
        return self._number(node, value)

    def _number(self, node, value) -> n.Const:
        if isinstance(value, (bool, int, float)):
            return n.Const(value)
        shown = repr(value)
        shown = shown if len(shown) <= 80 else shown[:77] + "..."
        raise self.error(TypeCheckError, node, f"'{_short(ast.unparse(node))}' is {shown}, not a number")

    # ------------------------------------------------------------------ annotations


def _short(text: str) -> str:
    """Source quoted in a message, cut where it would swamp it."""
    return text if len(text) <= 80 else text[:77] + "..."
