"""Attention, flash style: each task keeps a running max ``m``, denominator ``l`` and output
``o`` in fp32 while it walks the keys a block at a time — ``s = q k^T * scale`` on the cube,
the online softmax on the vector cores, ``o += p v`` on the cube again — and divides once
at the end.

Decode (``paged_attention``): the batch's new K/V rows are written into the paged cache
(``slot``: each token's cache row), then one task per (sequence, KV head) attends the
``group`` query heads that share the KV head over the sequence's pages, read through its
block table. Every sequence holds ``context`` tokens (its pages full).

Prefill (``flash_attention``): one task per (query head, query block), causal: block ``i``
reads key blocks ``0..i``, the last one (the diagonal) masked by ``mask`` (0 on and below
it, -1e30 above).
"""

from __future__ import annotations

import math

import pypto.language as pl

from .shapes import Case

NEG_INF = -1e30


def build_decode(case: Case):
    """(the inline helper, an entry that runs it alone)."""
    batch, kv_heads, group, d, page = case.tokens, case.kv_heads, case.group, case.head_dim, case.block_size
    pages = case.pages_per_seq
    scale = 1.0 / math.sqrt(d)
    neg_inf = NEG_INF

    @pl.jit.inline
    def paged_attention(q: pl.Tensor, k_new: pl.Tensor, v_new: pl.Tensor, slot: pl.Tensor,
                        block_table: pl.Tensor, k_cache: pl.InOut[pl.Tensor], v_cache: pl.InOut[pl.Tensor],
                        out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="kv_cache_write"):
            for b in pl.range(batch):
                row = pl.read(slot, [b])
                k_cache = pl.assemble(k_cache, k_new[b:b + 1, :], [row, 0])
                v_cache = pl.assemble(v_cache, v_new[b:b + 1, :], [row, 0])
        for b in pl.parallel(batch):
            for h in pl.parallel(kv_heads):
                with pl.at(level=pl.Level.CORE_GROUP, name_hint="paged_attention"):
                    qg = pl.reshape(q[b:b + 1, h * group * d:(h + 1) * group * d], [group, d])
                    m = pl.full([group, 1], dtype=pl.FP32, value=neg_inf)
                    l = pl.full([group, 1], dtype=pl.FP32, value=0.0)
                    o = pl.full([group, d], dtype=pl.FP32, value=0.0)
                    for j in pl.range(pages):
                        row = pl.read(block_table, [b * pages + j]) * page
                        s = pl.mul(pl.matmul(qg, k_cache[row:row + page, h * d:(h + 1) * d], b_trans=True,
                                             out_dtype=pl.FP32), scale)
                        m_new = pl.maximum(m, pl.row_max(s))
                        p = pl.exp(pl.row_expand_sub(s, m_new))
                        alpha = pl.exp(pl.sub(m, m_new))
                        l = pl.add(pl.mul(l, alpha), pl.row_sum(p))
                        pv = pl.matmul(pl.cast(p, target_type=pl.BF16), v_cache[row:row + page, h * d:(h + 1) * d],
                                       out_dtype=pl.FP32)
                        o = pl.add(pl.row_expand_mul(o, alpha), pv)
                        m = m_new
                    o = pl.reshape(pl.row_expand_div(o, l), [1, group * d])
                    out = pl.assemble(out, pl.cast(o, target_type=pl.BF16), [b, h * group * d])
        return out

    @pl.jit
    def paged_attention_piece(q: pl.Tensor, k_new: pl.Tensor, v_new: pl.Tensor, slot: pl.Tensor,
                              block_table: pl.Tensor, k_cache: pl.InOut[pl.Tensor], v_cache: pl.InOut[pl.Tensor],
                              out: pl.Out[pl.Tensor]):
        out = paged_attention(q, k_new, v_new, slot, block_table, k_cache, v_cache, out)
        return out

    return paged_attention, paged_attention_piece


def build_prefill(case: Case):
    """(the inline helper, an entry that runs it alone)."""
    heads, group, d, blk = case.heads, case.group, case.head_dim, case.block_size
    blocks = case.tokens // blk
    scale = 1.0 / math.sqrt(d)
    neg_inf = NEG_INF

    @pl.jit.inline
    def flash_attention(q: pl.Tensor, k: pl.Tensor, v: pl.Tensor, mask: pl.Tensor, out: pl.Out[pl.Tensor]):
        for hq in pl.parallel(heads):
            for i in pl.parallel(blocks):
                with pl.at(level=pl.Level.CORE_GROUP, name_hint="flash_attention"):
                    kv = (hq // group) * d
                    qi = q[i * blk:(i + 1) * blk, hq * d:(hq + 1) * d]
                    m = pl.full([blk, 1], dtype=pl.FP32, value=neg_inf)
                    l = pl.full([blk, 1], dtype=pl.FP32, value=0.0)
                    o = pl.full([blk, d], dtype=pl.FP32, value=0.0)
                    for j in pl.range(i + 1):
                        s = pl.mul(pl.matmul(qi, k[j * blk:(j + 1) * blk, kv:kv + d], b_trans=True,
                                             out_dtype=pl.FP32), scale)
                        if j == i:
                            s = pl.add(s, mask)
                        m_new = pl.maximum(m, pl.row_max(s))
                        p = pl.exp(pl.row_expand_sub(s, m_new))
                        alpha = pl.exp(pl.sub(m, m_new))
                        l = pl.add(pl.mul(l, alpha), pl.row_sum(p))
                        pv = pl.matmul(pl.cast(p, target_type=pl.BF16), v[j * blk:(j + 1) * blk, kv:kv + d],
                                       out_dtype=pl.FP32)
                        o = pl.add(pl.row_expand_mul(o, alpha), pv)
                        m = m_new
                    out = pl.assemble(out, pl.cast(pl.row_expand_div(o, l), target_type=pl.BF16),
                                      [i * blk, hq * d])
        return out

    @pl.jit
    def flash_attention_piece(q: pl.Tensor, k: pl.Tensor, v: pl.Tensor, mask: pl.Tensor, out: pl.Out[pl.Tensor]):
        out = flash_attention(q, k, v, mask, out)
        return out

    return flash_attention, flash_attention_piece
