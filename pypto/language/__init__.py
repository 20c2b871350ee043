"""The PyPTO kernel language: ``import pypto.language as pl``.

Kernel bodies are parsed from source and never run; the names here are what that source
spells (``pl.load``, ``pl.Tile[...]``, ``pl.pipeline(n, stage=2)``, ...), plus the
decorators that turn a function or class into a kernel or a program.
"""

from pypto.ir.ops import UNIFIED as _UNIFIED
from pypto.ir.types import DataType as _DataType
from pypto.ir.types import AtomicType, FunctionType, Level, PadValue, ScopeMode, SplitMode, TensorLayout
from pypto.lang.dsl import DslName as _DslName
from pypto.lang.dsl import MemRefConstructor as _MemRefConstructor
from pypto.lang.dsl import OpNamespace as _OpNamespace
from pypto.lang.dsl import TileViewConstructor as _TileViewConstructor
from pypto.lang.dsl import TypeConstructor as _TypeConstructor
from pypto.lang.op_reference import stand_in as _stand_in
from pypto.lang.names import DynVar as _DynVar
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

Tensor = _TypeConstructor("Tensor")
Tile = _TypeConstructor("Tile")
Scalar = _TypeConstructor("Scalar")
Array = _TypeConstructor("Array")
Out = _TypeConstructor("Out")
InOut = _TypeConstructor("InOut")
MemRef = _MemRefConstructor("MemRef")
TileView = _TileViewConstructor("TileView")
TensorView = _TileViewConstructor("TensorView")

tile = _OpNamespace("tile")
tensor = _OpNamespace("tensor")
array = _OpNamespace("array")
system = _OpNamespace("system")

range = _DslName("range")  # noqa: A001  (the kernel language's own range)
pipeline = _DslName("pipeline")
parallel = _DslName("parallel")
unroll = _DslName("unroll")
submit = _DslName("submit")
scope = _DslName("scope")
manual_scope = _DslName("manual_scope")
no_dep = _DslName("no_dep")
at = _DslName("at")
spmd = _DslName("spmd")
spmd_submit = _DslName("spmd_submit")
split = _DslName("split")
cross_core_slot = _DslName("cross_core_slot")
yield_ = _DslName("yield_")
min = _DslName("min")  # noqa: A001
max = _DslName("max")  # noqa: A001
const = _DslName("const")



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
    "AUTO", "AtomicType", "FunctionType", "InOut", "Level", "Mem", "MemRef", "MemorySpace", "Out", "PadValue", "Scalar", "ScopeMode", "TASK_ID", "TensorLayout",
    "Tensor", "TensorView", "Tile", "TileView", "DynVar", "dynamic", "at", "const", "function", "jit", "loads", "loads_program", "max", "min",
    "parallel", "parse", "parse_program",
    "pipeline", "program", "range", "tensor", "tile", "array", "Array", "system", "unroll", "yield_", "scope", "manual_scope", "submit", "no_dep", "spmd", "spmd_submit", "split", "cross_core_slot", "SplitMode", *sorted(_UNIFIED),
]
