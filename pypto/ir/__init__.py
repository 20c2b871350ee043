"""The immutable IR: nodes, types, the op registry, and the printer (the parser of printed IR is the front end's: ``pypto.lang.parse``)."""

from pypto.ir.levels import PassDumpLevel, VerificationLevel
from pypto.ir.nodes import (
    Assign,
    Binding,
    BinOp,
    Call,
    Const,
    Eval,
    For,
    FuncCall,
    Function,
    If,
    IterArg,
    Param,
    Program,
    Return,
    Scope,
    UnaryOp,
    Var,
    Yield,
)
from pypto.ir.pass_manager import OptimizationStrategy
from pypto.ir.printer import print_program
from pypto.ir.types import (
    INDEX,
    DataType,
    ForKind,
    FunctionType,
    Level,
    MemRef,
    PadValue,
    ParamDirection,
    ScalarType,
    TensorType,
    TileType,
)
from pypto.backend import MemorySpace

__all__ = [
    "Assign", "BinOp", "Binding", "Call", "Const", "DataType", "Eval", "For", "ForKind", "FuncCall",
    "Function", "FunctionType", "INDEX", "OptimizationStrategy", "If", "IterArg", "Level", "MemRef", "MemorySpace", "PadValue",
    "Param", "ParamDirection", "PassDumpLevel", "Program", "Return", "ScalarType", "Scope", "TensorType", "TileType",
    "UnaryOp", "Var", "VerificationLevel", "Yield", "print_program",
]
