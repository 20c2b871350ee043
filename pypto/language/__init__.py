"""The PyPTO kernel language: ``import pypto.language as pl``.

Kernel bodies are parsed from source and never run; the names here are what that source
spells (``pl.load``, ``pl.Tile[...]``, ``pl.pipeline(n, stage=2)``, ...), plus the
decorators that turn a function or class into a kernel or a program.
"""

from pypto.ir.ops import UNIFIED as _UNIFIED
from pypto.ir.types import DataType as _DataType
from pypto.ir.types import AtomicType, FunctionType, Level, PadValue, Role, ScopeMode, SplitMode, TensorLayout
from pypto.lang.vocabulary.dsl import MemRefConstructor as _MemRefConstructor
from pypto.lang.vocabulary.dsl import OpNamespace as _OpNamespace
from pypto.lang.vocabulary.dsl import TileViewConstructor as _TileViewConstructor
from pypto.lang.vocabulary.dsl import TypeConstructor as _TypeConstructor
from pypto.lang.vocabulary.dsl import documented as _documented
from pypto.lang.vocabulary.op_reference import stand_in as _stand_in
from pypto.lang.vocabulary.names import DynVar as _DynVar
from pypto.lang.program import function, program
from pypto.lang.text import loads, loads_program, parse, parse_program
from pypto.lang import text as _text
import pypto.ir as _ir
from pypto.runtime.jit import jit
from pypto.backend import MemorySpace

# the IR's bytes are its text, which the front end reads back (installed here, as the
# runtime installs pypto.ir.compile)
_ir.serialize, _ir.deserialize = _text.serialize, _text.deserialize

# the front end knows this module by the mark, not by importing it: ``pl`` is the root
__pypto_path__ = ()

Mem = MemorySpace
AUTO = -1  # system.reserve_buffer(base=pl.AUTO): the planner places it
DynVar = _DynVar


def dynamic(name: str) -> DynVar:
    """An axis whose extent each call's tensors give: ``M = pl.dynamic("M")``, then
    ``pl.Tensor[[M, 128], pl.FP16]`` (the same object wherever the same dimension is meant)."""
    return _DynVar(name)

BOOL = _DataType.BOOL
INT8 = _DataType.INT8
INT16 = _DataType.INT16
INT32 = _DataType.INT32
INT64 = _DataType.INT64
UINT8 = _DataType.UINT8
UINT16 = _DataType.UINT16
UINT32 = _DataType.UINT32
FP16 = _DataType.FP16
BF16 = _DataType.BF16
FP32 = _DataType.FP32
FP8E4M3FN = _DataType.FP8E4M3FN
FP8E5M2 = _DataType.FP8E5M2
FP8E8M0 = _DataType.FP8E8M0
MX_A_ZZ = TensorLayout.MX_A_ZZ
MX_B_NN = TensorLayout.MX_B_NN
INDEX = _DataType.INDEX
TASK_ID = _DataType.TASK_ID

Tensor = _documented(_TypeConstructor, "Tensor", """A tensor in global memory (GM): ``pl.Tensor`` or
``pl.Tensor[[64, 128], pl.FP32]`` in a parameter's annotation.

A bare ``pl.Tensor`` takes its shape and dtype from each call's torch tensor (the kernel is
built once per shape and dtype); a written shape is checked at the call. Axes may be
``pl.dynamic("M")``. A third entry, ``pl.TensorView(...)``, gives strides, a valid shape
or a layout. A kernel parameter is read-only (``In``) unless it is ``pl.Out`` or ``pl.InOut``.""")
Tile = _documented(_TypeConstructor, "Tile", """A tile in on-chip memory: ``pl.Tile[[16, 128], pl.FP32, pl.Mem.Vec]``.

What ``pl.load`` and the tile ops give; as an annotation it may name its memory space
(``pl.Mem.Vec``, ``Mat``, ``Left``, ``Right``, ``Acc``), a ``pl.MemRef(...)`` to place it,
and a ``pl.TileView(valid_shape=..., pad=...)``. Unannotated tiles are placed by the
compiler (InferTileMemorySpace, InitMemRef, AllocateMemoryAddr).""")
Scalar = _documented(_TypeConstructor, "Scalar", """A scalar parameter or value: ``n: pl.Scalar[pl.INT32]``.

Scalars live in the scalar unit's registers: loop bounds, offsets, ``pl.tensor.read``
results. Index arithmetic on them takes ``+ - * // %`` and ``pl.min`` / ``pl.max``.""")
Array = _documented(_TypeConstructor, "Array", """A small array of scalars in an orchestration:
``tids = pl.array.create(n, pl.TASK_ID)``, updated as ``tids[i] = tid`` (functionally:
carried through loops like any value).""")
Out = _documented(_TypeConstructor, "Out", """A parameter the kernel writes: ``out: pl.Out[pl.Tensor]``.

A caller's tensor that the kernel stores into (``pl.store``, ``pl.assemble``,
``out[...] = x``). It must not share memory with any other tensor argument. In an
orchestration a callee's ``pl.Out`` argument is ``OutputExisting``, or ``InOut`` when an
earlier write or a sequential loop orders it (R-prior, R-seq, R-enclosing).""")
InOut = _documented(_TypeConstructor, "InOut", """A parameter the kernel reads and writes:
``acc: pl.InOut[pl.Tensor]`` (an in-place update: pass the tensor once). Its task waits for
the producer of every byte it reads, then becomes the producer.""")
MemRef = _documented(_MemRefConstructor, "MemRef", """A named place in on-chip memory for a tile:
``pl.MemRef("ub")``, ``pl.MemRef("ub", address, size)``, or ``pl.MemRef("ub", slots=2)[i % 2]``.

Written in a ``pl.Tile[...]`` annotation to place tiles yourself: tiles that name one
MemRef share its bytes; ``slots=N`` makes N rotating buffers, one picked per use by an
integer expression (the explicit form of ``pl.pipeline``). Name, address, size and slots are
compile-time constants. The compiler's own MemRefs print as ``reusable=True`` in dumps.""")
TileView = _documented(_TileViewConstructor, "TileView", """A tile's view in its annotation:
``pl.TileView(valid_shape=[n, 128], pad=pl.PadValue.zero)`` — the rows and columns that hold
data, and what the rest reads as.""")
TensorView = _documented(_TileViewConstructor, "TensorView", """A tensor's view in its annotation:
``pl.TensorView(stride=[64, 1], layout=pl.TensorLayout.ND, valid_shape=..., pad=...)``.""")

tile = _OpNamespace("tile")
tensor = _OpNamespace("tensor")
array = _OpNamespace("array")
system = _OpNamespace("system")

# the control words: functions documented for help(), which only the front end reads
from pypto.lang.vocabulary.control_words import (at, cluster, cond, const, cross_core_slot, dim, dump_tag, manual_scope, max, min,
                                      no_dep, parallel, pipeline, range, scope, spmd, spmd_submit, split, split_aiv,
                                      submit, unroll, while_, yield_)



def __getattr__(name: str):
    """``pl.add`` and the other unified op names: each stand-in (its signature and docstring
    read off the registry) is built on first use, not at import."""
    if name in _UNIFIED:
        value = globals()[name] = _stand_in((name,))
        return value
    raise AttributeError(f"module 'pypto.language' has no attribute {name!r}")


def __dir__() -> list:
    return sorted(set(globals()) | set(_UNIFIED))

__all__ = [
    "BF16", "BOOL", "FP16", "FP32", "FP8E4M3FN", "FP8E5M2", "FP8E8M0", "MX_A_ZZ", "MX_B_NN", "INDEX", "INT16", "INT32", "INT64", "INT8", "UINT8", "UINT16", "UINT32",
    "AUTO", "AtomicType", "FunctionType", "InOut", "Level", "Mem", "MemRef", "MemorySpace", "Out", "PadValue", "Role", "Scalar", "ScopeMode", "TASK_ID", "TensorLayout",
    "Tensor", "TensorView", "Tile", "TileView", "DynVar", "dynamic", "at", "const", "function", "jit", "loads", "loads_program", "max", "min",
    "parallel", "parse", "parse_program", "dim",
    "pipeline", "program", "range", "tensor", "tile", "array", "Array", "system", "unroll", "while_", "cond", "yield_", "scope", "manual_scope", "submit", "no_dep", "spmd", "spmd_submit", "split", "cross_core_slot", "SplitMode", "cluster", "split_aiv", "dump_tag", *sorted(_UNIFIED),
]
