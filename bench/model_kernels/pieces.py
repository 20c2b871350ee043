"""The benchmark's pieces: each a kernel built for a case, its arguments drawn from one set of
inputs, and what torch computes for it — eagerly, as a torch user writes the layer (bf16
GEMMs, fp32 element-wise work, SDPA), or as the oracle the test checks the kernels against
(every product accumulated in fp32 from the same bf16 values).
"""

from __future__ import annotations

import dataclasses
import math
import zlib
from typing import Callable

import torch
import torch.nn.functional as F

from . import attention, layer, mlp, projection, rmsnorm
from .attention import NEG_INF
from .shapes import Case

ROPE_BASE = 1e6


def make_inputs(case: Case, names=None, seed: int = 0) -> dict[str, torch.Tensor]:
    """The tensors ``names`` (default: every one any piece of the case reads), each drawn from
    a generator of its own name, so a piece's inputs are the same whatever else is drawn:
    activations ~N(0, 1), weights scaled by 1/sqrt(K) so each output stays near unit scale."""
    t, h, qw, kw, inter = case.tokens, case.hidden, case.q_width, case.kv_width, case.intermediate
    normal = {"x": (t, h), "xn": (t, h), "q": (t, qw), "k": (t, kw), "v": (t, kw), "attn": (t, qw)}
    weights = {"wq": (h, qw), "wk": (h, kw), "wv": (h, kw), "wo": (qw, h), "w_gate": (h, inter),
               "w_up": (h, inter), "w_down": (inter, h)}
    rope = _rope_angles(case)
    made = {}

    def draw(name):
        g = torch.Generator().manual_seed(seed * 1_000_003 + zlib.crc32(name.encode()))
        if name in normal:
            return torch.randn(*normal[name], generator=g).bfloat16()
        if name in weights:
            k, n = weights[name]
            return (torch.randn(k, n, generator=g) / math.sqrt(k)).bfloat16()
        if name == "resid":
            return torch.randn(t, h, generator=g)
        if name in ("gamma_attn", "gamma_mlp"):
            return torch.rand(1, h, generator=g) + 0.5
        if name in ("cos", "sin"):
            return (rope.cos() if name == "cos" else rope.sin()).float()
        if name in ("k_cache", "v_cache"):
            return torch.randn(t * case.context, kw, generator=g).bfloat16()
        if name == "block_table":  # each sequence's pages, scattered over the pool
            return torch.randperm(t * case.pages_per_seq, generator=g).to(torch.int32)
        if name == "slot":  # the cache row of each sequence's newest token: in its last page
            table = made["block_table"] if "block_table" in made else draw("block_table")
            last = table.view(t, -1)[:, -1].to(torch.int64)
            return (last * case.block_size + (case.context - 1) % case.block_size).to(torch.int32)
        if name == "mask":
            blk = case.block_size
            return torch.zeros(blk, blk).masked_fill(torch.ones(blk, blk, dtype=torch.bool).triu(1), NEG_INF)
        raise KeyError(name)

    everything = (*normal, *weights, "resid", "gamma_attn", "gamma_mlp", "cos", "sin",
                  *(("k_cache", "v_cache", "block_table", "slot") if case.mode == "decode" else ("mask",)))
    for name in names or everything:
        made[name] = draw(name)
    return made


def _rope_angles(case: Case) -> torch.Tensor:
    """[tokens, head_dim / 2]: each token's position times each pair's frequency. A decode
    token is its sequence's newest (position context - 1); a prompt's are 0..tokens - 1."""
    d = case.head_dim
    inv_freq = 1.0 / ROPE_BASE ** (torch.arange(0, d, 2, dtype=torch.float64) / d)
    if case.mode == "decode":
        positions = torch.full((case.tokens,), case.context - 1, dtype=torch.float64)
    else:
        positions = torch.arange(case.tokens, dtype=torch.float64)
    return positions[:, None] * inv_freq[None, :]


# ----------------------------------------------------------------------------- torch


def _mm(a, b, exact):
    return a.float() @ b.float() if exact else (a @ b).float()


def _rope(y, cos, sin, d):
    t = y.shape[0]
    y = y.view(t, -1, 2, d // 2)
    lo, hi, c, s = y[:, :, 0], y[:, :, 1], cos[:, None], sin[:, None]
    return torch.stack([lo * c - hi * s, hi * c + lo * s], 2).reshape(t, -1)


def torch_rmsnorm(x, gamma, exact=False):
    x = x.float()
    return (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + rmsnorm.EPS) * gamma).bfloat16()


def torch_qkv_rope(case, x, wq, wk, wv, cos, sin, exact=False):
    d = case.head_dim
    return (_rope(_mm(x, wq, exact), cos, sin, d).bfloat16(), _rope(_mm(x, wk, exact), cos, sin, d).bfloat16(),
            _mm(x, wv, exact).bfloat16())


def _sdpa(q, k, v, causal, exact):
    """q [heads, tq, d], k and v [kv_heads, tk, d]: grouped-query attention."""
    if exact:  # the kernels' arithmetic: fp32 scores and softmax, p rounded to bf16 for p @ v
        group = q.shape[0] // k.shape[0]
        k, v = k.float().repeat_interleave(group, 0), v.float().repeat_interleave(group, 0)
        s = q.float() @ k.transpose(1, 2) / math.sqrt(q.shape[-1])
        if causal:
            s = s.masked_fill(torch.ones(s.shape[-2:], dtype=torch.bool).triu(1), -math.inf)
        m = s.amax(-1, keepdim=True)
        p = (s - m).exp()
        return (p.bfloat16().float() @ v) / p.sum(-1, keepdim=True)
    return F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=True)


def torch_paged_attention(case, q, k_new, v_new, slot, block_table, k_cache, v_cache, exact=False):
    """Writes the new rows into the caches (in place), returns the attention output."""
    b, d, page = case.tokens, case.head_dim, case.block_size
    k_cache[slot.long()] = k_new
    v_cache[slot.long()] = v_new
    rows = (block_table.long().view(b, -1, 1) * page + torch.arange(page)).view(b, -1)
    keys = k_cache[rows].view(b, -1, case.kv_heads, d).transpose(1, 2)
    values = v_cache[rows].view(b, -1, case.kv_heads, d).transpose(1, 2)
    out = torch.stack([_sdpa(q[i].view(case.heads, 1, d), keys[i], values[i], False, exact) for i in range(b)]) \
        if exact else F.scaled_dot_product_attention(q.view(b, case.heads, 1, d), keys, values, enable_gqa=True)
    return out.reshape(b, -1).bfloat16()


def torch_flash_attention(case, q, k, v, exact=False):
    t, d = case.tokens, case.head_dim
    out = _sdpa(q.view(t, case.heads, d).transpose(0, 1), k.view(t, case.kv_heads, d).transpose(0, 1),
                v.view(t, case.kv_heads, d).transpose(0, 1), True, exact)
    return out.transpose(0, 1).reshape(t, -1).bfloat16()


def torch_o_proj(attn, wo, x, exact=False):
    return x.float() + _mm(attn, wo, exact)


def torch_mlp(x, w_gate, w_up, w_down, resid, exact=False):
    h = (F.silu(_mm(x, w_gate, exact)) * _mm(x, w_up, exact)).bfloat16()
    return resid.float() + _mm(h, w_down, exact)


def torch_layer(case, t, exact=False):
    """The whole layer; the caches (decode) are updated in place."""
    xn = torch_rmsnorm(t["x"], t["gamma_attn"], exact)
    q, k, v = torch_qkv_rope(case, xn, t["wq"], t["wk"], t["wv"], t["cos"], t["sin"], exact)
    if case.mode == "decode":
        attn = torch_paged_attention(case, q, k, v, t["slot"], t["block_table"], t["k_cache"], t["v_cache"], exact)
    else:
        attn = torch_flash_attention(case, q, k, v, exact)
    resid = torch_o_proj(attn, t["wo"], t["x"], exact)
    return torch_mlp(torch_rmsnorm(resid, t["gamma_mlp"], exact), t["w_gate"], t["w_up"], t["w_down"], resid,
                     exact)


# ----------------------------------------------------------------------------- pieces


@dataclasses.dataclass(frozen=True)
class Piece:
    """``build(case)`` makes the kernel afresh (nothing of an earlier run remembered);
    ``inputs`` names the tensors it reads, in parameter order, then ``outputs`` what it
    writes (name, shape, dtype of fresh zeros; ``inout`` names inputs it updates);
    ``torch(case, tensors, exact)`` is what it computes, one tensor per output and
    per ``inout``."""

    name: str
    build: Callable
    inputs: Callable  # case -> tuple of input names
    outputs: Callable  # case -> tuple of (name, shape, dtype)
    torch: Callable
    inout: tuple = ()


def _decode_inputs(case):
    return ("q", "k", "v", "slot", "block_table", "k_cache", "v_cache")


def _attention_build(case):
    return (attention.build_decode(case) if case.mode == "decode" else attention.build_prefill(case))[1]


def _attention_torch(case, t, exact):
    if case.mode == "decode":
        kc, vc = t["k_cache"], t["v_cache"]
        return torch_paged_attention(case, t["q"], t["k"], t["v"], t["slot"], t["block_table"], kc, vc, exact), kc, vc
    return (torch_flash_attention(case, t["q"], t["k"], t["v"], exact),)


def _layer_inputs(case):
    if case.mode == "decode":
        return ("x", "gamma_attn", "wq", "wk", "wv", "cos", "sin", "slot", "block_table", "k_cache", "v_cache", "wo",
                "gamma_mlp", "w_gate", "w_up", "w_down")
    return ("x", "gamma_attn", "wq", "wk", "wv", "cos", "sin", "mask", "wo", "gamma_mlp", "w_gate", "w_up", "w_down")


def _layer_torch(case, t, exact):
    out = torch_layer(case, t, exact)
    return (out, t["k_cache"], t["v_cache"]) if case.mode == "decode" else (out,)


BF16, FP32 = torch.bfloat16, torch.float32

PIECES = {
    "rmsnorm": Piece(
        "rmsnorm", lambda case: rmsnorm.build(case)[1], lambda case: ("x", "gamma_attn"),
        lambda case: (("y", (case.tokens, case.hidden), BF16),),
        lambda case, t, exact: (torch_rmsnorm(t["x"], t["gamma_attn"], exact),)),
    "qkv_rope": Piece(
        "qkv_rope", lambda case: projection.build_pieces(case)[0],
        lambda case: ("xn", "wq", "wk", "wv", "cos", "sin"),
        lambda case: (("q", (case.tokens, case.q_width), BF16), ("k", (case.tokens, case.kv_width), BF16),
                      ("v", (case.tokens, case.kv_width), BF16)),
        lambda case, t, exact: torch_qkv_rope(case, t["xn"], t["wq"], t["wk"], t["wv"], t["cos"], t["sin"], exact)),
    "attention": Piece(
        "attention", _attention_build,
        lambda case: _decode_inputs(case) if case.mode == "decode" else ("q", "k", "v", "mask"),
        lambda case: (("out", (case.tokens, case.q_width), BF16),), _attention_torch,
        inout=("k_cache", "v_cache")),
    "o_proj": Piece(
        "o_proj", lambda case: projection.build_pieces(case)[1], lambda case: ("attn", "wo", "x"),
        lambda case: (("resid", (case.tokens, case.hidden), FP32),),
        lambda case, t, exact: (torch_o_proj(t["attn"], t["wo"], t["x"], exact),)),
    "mlp": Piece(
        "mlp", lambda case: mlp.build(case)[1], lambda case: ("xn", "w_gate", "w_up", "w_down", "resid"),
        lambda case: (("out", (case.tokens, case.hidden), FP32),),
        lambda case, t, exact: (torch_mlp(t["xn"], t["w_gate"], t["w_up"], t["w_down"], t["resid"], exact),)),
    "layer": Piece(
        "layer", layer.build, _layer_inputs, lambda case: (("out", (case.tokens, case.hidden), FP32),),
        _layer_torch, inout=("k_cache", "v_cache")),
}


def arguments(piece: Piece, case: Case, tensors: dict) -> tuple[tuple, tuple]:
    """(the kernel's arguments: its inputs — those it updates cloned — then fresh outputs;
    the tensors it writes, in ``torch``'s order)."""
    names = piece.inputs(case)
    args = [tensors[n].clone() if n in piece.inout else tensors[n] for n in names]
    outs = [torch.zeros(shape, dtype=dtype) for _, shape, dtype in piece.outputs(case)]
    updated = [args[names.index(n)] for n in piece.inout if n in names]
    return (*args, *outs), (*outs, *updated)


def expected(piece: Piece, case: Case, tensors: dict, exact: bool) -> tuple:
    """What torch computes for the piece (caches it updates cloned first)."""
    t = {n: (v.clone() if n in piece.inout else v) for n, v in tensors.items()}
    return tuple(piece.torch(case, t, exact))


# bf16-aware: the kernels and the oracle round to bf16 at the same places, so they differ by
# fp32 summation order and the vector unit's exp, flipping the odd bf16 rounding (2^-8) of an
# intermediate — a few units of bf16 precision in the outputs, never more.
RTOL = ATOL = 2e-2


def compare(got, want) -> tuple[float, bool]:
    """(the largest |got - want| over the outputs, whether each is within the tolerance)."""
    err, ok = 0.0, True
    for g, w in zip(got, want):
        g, w = g.float(), w.float()
        err = max(err, (g - w).abs().max().item())
        ok = ok and bool(torch.isclose(g, w, rtol=RTOL, atol=ATOL).all())
    return err, ok


def flops(piece: str, case: Case) -> float:
    """The piece's arithmetic: 2 per multiply-add of its GEMMs and attention products (the
    element-wise work, a few per element, for RMSNorm), the measure ``--scaling`` holds its
    growth against — twice the tokens is twice the work but for causal attention."""
    t, h, qw, kw, i, d = case.tokens, case.hidden, case.q_width, case.kv_width, case.intermediate, case.head_dim
    if piece == "rmsnorm":
        return 4.0 * t * h
    if piece == "qkv_rope":
        return 2.0 * t * h * (qw + 2 * kw)
    if piece == "o_proj":
        return 2.0 * t * qw * h
    if piece == "mlp":
        return 2.0 * t * h * i * 3
    if piece == "attention":
        if case.mode == "decode":
            return 4.0 * t * case.heads * case.context * d
        blocks = t // case.block_size
        return 4.0 * case.heads * d * case.block_size ** 2 * blocks * (blocks + 1) / 2
    if piece == "layer":
        return sum(flops(p, case) for p in ("rmsnorm", "qkv_rope", "attention", "o_proj", "rmsnorm", "mlp"))
    raise KeyError(piece)
