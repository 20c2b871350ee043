"""The op registry: each op's signature, legal memory spaces and type inference, declared
once and read by the front end, the IR parser and printer, the verifier and the passes.

An op's numeric semantics live in ``pypto.sim.ops.semantics`` under the same name (a test
checks that every registered op has them).
"""

from __future__ import annotations

import keyword

import enum
from collections.abc import Callable

import attrs
from pyrsistent import pmap

from pypto.ir.types import ScalarType, TileType
from pypto.backend import MemorySpace, SoC


class Kind(enum.Enum):
    """What an argument slot holds, and so how it is parsed, checked and printed."""

    TILE = "tile"  # a Var of TileType
    TENSOR = "tensor"  # a Var of TensorType
    ARRAY = "array"  # a Var of ArrayType
    LAYOUT = "layout"  # a TensorLayout
    SCALAR = "scalar"  # an Expr (constant, scalar var, index arithmetic)
    INDEX_LIST = "index_list"  # a list of Exprs
    SHAPE = "shape"  # a list of static ints
    DTYPE = "dtype"
    SPACE = "space"
    PAD = "pad"
    ATOMIC = "atomic"  # an AtomicType
    NOTIFY = "notify_op"  # a NotifyOp
    WAIT_CMP = "wait_cmp"  # a WaitCmp
    REDUCE = "reduce_op"  # a ReduceOp
    BOOL = "bool"
    INT = "int"
    STR = "str"


# Operands the vector unit reads while it writes the result, whatever the op: a scratch tile
# it uses as workspace, a broadcast vector it rereads for every row or column. An in-place op
# never writes its result over one of these (the reference's forbid_output_alias).
UNALIASED = frozenset({"tmp", "tmp_tile", "scratch", "row_vec", "col_vec"})

# Kinds whose value is a runtime operand (a Var or an Expr); the rest are compile-time.
OPERAND_KINDS = frozenset({Kind.TILE, Kind.TENSOR, Kind.SCALAR, Kind.INDEX_LIST})


class _Required:
    def __repr__(self) -> str:
        return "REQUIRED"


REQUIRED = _Required()


@attrs.frozen
class ParamSpec:
    name: str
    kind: Kind
    default: object = REQUIRED
    optional: bool = False  # may be None (an absent tile operand, say)
    spaces: tuple = ()  # legal memory spaces of a TILE operand; () = any
    # spaces a program may also give the operand, which a pass moves it out of before the
    # op runs (the cube's operands in Mat: AutoTileMatmulL0 / InferTileMemorySpace)
    staged: tuple = ()
    show: bool = False  # print even when equal to the default (reads better in dumps)
    # A SCALAR that indexes or counts elements (a valid extent): it must be an integer.
    # INDEX_LIST elements always are.
    integer: bool = False
    # an INDEX_LIST that may be written as one bare index (an element of a 1-D tensor)
    bare: bool = False

    @property
    def required(self) -> bool:
        return self.default is REQUIRED


@attrs.frozen
class OpArgs:
    """The arguments of one call, by parameter name, with the types of Var operands."""

    op: str
    values: dict
    types: dict

    def __getitem__(self, name):
        return self.values[name]

    def type(self, name):
        return self.types.get(name)

    def tile(self, name) -> TileType:
        return self.types[name]


WINDOW_KINDS = ("elementwise", "row_reduce", "col_reduce", "row_broadcast", "col_broadcast", "source", "slice",
                "transpose", "whole", "cube", "rows", "row")


@attrs.frozen
class Windows:
    """How a tensor op reads its operands, window by window, so that its code can be
    computed block by block (``pypto.passes.tile_conversion.regions.operand_regions``):

    - ``elementwise``: a window of the result reads the same window of each operand;
    - ``row_reduce`` / ``col_reduce``: whole rows (columns) of the operand; two partial
      results merge with ``combine``;
    - ``row_broadcast`` / ``col_broadcast``: the window of the first operand and the
      matching part of the vector operand ``vector``;
    - ``source``: no operand (a creation); ``slice``: the window moved by the offset;
      ``transpose``: the window with the two axes swapped; ``whole``: all of the operand,
      whatever the window (a reshape); ``cube``: a matmul's rows of lhs, columns of rhs;
    - ``rows``: whole rows of the result read the same rows of each operand, all of their
      columns (a sort); ``row``: the same, one row at a time (a gather by column index,
      whose tile form indexes a tile's elements).

    ``tile`` is the tile op that computes a window (``tile.<name>`` when not given; its
    operands by position); ``lower(args, low)`` builds that call instead, from the arguments
    by name (the operands' tiles and the rest) and ``low`` (``tile_emitter.Lowering``: fresh
    Vec workspace tiles, the tiles' types, calls bound ahead); ``shifts``: a sequence's start
    parameter, which a window's offset along the last axis moves (backwards when the op's
    ``descending`` is set) — or a tuple of them, one per trailing axis (a generator's counters);
    ``along``: (operand, axis parameter) — that operand's window is whole along the named axis.
    """

    kind: str = attrs.field(validator=attrs.validators.in_(WINDOW_KINDS))
    vector: str | None = None
    combine: str | None = None
    tile: str | None = None
    shifts: str | tuple | None = None
    lower: Callable | None = None
    # (operand, axis parameter): that operand is read whole along the axis the parameter names
    # (a gather along a leading axis reads its input's whole column of rows there)
    along: tuple | None = None


@attrs.frozen
class OpDef:
    name: str  # "tile.add"
    params: tuple[ParamSpec, ...]
    infer: Callable[[OpArgs, SoC], object]
    doc: str = ""
    # An op whose result is its first operand updated in place on GM (store, assemble).
    writes_operand: str | None = None
    # Tensor ops: which window of each operand a window of the result reads.
    windows: Windows | None = None
    # What the planners, the code generator and the cost model need to know of a tile op,
    # declared with it (no name lists elsewhere):
    in_place: bool = False  # may write its result over an operand that dies with it (same layout,
    #                         element by element: the vector unit runs dst == src; the cube accumulates in L0C)
    mnemonic: str | None = None  # its vector instruction, where not "V" + its name
    unit: str = "simple"  # its cost class on the vector unit: Costs.vector_cycles[unit] per 256 B repeat
    reduces: bool = False  # folds its operand into a vector: it works over its operand, not its result
    # Where it may appear: "core" (inside pl.at / InCore functions), "orchestration" (the
    # entry's host code: arrays, element reads), "both" (creation and the views of tensors).
    plane: str = "core"
    # does something to the cores besides computing its result (a cross-core pipe's flags)
    effect: bool = False
    # the operand a call written as a statement updates: its name is rebound to the result
    # (the reference writes ``pl.write(tile, [i, j], v)`` for the tile with that element set)
    updates: str | None = None
    # its result is a scalar whatever its operands (an element read, a core register): in an
    # expression it is index arithmetic, ``pl.tile.get_block_idx() * 16``
    scalar: bool = False
    # another cost class where an argument is given (a tile) or true: another algorithm runs
    # (tile.rsqrt with its scratch tile)
    units: pmap = attrs.field(default=pmap(), converter=lambda m: pmap(m or {}))
    # the language module it is spelled under, past ``pl.``: "distributed." for the
    # ``pld`` ops (``pl.distributed.system.notify`` is ``pld.system.notify``)
    module: str = ""

    def cost_class(self, args) -> str:
        """Its cost class for a call with ``args`` (by parameter name)."""
        for name, unit in self.units.items():
            if args.get(name) not in (None, False):
                return unit
        return self.unit

    @property
    def has_effect(self) -> bool:
        """Whether a call does something besides computing its result (writes GM, moves a pipe)."""
        return self.writes_operand is not None or self.effect

    @property
    def level(self) -> str:
        return self.name.split(".", 1)[0]

    @property
    def short(self) -> str:
        return self.name.split(".", 1)[1]

    def param(self, name: str) -> ParamSpec:
        for p in self.params:
            if p.name == name:
                return p
        raise KeyError(name)

    def index(self, name: str) -> int:
        """Where parameter ``name`` is among the call's arguments."""
        for k, p in enumerate(self.params):
            if p.name == name:
                return k
        raise KeyError(f"{self.name} has no parameter {name!r}")


_OPS: dict[str, OpDef] = {}


def register(name: str, params, infer, *, doc: str = "", writes_operand: str | None = None,
             windows: Windows | None = None, in_place: bool = False, mnemonic: str | None = None,
             unit: str = "simple", reduces: bool = False, plane: str = "core", effect: bool = False,
             updates: str | None = None, scalar: bool = False, units=None, module: str = "") -> OpDef:
    if name in _OPS:
        raise ValueError(f"op {name} registered twice")
    if plane not in ("core", "orchestration", "both"):
        raise ValueError(f"op {name}: plane {plane!r}")
    op = OpDef(name, tuple(params), infer, doc, writes_operand, windows, in_place, mnemonic, unit, reduces, plane,
               effect, updates, scalar, units, module)
    _OPS[name] = op
    return op


def lookup(name: str) -> OpDef | None:
    return _OPS.get(name)


# The reference's other names of ops: the same op reached from another namespace (it files
# the cross-core pipe under ``system``, the block registers under ``tensor`` too) or under
# another spelling. Source written either way builds the one op; dumps print its own name.
ALIASES: dict[str, str] = {
    "tile.create_tile": "tile.create", "tensor.create_tensor": "tensor.create",
    "tile.arange": "tile.ci", "tensor.arange": "tensor.ci",
    "array.get_element": "array.get", "array.update_element": "array.set",
    **{f"system.{n}": f"tile.{n}" for n in ("tpush_to_aic", "tpush_to_aiv", "tpop_from_aic", "tpop_from_aiv")},
    **{f"tensor.{n}": f"tile.{n}" for n in ("get_block_idx", "get_block_num", "get_subblock_idx")},
}


def resolve(name: str) -> OpDef | None:
    """The op a source name ``namespace.part`` stands for: its own, or the one it aliases."""
    head, _, part = name.partition(".")
    name = f"{head}.{unspelled(part)}"
    return _OPS.get(name) or _OPS.get(ALIASES.get(name, ""))


def op_call(_op: str, **args):
    """A Call of a registered op from its arguments by parameter name; the others at their
    defaults (a required one left out is an error of the caller)."""
    from pypto.ir.nodes import Call

    name, op = _op, _OPS[_op]
    unknown = set(args) - {p.name for p in op.params}
    missing = [p.name for p in op.params if p.required and p.name not in args]
    if unknown or missing:
        raise TypeError(f"{name}: unknown {sorted(unknown)}, missing {missing}")
    return Call(name, tuple(args.get(p.name, p.default) for p in op.params))


def with_article(word: str) -> str:
    """The word with its indefinite article: "an Acc", "a Mat"."""
    return ("an " if word[:1] in "AEIOU" else "a ") + word


def argument(call, name: str):
    """A call's argument for the op's parameter ``name`` — by name, never by position (a
    call holding fewer arguments than its op has parameters has the rest at their defaults)."""
    op = _OPS[call.op]
    k = op.index(name)
    return call.args[k] if k < len(call.args) else op.params[k].default


def with_args(call, **changes):
    """``call`` with the arguments of the named parameters replaced."""
    op = _OPS[call.op]
    args = list(call.args)
    for name, value in changes.items():
        args[op.index(name)] = value
    return attrs.evolve(call, args=tuple(args))


def spelled(name: str) -> str:
    """How kernel source writes an op: ``tile.and`` is ``tile.and_`` (Python keeps ``and``)."""
    return ".".join(part + "_" if keyword.iskeyword(part) else part for part in name.split("."))


def unspelled(part: str) -> str:
    """The op-name part a source name stands for: ``and_`` -> ``and``."""
    return part[:-1] if part.endswith("_") and keyword.iskeyword(part[:-1]) else part


def scalar_valued(name: str) -> bool:
    """Whether a source op name (``tile.get_block_idx``, an alias, a unified ``read``) always
    gives a scalar."""
    op = resolve(name)
    if op is not None:
        return op.scalar
    forms = UNIFIED.get(name)
    names = [f for f in attrs.astuple(forms) if f] if forms is not None else []
    return bool(names) and all(_OPS[f].scalar for f in names)


def all_ops() -> tuple[OpDef, ...]:
    return tuple(_OPS[k] for k in sorted(_OPS))


# --------------------------------------------------------------------------- unified names


@attrs.frozen
class Unified:
    """How ``pl.<name>`` picks a level-specific op from its first operand's type."""

    tile: str | None = None
    tile_scalar: str | None = None  # rhs is a scalar: add -> adds
    tensor: str | None = None
    tensor_scalar: str | None = None
    only: str | None = None  # one op whatever the operands (pl.tfree_to_aic is system.tfree_to_aic)


UNIFIED: dict[str, Unified] = {}

# An op written with one of these keywords is another op: the reference's one Python name
# for the index and the mask forms (``pl.tensor.gather(x, mask_pattern=...)``).
KEYWORD_FORMS: dict[str, tuple[tuple[str, str], ...]] = {}


# The reference's level-specific names take a scalar rhs too: ``pl.tensor.maximum(x, 2.5)`` is
# ``tensor.maximums``, ``pl.tile.mul(t, 3.0)`` is ``tile.muls`` (op -> its scalar-rhs form).
SCALAR_FORMS: dict[str, str] = {}

# An op given a Tensor where it takes a tile operand is another op: the reference's one name for
# both (``pl.tile.mgather(mem, idx_tensor, target_memory=pl.Mem.Mat)`` gathers into L1).
# op -> (the parameter, the op a Tensor there makes).
TENSOR_OPERAND_FORMS: dict[str, tuple[str, str]] = {}

# Keywords ``pl.<name>`` takes for one form that the op it picked has no parameter for: op ->
# keyword -> (its default, accepted and dropped; the error any other value gets; its hint).
# ``pl.div(tile, 2.0, high_precision=True)`` is refused, not quietly the default division.
FOREIGN_KEYWORDS: dict[str, dict[str, tuple]] = {}


def foreign_keyword(op: str, keyword: str, default, message: str, hint: str) -> None:
    FOREIGN_KEYWORDS.setdefault(op, {})[keyword] = (default, message, hint)


def keyword_form(op: OpDef, keywords) -> OpDef:
    """The op a call of ``op`` with ``keywords`` builds."""
    for key, other in KEYWORD_FORMS.get(op.name, ()):
        if key in keywords:
            return _OPS[other]
    return op


def unify(name: str, **forms: str) -> None:
    UNIFIED[name] = Unified(**forms)
    for plain, scalar in (("tile", "tile_scalar"), ("tensor", "tensor_scalar")):
        if forms.get(plain) and forms.get(scalar):
            SCALAR_FORMS[forms[plain]] = forms[scalar]


def scalar_type_of(t) -> bool:
    return isinstance(t, ScalarType)


SPACES = pmap({s.name: s for s in MemorySpace})
