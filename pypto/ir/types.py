"""Types of the IR: element dtypes, scalars, GM tensors, on-chip tiles and their MemRefs.

    DataType  = BOOL | INT8 | ... | FP32 | INDEX | TASK_ID (enum; printed pl.FP32)
    Type      = ScalarType(dtype) | ArrayType(size, dtype)
              | TensorType(shape: int*, dtype)          a GM (DDR) tensor
              | TileType(shape: int*, dtype, space?, memref?, valid_shape: Expr*?)
    MemRef    = (name, slots, index: Expr?, addr: int?, size: int?, pipeline: bool, reusable: bool)

A tile's ``space`` is None only between ConvertTensorToTileOps and InferTileMemorySpace.
A MemRef is *declared* (name/slots only, from ``pl.MemRef("ub", slots=2)[i % 2]``),
*sized* by InitMemRef (``size`` = bytes of the whole allocation) and *placed* by
AllocateMemoryAddr (``addr`` = byte address of slot 0 in its space). Who made a MemRef
is in its flags, never in its name: ``pipeline`` (a pipeline's stage slots) and
``reusable`` (InitMemRef's buffer for one value); a declaration has neither.
"""

from __future__ import annotations

import enum
import math

import attrs

from pypto.backend import MemorySpace


class DataType(enum.Enum):
    # value: (short name used in messages, bits, kind) where kind is b/i/u/f
    BOOL = ("bool", 8, "b")
    INT8 = ("int8", 8, "i")
    INT16 = ("int16", 16, "i")
    INT32 = ("int32", 32, "i")
    INT64 = ("int64", 64, "i")
    UINT8 = ("uint8", 8, "u")
    UINT16 = ("uint16", 16, "u")
    UINT32 = ("uint32", 32, "u")
    FP16 = ("fp16", 16, "f")
    BF16 = ("bf16", 16, "f")
    FP32 = ("fp32", 32, "f")
    # the MX (microscaling) formats of Ascend950's cube, kind "m": elements of OCP MX blocks
    # (FP8 E4M3 with no inf, FP8 E5M2) and their shared E8M0 scales; loaded, moved and
    # multiplied (pl.matmul_mx), never computed on by the vector unit
    FP8E4M3FN = ("fp8e4m3fn", 8, "m")
    FP8E5M2 = ("fp8e5m2", 8, "m")
    FP8E8M0 = ("fp8e8m0", 8, "m")
    INDEX = ("index", 64, "i")
    TASK_ID = ("task_id", 64, "t")  # a submitted task's id (orchestration scalars only)

    @property
    def short(self) -> str:
        return self.value[0]

    @property
    def bits(self) -> int:
        return self.value[1]

    @property
    def nbytes(self) -> int:
        return (self.bits + 7) // 8

    def get_byte(self) -> int:
        """The reference's spelling of ``nbytes`` (``pl.FP32.get_byte()`` sizes a window)."""
        return self.nbytes

    @property
    def int_range(self) -> tuple[int, int] | None:
        """(least, greatest) value of an integer dtype; None for the others."""
        if not self.is_int:
            return None
        if self.value[2] == "u":
            return 0, 2 ** self.bits - 1
        return -(2 ** (self.bits - 1)), 2 ** (self.bits - 1) - 1

    @property
    def is_float(self) -> bool:
        return self.value[2] == "f"

    @property
    def is_int(self) -> bool:
        return self.value[2] in "iu"

    @property
    def is_bool(self) -> bool:
        return self.value[2] == "b"

    def __repr__(self) -> str:
        return f"pl.{self.name}"

    def __str__(self) -> str:
        return self.short


class ParamDirection(enum.Enum):
    In = "In"
    Out = "Out"
    InOut = "InOut"


class ArgDirection(enum.Enum):
    """How one call-site argument of a task takes part in dependency tracking (the
    runtime's words): read (``Input``), written where it is (``OutputExisting``: the task
    becomes its producer without waiting for the last one), read and written (``InOut``),
    left out of tracking (``NoDep``), a scalar; ``Output`` is a buffer the runtime
    allocates for the task (never derived from a parameter)."""

    Input = "Input"
    Output = "Output"
    InOut = "InOut"
    OutputExisting = "OutputExisting"
    NoDep = "NoDep"
    Scalar = "Scalar"


class TensorLayout(enum.Enum):
    """How a GM tensor's elements lie: ND (row-major, the only one here), DN (column-major),
    NZ (fractal blocks); MX_A_ZZ / MX_B_NN tag MX scale tensors."""

    ND = "ND"
    DN = "DN"
    NZ = "NZ"
    # the GM packings of MX scales (Ascend950): A's [M, K/32] in 16-row bands of column
    # pairs, B's [K/32, N] in 16-column bands of row pairs (the hardware's LeftScale /
    # RightScale arrangement; pypto.sim.ops.mx_math.unpack_a / unpack_b)
    MX_A_ZZ = "MX_A_ZZ"
    MX_B_NN = "MX_B_NN"


class SplitMode(enum.Enum):
    """How a mixed (cube + vector) scope's vector work is shared by its cluster's two
    vector cores: not halved (``NONE``), by rows (``UP_DOWN``) or by columns (``LEFT_RIGHT``)."""

    NONE = "NONE"
    UP_DOWN = "UP_DOWN"
    LEFT_RIGHT = "LEFT_RIGHT"

    def __repr__(self) -> str:
        return f"pl.SplitMode.{self.name}"


class AtomicType(enum.IntEnum):
    """How a store combines with what GM holds: overwrite it (``None_``), or add to it
    atomically (``Add``: split-K's partial products, summed by many cores in any order)."""

    None_ = 0
    Add = 1

    def __repr__(self) -> str:
        return f"pl.AtomicType.{self.name}"


ATOMIC_ADD_DTYPES = (DataType.FP32, DataType.BF16, DataType.FP16, DataType.INT32, DataType.INT16, DataType.INT8)


class ScopeMode(enum.Enum):
    """A runtime scope's: the runtime derives its tasks' dependencies (AUTO), or only
    ``deps=`` order them (MANUAL)."""

    AUTO = "AUTO"
    MANUAL = "MANUAL"


class FunctionType(enum.Enum):
    """What a function is: an ``Orchestration`` (host code submitting tasks), an ``InCore``
    kernel (split by the compiler into ``AIC`` / ``AIV`` programs, or a ``Group`` of them),
    an ``Inline`` helper, or ``Opaque`` (not yet classified). ``@pl.function(type=...)``."""

    Opaque = "Opaque"
    Orchestration = "Orchestration"
    InCore = "InCore"
    AIC = "AIC"
    AIV = "AIV"
    Group = "Group"
    Inline = "Inline"

    def __repr__(self) -> str:
        return f"pl.FunctionType.{self.name}"

    @property
    def is_kernel(self) -> bool:
        """Code for the AI cores (code generation's input), not the host's orchestration."""
        return self in (FunctionType.InCore, FunctionType.AIC, FunctionType.AIV)

    @property
    def may_be_incore(self) -> bool:
        """Its body may be code for a core: a kernel's, or an Opaque function's (InCore
        unless it opens pl.at scopes). (An inline function is its callers' code.)"""
        return self.is_kernel or self is FunctionType.Opaque


class NotifyOp(enum.IntEnum):
    """How ``pld.system.notify`` deposits its value in the peer's signal cell."""

    AtomicAdd = 0
    Set = 1

    def __repr__(self) -> str:
        return f"pl.distributed.NotifyOp.{self.name}"


class WaitCmp(enum.IntEnum):
    """The predicate ``pld.system.wait`` blocks on: the cell equal to, or at least, the value."""

    Eq = 0
    Ge = 1

    def __repr__(self) -> str:
        return f"pl.distributed.WaitCmp.{self.name}"


class ReduceOp(enum.IntEnum):
    """How a collective combines the ranks' contributions."""

    Sum = 0
    Max = 1
    Min = 2
    Prod = 3

    def __repr__(self) -> str:
        return f"pl.distributed.ReduceOp.{self.name}"


class Level(enum.Enum):
    """Where code runs, from one core up: ``AIV`` (a vector core), ``AIC`` (a cube core),
    ``CORE_GROUP`` (one cluster: 1 AIC + 2 AIV — what ``pl.at(level=...)`` takes here),
    ``CHIP_DIE``, ``CHIP`` and ``HOST`` (the orchestrator)."""

    AIV = "AIV"
    AIC = "AIC"
    CORE_GROUP = "CORE_GROUP"
    CHIP_DIE = "CHIP_DIE"
    CHIP = "CHIP"
    HOST = "HOST"

    def __repr__(self) -> str:
        return f"pl.Level.{self.name}"


class Role(enum.Enum):
    """What a function at ``pl.Level.HOST`` does: ``Orchestrator`` (it dispatches per-device
    programs to the ranks) or ``SubWorker`` (a host task an orchestrator hands work to)."""

    Orchestrator = "Orchestrator"
    SubWorker = "SubWorker"

    def __repr__(self) -> str:
        return f"pl.Role.{self.name}"


class ForKind(enum.Enum):
    Sequential = "range"
    Parallel = "parallel"
    Pipeline = "pipeline"
    # a region of an InCore body both vector cores of the cluster run, the loop variable
    # each one's lane (0, 1): ``for aiv_id in pl.split_aiv(2, mode=...)``
    SplitAiv = "split_aiv"


class MaskPattern(enum.IntEnum):
    """Which columns ``tile.gather_mask`` takes (``scatter_mask`` fills): bits read right to
    left, a set bit a taken column of each group of 2 or 4; P1111 takes them all."""

    P0101 = 1
    P1010 = 2
    P0001 = 3
    P0010 = 4
    P0100 = 5
    P1000 = 6
    P1111 = 7

    @property
    def stride(self) -> int:
        return 1 if self is MaskPattern.P1111 else 2 if self <= MaskPattern.P1010 else 4

    @property
    def first(self) -> int:
        """The column of each group taken."""
        return 0 if self is MaskPattern.P1111 else (self - 1) if self <= MaskPattern.P1010 else self - 3


class PadValue(enum.Enum):
    """What a tile's elements outside its valid shape read as: ``null`` (unspecified),
    ``zero``, ``max`` or ``min`` of the dtype (``pl.TileView(pad=...)``, ``pl.fillpad(t, pad_value=...)``, ``pl.slice(..., pad_value=...)``)."""

    null = "null"
    zero = "zero"
    max = "max"
    min = "min"

    def __repr__(self) -> str:
        return f"pl.PadValue.{self.name}"


def _tuple_of_ints(value) -> tuple[int, ...]:
    return tuple(int(v) for v in value)


def _extents(value) -> tuple:
    """A tensor's extents: ints, or — for a tensor an orchestration creates or views at a
    size it reads at run time — the IR expression of that size (a constant one is its int)."""
    out = []
    for v in value:
        if isinstance(v, int) or not hasattr(v, "__attrs_attrs__"):
            out.append(int(v))
        elif type(v).__name__ == "Const":
            out.append(int(v.value))
        else:
            out.append(v)
    return tuple(out)


def dim_text(d) -> str:
    """One extent as the source spells it (``128``, ``head_dim``, ``n * 16``)."""
    if isinstance(d, int):
        return str(d)
    from pypto.ir.printer import expr

    return expr(d)


def _optional_tuple(value):
    return None if value is None else tuple(value)


@attrs.frozen
class ScalarType:
    dtype: DataType


INDEX = ScalarType(DataType.INDEX)
TASK_ID = ScalarType(DataType.TASK_ID)


@attrs.frozen
class ArrayType:
    """``pl.array.create(size, dtype)``: an orchestration's small array of scalars (TaskIds,
    integers), updated functionally (``arr[i] = v`` makes a new one)."""

    size: int
    dtype: DataType


@attrs.frozen
class TensorType:
    # An extent is an int, except in an orchestration, where a tensor it creates or views may
    # be sized by a scalar it computes as it runs (``pl.create_tensor([16, n], ...)`` with
    # ``n = pl.tensor.read(config, [3])``): that extent is the expression, known when the
    # statement runs; a kernel's parameters are static, and a call checks its tensor's.
    shape: tuple = attrs.field(converter=_extents)
    dtype: DataType
    # ``pld.DistributedTensor``: a view of a window buffer every rank allocates alike, so a
    # peer's copy is addressed by the same offsets (the cross-rank ops require one)
    window: bool = attrs.field(default=False, kw_only=True)
    # ``pl.MX_A_ZZ`` / ``pl.MX_B_NN``: an MX scale tensor, its bytes in the scale buffers'
    # packing (not row-major in its logical [M, K/32] / [K/32, N]): a window of it is a
    # logical window only where the packing keeps whole bands (tile.load checks it), and no
    # view is (tensor.slice / reshape / transpose / reinterpret_view refuse it)
    mx_layout: TensorLayout | None = attrs.field(default=None, kw_only=True)

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * self.dtype.nbytes

    @property
    def runtime_sized(self) -> bool:
        """Whether an extent is known only when the orchestration runs."""
        return not all(isinstance(d, int) for d in self.shape)


@attrs.frozen(kw_only=True)
class MemRef:
    name: str
    slots: int = 1
    index: object = None  # Expr selecting the slot; None when slots == 1
    addr: int | None = None
    size: int | None = None
    # Made by LowerPipelineLoops / LowerPipelineToSlots for one pipeline's stage buffers:
    # the memory planning may lower the slot count to the depth that fits (PH-MR-001),
    # then clears the flag.
    pipeline: bool = False
    # Made by InitMemRef for one value (or one carried chain): the planner may merge it
    # with others and rename it. MemoryReuse clears the flag once the buffers are final;
    # a declared MemRef never has it, so it keeps its name and its tiles.
    reusable: bool = False

    @property
    def slot_size(self) -> int | None:
        return None if self.size is None else self.size // self.slots


@attrs.frozen(kw_only=True)
class TileType:
    shape: tuple[int, ...] = attrs.field(converter=_tuple_of_ints)
    dtype: DataType
    space: MemorySpace | None = None
    memref: MemRef | None = None
    # None means "the whole tile is valid"; otherwise one Expr per dim. A valid shape
    # that statically equals the shape is stored as None, so equal types compare equal.
    valid_shape: tuple | None = attrs.field(default=None, converter=_optional_tuple)

    def __attrs_post_init__(self):
        if self.valid_shape is not None:
            from pypto.ir.nodes import Const

            if all(isinstance(v, Const) and v.value == s for v, s in zip(self.valid_shape, self.shape)):
                object.__setattr__(self, "valid_shape", None)

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * self.dtype.nbytes


Type = ScalarType | TensorType | TileType


def binds(declared: DataType, given: DataType) -> bool:
    """Whether a tensor argument of ``given`` dtype binds a parameter declared ``declared``:
    the same dtype, or int64 for ``pl.INDEX`` (the 64-bit integer torch has for an index)."""
    return given is declared or declared is DataType.INDEX and given is DataType.INT64


def conforms(given, declared) -> bool:
    """A tensor an orchestration sized at run time may be passed for a parameter of the same
    dtype and rank whose written extents its constant ones match; the others are checked
    when the call runs."""
    return isinstance(given, TensorType) and isinstance(declared, TensorType) and given.runtime_sized \
        and given.dtype is declared.dtype and len(given.shape) == len(declared.shape) \
        and all(not isinstance(g, int) or g == d for g, d in zip(given.shape, declared.shape))


def sizing_key(t):
    """What a call's argument type says of a kernel instance: a runtime-sized tensor's
    expressions drop out (every such tensor of a rank, dtype and constant extents is passed
    to the same kernel)."""
    if isinstance(t, TensorType) and t.runtime_sized:
        return ("runtime-sized", tuple(d if isinstance(d, int) else None for d in t.shape), t.dtype)
    return t


def joins(value, result) -> bool:
    """A yielded value fits the loop or branch result it becomes: the same type, or — before
    InitMemRef places every tile — the same but for a MemRef only one side names."""
    if value == result:
        return True
    if isinstance(value, TileType) and isinstance(result, TileType) and (value.memref is None) != (
            result.memref is None):
        return attrs.evolve(value, memref=None) == attrs.evolve(result, memref=None)
    return False


def join(a, b):
    """The result type two branch values make: their type, or the unplaced one when only a
    MemRef tells them apart; None when they do not join."""
    if a == b:
        return a
    if joins(a, b):
        return a if a.memref is None else b
    return None


def placed_name(t) -> str:
    """``type_name`` with the tile's declared placement: ``Tile[16x128 fp32 Vec] in
    pl.MemRef("w", slots=2)[i % 2]``."""
    m = getattr(t, "memref", None)
    if m is None:
        return f"{type_name(t)} (not placed)" if isinstance(t, TileType) else type_name(t)
    from pypto.ir.printer import expr

    slots = f", slots={m.slots}" if m.slots != 1 else ""
    index = f"[{expr(m.index)}]" if m.index is not None else ""
    return f'{type_name(t)} in pl.MemRef("{m.name}"{slots}){index}'


def type_name(t) -> str:
    """A short human description for messages: ``Tile[64x128 fp32 Vec]``."""
    if isinstance(t, ArrayType):
        return f"Array[{t.size}, {t.dtype}]"
    if isinstance(t, ScalarType):
        return f"Scalar[{t.dtype}]"
    if isinstance(t, TensorType):
        kind = "DistributedTensor" if t.window else "Tensor"
        return f"{kind}[{'x'.join(map(dim_text, t.shape))} {t.dtype}]"
    if isinstance(t, TileType):
        space = f" {t.space.name}" if t.space is not None else ""
        return f"Tile[{'x'.join(map(str, t.shape))} {t.dtype}{space}]"
    return type(t).__name__
