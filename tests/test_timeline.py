"""A launch is a pure Timeline (simulate) and its data effects (apply): the timeline of a
launch like an earlier one — same kernel, scalar arguments and tensor placement — is
reused, and applying it computes what a fresh simulation does."""

import torch

import pypto.language as pl
from pypto.backend import A2A3
from pypto.sim.simulator import apply, run_kernel, simulate


@pl.jit
def scaled_exp(a: pl.Tensor, s: pl.Scalar[pl.FP32], out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.pipeline(4, stage=2):
            t = pl.load(a, [i * 16, 0], [16, 128])
            pl.store(pl.muls(pl.exp(t), s), [i * 16, 0], out)
    return out


def kernel_of(a, out):
    compiled = scaled_exp.compile(a, 2.0, out)
    return next(iter(compiled.kernels.values()))


def test_the_same_launch_reuses_its_timeline_and_computes_the_same_bits():
    a, out = torch.randn(64, 128), torch.full((64, 128), float("nan"))
    kernel = kernel_of(a, out)
    first = simulate(kernel, (a, 2.0, out), A2A3)
    assert simulate(kernel, (a, 2.0, out), A2A3) is first
    apply(first, {"a": a, "out": out})
    assert torch.equal(out, torch.exp(a) * 2.0)
    out.fill_(float("nan"))
    _, report = run_kernel(kernel, (a, 2.0, out), A2A3)
    assert torch.equal(out, torch.exp(a) * 2.0)
    assert (report.cycles, report.instructions) == (first.cycles, first.instructions) and report.cycles > 0
    assert [(e.pipe, e.start, e.end) for e in report.events] == [(e.pipe, e.start, e.end)
                                                                for e in first.report().events]


def test_other_scalars_or_another_view_are_another_timeline():
    a, out = torch.randn(64, 128), torch.zeros(64, 128)
    kernel = kernel_of(a, out)
    first = simulate(kernel, (a, 2.0, out), A2A3)
    assert simulate(kernel, (a, 3.0, out), A2A3) is not first
    strided = torch.randn(128, 64).T  # the same shape, another view: its rows are not contiguous
    again = simulate(kernel, (strided, 2.0, out), A2A3)
    assert again is not first
    apply(again, {"a": strided, "out": out})
    assert torch.equal(out, torch.exp(strided) * 2.0)


def test_a_timeline_is_applied_to_the_tensors_it_is_given():
    # the data are no part of the timeline: the same placement, other values
    a, out = torch.randn(64, 128), torch.zeros(64, 128)
    kernel = kernel_of(a, out)
    timeline = simulate(kernel, (a, 2.0, out), A2A3)
    a.copy_(torch.randn(64, 128))
    apply(timeline, {"a": a, "out": out})
    assert torch.equal(out, torch.exp(a) * 2.0)


def test_other_tensors_of_the_same_views_reuse_the_timeline_unless_they_share_storage_otherwise():
    a, out = torch.randn(64, 128), torch.zeros(64, 128)
    kernel = kernel_of(a, out)
    first = simulate(kernel, (a, 2.0, out), A2A3)
    b, other = torch.randn(64, 128), torch.zeros(64, 128)
    again = simulate(kernel, (b, 2.0, other), A2A3)
    assert again is first  # where the tensors lie does not change what the launch does
    apply(again, {"a": b, "out": other})
    assert torch.equal(other, torch.exp(b) * 2.0)
    base = torch.zeros(2, 64, 128)  # one storage for both: overlaps are another question
    shared = simulate(kernel, (base[0], 2.0, base[1]), A2A3)
    assert shared is not first
