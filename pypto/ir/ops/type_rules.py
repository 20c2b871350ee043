"""The type rules' shared words and checks: the located ``TypeCheckError`` an op's ``infer``
raises in the reference compiler's phrasing (``fail``), shapes as a message spells them,
the elementwise, valid-extent and constant checks the rules share — and ``infer_type``,
which checks a call's operands against its op's signature (kinds, memory spaces, the chip's
spaces) before the op's own rule gives its result type.
"""

from __future__ import annotations

from pypto.backend import MemorySpace, SoC, having
from pypto.errors import MemorySpaceError, TypeCheckError
from pypto.ir.nodes import Const, Var
from pypto.ir.ops.registry import Kind, OpArgs, OpDef, ParamSpec, lookup
from pypto.ir.types import TensorType, TileType, type_name


def fail(op: str, requirement: str, got: str, hint: str | None = None) -> TypeCheckError:
    """The reference compiler's phrasing: 'The operator X requires ..., but got ...'."""
    return TypeCheckError(f"The operator {op} requires {requirement}, but got {got}", hint=hint)


def fmt_shape(shape) -> str:
    """``[16, 128]``: ints as ints and IR expressions as the source would spell them."""
    def one(s):
        if isinstance(s, (Const, Var)) or type(s).__name__ in ("BinOp", "UnaryOp"):
            from pypto.ir.printer import expr

            return expr(s)
        return str(s)

    return "[" + ", ".join(one(s) for s in shape) + "]"


def same_shape_dtype(op: str, a, b) -> None:
    """Elementwise operands (tiles or tensors) agree in shape and dtype: no implicit
    broadcast, no implicit promotion."""
    if a.shape != b.shape:
        raise fail(op, "compatible shapes", f"{fmt_shape(a.shape)} and {fmt_shape(b.shape)}",
                   "broadcast with the row_expand_*/col_expand_* ops, or reshape first")
    if a.dtype is not b.dtype:
        raise fail(op, "identical lhs and rhs data types", f"{a.dtype.name} and {b.dtype.name}",
                   "dtypes never promote implicitly: convert one side with pl.cast(x, target_type=...)")


VALID_HINT = "give each valid extent from 0 (an empty region) up to the tile's extent on that axis"


def check_valid(op: str, valid, shape, requirement: str) -> None:
    """Each constant extent of a valid shape within [0, the shape's extent on its axis] —
    also where another axis's is computed as the kernel runs (it is checked then). 0 is an
    empty region, as the reference allows (a window clamped at a tensor's end, say); an op
    that needs an element refuses it itself (the reductions)."""
    for v, s in zip(valid, shape):
        if isinstance(v, Const) and isinstance(v.value, int) and not 0 <= v.value <= s:
            raise fail(op, requirement, fmt_shape(valid), VALID_HINT)


def static_ints(exprs) -> tuple[int, ...] | None:
    """The ints of a list of Exprs when all are constants, else None."""
    out = []
    for e in exprs:
        if isinstance(e, Const) and isinstance(e.value, int) and not isinstance(e.value, bool):
            out.append(e.value)
        else:
            return None
    return tuple(out)


def check_operand_spaces(op: OpDef, args: OpArgs) -> None:
    """Each TILE operand in a space its ParamSpec allows (unset spaces pass: inferred later)."""
    for p in op.params:
        if p.kind is not Kind.TILE or not p.spaces:
            continue
        t = args.types.get(p.name)
        if not isinstance(t, TileType) or t.space is None or t.space in p.spaces + p.staged:
            continue
        want = "/".join(s.name for s in p.spaces + p.staged)
        hint = _space_hint(op, p, t.space)
        raise MemorySpaceError(
            f"The operator {op.name} requires its '{p.name}' operand in {want}, "
            f"but got a tile in {t.space.name}",
            hint=hint,
        )


def _space_hint(op: OpDef, p: ParamSpec, got: MemorySpace) -> str:
    want = p.spaces[0]
    if want in (MemorySpace.Left, MemorySpace.Right) and MemorySpace.Mat in p.staged:
        return (f"load the operand into Mat (pl.load(..., target_memory=pl.Mem.Mat)): the compiler moves it to "
                f"{want.name}, a piece at a time where it does not fit")
    if want in (MemorySpace.Left, MemorySpace.Right):
        return (
            f"load the operand into Mat (pl.load(..., target_memory=pl.Mem.Mat)) and "
            f"pl.move(tile, target_memory=pl.Mem.{want.name}) before {op.short}"
        )
    if want is MemorySpace.Vec:
        return "vector ops read Vec tiles: load with target_memory=pl.Mem.Vec"
    return f"pl.move the tile to pl.Mem.{want.name} first"


def infer_type(op: OpDef, args: OpArgs, soc: SoC):
    """Check an op's operands and return its result type (raises TypeCheckError)."""
    for p in op.params:
        v = args.values.get(p.name)
        t = args.types.get(p.name)
        if v is None and p.optional:
            continue
        if p.kind is Kind.TILE and not isinstance(t, TileType):
            raise fail(op.name, f"'{p.name}' to be a Tile", _describe(v, t), _level_hint(op, t))
        if p.kind is Kind.TENSOR and not isinstance(t, TensorType):
            raise fail(op.name, f"'{p.name}' to be a Tensor", _describe(v, t), _level_hint(op, t))
        if p.kind is Kind.SCALAR and isinstance(t, (TileType, TensorType)):
            raise fail(op.name, f"'{p.name}' to be a scalar", _describe(v, t))
    check_operand_spaces(op, args)
    for p in op.params:
        space = args.values.get(p.name) if p.kind is Kind.SPACE else None
        if isinstance(space, MemorySpace) and space is not MemorySpace.DDR and space not in soc.spaces:
            others = having(lambda t: space in t.spaces, soc)
            raise MemorySpaceError(
                f"{op.name}: {soc.title} has no {space.name} memory"
                + (f" ({others[0]} has it)" if others else ""),
                hint=f"run on {others[1]}, or interpret it for that chip: RunConfig(platform='ref', backend_type="
                     f"BackendType.{others[0].split(' ')[0]})" if others else f"use one of {soc.title}'s spaces: "
                     + ", ".join(s.name for s in soc.spaces))
    return op.infer(args, soc)


def _describe(value, t) -> str:
    if t is not None:
        return type_name(t)
    if isinstance(value, Var):
        return f"'{value.name}'"
    if isinstance(value, Const):
        return repr(value.value)
    return type(value).__name__


def _level_hint(op: OpDef, t) -> str | None:
    if op.level == "tile" and isinstance(t, TensorType):
        if lookup(f"tensor.{op.short}") is not None:
            return f"load the tensor into a tile first (pl.load), or use the tensor-level pl.{op.short}"
        if op.short.startswith("batch_"):  # the tensor-level matmuls batch past rank 2
            return f"on tensors use pl.{op.short[6:]}: an operand of rank > 2 makes it page by page"
        return (f"pl.{op.short} works on tiles only (there is no tensor-level form): load the operands with "
                "pl.load first")
    if op.level == "tensor" and isinstance(t, TileType):
        if lookup(f"tile.{op.short}") is not None:
            return f"use the tile-level pl.tile.{op.short}"
        return f"pl.tensor.{op.short} works on tensors only"
    return None
