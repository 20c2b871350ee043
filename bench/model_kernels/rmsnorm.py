"""RMSNorm: ``y = x / sqrt(mean(x^2) + eps) * gamma``, rows apart, in fp32, stored as bf16.

One task per band of ``norm_rows`` rows: a first pass over the row's chunks sums the
squares, a second scales each chunk and stores it — the hidden row (5120 wide) does not
fit Vec whole as fp32, so the kernel streams it twice, as the reference's users write it.
"""

from __future__ import annotations

import pypto.language as pl

from .shapes import Case

EPS = 1e-6


def build(case: Case):
    """(the inline helper the layer calls, an entry that runs it alone)."""
    tokens, hidden, rows, chunk = case.tokens, case.hidden, case.norm_rows, case.norm_chunk
    inv_hidden = 1.0 / hidden
    eps = EPS

    @pl.jit.inline
    def rmsnorm(x: pl.Tensor, gamma: pl.Tensor, y: pl.Out[pl.Tensor]):
        for r0 in pl.parallel(0, tokens, rows):
            with pl.at(level=pl.Level.CORE_GROUP, name_hint="rmsnorm"):
                squares = pl.full([rows, 1], dtype=pl.FP32, value=0.0)
                for kb in pl.range(hidden // chunk):
                    xc = pl.cast(x[r0:r0 + rows, kb * chunk:(kb + 1) * chunk], target_type=pl.FP32)
                    squares = pl.add(squares, pl.row_sum(pl.mul(xc, xc)))
                inv_rms = pl.rsqrt(pl.add(pl.mul(squares, inv_hidden), eps))
                for kb in pl.range(hidden // chunk):
                    xc = pl.cast(x[r0:r0 + rows, kb * chunk:(kb + 1) * chunk], target_type=pl.FP32)
                    normed = pl.col_expand_mul(pl.row_expand_mul(xc, inv_rms), gamma[:, kb * chunk:(kb + 1) * chunk])
                    y = pl.assemble(y, pl.cast(normed, target_type=pl.BF16), [r0, kb * chunk])
        return y

    @pl.jit
    def rmsnorm_piece(x: pl.Tensor, gamma: pl.Tensor, y: pl.Out[pl.Tensor]):
        y = rmsnorm(x, gamma, y)
        return y

    return rmsnorm, rmsnorm_piece
