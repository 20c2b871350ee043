"""The sizes of the benchmark's layer and how its kernels are tiled.

A ``Case`` is one layer size in one mode: ``decode`` (``tokens`` is the batch, each
sequence attending to ``context`` cached tokens through a paged KV cache) or ``prefill``
(``tokens`` is one sequence's prompt, attending causally to itself). Kernels are built
from a case (its numbers are the kernels' compile-time constants), so every size runs
the same source.
"""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class Case:
    name: str
    mode: str  # "decode" or "prefill"
    tokens: int  # decode: the batch; prefill: the sequence
    hidden: int
    heads: int
    kv_heads: int  # grouped-query attention: heads // kv_heads query heads share one KV head
    head_dim: int
    intermediate: int
    context: int  # decode: cached tokens each sequence attends to (a multiple of block_size)
    block_size: int  # decode: rows of one KV-cache page; prefill: the flash-attention block
    n_block: int  # GEMM output columns per task
    k_block: int  # GEMM reduction per step of a task's K loop
    m_block: int  # GEMM rows per task in prefill (decode takes its whole batch in one)
    norm_rows: int  # RMSNorm rows per task
    norm_chunk: int  # RMSNorm columns per step

    @property
    def group(self) -> int:
        return self.heads // self.kv_heads

    @property
    def q_width(self) -> int:
        return self.heads * self.head_dim

    @property
    def kv_width(self) -> int:
        return self.kv_heads * self.head_dim

    @property
    def gemm_rows(self) -> int:
        return self.tokens if self.mode == "decode" else self.m_block

    @property
    def pages_per_seq(self) -> int:
        return self.context // self.block_size

    def doubled(self) -> Case:
        """The same layer with twice the batch (decode) or the sequence (prefill)."""
        return dataclasses.replace(self, name=f"{self.name} x2", tokens=2 * self.tokens)

    def check(self) -> None:
        """The divisibility the kernels' loops assume."""
        rows = self.gemm_rows
        for what, whole, part in (("hidden", self.hidden, self.n_block), ("hidden", self.hidden, self.k_block),
                                  ("q width", self.q_width, self.n_block), ("q width", self.q_width, self.k_block),
                                  ("kv width", self.kv_width, self.n_block),
                                  ("intermediate", self.intermediate, self.n_block),
                                  ("intermediate", self.intermediate, self.k_block),
                                  ("tokens", self.tokens, rows), ("tokens", self.tokens, self.norm_rows),
                                  ("hidden", self.hidden, self.norm_chunk), ("heads", self.heads, self.kv_heads),
                                  ("n block", self.n_block, self.head_dim)):
            if whole % part:
                raise ValueError(f"{self.name}: {what} {whole} is not a multiple of {part}")
        if self.mode == "decode" and self.context % self.block_size:
            raise ValueError(f"{self.name}: context {self.context} is not a multiple of block {self.block_size}")
        if self.mode == "prefill" and self.tokens % self.block_size:
            raise ValueError(f"{self.name}: sequence {self.tokens} is not a multiple of block {self.block_size}")


# A 14B-class layer (Qwen3-14B's: 40 query heads over 8 KV heads of 128, intermediate 17408).
_FULL = dict(hidden=5120, heads=40, kv_heads=8, head_dim=128, intermediate=17408, n_block=256, k_block=256,
             norm_chunk=512)
FULL_DECODE = Case(name="decode", mode="decode", tokens=16, context=1024, block_size=128, m_block=0,
                   norm_rows=16, **_FULL)
# Prefill's flash blocks are 64 rows, as the reference's own flash-attention example takes
# them: at 128, a [128, 128] fp32 score block beside the carried [128, 128] output does not
# fit Vec ("'row_max' reduces more than fits Vec at once"), and the scope cannot be split
# over both vector cores (its loop carries vector values across cube work).
FULL_PREFILL = Case(name="prefill", mode="prefill", tokens=512, context=0, block_size=64, m_block=128,
                    norm_rows=16, **_FULL)

# --small: the same kernels, a tenth of the width, for quick runs.
_SMALL = dict(hidden=512, heads=4, kv_heads=2, head_dim=128, intermediate=1536, n_block=256, k_block=256,
              norm_chunk=512)
SMALL_DECODE = Case(name="decode (small)", mode="decode", tokens=16, context=256, block_size=128, m_block=0,
                    norm_rows=16, **_SMALL)
SMALL_PREFILL = Case(name="prefill (small)", mode="prefill", tokens=128, context=0, block_size=64, m_block=64,
                     norm_rows=16, **_SMALL)

# The test's: as small as the kernels' structure allows (two pages, two flash blocks,
# two K steps, two N blocks, a query group of more than one head).
_TINY = dict(hidden=256, heads=6, kv_heads=2, head_dim=128, intermediate=512, n_block=128, k_block=128,
             norm_chunk=128)
TINY_DECODE = Case(name="decode (tiny)", mode="decode", tokens=4, context=128, block_size=64, m_block=0,
                   norm_rows=4, **_TINY)
TINY_PREFILL = Case(name="prefill (tiny)", mode="prefill", tokens=64, context=0, block_size=32, m_block=32,
                    norm_rows=16, **_TINY)

SIZES = {"full": (FULL_DECODE, FULL_PREFILL), "small": (SMALL_DECODE, SMALL_PREFILL),
         "tiny": (TINY_DECODE, TINY_PREFILL)}
