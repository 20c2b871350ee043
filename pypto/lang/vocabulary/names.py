"""What a name in kernel source denotes, decided without running the source.

A dotted name either roots in the kernel language (``pl.tile.add``, ``pl.Mem.Vec``), is a
static constant (a module-level ``NT = 8``), a kernel the source calls (a
``@pl.jit.incore`` function), or an error. ``Resolver`` answers for the first name of a
chain; ``interpret`` maps a path inside the language to what it means.
"""

from __future__ import annotations

import builtins
import enum
import math
import types

import attrs
import numpy

from pypto.ir.ops import UNIFIED, resolve
from pypto.ir.ops.rings import AUTO
from pypto.ir.types import (AtomicType, DataType, FunctionType, Level, MaskPattern, NotifyOp, PadValue, ReduceOp, Role,
                             ScopeMode, SplitMode, TensorLayout, WaitCmp)
from pypto.backend import MemorySpace
from pypto.lang.vocabulary.dsl import MemRefDeclaration

# ----------------------------------------------------------------------------- entities


@attrs.frozen
class Value:
    """A compile-time constant: a number, a dtype, a memory space, ..."""

    value: object


class _AxisArithmetic:
    """What ``R * 2`` is when Python evaluates an annotation (without ``from __future__
    import annotations``): nothing the compiler reads — it reads the annotation's source."""

    __slots__ = ()

    def _expr(self, *_):
        return _AxisExpr()

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _expr
    __floordiv__ = __rfloordiv__ = __mod__ = __rmod__ = __neg__ = _expr


class _AxisExpr(_AxisArithmetic):
    __slots__ = ()

    def __repr__(self) -> str:
        return "<an expression of pl.dynamic axes>"


class DynVar(_AxisArithmetic):
    """``pl.dynamic(name)``: an axis whose extent is not written in the kernel. One object
    is one dimension (two ``pl.dynamic("M")`` are two); here each call binds it to the
    extent its tensors have, consistently across the parameters that share it."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        if not isinstance(name, str) or not name.isidentifier():
            raise ValueError(f"DynVar name must be a valid identifier, got {name!r}")
        self.name = name

    def __repr__(self) -> str:
        return f"pl.dynamic({self.name!r})"


@attrs.frozen
class Path:
    """A name inside the kernel language, like ("tile", "add") for ``pl.tile.add``."""

    parts: tuple[str, ...]

    def child(self, name: str) -> Path:
        return Path((*self.parts, name))

    def __str__(self) -> str:
        return ".".join(("pl", *self.parts))


@attrs.frozen
class Kernel:
    """Another kernel function the source calls (a ``@pl.jit.incore``/``.inline`` one)."""

    obj: object


@attrs.frozen
class Alias:
    """A module-level variable holding a DSL declaration: always a mistake (see hint)."""

    name: str
    what: str


@attrs.frozen(eq=False)
class Declared:
    """A ``pl.MemRef`` declaration bound outside the kernel (``scratch = pl.MemRef(slots=2)``),
    read through the variable ``name``: an allocation tile annotations name."""

    name: str
    decl: object  # a pypto.lang.vocabulary.dsl.MemRefDeclaration


@attrs.frozen
class Unknown:
    name: str
    what: str


@attrs.frozen
class Pure:
    """A Python function of numbers the front end computes on compile-time values
    (``abs``, ``math.sqrt``), recognized by identity, never by spelling: a user's own
    ``sqrt`` is not ``math.sqrt``."""

    name: str  # its key in PURE_FUNCTIONS

    @property
    def fn(self):
        return PURE_FUNCTIONS[self.name]


# Python builtins and ``math`` functions a constant expression may call: pure, total on
# numbers apart from the errors Python raises (a math domain error is the user's mistake).
_PURE_BUILTINS = ("abs", "min", "max", "float", "int", "round")
_PURE_MATH = ("sqrt", "exp", "expm1", "log", "log1p", "log2", "log10", "pow", "fabs", "floor", "ceil", "trunc",
              "sin", "cos", "tan", "tanh", "atan")
PURE_FUNCTIONS = {**{name: getattr(builtins, name) for name in _PURE_BUILTINS},
                  **{f"math.{name}": getattr(math, name) for name in _PURE_MATH}}
_PURE_BY_ID = {id(fn): name for name, fn in PURE_FUNCTIONS.items()}


ENUMS = {
    "Mem": MemorySpace,
    "MemorySpace": MemorySpace,
    "Level": Level,
    "Role": Role,
    "FunctionType": FunctionType,
    "PadValue": PadValue,
    "AtomicType": AtomicType,
    "SplitMode": SplitMode,
    "ScopeMode": ScopeMode,
    "TensorLayout": TensorLayout,
}
DTYPES = {d.name: d for d in DataType}
BUILTINS = frozenset({"range", "pipeline", "parallel", "unroll", "while_", "cond", "submit", "no_dep", "dump_tag", "scope", "manual_scope", "at", "yield_", "min", "max", "const", "spmd", "spmd_submit", "split", "cross_core_slot", "split_aiv", "cluster"})
TYPE_CTORS = frozenset({"Tensor", "Tile", "Scalar", "Array", "Out", "InOut", "MemRef", "TileView", "TensorView"})
DECORATORS = frozenset({"jit", "function", "program"})
NAMESPACES = frozenset({"tile", "tensor", "array", "system"})
# ``pld`` (pypto.language.distributed, the path ``pl.distributed``): its enums, its type
# constructors, its front-end form, and its two-segment shortcuts for ops filed under
# system / tensor / tile
DISTRIBUTED = "distributed"
DIST_ENUMS = {"NotifyOp": NotifyOp, "WaitCmp": WaitCmp, "ReduceOp": ReduceOp, "AtomicType": AtomicType}
DIST_TYPE_CTORS = frozenset({"DistributedTensor", "CommCtx"})
DIST_COLLECTIVES = frozenset({"allreduce", "barrier", "broadcast", "allgather", "reduce_scatter", "all_to_all",
                              "all_to_all_v", "put", "get"})
DIST_SHORTCUTS = {"world_size": "system.world_size", "rank": "system.rank", "nranks": "system.nranks",
                  "get_comm_ctx": "system.get_comm_ctx", "alloc_window_buffer": "tensor.alloc_window_buffer",
                  "window": "tensor.window", "remote_load": "tile.remote_load", "remote_store": "tile.remote_store"}
# enums filed under an op namespace (pl.tile.MaskPattern.P0101)
NAMESPACED_ENUMS = {"tile.MaskPattern": MaskPattern}


@attrs.frozen
class Op:
    """An op: ``unified`` names pick their level from the operands (pl.add)."""

    name: str
    unified: bool


@attrs.frozen
class Builtin:
    name: str


@attrs.frozen
class TypeCtor:
    name: str


@attrs.frozen
class Namespace:
    path: Path


# Namespaced spellings of the front end's own forms: the reference files the scalar min/max
# under ``tile`` too, a call argument's dependency opt-out and the dump mark under
# ``tensor``, the task barrier and the core counts under ``system``.
_NAMESPACED_BUILTINS = {"tensor.dim": "dim", "tile.max": "max", "tile.min": "min", "tensor.no_dep": "no_dep",
                        "tensor.dump_tag": "dump_tag", "system.task_dummy": "task_dummy",
                        "system.available_cluster_count": "available_cluster_count",
                        "system.available_aiv_count": "available_aiv_count"}


def member(namespace: str, name: str, module: str = ""):
    """What ``pl.<namespace>.<name>`` means: a registered op (under any of its reference
    names), one of the front end's forms, or None. ``module``: the language module the
    name is read in ("distributed." for ``pld``), whose ops are its own."""
    if module and f"{namespace}.{name}" == "system.get_comm_ctx":
        return Builtin("get_comm_ctx")
    op = resolve(f"{namespace}.{name}")
    if op is not None and op.module == module:
        return Op(op.name, unified=False)
    builtin = _NAMESPACED_BUILTINS.get(f"{namespace}.{name}")
    return Builtin(builtin) if builtin else None


def interpret(path: Path):
    """The meaning of a path inside the language, or None when it names nothing."""
    parts = path.parts
    if not parts:
        return Namespace(path)
    head, rest = parts[0], parts[1:]
    if head == DISTRIBUTED:
        return _distributed(path, rest)
    if head in DTYPES and not rest:
        return Value(DTYPES[head])
    if head == "AUTO" and not rest:  # a reserve_buffer base the planner picks
        return Value(AUTO)
    if head in ("MX_A_ZZ", "MX_B_NN") and not rest:  # the MX scale layouts, spelled bare as the reference does
        return Value(TensorLayout[head])
    if head in ENUMS:
        enum_cls = ENUMS[head]
        if not rest:
            return Namespace(path)
        if len(rest) == 1 and rest[0] in enum_cls.__members__:
            return Value(enum_cls[rest[0]])
        return None
    if head in NAMESPACES:
        if not rest:
            return Namespace(path)
        enum_cls = NAMESPACED_ENUMS.get(f"{head}.{rest[0]}")
        if enum_cls is not None:
            if len(rest) == 1:
                return Namespace(path)
            return Value(enum_cls[rest[1]]) if len(rest) == 2 and rest[1] in enum_cls.__members__ else None
        if len(rest) == 1:
            return member(head, rest[0])
        return None
    if rest:
        return None
    if head in UNIFIED:
        return Op(head, unified=True)
    if head == "dim":  # pl.dim, the unified spelling of pl.tensor.dim
        return Builtin("dim")
    if head in BUILTINS:
        return Builtin(head)
    if head in TYPE_CTORS:
        return TypeCtor(head)
    return None


def _distributed(path: Path, rest: tuple):
    """The meaning of ``pld.<rest>``."""
    if not rest:
        return Namespace(path)
    if rest[0] in DIST_ENUMS:
        enum_cls = DIST_ENUMS[rest[0]]
        if len(rest) == 1:
            return Namespace(path)
        return Value(enum_cls[rest[1]]) if len(rest) == 2 and rest[1] in enum_cls.__members__ else None
    if len(rest) == 1 and rest[0] in DIST_TYPE_CTORS:
        return TypeCtor(rest[0])
    if len(rest) == 1 and rest[0] in DIST_SHORTCUTS:
        namespace, _, name = DIST_SHORTCUTS[rest[0]].rpartition(".")
        return member(namespace, name, DISTRIBUTED + ".")
    if rest[0] in NAMESPACES and len(rest) == 1:
        return Namespace(path)
    if rest[0] in NAMESPACES and len(rest) == 2:
        if rest[0] == "tensor" and rest[1] in DIST_COLLECTIVES:  # filed under system (see ir.ops.comm)
            return member("system", rest[1], DISTRIBUTED + ".")
        return member(rest[0], rest[1], DISTRIBUTED + ".")
    return None


def unknown(path: Path) -> tuple[str, str | None]:
    """(message, hint) for a path inside the language that names nothing: the known
    members of the enum it reaches into, or the close names of the language."""
    import difflib

    parts = path.parts
    if len(parts) == 3 and f"{parts[0]}.{parts[1]}" in NAMESPACED_ENUMS:
        known = list(NAMESPACED_ENUMS[f"{parts[0]}.{parts[1]}"].__members__)
        return (f"unknown member '{parts[2]}' of pl.{parts[0]}.{parts[1]} (known: {', '.join(known)})",
                f"use one of the members listed, e.g. pl.{parts[0]}.{parts[1]}.{known[0]}")
    if len(parts) == 2 and parts[0] in ENUMS:
        known = list(ENUMS[parts[0]].__members__)
        close = difflib.get_close_matches(parts[1], known, n=1)
        return (f"unknown member '{parts[1]}' of pl.{parts[0]} (known: {', '.join(known)})",
                f"did you mean pl.{parts[0]}.{close[0]}?" if close else f"use one of the members listed, e.g. "
                                                                        f"pl.{parts[0]}.{known[0]}")
    if len(parts) == 1:
        pool = [*DTYPES, *ENUMS, *UNIFIED, *BUILTINS, *TYPE_CTORS, *DECORATORS, *NAMESPACES]
        close = difflib.get_close_matches(parts[0], pool, n=1)
        if close and close[0] in DTYPES or parts[0][:2] in ("FP", "BF", "IN", "UI"):
            return (f"unknown dtype pl.{parts[0]} (known: {', '.join(DTYPES)})",
                    f"did you mean pl.{close[0]}?" if close else None)
        return f"'{path}' is not part of the kernel language", f"did you mean pl.{close[0]}?" if close else \
            "see the README for the ops and types of pl"
    return f"'{path}' is not part of the kernel language", "see the README for the ops and types of pl"


# ----------------------------------------------------------------------------- resolvers


class Resolver:
    """Resolves the first name of a chain. The dump parser knows only the language module
    (``pl``, or what the text imports it as) and the ``float`` its constants print with
    (``float("nan")``)."""

    def __init__(self, alias: str = "pl"):
        self.alias = alias

    def resolve(self, name: str):
        if name == self.alias:
            return Path(())
        if name == "float":
            return Pure("float")
        return None

    def attribute(self, base, name: str):
        """``base.name`` for a non-language base (a Python module of constants, say)."""
        return None


class ModuleResolver(Resolver):
    """Names of a user's module: its globals and the function's closure, looked at, not run.
    Each name and module attribute it is asked about is noted in ``reads`` (in first-read
    order), so that what a kernel was compiled from can be read again (``current``) and a
    rebound constant noticed (``pypto.lang.sources.Reads``)."""

    def __init__(self, namespace):
        self.namespace = namespace  # a mapping; pypto.lang.sources passes one that reads live values
        self.reads: dict[tuple, None] = {}

    def resolve(self, name: str):
        self.reads[("name", name)] = None
        if name not in self.namespace:
            if name in _PURE_BUILTINS:
                return Pure(name)
            if hasattr(builtins, name):
                return Unknown(name, f"the Python builtin '{name}'")
            return None
        return classify(name, self.namespace[name])

    def attribute(self, base, name: str):
        if isinstance(base, Value) and isinstance(base.value, types.ModuleType):
            mod = base.value
            self.reads[("attr", mod, name)] = None
            if not hasattr(mod, name):
                return None
            return classify(f"{mod.__name__}.{name}", getattr(mod, name))
        return None

    def current(self, read: tuple):
        """What a noted read gives now (``ABSENT`` for a name bound to nothing)."""
        if read[0] == "name":
            return self.namespace.get(read[1], ABSENT)
        return getattr(read[1], read[2], ABSENT)


ABSENT = object()  # a name bound to nothing: what a read found, or finds now


def classify(name: str, obj):
    for key, enum_cls in ENUMS.items():
        if obj is enum_cls:
            return Path((key,))
    path = getattr(obj, "__pypto_path__", None)
    if isinstance(path, tuple) and not isinstance(obj, type):
        return Path(path)
    if isinstance(obj, MemRefDeclaration):
        return Declared(name.rsplit(".", 1)[-1], obj)
    if getattr(obj, "__pypto_alias__", None):
        return Alias(name, obj.__pypto_alias__)
    if getattr(obj, "__pypto_kernel__", False):
        return Kernel(obj)
    pure = _PURE_BY_ID.get(id(obj))
    if pure is not None and PURE_FUNCTIONS[pure] is obj:
        return Pure(pure)
    if isinstance(obj, (numpy.bool_, numpy.integer, numpy.floating)):
        # A numpy scalar is the number it holds (its value is exact as a Python number).
        return Value(obj.item())
    if obj is None or _is_constant(obj) or isinstance(obj, enum.Enum) and _is_dsl_enum(obj):
        return Value(obj)  # (None: an optional argument the kernel leaves out, or tests with 'is None')
    if isinstance(obj, (types.ModuleType, DynVar)):
        return Value(obj)
    return Unknown(name, f"a {type(obj).__name__}")


def _is_constant(obj) -> bool:
    """A value the kernel can use as a compile-time constant: a number, a string, or a
    tuple/list of them (``SHAPE = (16, 128)``)."""
    if isinstance(obj, (bool, int, float, str)):
        return True
    return isinstance(obj, (tuple, list)) and all(_is_constant(x) for x in obj)


def _is_dsl_enum(obj) -> bool:
    return isinstance(obj, (DataType, MemorySpace, Level, Role, FunctionType, PadValue, AtomicType, SplitMode, NotifyOp,
                            WaitCmp, ReduceOp))
