"""A task's chain of accumulating MMADs applied as one matmul over the joined K
(``pypto.sim.ops.mmad_chain``): the same bits as the instruction-by-instruction path (and the
interpreter's) for every slicing of K — on the block grid, where the chain is joined, and
off it, where it must not be — and copies into other buffers in between."""

from __future__ import annotations

import functools

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import pypto.language as pl
from pypto.runtime import RunConfig
from pypto.sim.ops import cube_math, mmad_chain
from pypto.sim.ops import numerics as num

from test_cube_contract import SMALLEST, operands, same_bits

FLOATS = (torch.float16, torch.bfloat16, torch.float32)


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: str(d).removeprefix("torch."))
@given(data=st.data())
def test_property_a_long_k_in_segments_is_the_unsegmented_product(dtype, data):
    """``mmad`` lays a long K out a segment of whole blocks at a time (a joined chain's K
    runs to thousands), each continuing the last's accumulator: the same bits as one
    segment, here with segments of one block up to a few, over adversarial values."""
    a, b, acc = data.draw(operands(dtype, data.draw(st.booleans()),
                                   k=data.draw(st.integers(1, 6 * cube_math.block_elems(dtype)))))
    whole = num.matmul(a, b, acc)
    blocks = data.draw(st.integers(1, 3))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(cube_math, "_SEGMENT", blocks * (a.shape[0] + b.shape[1]) * cube_math.block_elems(dtype))
        assert same_bits(num.matmul(a, b, acc), whole)


@functools.lru_cache(maxsize=None)
def _k_loop(kb: int, extra: bool):
    """A first matmul over [0, kb), matmul_acc over each next kb; ``extra``: another tile
    loaded and moved between the MMADs (copies the chain may let run ahead of it)."""

    @pl.jit
    def k_loop(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            m, n, k = a.shape[0], b.shape[1], a.shape[1]
            x = pl.move(pl.load(a, [0, 0], [m, kb], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
            y = pl.move(pl.load(b, [0, 0], [kb, n], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
            acc = pl.matmul(x, y)
            for i in pl.range(1, k // kb):
                x = pl.move(pl.load(a, [0, i * kb], [m, kb], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
                y = pl.move(pl.load(b, [i * kb, 0], [kb, n], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
                if extra:
                    z = pl.move(pl.load(a, [0, 0], [m, kb], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
                    acc = pl.matmul_acc(acc, z, y)
                acc = pl.matmul_acc(acc, x, y)
            pl.store(acc, [0, 0], out)
        return out

    return k_loop


def _operands(dtype, m, k, n, seed, specials):
    g = torch.Generator().manual_seed(seed)
    a = torch.randn(m, k, generator=g) * torch.exp2(torch.randint(-12, 12, (m, k), generator=g).float())
    b = torch.randn(k, n, generator=g)
    if specials:  # huge cancelling products, subnormals, signed zeros; an infinity in one case
        big = 2.0 ** (7 if dtype is torch.float16 else 60)
        a[0, :4] = torch.tensor([big, -big, SMALLEST[dtype], -0.0])
        b[:4, 0] = torch.tensor([big, big, -SMALLEST[dtype], 3.0])
        a[1, :] = -0.0
        if specials == 2:
            a[2, k // 2] = float("inf")
    return a.to(dtype), b.to(dtype)


@settings(max_examples=24, deadline=None)
@given(dtype=st.sampled_from(FLOATS), kb_blocks=st.integers(1, 3), off_grid=st.sampled_from([0, 0, 3, -1]),
       slices=st.integers(2, 5), extra=st.booleans(), specials=st.integers(0, 2), seed=st.integers(0, 2 ** 16))
def test_property_a_chain_joined_is_the_instruction_by_instruction_path(dtype, kb_blocks, off_grid, slices,
                                                                        extra, specials, seed):
    """ref == a2a3sim == the MMADs one by one (``numerics.matmul`` per slice), for K slices
    on the block grid and off it (then each slice keeps its own blocks)."""
    kb = kb_blocks * cube_math.block_elems(dtype) + off_grid
    m, n = 16, 16
    a, b = _operands(dtype, m, kb * slices, n, seed, specials)
    outs = []
    for platform in ("ref", "a2a3sim"):
        out = torch.zeros(m, n)
        _k_loop(kb, extra)(a, b, out, config=RunConfig(platform=platform))
        outs.append(out)
    want = None
    for i in range(slices):
        x, y = a[:, i * kb:(i + 1) * kb], b[i * kb:(i + 1) * kb]
        if extra and i:
            want = num.matmul(a[:, :kb], y, want)
        want = num.matmul(x, y, want)
    assert same_bits(outs[0], want)
    assert same_bits(outs[1], want)


def test_the_chain_is_joined_on_the_grid_and_not_off_it(monkeypatch):
    """The fast path is taken: on the block grid a kernel's K loop is one chain; off it,
    every MMAD is its own."""
    joined = []
    compute = mmad_chain.Chain.compute
    monkeypatch.setattr(mmad_chain.Chain, "compute", lambda self, views: (joined.append(len(self.lhs)),
                                                                          compute(self, views)))
    for kb, want in ((32, [4]), (24, [1, 1, 1, 1])):
        joined.clear()
        a, b = _operands(torch.float16, 16, 4 * kb, 16, kb, 1)
        out = torch.zeros(16, 16)
        _k_loop(kb, False)(a, b, out, config=RunConfig(platform="a2a3sim"))
        assert joined == want
        assert same_bits(out, num.matmul(a, b) if kb == 32 else
                         functools.reduce(lambda acc, i: num.matmul(a[:, i:i + kb], b[i:i + kb], acc),
                                          range(0, 4 * kb, kb), None))
