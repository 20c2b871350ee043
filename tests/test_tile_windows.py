"""``pl.tile.assemble`` and ``pl.slice`` of tiles: a source written into a target tile at an
offset (Vec into Vec on the vector core, an Acc result into a Mat tile through the
fixpipe), windows cut from a tile with offsets a loop computes, the same bits on both
platforms, and the refusals at the user's line."""

import pytest
import torch

import pypto.language as pl
from pypto.errors import PyptoError, TypeCheckError
from pypto.runtime import RunConfig

PLATFORMS = ("ref", "a2a3sim")
Vec, Mat = pl.MemorySpace.Vec, pl.MemorySpace.Mat


@pl.jit
def rows_one_by_one(x: pl.Tensor, src: pl.Tensor, y: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        target = pl.load(x, [0, 0], [32, 32], target_memory=Vec)
        source = pl.load(src, [0, 0], [32, 16], target_memory=Vec)
        for i in pl.range(32):
            target = pl.tile.assemble(target, pl.slice(source, [1, 16], [i, 0]), [i, 16])
        pl.store(target, [0, 0], y)
    return y


@pl.jit
def quadrants(x: pl.Tensor, src: pl.Tensor, y: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        target = pl.load(x, [0, 0], [32, 32], target_memory=Vec)
        source = pl.load(src, [0, 0], [16, 16], target_memory=Vec)
        for b in pl.range(2):
            for c in pl.range(2):
                if b != c:
                    target = pl.assemble(target, pl.mul(source, 2.0), [b * 16, c * 16])
        pl.store(target, [0, 0], y)
    return y


@pl.jit
def kept_target(x: pl.Tensor, src: pl.Tensor, y: pl.Out[pl.Tensor], z: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        target = pl.load(x, [0, 0], [16, 32], target_memory=Vec)
        patched = pl.tile.assemble(target, pl.load(src, [0, 0], [8, 8], target_memory=Vec), [4, 8])
        pl.store(patched, [0, 0], y)
        pl.store(target, [0, 0], z)  # the target is still itself: the patch went into a copy
    return y


@pl.jit
def padded_window(x: pl.Tensor, y: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        whole = pl.load(x, [0, 0], [16, 64], target_memory=Vec)
        window = pl.slice(whole, [8, 32], [4, 16], valid_shape=[8, 20], pad_value=pl.PadValue.min)
        pl.store(pl.row_max(window), [0, 0], y)
    return y


@pl.jit
def product_into_l1(x: pl.Tensor, a: pl.Tensor, b: pl.Tensor, eye: pl.Tensor, y: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        target = pl.load(x, [0, 0], [32, 32], target_memory=Mat)
        left = pl.move(pl.load(a, [0, 0], [32, 16], target_memory=Mat), target_memory=pl.MemorySpace.Left)
        right = pl.move(pl.load(b, [0, 0], [16, 16], target_memory=Mat), target_memory=pl.MemorySpace.Right)
        patched = pl.tile.assemble(target, pl.matmul(left, right), [0, 16])  # Acc -> Mat: the fixpipe
        # out of L1 through the cube again: patched @ I
        again = pl.matmul(pl.move(patched, target_memory=pl.MemorySpace.Left),
                          pl.move(pl.load(eye, [0, 0], [32, 32], target_memory=Mat), target_memory=pl.MemorySpace.Right))
        pl.store(again, [0, 0], y)
    return y


@pl.jit
def runaway_window(x: pl.Tensor, y: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        whole = pl.load(x, [0, 0], [16, 64], target_memory=Vec)
        for i in pl.range(4):
            pl.store(pl.slice(whole, [8, 64], [i * 4, 0]), [0, 0], y)  # i = 3: rows 12..20 of 16
    return y


@pytest.mark.parametrize("platform", PLATFORMS)
def test_rows_sliced_in_a_loop_and_assembled_at_computed_offsets(platform):
    x, src = torch.randn(32, 32), torch.randn(32, 16)
    y = torch.zeros(32, 32)
    rows_one_by_one(x, src, y, config=RunConfig(platform=platform))
    want = x.clone()
    want[:, 16:] = src
    assert torch.equal(y, want)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_the_unified_assemble_of_tiles_under_a_branch(platform):
    x, src = torch.randn(32, 32), torch.randn(16, 16)
    y = torch.zeros(32, 32)
    quadrants(x, src, y, config=RunConfig(platform=platform))
    want = x.clone()
    want[:16, 16:] = want[16:, :16] = src * 2
    assert torch.equal(y, want)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_target_read_again_is_not_written_over(platform):
    x, src = torch.randn(16, 32), torch.randn(8, 8)
    y, z = torch.zeros(16, 32), torch.zeros(16, 32)
    kept_target(x, src, y, z, config=RunConfig(platform=platform))
    want = x.clone()
    want[4:12, 8:16] = src
    assert torch.equal(y, want) and torch.equal(z, x)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_window_padded_past_its_valid_shape(platform):
    x = torch.randn(16, 64)
    y = torch.zeros(8, 1)
    padded_window(x, y, config=RunConfig(platform=platform))
    assert torch.equal(y, x[4:12, 16:36].max(dim=1, keepdim=True).values)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_an_acc_result_assembled_into_l1(platform):
    x, a, b = torch.randn(32, 32), torch.randn(32, 16), torch.randn(16, 16)
    y = torch.zeros(32, 32)
    product_into_l1(x, a, b, torch.eye(32), y, config=RunConfig(platform=platform))
    want = x.clone()
    want[:, 16:] = a @ b
    torch.testing.assert_close(y, want, rtol=1e-5, atol=1e-5)


def test_both_platforms_give_the_same_bits():
    x, src = torch.randn(32, 32), torch.randn(16, 16)
    outs = []
    for platform in PLATFORMS:
        y = torch.zeros(32, 32)
        quadrants(x, src, y, config=RunConfig(platform=platform))
        outs.append(y)
    assert torch.equal(*outs)


def _line(marker: str) -> int:
    return next(k for k, text in enumerate(open(__file__).read().splitlines(), 1) if marker in text)


def test_a_window_leaving_its_tile_at_run_time_is_located_on_both_platforms():
    for platform in PLATFORMS:
        with pytest.raises(PyptoError, match="outside") as info:
            runaway_window(torch.randn(16, 64), torch.zeros(8, 64), config=RunConfig(platform=platform))
        assert info.value.span is not None and info.value.span.line == _line("i = 3: rows 12..20"), platform


BAD = {
    "outside": "        pl.store(pl.slice(t, [8, 64], [12, 0]), [0, 0], y)\n",
    "spaces": "        pl.store(pl.tile.assemble(t, pl.load(x, [0, 0], [8, 8], target_memory=pl.Mem.Mat), [0, 0]), [0, 0], y)\n",
    "dtype": "        pl.store(pl.tile.assemble(t, pl.cast(pl.load(x, [0, 0], [8, 8]), pl.BF16), [0, 0]), [0, 0], y)\n",
    "pad": "        pl.store(pl.slice(t, [8, 64], [0, 0], pad_value=pl.PadValue.min), [0, 0], y)\n",
}


@pytest.mark.parametrize("kind, match", [
    ("outside", r"a window inside the tile \[16, 64\], but got \[12, 20\) on axis 0"),
    ("spaces", "a Vec source into a Vec target, or an Acc source into a Mat target"),
    ("dtype", "the source's dtype to match the target's"),
    ("pad", "valid_shape= with pad_value="),
])
def test_refusals_name_the_line(kind, match):
    from pypto.lang import parse

    text = ("import pypto.language as pl\n\n\n@pl.program\nclass P:\n    @pl.function(type=pl.FunctionType.InCore)\n"
            "    def k(self, x: pl.Tensor[[16, 64], pl.FP32], y: pl.Out[pl.Tensor[[16, 64], pl.FP32]]):\n"
            "        t = pl.load(x, [0, 0], [16, 64])\n" + BAD[kind] + "        return y\n")
    with pytest.raises(TypeCheckError, match=match) as info:
        parse(text, filename="bad.py")
    assert info.value.span.line == 9
