"""The MLP: ``down(silu(x @ w_gate) * (x @ w_up)) + resid``.

Gate and up share a task per [rows, n_block] block of the intermediate (one pass over the
activations' K chunks feeds both accumulators; SiLU and the product on the vector cores,
stored as bf16), then the down projection adds the residual (``projection.project_residual``).
"""

from __future__ import annotations

import pypto.language as pl

from . import projection
from .shapes import Case


def build(case: Case):
    """(the inline helper, an entry that runs it alone)."""
    tokens, rows, nb, kb, hidden = case.tokens, case.gemm_rows, case.n_block, case.k_block, case.hidden
    intermediate = case.intermediate
    _, _, project_residual = projection.build(case)

    @pl.jit.inline
    def gate_up_silu(x: pl.Tensor, w_gate: pl.Tensor, w_up: pl.Tensor, h: pl.Out[pl.Tensor]):
        for m0 in pl.parallel(0, tokens, rows):
            for n0 in pl.parallel(0, intermediate, nb):
                with pl.at(level=pl.Level.CORE_GROUP, name_hint="gate_up_silu"):
                    gate = pl.create_tensor([rows, nb], dtype=pl.FP32)
                    up = pl.create_tensor([rows, nb], dtype=pl.FP32)
                    for k in pl.range(hidden // kb):
                        a = x[m0:m0 + rows, k * kb:(k + 1) * kb]
                        if k == 0:
                            gate = pl.matmul(a, w_gate[k * kb:(k + 1) * kb, n0:n0 + nb], out_dtype=pl.FP32)
                            up = pl.matmul(a, w_up[k * kb:(k + 1) * kb, n0:n0 + nb], out_dtype=pl.FP32)
                        else:
                            gate = pl.matmul_acc(gate, a, w_gate[k * kb:(k + 1) * kb, n0:n0 + nb])
                            up = pl.matmul_acc(up, a, w_up[k * kb:(k + 1) * kb, n0:n0 + nb])
                    sigmoid = pl.recip(pl.add(pl.exp(pl.neg(gate)), 1.0))
                    h = pl.assemble(h, pl.cast(pl.mul(pl.mul(gate, sigmoid), up), target_type=pl.BF16), [m0, n0])
        return h

    @pl.jit.inline
    def mlp(x: pl.Tensor, w_gate: pl.Tensor, w_up: pl.Tensor, w_down: pl.Tensor, resid: pl.Tensor,
            out: pl.Out[pl.Tensor]):
        h = pl.create_tensor([tokens, intermediate], dtype=pl.BF16)
        h = gate_up_silu(x, w_gate, w_up, h)
        out = project_residual(h, w_down, resid, out)
        return out

    @pl.jit
    def mlp_piece(x: pl.Tensor, w_gate: pl.Tensor, w_up: pl.Tensor, w_down: pl.Tensor, resid: pl.Tensor,
                  out: pl.Out[pl.Tensor]):
        out = mlp(x, w_gate, w_up, w_down, resid, out)
        return out

    return mlp, mlp_piece
