"""The whole layer as one program: the pieces' inline helpers called from one orchestration,
their intermediates tensors it creates, so the runtime orders every task by what it reads.

    x -> rmsnorm -> Q, K, V (+ RoPE) -> attention -> output projection + x -> resid
      -> rmsnorm -> gate/up + SiLU -> down projection + resid -> out (fp32)
"""

from __future__ import annotations

import pypto.language as pl

from . import attention, mlp, projection, rmsnorm
from .shapes import Case


def build(case: Case):
    """The layer's entry, its parameters those of ``pieces.layer_args``."""
    tokens, hidden, q_width, kv_width = case.tokens, case.hidden, case.q_width, case.kv_width
    norm, _ = rmsnorm.build(case)
    project, project_rope, project_residual = projection.build(case)
    ffn, _ = mlp.build(case)
    if case.mode == "decode":
        paged_attention, _ = attention.build_decode(case)

        @pl.jit
        def decode_layer(x: pl.Tensor, gamma_attn: pl.Tensor, wq: pl.Tensor, wk: pl.Tensor, wv: pl.Tensor,
                         cos: pl.Tensor, sin: pl.Tensor, slot: pl.Tensor, block_table: pl.Tensor,
                         k_cache: pl.InOut[pl.Tensor], v_cache: pl.InOut[pl.Tensor], wo: pl.Tensor,
                         gamma_mlp: pl.Tensor, w_gate: pl.Tensor, w_up: pl.Tensor, w_down: pl.Tensor,
                         out: pl.Out[pl.Tensor]):
            xn = pl.create_tensor([tokens, hidden], dtype=pl.BF16)
            xn = norm(x, gamma_attn, xn)
            q = pl.create_tensor([tokens, q_width], dtype=pl.BF16)
            k = pl.create_tensor([tokens, kv_width], dtype=pl.BF16)
            v = pl.create_tensor([tokens, kv_width], dtype=pl.BF16)
            q = project_rope(xn, wq, cos, sin, q)
            k = project_rope(xn, wk, cos, sin, k)
            v = project(xn, wv, v)
            attn = pl.create_tensor([tokens, q_width], dtype=pl.BF16)
            attn = paged_attention(q, k, v, slot, block_table, k_cache, v_cache, attn)
            resid = pl.create_tensor([tokens, hidden], dtype=pl.FP32)
            resid = project_residual(attn, wo, x, resid)
            hn = pl.create_tensor([tokens, hidden], dtype=pl.BF16)
            hn = norm(resid, gamma_mlp, hn)
            out = ffn(hn, w_gate, w_up, w_down, resid, out)
            return out

        return decode_layer

    flash_attention, _ = attention.build_prefill(case)

    @pl.jit
    def prefill_layer(x: pl.Tensor, gamma_attn: pl.Tensor, wq: pl.Tensor, wk: pl.Tensor, wv: pl.Tensor,
                      cos: pl.Tensor, sin: pl.Tensor, mask: pl.Tensor, wo: pl.Tensor, gamma_mlp: pl.Tensor,
                      w_gate: pl.Tensor, w_up: pl.Tensor, w_down: pl.Tensor, out: pl.Out[pl.Tensor]):
        xn = pl.create_tensor([tokens, hidden], dtype=pl.BF16)
        xn = norm(x, gamma_attn, xn)
        q = pl.create_tensor([tokens, q_width], dtype=pl.BF16)
        k = pl.create_tensor([tokens, kv_width], dtype=pl.BF16)
        v = pl.create_tensor([tokens, kv_width], dtype=pl.BF16)
        q = project_rope(xn, wq, cos, sin, q)
        k = project_rope(xn, wk, cos, sin, k)
        v = project(xn, wv, v)
        attn = pl.create_tensor([tokens, q_width], dtype=pl.BF16)
        attn = flash_attention(q, k, v, mask, attn)
        resid = pl.create_tensor([tokens, hidden], dtype=pl.FP32)
        resid = project_residual(attn, wo, x, resid)
        hn = pl.create_tensor([tokens, hidden], dtype=pl.BF16)
        hn = norm(resid, gamma_mlp, hn)
        out = ffn(hn, w_gate, w_up, w_down, resid, out)
        return out

    return prefill_layer
