"""The layer's GEMMs: activations [tokens, K] (bf16) times weights [K, N] (bf16), accumulated
in fp32, each task one [rows, n_block] block of the output with a K loop of k_block steps
(the accumulator stays in the cube's Acc across the loop), and the epilogue the layer needs
on the vector cores in the same task: RoPE (Q and K), a cast (V), a residual add (the
output and down projections).
"""

from __future__ import annotations

import pypto.language as pl

from .shapes import Case


def build(case: Case):
    """The inline helpers: ``project``, ``project_rope``, ``project_residual``."""
    tokens, rows, nb, kb, d = case.tokens, case.gemm_rows, case.n_block, case.k_block, case.head_dim
    half = d // 2
    heads_per_block = nb // d

    @pl.jit.inline
    def project(x: pl.Tensor, w: pl.Tensor, y: pl.Out[pl.Tensor]):
        """y = bf16(x @ w)."""
        for m0 in pl.parallel(0, tokens, rows):
            for n0 in pl.parallel(0, pl.tensor.dim(w, 1), nb):
                with pl.at(level=pl.Level.CORE_GROUP, name_hint="proj"):
                    acc = pl.create_tensor([rows, nb], dtype=pl.FP32)
                    for k in pl.range(pl.tensor.dim(w, 0) // kb):
                        a = x[m0:m0 + rows, k * kb:(k + 1) * kb]
                        b = w[k * kb:(k + 1) * kb, n0:n0 + nb]
                        if k == 0:
                            acc = pl.matmul(a, b, out_dtype=pl.FP32)
                        else:
                            acc = pl.matmul_acc(acc, a, b)
                    y = pl.assemble(y, pl.cast(acc, target_type=pl.BF16), [m0, n0])
        return y

    @pl.jit.inline
    def project_rope(x: pl.Tensor, w: pl.Tensor, cos: pl.Tensor, sin: pl.Tensor, y: pl.Out[pl.Tensor]):
        """y = bf16(rope(x @ w)), each head of the block rotated by its token's angles
        (``cos``, ``sin``: [tokens, head_dim / 2], the rotate-half form)."""
        for m0 in pl.parallel(0, tokens, rows):
            for n0 in pl.parallel(0, pl.tensor.dim(w, 1), nb):
                with pl.at(level=pl.Level.CORE_GROUP, name_hint="proj_rope"):
                    acc = pl.create_tensor([rows, nb], dtype=pl.FP32)
                    for k in pl.range(pl.tensor.dim(w, 0) // kb):
                        a = x[m0:m0 + rows, k * kb:(k + 1) * kb]
                        b = w[k * kb:(k + 1) * kb, n0:n0 + nb]
                        if k == 0:
                            acc = pl.matmul(a, b, out_dtype=pl.FP32)
                        else:
                            acc = pl.matmul_acc(acc, a, b)
                    c = cos[m0:m0 + rows, :]
                    s = sin[m0:m0 + rows, :]
                    for h in pl.range(heads_per_block):
                        lo = acc[:, h * d:h * d + half]
                        hi = acc[:, h * d + half:(h + 1) * d]
                        rot_lo = pl.sub(pl.mul(lo, c), pl.mul(hi, s))
                        rot_hi = pl.add(pl.mul(hi, c), pl.mul(lo, s))
                        y = pl.assemble(y, pl.cast(rot_lo, target_type=pl.BF16), [m0, n0 + h * d])
                        y = pl.assemble(y, pl.cast(rot_hi, target_type=pl.BF16), [m0, n0 + h * d + half])
        return y

    @pl.jit.inline
    def project_residual(x: pl.Tensor, w: pl.Tensor, resid: pl.Tensor, y: pl.Out[pl.Tensor]):
        """y = fp32(resid) + x @ w: the residual stream, kept in fp32."""
        for m0 in pl.parallel(0, tokens, rows):
            for n0 in pl.parallel(0, pl.tensor.dim(w, 1), nb):
                with pl.at(level=pl.Level.CORE_GROUP, name_hint="proj_residual"):
                    acc = pl.create_tensor([rows, nb], dtype=pl.FP32)
                    for k in pl.range(pl.tensor.dim(w, 0) // kb):
                        a = x[m0:m0 + rows, k * kb:(k + 1) * kb]
                        b = w[k * kb:(k + 1) * kb, n0:n0 + nb]
                        if k == 0:
                            acc = pl.matmul(a, b, out_dtype=pl.FP32)
                        else:
                            acc = pl.matmul_acc(acc, a, b)
                    r = pl.cast(resid[m0:m0 + rows, n0:n0 + nb], target_type=pl.FP32)
                    y = pl.assemble(y, pl.add(acc, r), [m0, n0])
        return y

    return project, project_rope, project_residual


def build_pieces(case: Case):
    """The two pieces made of these alone: (Q/K/V with RoPE, the output projection)."""
    project, project_rope, project_residual = build(case)

    @pl.jit
    def qkv_rope_piece(x: pl.Tensor, wq: pl.Tensor, wk: pl.Tensor, wv: pl.Tensor, cos: pl.Tensor, sin: pl.Tensor,
                       q: pl.Out[pl.Tensor], k: pl.Out[pl.Tensor], v: pl.Out[pl.Tensor]):
        q = project_rope(x, wq, cos, sin, q)
        k = project_rope(x, wk, cos, sin, k)
        v = project(x, wv, v)
        return q, k, v

    @pl.jit
    def o_proj_piece(attn: pl.Tensor, wo: pl.Tensor, x: pl.Tensor, resid: pl.Out[pl.Tensor]):
        resid = project_residual(attn, wo, x, resid)
        return resid

    return qkv_rope_piece, o_proj_piece
