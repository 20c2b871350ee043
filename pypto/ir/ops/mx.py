"""The MX (microscaling) cube ops of Ascend950: Left x Right into Acc with a shared E8M0 scale
per block of 32 along K for each operand — fresh (``matmul_mx``), onto an accumulator
(``matmul_mx_acc``), from a bias row (``matmul_mx_bias``). Their arithmetic is
``pypto.sim.ops.mx_math``; the scale tiles keep the packing the hardware's scale buffers read
(pl.MX_A_ZZ for the left, pl.MX_B_NN for the right).

The reference's rules: both data tiles FP8E4M3FN (pto-isa's A5 MX mmad takes that pair; E5M2
and packed FP4 are not emitted), scales FP8E8M0 [M, K/32] and [K/32, N] in LeftScale /
RightScale, M a multiple of 16, K of 64, N of 32; an accumulator FP32 [M, N] in Acc; a bias
FP32 [1, N] in Bias."""

from __future__ import annotations

from pypto.backend import MemorySpace as M
from pypto.backend import SoC
from pypto.ir.nodes import Const
from pypto.ir.ops.registry import Kind, OpArgs, register, unify
from pypto.ir.ops.type_rules import fail, fmt_shape
from pypto.ir.ops.registry import ParamSpec as P
from pypto.ir.types import DataType, TileType, type_name

MX_DATA = (DataType.FP8E4M3FN,)
MX_SCALE = DataType.FP8E8M0
GROUP = 32  # K elements per scale


def _check(op: str, a: OpArgs) -> tuple[int, int, int]:
    lhs, rhs = a.tile("lhs"), a.tile("rhs")
    ls, rs = a.tile("lhs_scale"), a.tile("rhs_scale")
    for t, what in ((lhs, "lhs"), (rhs, "rhs"), (ls, "lhs_scale"), (rs, "rhs_scale")):
        if len(t.shape) != 2:
            raise fail(op, f"a 2D {what}", type_name(t))
    for t, what in ((lhs, "lhs"), (rhs, "rhs")):
        if t.dtype not in MX_DATA:
            hint = ("the A5 MX mmad multiplies FP8E4M3FN pairs (pto-isa emits no other): quantize to FP8E4M3FN"
                    if t.dtype.value[2] == "m" else "MX data are FP8E4M3FN codes: load them as such")
            raise fail(op, f"an FP8E4M3FN {what}", t.dtype.name, hint)
        if t.valid_shape is not None and tuple(t.valid_shape) != tuple(Const(s) for s in t.shape):
            raise fail(op, f"a fully valid {what}", type_name(t), "load whole MX blocks")
    for t, what in ((ls, "lhs_scale"), (rs, "rhs_scale")):
        if t.dtype is not MX_SCALE:
            raise fail(op, f"an FP8E8M0 {what}", t.dtype.name, "load the scales as pl.FP8E8M0")
    m, k = lhs.shape
    k2, n = rhs.shape
    if k != k2:
        raise fail(op, "matching inner dimensions", f"lhs K={k} and rhs K={k2}")
    if m % 16 or k % 64 or n % 32:
        raise fail(op, "M a multiple of 16, K of 64 and N of 32 (the MX fractals)", f"M={m}, K={k}, N={n}",
                   "pad the operands in GM to those multiples")
    if ls.shape != (m, k // GROUP) or rs.shape != (k // GROUP, n):
        raise fail(op, f"scales of shapes {fmt_shape((m, k // GROUP))} and {fmt_shape((k // GROUP, n))} (one per "
                   f"{GROUP} elements of K)", f"{fmt_shape(ls.shape)} and {fmt_shape(rs.shape)}")
    return m, k, n


def _infer_mx(a: OpArgs, soc: SoC) -> TileType:
    m, _, n = _check("tile.matmul_mx", a)
    return TileType(shape=(m, n), dtype=DataType.FP32, space=M.Acc)


def _infer_mx_acc(a: OpArgs, soc: SoC) -> TileType:
    m, _, n = _check("tile.matmul_mx_acc", a)
    acc = a.tile("acc")
    if acc.shape != (m, n) or acc.dtype is not DataType.FP32:
        raise fail("tile.matmul_mx_acc", f"an FP32 accumulator of shape {fmt_shape((m, n))}", type_name(acc))
    return TileType(shape=acc.shape, dtype=acc.dtype, space=M.Acc, valid_shape=acc.valid_shape)


def _infer_mx_bias(a: OpArgs, soc: SoC) -> TileType:
    m, _, n = _check("tile.matmul_mx_bias", a)
    bias = a.tile("bias")
    if bias.shape != (1, n) or bias.dtype is not DataType.FP32:
        raise fail("tile.matmul_mx_bias", f"an FP32 bias of shape [1, {n}]", type_name(bias),
                   "load the bias as FP32 and pl.move it to pl.Mem.Bias")
    return TileType(shape=(m, n), dtype=DataType.FP32, space=M.Acc)


def _operands():
    return [P("lhs", Kind.TILE, spaces=(M.Left,)), P("lhs_scale", Kind.TILE, spaces=(M.LeftScale,)),
            P("rhs", Kind.TILE, spaces=(M.Right,)), P("rhs_scale", Kind.TILE, spaces=(M.RightScale,))]


register("tile.matmul_mx", _operands(), _infer_mx, mnemonic="MMAD_MX",
         doc="Left x Right with E8M0 block scales (LeftScale, RightScale) -> Acc FP32 (Ascend950)")
register("tile.matmul_mx_acc", [P("acc", Kind.TILE, spaces=(M.Acc,)), *_operands()], _infer_mx_acc, in_place=True,
         mnemonic="MMAD_MX", doc="acc + Left x Right with E8M0 block scales -> Acc (Ascend950)")
register("tile.matmul_mx_bias", [*_operands(), P("bias", Kind.TILE, spaces=(M.Bias,))], _infer_mx_bias,
         mnemonic="MMAD_MX", doc="Left x Right with E8M0 block scales + a [1, N] bias row -> Acc (Ascend950)")
for _n in ("matmul_mx", "matmul_mx_acc", "matmul_mx_bias"):
    unify(_n, tile=f"tile.{_n}")
