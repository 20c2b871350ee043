"""Expressions of kernel source: names, compile-time constants, index arithmetic and type
annotations, converted from ``ast`` without evaluating anything.

``ExprConverter`` holds what a function body's conversion needs to look names up (the SSA
environment and the module's resolver) and is extended by the statement converter.
"""

from __future__ import annotations

import ast
import difflib
import operator

import attrs

from pypto.errors import (
    ParseError,
    PyptoError,
    Span,
    SpecializationError,
    TypeCheckError,
    UnsupportedSyntaxError,
)
from pypto.ir import nodes as n
from pypto.ir.infer import scalar_type
from pypto.ir.simplify import OPERATORS, fold
from pypto.ir.types import (
    DataType,
    MemRef,
    ParamDirection,
    ScalarType,
    TensorType,
    TileType,
    type_name,
)
from pypto.lang import names as N
from pypto.sim.soc import DEFAULT, MemorySpace, SoC


@attrs.frozen
class Source:
    """Where kernel text came from, so spans name the user's own file, line and column."""

    file: str
    lines: tuple[str, ...]  # the whole file's lines (or the parsed text's)
    line_offset: int = 0  # ast line 1 is file line 1 + line_offset
    col_offset: int = 0  # columns removed by dedenting
    resolver: N.Resolver = attrs.field(factory=N.Resolver)
    soc: SoC = DEFAULT
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


_BINOPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.FloorDiv: "//", ast.Mod: "%"}
_CMPOPS = {ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">="}
_STATIC_BINOPS = {**{k: OPERATORS[v] for k, v in _BINOPS.items()}, ast.Div: operator.truediv, ast.Pow: operator.pow,
                  ast.LShift: operator.lshift, ast.RShift: operator.rshift, ast.BitAnd: operator.and_,
                  ast.BitOr: operator.or_, ast.BitXor: operator.xor}


class NotStatic(Exception):
    """An expression whose value is not known at compile time."""


@attrs.frozen
class Dropped:
    """Why a name is no longer in scope: it was bound inside a loop or branch."""

    line: int
    where: str
    # A reason other than "bound only inside" (a loop header's names are scoped to its body).
    message: str | None = None
    hint: str | None = None


class ExprConverter:
    def __init__(self, source: Source):
        self.source = source
        self.env: dict[str, str] = {}  # Python name -> SSA name
        self.types: dict[str, object] = {}  # SSA name -> type
        self.used: set[str] = set()  # every SSA name handed out in this function
        self.dropped: dict[str, Dropped] = {}
        # Python names the function body assigns anywhere, with the line of the first
        # assignment: as in Python, such a name is local throughout the body, so where it
        # has no value yet it is undefined, not the module-level name it shadows.
        self.local_names: dict[str, int] = {}
        self.ranges: dict[str, tuple[int, int]] = {}  # static inclusive ranges of loop vars
        # For the static bounds check: the values of loop indices with constant bounds, the
        # scalar names bound to index expressions, and the conditions (cond, holds) of the
        # branches being converted.
        self.domains: dict[str, range] = {}
        self.scalar_defs: dict[str, n.Expr] = {}
        self.guards: list[tuple[n.Expr, bool]] = []
        # SSA name of an In (read-only) tensor parameter -> its Python name: what no op may
        # write, under any name. ``sources`` says which tensors another tensor may be (an
        # alias, a window, an if's or a loop's result, a kernel's returned argument), and
        # ``writes`` keeps every checked write, rechecked when a loop's carried value turns
        # out to be able to hold an input on a later iteration.
        self.inputs: dict[str, str] = {}
        self.sources: dict[str, set[str]] = {}
        self.writes: list = []
        self.returned_args: dict = {}  # FuncCall -> the argument Expr the callee returns
        self.inlining: list = []  # inline kernels being spliced in (one inside another is fine, itself is not)
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

    def fresh(self, base: str) -> str:
        return n.fresh_name(base if base.isidentifier() and base != "pl" else "v", self.used)

    def resolve_chain(self, node):
        """A Name/Attribute chain resolved to an entity of ``pypto.lang.names``, or None."""
        if isinstance(node, ast.Name):
            if node.id in self.env:  # a local value hides what the module binds to the name
                return None
            ref = self.source.resolver.resolve(node.id)
            if (node.id in self.dropped or node.id in self.local_names) and ref != N.Path(()):
                # 'pl' bound locally is its own error, where it is bound.
                raise self.undefined(node)
            return ref
        if isinstance(node, ast.Attribute):
            base = self.resolve_chain(node.value)
            if isinstance(base, N.Path):
                return base.child(node.attr)
            if isinstance(base, N.Value):
                return self.source.resolver.attribute(base, node.attr)
            return None
        return None

    def entity(self, node):
        """Resolve and interpret: what a (non-local) name denotes in the kernel language."""
        ref = self.resolve_chain(node)
        if isinstance(ref, N.Path):
            return ref, N.interpret(ref)
        return ref, ref

    def alias_error(self, node, ref: N.Alias) -> PyptoError:
        return self.error(
            ParseError, node,
            f"'{ref.name}' is {ref.what} bound at module level; the kernel source is re-parsed on "
            "its own, where such a variable is not in scope",
            hint="write the declaration inline where it is used, e.g. "
            "tile: pl.Tile[[64, 128], pl.FP32, pl.MemRef(\"ub\", slots=2)[i % 2], pl.Mem.Vec] = ...",
        )

    def undefined(self, node: ast.Name) -> PyptoError:
        if node.id in self.dropped:
            d = self.dropped[node.id]
            return self.error(
                ParseError, node,
                d.message or f"'{node.id}' is bound inside the {d.where} at line {d.line} and is not available after it",
                hint=d.hint or f"give '{node.id}' a value before the {d.where} so it is carried out of it",
            )
        if node.id in self.local_names:
            shadows = isinstance(self.source.resolver.resolve(node.id), (N.Value, N.Kernel))
            line = self.local_names[node.id] + self.source.line_offset
            return self.error(
                ParseError, node,
                f"'{node.id}' has no value here: it is assigned at line {line}, which makes it (as in Python) "
                "a local name of the whole function" + (f", hiding the module-level '{node.id}'" if shadows else ""),
                hint=f"rename the local so it does not hide the module's '{node.id}'" if shadows
                else f"assign '{node.id}' before this line",
            )
        candidates = list(self.env) + ["pl"]
        close = difflib.get_close_matches(node.id, candidates, n=1)
        return self.error(ParseError, node, f"name '{node.id}' is not defined",
                          hint=f"did you mean '{close[0]}'?" if close else None)

    def var(self, name: str) -> tuple[n.Expr, object]:
        return self.ssa_value(self.env[name])

    def ssa_value(self, ssa: str) -> tuple[n.Expr, object]:
        """The Expr reading an SSA name: the constant itself when it has no binding."""
        if ssa in self.folded:
            return n.Const(self.folded[ssa]), self.types[ssa]
        return n.Var(ssa), self.types[ssa]

    # ------------------------------------------------------------------ static values

    def static(self, node):
        """The compile-time value of an expression (raises NotStatic)."""
        if isinstance(node, ast.Constant):
            if node.value is Ellipsis:
                raise NotStatic
            return node.value
        if isinstance(node, (ast.List, ast.Tuple)):
            return [self.static(e) for e in node.elts]
        if isinstance(node, ast.UnaryOp):
            v = self.static(node.operand)
            if isinstance(node.op, ast.USub):
                return self._evaluate(node, operator.neg, v)
            if isinstance(node.op, ast.UAdd):
                return self._evaluate(node, operator.pos, v)
            if isinstance(node.op, ast.Not):
                return not v
            raise NotStatic
        if isinstance(node, ast.BinOp) and type(node.op) in _STATIC_BINOPS:
            return self._evaluate(node, _STATIC_BINOPS[type(node.op)], self.static(node.left), self.static(node.right))
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _CMPOPS:
            return self._evaluate(node, OPERATORS[_CMPOPS[type(node.ops[0])]], self.static(node.left),
                                  self.static(node.comparators[0]))
        if isinstance(node, ast.BoolOp):
            values = [self.static(v) for v in node.values]
            return all(values) if isinstance(node.op, ast.And) else any(values)
        if isinstance(node, ast.Attribute) and node.attr == "shape":
            t = self.local_type(node.value)
            if isinstance(t, (TensorType, TileType)):
                return list(t.shape)
        if isinstance(node, ast.Subscript):
            base = self.static(node.value)
            index = self.static(node.slice)
            if isinstance(base, list) and isinstance(index, int) and not isinstance(index, bool):
                if not -len(base) <= index < len(base):
                    raise self.error(TypeCheckError, node, f"index {index} is out of range for {base!r}")
                return base[index]
            raise NotStatic
        if isinstance(node, ast.Call):
            return self._static_call(node)
        if isinstance(node, (ast.Name, ast.Attribute)):
            if isinstance(node, ast.Name) and node.id in self.env:
                ssa = self.env[node.id]
                for table in (self.folded, self.known):
                    if ssa in table:
                        return table[ssa]
                raise NotStatic
            ref, meaning = self.entity(node)
            if isinstance(ref, N.Alias):
                raise self.alias_error(node, ref)
            if isinstance(meaning, N.Value):
                return _as_list(meaning.value)
            if isinstance(ref, N.Path) and meaning is None:
                message, hint = N.unknown(ref)
                raise self.error(ParseError, node, message, hint=hint)
            if isinstance(ref, N.Unknown):
                raise self.error(ParseError, node, f"'{ast.unparse(node)}' is {ref.what}, which kernel source cannot "
                                                   "use as a value",
                                 hint="module-level constants are numbers, strings, dtypes and tuples of them; "
                                      "pass tensors and runtime values as kernel arguments")
        raise NotStatic

    def _static_call(self, node: ast.Call):
        """``float("nan")``, and ``min``/``max`` (Python's or pl's) of compile-time values."""
        func = node.func
        if isinstance(func, ast.Name) and func.id in self.env:
            raise NotStatic
        which = func.id if isinstance(func, ast.Name) and func.id in ("min", "max", "float") else None
        if which is None:
            _, meaning = self.entity(func)
            if isinstance(meaning, N.Builtin) and meaning.name in ("min", "max"):
                which = meaning.name
        if which is None or node.keywords:
            raise NotStatic
        if which == "float":
            if len(node.args) == 1 and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
                return self._evaluate(node, float, node.args[0].value)
            raise NotStatic
        args = [self.static(a) for a in node.args]
        if len(args) < 2 or not all(isinstance(a, (int, float)) for a in args):
            raise NotStatic
        return min(args) if which == "min" else max(args)

    def _evaluate(self, node, f, *args):
        """A Python operator on compile-time values; its failure is the user's mistake."""
        try:
            return f(*args)
        except Exception as exc:  # 1 // 0, "a" - 1, ...
            raise self.error(TypeCheckError, node, f"'{ast.unparse(node)}' could not be evaluated: {exc}") from None

    def local_type(self, node):
        if isinstance(node, ast.Name) and node.id in self.env:
            return self.types[self.env[node.id]]
        return None

    def static_of(self, node, kind: type | tuple, what: str):
        try:
            value = self.static(node)
        except NotStatic:
            raise self.error(TypeCheckError, node, f"{what} must be a compile-time constant",
                             hint="use literals or module-level constants here") from None
        except PyptoError:
            raise
        except Exception as exc:  # a ZeroDivisionError in a constant expression, say
            raise self.error(TypeCheckError, node, f"{what} could not be evaluated: {exc}") from None
        if isinstance(value, bool) and bool not in (kind if isinstance(kind, tuple) else (kind,)):
            raise self.error(TypeCheckError, node, f"{what} must be {_kind_name(kind)}, not {value!r}")
        if not isinstance(value, kind):
            raise self.error(TypeCheckError, node, f"{what} must be {_kind_name(kind)}, not {value!r}")
        return value

    def static_ints(self, node, what: str) -> tuple[int, ...]:
        value = self.static_of(node, (list, tuple), what)
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
            raise self.error(TypeCheckError, node, f"{what} must be a list of ints, not {value!r}")
        return tuple(value)

    def static_dims(self, node, what: str) -> tuple[int, ...]:
        shape = self.static_ints(node, what)
        if not shape or any(d <= 0 for d in shape):
            raise self.error(TypeCheckError, node, f"{what} has positive extents, not {list(shape)}",
                             hint="every dimension is at least 1, e.g. [64, 128]")
        return shape

    # ------------------------------------------------------------------ scalar expressions

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

    def _scalar(self, node) -> n.Expr:
        if isinstance(node, ast.Constant):
            if isinstance(node.value, (bool, int, float)):
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
                if isinstance(node.op, ast.Div):
                    raise self.error(UnsupportedSyntaxError, node, "'/' is not an index operation",
                                     hint="use '//' for integer division")
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
                                 else "index arithmetic has + - * // % and min/max")
            return fold(n.BinOp(op, self._scalar(node.left), self._scalar(node.right)))
        if isinstance(node, ast.Subscript) and isinstance(self.local_type(node.value), TileType):
            raise self.tile_slice_error(node)
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
        return self._static_const(node)

    def _minmax(self, node: ast.Call):
        func = node.func
        which = None
        if isinstance(func, ast.Name) and func.id in ("min", "max") and func.id not in self.env:
            which = func.id
        else:
            _, meaning = self.entity(func)
            if isinstance(meaning, N.Builtin) and meaning.name in ("min", "max"):
                which = meaning.name
        if which is None:
            return None
        if len(node.args) < 2 or node.keywords:
            raise self.error(TypeCheckError, node, f"{ast.unparse(node.func)} takes two or more scalars")
        out = self._scalar(node.args[0])
        for arg in node.args[1:]:  # min(a, b, c) is min(min(a, b), c), as Python folds it
            out = fold(n.BinOp(which, out, self._scalar(arg)))
        return out

    def tile_slice_error(self, node: ast.Subscript) -> PyptoError:
        name = ast.unparse(node.value)
        return self.error(UnsupportedSyntaxError, node,
                          f"tiles cannot be sliced: '{name}' is {type_name(self.local_type(node.value))}",
                          hint="load just the region you need: pl.load(tensor, [row, col], [rows, cols]) "
                               "(the reference's pl.tile.slice is not supported here yet)")

    def _static_const(self, node) -> n.Const:
        try:
            value = self.static(node)
        except NotStatic:
            if isinstance(node, ast.Name):
                raise self.undefined(node) from None
            raise self.error(TypeCheckError, node, f"'{ast.unparse(node)}' is not a scalar expression") from None
        if isinstance(value, (bool, int, float)):
            return n.Const(value)
        raise self.error(TypeCheckError, node, f"'{ast.unparse(node)}' is {value!r}, not a number")

    # ------------------------------------------------------------------ annotations

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
            return self._tensor_annotation(node, given, param), ParamDirection.In
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
        raise self.error(TypeCheckError, node, f"pl.{ctor} is not a type", hint="use it inside pl.Tile[...]")

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
        # A Python int widens to a float parameter; a float never narrows to an int one.
        fits = isinstance(given, ScalarType) and (
            given.dtype.is_int == declared.dtype.is_int and given.dtype.is_bool == declared.dtype.is_bool
            or given.dtype.is_int and declared.dtype.is_float)
        if not fits:
            got = f"a {given.dtype} scalar" if isinstance(given, ScalarType) else type_name(given)
            raise self.error(SpecializationError, node,
                             f"argument '{param}' is {got} but the parameter is declared {declared.dtype}",
                             hint=f"pass a {'number' if declared.dtype.is_float else 'Python int'}, or declare "
                                  f"the parameter as a bare pl.Scalar")
        return declared

    def _dtype(self, node) -> DataType:
        return self.static_of(node, DataType, "a dtype")

    def _tensor_annotation(self, node, given, param) -> TensorType:
        if not isinstance(node, ast.Subscript):
            if isinstance(given, TensorType):
                return given
            raise self.error(SpecializationError if given is not None else TypeCheckError, node,
                             "a bare pl.Tensor takes its shape and dtype from a call's argument"
                             + (f", and '{param}' got {type_name(given)}" if given is not None else ""),
                             hint="spell it out: pl.Tensor[[128, 128], pl.FP32]")
        items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if len(items) != 2:
            raise self.error(TypeCheckError, node, "pl.Tensor takes [shape, dtype]",
                             hint="pl.Tensor[[128, 128], pl.FP32]")
        shape = self.static_dims(items[0], "a tensor shape")
        declared = TensorType(shape, self._dtype(items[1]))
        if given is not None and given != declared:
            raise self.error(SpecializationError, node,
                             f"argument '{param}' is {type_name(given)} but the kernel declares {type_name(declared)}",
                             hint="pass a tensor of the declared shape and dtype, or annotate with a bare pl.Tensor")
        return declared

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
            if isinstance(meaning, N.TypeCtor) and meaning.name == "MemRef":
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
        index = None
        call = node
        if isinstance(node, ast.Subscript):
            call, index = node.value, self.scalar(node.slice)
        if not isinstance(call, ast.Call):
            raise self.error(TypeCheckError, node, "pl.MemRef is called with its name",
                             hint='pl.MemRef("ub", slots=2)[i % 2]')
        args = [self.static(a) if not isinstance(a, ast.Constant) else a.value for a in call.args]
        kw = {k.arg: self.static(k.value) for k in call.keywords}
        unknown = set(kw) - {"slots", "size", "pipeline"}
        if unknown:
            raise self.error(TypeCheckError, call, f"pl.MemRef got an unexpected keyword '{sorted(unknown)[0]}'",
                             hint='pl.MemRef("name", slots=N)')
        if not args or not isinstance(args[0], str) or not args[0]:
            raise self.error(TypeCheckError, call, "pl.MemRef needs a name (a non-empty string) first",
                             hint='pl.MemRef("ub", slots=2)[i % 2]')
        if len(args) not in (1, 3) or not all(isinstance(a, int) for a in args[1:]):
            raise self.error(TypeCheckError, call, "pl.MemRef takes (name) or (name, address, size)")
        slots = kw.get("slots", 1)
        if not isinstance(slots, int) or isinstance(slots, bool) or slots < 1:
            raise self.error(TypeCheckError, call, f"slots must be a positive int, not {slots!r}")
        if slots > 1 and index is None:
            raise self.error(TypeCheckError, call, f"a {slots}-slot MemRef needs a slot index",
                             hint=f'select one per use: pl.MemRef("{args[0]}", slots={slots})[i % {slots}]')
        if slots == 1 and index is not None:
            raise self.error(TypeCheckError, node, "only a MemRef with slots > 1 takes a slot index")
        addr, size = (args[1], args[2]) if len(args) == 3 else (None, kw.get("size"))
        pipeline = kw.get("pipeline", False)
        if not isinstance(pipeline, bool):
            raise self.error(TypeCheckError, call, f"pipeline must be True or False, not {pipeline!r}")
        return MemRef(name=args[0], slots=slots, index=index, addr=addr, size=size, pipeline=pipeline)

    def _tile_view(self, node) -> tuple:
        if not isinstance(node, ast.Call) or node.args or [k.arg for k in node.keywords] != ["valid_shape"]:
            raise self.error(TypeCheckError, node, "pl.TileView takes valid_shape=[...] here")
        value = node.keywords[0].value
        if not isinstance(value, (ast.List, ast.Tuple)):
            raise self.error(TypeCheckError, value, "valid_shape is a list of extents")
        return tuple(self.scalar(e) for e in value.elts)


def _as_list(value):
    """Module-level tuples read like the list literals written in kernels."""
    if isinstance(value, (tuple, list)):
        return [_as_list(v) for v in value]
    return value


def _kind_name(kind) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    names = {int: "an int", float: "a number", bool: "a bool", str: "a string", list: "a list", tuple: "a list",
             DataType: "a dtype (pl.FP32, ...)", MemorySpace: "a memory space (pl.Mem.Vec, ...)"}
    return " or ".join(dict.fromkeys(names.get(k, k.__name__) for k in kinds))
