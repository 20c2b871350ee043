"""The seed's "b_trans matmul case": the same [128 x 1024] @ [1024 x 256] fp16 matmul,
with the weight stored two ways, both double-buffered over K with ``pl.pipeline``.

- ``matmul_b_trans``: the weight stored [N, K]; each 64-wide k-block loads transposed as
  256 rows of 64 fp16 = 128 B, against the 512 B L2 line (PH001 flags it).
- ``matmul_row_major``: the weight stored [K, N]; each k-block is 64 whole 512 B rows, one
  contiguous burst.

The seed reports the 128 B-row form measured 16-25 % slower on hardware; the simulator's
cost model (``Costs.short_row_bytes``) is calibrated so ``penalty()`` lands in that range.
"""

from __future__ import annotations

import torch

import pypto.language as pl
from pypto.runtime import RunConfig

M, K, N, KB = 128, 1024, 256, 64


@pl.jit
def matmul_b_trans(a: pl.Tensor, w: pl.Tensor, out: pl.Out[pl.Tensor]):
    """a [M, K] @ w.T, w stored [N, K]: the weight's k-blocks load transposed, in 128 B rows."""
    with pl.at(level=pl.Level.CORE_GROUP):
        x0 = pl.move(pl.load(a, [0, 0], [M, KB], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
        y0 = pl.move(pl.load(w, [0, 0], [N, KB], target_memory=pl.Mem.Mat, transpose=True), target_memory=pl.Mem.Right)
        acc = pl.matmul(x0, y0)
        for k in pl.pipeline(1, a.shape[1] // KB, stage=2):  # K, from the input
            x = pl.move(pl.load(a, [0, k * KB], [M, KB], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
            y = pl.move(pl.load(w, [0, k * KB], [N, KB], target_memory=pl.Mem.Mat, transpose=True),
                        target_memory=pl.Mem.Right)
            acc = pl.matmul_acc(acc, x, y)
        pl.store(acc, [0, 0], out)
    return out


@pl.jit
def matmul_row_major(a: pl.Tensor, w: pl.Tensor, out: pl.Out[pl.Tensor]):
    """a [M, K] @ w, w stored [K, N]: each weight k-block is whole 512 B rows."""
    with pl.at(level=pl.Level.CORE_GROUP):
        x0 = pl.move(pl.load(a, [0, 0], [M, KB], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
        y0 = pl.move(pl.load(w, [0, 0], [KB, N], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
        acc = pl.matmul(x0, y0)
        for k in pl.pipeline(1, a.shape[1] // KB, stage=2):  # K, from the input
            x = pl.move(pl.load(a, [0, k * KB], [M, KB], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
            y = pl.move(pl.load(w, [k * KB, 0], [KB, N], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
            acc = pl.matmul_acc(acc, x, y)
        pl.store(acc, [0, 0], out)
    return out


def inputs(seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    a = torch.randn(M, K, generator=g).half()
    w = torch.randn(K, N, generator=g).half()
    return a, w


def run(config: RunConfig | None = None):
    """(report for the 128 B-row form, report for the row-major form, both outputs equal)."""
    config = config or RunConfig()
    a, w = inputs()
    out_t, out_r = torch.zeros(M, N), torch.zeros(M, N)
    wt = w.T.contiguous()
    short = matmul_b_trans.compile(a, wt, out_t, config=config).run(a, wt, out_t)
    long = matmul_row_major.compile(a, w, out_r, config=config).run(a, w, out_r)
    return short, long, torch.equal(out_t, out_r)


def penalty(config: RunConfig | None = None) -> float:
    """How many more cycles the 128 B-row weight load costs, as a fraction."""
    short, long, _ = run(config)
    return short.kernel_cycles / long.kernel_cycles - 1
