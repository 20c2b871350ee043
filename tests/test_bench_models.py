"""bench/models.py's kernels (a transformer layer's pieces, decode and prefill) compute what
torch computes, on both platforms, bit for bit alike — at the smallest size their structure
allows (never a time: the benchmark prints those)."""

import sys
from pathlib import Path

import pytest
import torch

from pypto.runtime import RunConfig

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))

from model_kernels.pieces import PIECES, arguments, compare, expected, make_inputs  # noqa: E402
from model_kernels.shapes import SIZES  # noqa: E402

CASES = {case.mode: case for case in SIZES["tiny"]}


@pytest.fixture(scope="module")
def inputs():
    return {mode: make_inputs(case) for mode, case in CASES.items()}


@pytest.mark.parametrize("piece", list(PIECES))
@pytest.mark.parametrize("mode", list(CASES))
def test_each_piece_computes_torchs_result_on_both_platforms_alike(mode, piece, inputs, tmp_path):
    case, tensors, p = CASES[mode], inputs[mode], PIECES[piece]
    want = expected(p, case, tensors, exact=True)
    got = {}
    for platform in ("ref", "a2a3sim"):
        args, outs = arguments(p, case, tensors)
        report = p.build(case).compile(*args, config=RunConfig(platform=platform, output_dir=tmp_path / platform)).run(
            *args)
        err, ok = compare(outs, want)
        assert ok, f"{piece} ({mode}) on {platform}: largest error {err:.3g} against torch's fp32 oracle"
        got[platform] = outs
        if platform == "a2a3sim":
            assert report.tasks and report.instructions > 0
    assert all(torch.equal(a, b) for a, b in zip(got["ref"], got["a2a3sim"]))


def test_the_tolerance_tells_a_wrong_result_from_a_right_one(inputs):
    """The check above can fail: the oracle of another input is outside it."""
    case, tensors = CASES["decode"], inputs["decode"]
    want = expected(PIECES["mlp"], case, tensors, exact=True)
    other = dict(tensors, resid=tensors["resid"].roll(1, 0))
    assert not compare(expected(PIECES["mlp"], case, other, exact=True), want)[1]
    assert compare(expected(PIECES["mlp"], case, tensors, exact=False), want)[1]  # torch's bf16 GEMMs are within it


def test_the_benchmark_measures_every_figure_of_a_piece(tmp_path):
    import models  # bench/models.py

    fig = models.measure("layer", CASES["prefill"], models.PLATFORMS, 1, True, tmp_path)
    assert not fig.failed and fig.same_bits and all(fig.within.values())
    assert fig.tasks > 0 and fig.instructions > 0 and fig.sim_us > 0 and fig.torch_s > 0
    assert set(fig.wall) == set(models.PLATFORMS) and fig.peak_mb > 0
