"""The cube's tile ops: Left x Right into Acc — fresh (``matmul``), onto an accumulator
(``matmul_acc``), from a bias row (``matmul_bias``), and their row-vector forms (``gemv``,
``gemv_acc``, ``gemv_bias``) — with the dtypes the cube takes and the accumulator's."""

from __future__ import annotations

from pypto.backend import MemorySpace as M
from pypto.backend import SoC
from pypto.ir.nodes import Const
from pypto.ir.ops.registry import Kind, OpArgs, argument, register, unify
from pypto.ir.ops.type_rules import fail, fmt_shape
from pypto.ir.ops.registry import ParamSpec as P
from pypto.ir.ops.tile import _require_2d, _require_dtype
from pypto.ir.types import DataType, ScalarType, TileType, type_name


CUBE_IN = (DataType.FP16, DataType.BF16, DataType.INT8, DataType.FP32)
# An operand may be given in Mat: AutoTileMatmulL0 feeds it to L0 in pieces that fit (or
# InferTileMemorySpace whole, when it fits).
STAGED = (M.Mat,)


def acc_dtype(dtype: DataType) -> DataType:
    return DataType.INT32 if dtype.is_int else DataType.FP32


# what the fixpipe narrows an FP32 accumulator to on its way out, rounding to nearest even
FIXPIPE_NARROW = (DataType.BF16, DataType.FP16)


def fixpipe_cast(call, source_dtype: DataType) -> bool:
    """Whether a ``tensor.cast`` of a value of ``source_dtype`` is one the fixpipe makes as
    it moves an accumulator out (FP32 to BF16/FP16 with ``mode="rint"``, its tie rule):
    of a matmul's result, it stays on the cube instead of crossing to the vector cores."""
    return (call.op == "tensor.cast" and source_dtype is DataType.FP32
            and argument(call, "target_type") in FIXPIPE_NARROW and argument(call, "mode") == "rint")


def _check_mm(op: str, lhs: TileType, rhs: TileType) -> None:
    if max(len(lhs.shape), len(rhs.shape)) > 2:
        raise fail(op, "2D lhs and rhs", f"{type_name(lhs)} and {type_name(rhs)}",
                   "for stacks of pages use pl.batch_matmul (pl.tile.batch_matmul_acc to accumulate)")
    _require_2d(op, lhs, "lhs")
    _require_2d(op, rhs, "rhs")
    # The MMAD contracts over the left operand's valid columns (TMATMUL takes K from them);
    # the right operand's rows past them are not read, and its rows up to them must be data.
    k_lhs = lhs.shape[1] if lhs.valid_shape is None else lhs.valid_shape[1]
    k_rhs = rhs.shape[0] if rhs.valid_shape is None else rhs.valid_shape[0]
    k_lhs = k_lhs.value if isinstance(k_lhs, Const) else k_lhs
    k_rhs = k_rhs.value if isinstance(k_rhs, Const) else k_rhs
    if isinstance(k_lhs, int) and isinstance(k_rhs, int) and k_rhs < k_lhs:
        raise fail(op, f"the rhs valid along the lhs's valid K ({k_lhs} rows)",
                   f"an rhs valid on {k_rhs} rows of K",
                   "give both operands the same valid K (valid_shape= on their loads)")
    if lhs.shape[1] != rhs.shape[0]:
        raise fail(op, "matching inner dimensions", f"lhs K={lhs.shape[1]} and rhs K={rhs.shape[0]}")
    if lhs.dtype is not rhs.dtype:
        raise fail(op, "identical lhs and rhs data types", f"{lhs.dtype.name} and {rhs.dtype.name}",
                   "cast one operand before moving it to L0")
    _require_dtype(op, lhs, CUBE_IN, "a cube input dtype")


def product_valid(lhs: TileType, rhs: TileType, batch=()) -> tuple | None:
    """The valid shape of a product: lhs's valid rows by rhs's valid columns (the rest of
    the accumulator is computed from padding, which a store must not write)."""
    m = None if lhs.valid_shape is None else lhs.valid_shape[-2]
    cols = None if rhs.valid_shape is None else rhs.valid_shape[-1]
    if (m is None or m == Const(lhs.shape[-2])) and (cols is None or cols == Const(rhs.shape[-1])):
        return None
    return (*(Const(b) for b in batch), m or Const(lhs.shape[-2]), cols or Const(rhs.shape[-1]))


def _infer_matmul(a: OpArgs, soc: SoC) -> TileType:
    lhs, rhs = a.tile("lhs"), a.tile("rhs")
    _check_mm("tile.matmul", lhs, rhs)
    return TileType(shape=(lhs.shape[0], rhs.shape[1]), dtype=acc_dtype(lhs.dtype), space=M.Acc,
                    valid_shape=product_valid(lhs, rhs))


register("tile.matmul", [P("lhs", Kind.TILE, spaces=(M.Left,), staged=STAGED), P("rhs", Kind.TILE, spaces=(M.Right,), staged=STAGED)],
         _infer_matmul, doc="Left x Right -> Acc, accumulating in FP32 (INT32 for int8)", mnemonic="MMAD")


def _infer_matmul_acc(a: OpArgs, soc: SoC) -> TileType:
    acc, lhs, rhs = a.tile("acc"), a.tile("lhs"), a.tile("rhs")
    _check_mm("tile.matmul_acc", lhs, rhs)
    if acc.shape != (lhs.shape[0], rhs.shape[1]):
        raise fail("tile.matmul_acc", f"an accumulator of shape {fmt_shape((lhs.shape[0], rhs.shape[1]))}",
                   fmt_shape(acc.shape))
    if acc.dtype is not acc_dtype(lhs.dtype):
        raise fail("tile.matmul_acc", f"accumulator dtype {acc_dtype(lhs.dtype).name}", acc.dtype.name)
    cond = a.types.get("init_cond")
    if a["init_cond"] is not None and cond is not None and not (
            isinstance(cond, ScalarType) and (cond.dtype.is_int or cond.dtype is DataType.BOOL)):
        raise fail("tile.matmul_acc", "an init_cond that is a bool (or an integer) scalar", type_name(cond),
                   "init_cond=(k0 == 0)")
    return TileType(shape=acc.shape, dtype=acc.dtype, space=M.Acc, valid_shape=acc.valid_shape)


# init_cond: where it holds (a split-K loop's first step, say) the MMAD overwrites the
# accumulator instead of adding to it (the instruction's init bit, set by the scalar unit)
register("tile.matmul_acc", [P("acc", Kind.TILE, spaces=(M.Acc,)), P("lhs", Kind.TILE, spaces=(M.Left,), staged=STAGED),
                             P("rhs", Kind.TILE, spaces=(M.Right,), staged=STAGED),
                             P("init_cond", Kind.SCALAR, default=None, optional=True)],
         _infer_matmul_acc, doc="acc + Left x Right -> Acc (Left x Right alone where init_cond holds)", in_place=True,
         mnemonic="MMAD")


def batch_shape(op: str, lhs: tuple, rhs: tuple) -> tuple:
    """The batch axes of a batched product, NumPy-style: right-aligned, each pair equal or
    one of them 1."""
    rank = max(len(lhs), len(rhs))
    padded = (1,) * (rank - len(lhs)) + tuple(lhs), (1,) * (rank - len(rhs)) + tuple(rhs)
    out = []
    for a, b in zip(*padded):
        if a != b and 1 not in (a, b):
            raise fail(op, "batch axes that broadcast (equal, or one of them 1)",
                       f"lhs batch {fmt_shape(lhs)} and rhs batch {fmt_shape(rhs)}",
                       "batch axes pair up from the right, as in torch.matmul")
        out.append(b if a == 1 else a)
    return tuple(out)


def _check_bmm(op: str, lhs: TileType, rhs: TileType) -> tuple:
    """The result's shape; each operand a stack of 2D pages, each pair a matmul."""
    for t, what in ((lhs, "lhs"), (rhs, "rhs")):
        if len(t.shape) < 2:
            raise fail(op, f"{what} of at least 2 dimensions", f"{len(t.shape)} dimension(s)")
        if t.valid_shape is not None and tuple(t.valid_shape[:-2]) != tuple(Const(s) for s in t.shape[:-2]):
            raise fail(op, f"fully valid batch axes of {what}", "a partial valid shape",
                       "load whole pages (valid_shape may cut M or N, as for pl.matmul)")

    def page(t: TileType) -> TileType:  # one page, as tile.matmul would see it
        valid = None if t.valid_shape is None else tuple(t.valid_shape[-2:])
        return TileType(shape=t.shape[-2:], dtype=t.dtype, space=t.space, valid_shape=valid)

    _check_mm(op, page(lhs), page(rhs))
    return (*batch_shape(op, lhs.shape[:-2], rhs.shape[:-2]), lhs.shape[-2], rhs.shape[-1])


def _infer_batch_matmul(a: OpArgs, soc: SoC) -> TileType:
    lhs, rhs = a.tile("lhs"), a.tile("rhs")
    shape = _check_bmm("tile.batch_matmul", lhs, rhs)
    return TileType(shape=shape, dtype=acc_dtype(lhs.dtype), space=M.Acc,
                    valid_shape=product_valid(lhs, rhs, shape[:-2]))


def _infer_batch_matmul_acc(a: OpArgs, soc: SoC) -> TileType:
    acc, lhs, rhs = a.tile("acc"), a.tile("lhs"), a.tile("rhs")
    shape = _check_bmm("tile.batch_matmul_acc", lhs, rhs)
    if acc.shape != shape:
        raise fail("tile.batch_matmul_acc", f"an accumulator of shape {fmt_shape(shape)}", fmt_shape(acc.shape))
    if acc.dtype is not acc_dtype(lhs.dtype):
        raise fail("tile.batch_matmul_acc", f"accumulator dtype {acc_dtype(lhs.dtype).name}", acc.dtype.name)
    return TileType(shape=shape, dtype=acc.dtype, space=M.Acc, valid_shape=acc.valid_shape)


# A stack of pages in each L0 buffer, one MMAD per page (a batch axis of 1 broadcasting).
register("tile.batch_matmul", [P("lhs", Kind.TILE, spaces=(M.Left,), staged=STAGED), P("rhs", Kind.TILE, spaces=(M.Right,), staged=STAGED)],
         _infer_batch_matmul, doc="Left [..., M, K] x Right [..., K, N] -> Acc [..., M, N], page by page, the "
         "batch axes broadcasting", mnemonic="MMAD")
register("tile.batch_matmul_acc", [P("acc", Kind.TILE, spaces=(M.Acc,)), P("lhs", Kind.TILE, spaces=(M.Left,), staged=STAGED),
                                   P("rhs", Kind.TILE, spaces=(M.Right,), staged=STAGED)],
         _infer_batch_matmul_acc, doc="acc [..., M, N] + Left [..., M, K] x Right [..., K, N], page by page",
         in_place=True, mnemonic="MMAD")


def _bias(op: str, bias: TileType, lhs: TileType, n: int) -> None:
    if bias.shape != (1, n) or bias.dtype is not acc_dtype(lhs.dtype):
        raise fail(op, f"a bias of shape [1, {n}] in the accumulator dtype {acc_dtype(lhs.dtype).name}",
                   type_name(bias), "load the bias as FP32 (INT32 for integer operands) and pl.move it to pl.Mem.Bias")


def _infer_matmul_bias(a: OpArgs, soc: SoC) -> TileType:
    lhs, rhs = a.tile("lhs"), a.tile("rhs")
    _check_mm("tile.matmul_bias", lhs, rhs)
    _bias("tile.matmul_bias", a.tile("bias"), lhs, rhs.shape[1])
    return TileType(shape=(lhs.shape[0], rhs.shape[1]), dtype=acc_dtype(lhs.dtype), space=M.Acc,
                    valid_shape=product_valid(lhs, rhs))


register("tile.matmul_bias", [P("lhs", Kind.TILE, spaces=(M.Left,), staged=STAGED), P("rhs", Kind.TILE, spaces=(M.Right,), staged=STAGED),
                              P("bias", Kind.TILE, spaces=(M.Bias,), staged=STAGED)],
         _infer_matmul_bias, doc="Left x Right + bias (a [1, N] row the accumulator starts from) -> Acc",
         mnemonic="MMAD")

_PHASES = ("unspecified", "partial", "final")




def _gemv(op: str, acc: bool, bias: bool):
    def infer(a: OpArgs, soc: SoC) -> TileType:
        lhs, rhs = a.tile("lhs"), a.tile("rhs")
        if len(lhs.shape) != 2 or lhs.shape[0] != 1:
            raise fail(op, "a row vector lhs [1, K]", type_name(lhs), "use pl.matmul for more rows")
        _check_mm(op, lhs, rhs)
        if a["acc_phase"] not in _PHASES:
            raise fail(op, f"acc_phase one of {', '.join(_PHASES)}", repr(a["acc_phase"]))
        # the columns past the rhs's valid ones are computed from padding: a store writes
        # only the valid ones (an accumulator keeps its own valid region, as matmul_acc's)
        out = TileType(shape=(1, rhs.shape[1]), dtype=acc_dtype(lhs.dtype), space=M.Acc,
                       valid_shape=a.tile("acc").valid_shape if acc else product_valid(lhs, rhs))
        if acc and (a.tile("acc").shape != out.shape or a.tile("acc").dtype is not out.dtype):
            raise fail(op, f"an accumulator {type_name(out)}", type_name(a.tile("acc")))
        if bias:
            _bias(op, a.tile("bias"), lhs, rhs.shape[1])
        return out

    params = ([P("acc", Kind.TILE, spaces=(M.Acc,))] if acc else []) + [
        P("lhs", Kind.TILE, spaces=(M.Left,), staged=STAGED), P("rhs", Kind.TILE, spaces=(M.Right,), staged=STAGED)] + (
        [P("bias", Kind.TILE, spaces=(M.Bias,), staged=STAGED)] if bias else []) + [P("acc_phase", Kind.STR, default="unspecified")]
    register(op, params, infer, doc=f"{'acc + ' if acc else ''}a row vector [1, K] x Right{' + bias' if bias else ''}"
             " -> Acc [1, N]", in_place=acc, mnemonic="MMAD")


for _op, _acc, _b in (("tile.gemv", False, False), ("tile.gemv_acc", True, False), ("tile.gemv_bias", False, True)):
    _gemv(_op, _acc, _b)
for _n in ("matmul_bias", "gemv", "gemv_acc", "gemv_bias", "batch_matmul", "batch_matmul_acc"):
    unify(_n, tile=f"tile.{_n}")
