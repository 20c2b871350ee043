"""The reference's ``pypto.pypto_core.ir`` names its users write, mapped onto ``pypto.ir``
(the same objects), with ``CoreType`` — the kind of core, ``CoreType.CUBE`` /
``CoreType.VECTOR`` — which is ``pypto.backend.CoreKind`` (AIC / AIV, the same members)."""

from pypto.backend import CoreKind as CoreType
from pypto.backend import MemorySpace
from pypto.ir import DataType, FunctionType, Level, MemRef, PadValue, ParamDirection, Program, ScalarType, TensorType, TileType

__all__ = ["CoreType", "DataType", "FunctionType", "Level", "MemRef", "MemorySpace", "PadValue", "ParamDirection", "Program",
           "ScalarType", "TensorType", "TileType"]
