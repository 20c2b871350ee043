"""A launch is a pure Timeline (simulate) and its data effects (apply): the timeline of a
launch like an earlier one — same kernel, scalar arguments and tensor placement — is
reused, and applying it computes what a fresh simulation does."""

import re

import attrs
import pytest
import torch
from helpers import compile_case
from hypothesis import given, settings
from hypothesis import strategies as st

import pypto.language as pl
from pypto.backend import A2A3
from pypto.fuzz import strategies as ps
from pypto.sim.simulator import Launch, apply, run_kernel, simulate


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
    base = torch.zeros(2, 64, 128)  # one storage, no byte in common: nothing to race
    assert simulate(kernel, (base[0], 2.0, base[1]), A2A3) is first
    x = torch.randn(64, 128)  # the same bytes for both: where they overlap is part of the key
    assert simulate(kernel, (x, 2.0, x), A2A3) is not first



def test_other_tiles_of_the_same_tensors_reuse_the_timeline():
    # a task graph's tasks: the kernel on each row block of a big input and output
    big_a, big_out = torch.randn(4 * 64, 128), torch.zeros(4 * 64, 128)
    kernel = kernel_of(big_a[:64], big_out[:64])
    timelines = {simulate(kernel, (big_a[i * 64:(i + 1) * 64], 2.0, big_out[i * 64:(i + 1) * 64]), A2A3)
                 for i in range(4)}
    assert len(timelines) == 1
    (timeline,) = timelines
    for i in range(4):
        apply(timeline, {"a": big_a[i * 64:(i + 1) * 64], "out": big_out[i * 64:(i + 1) * 64]})
    assert torch.equal(big_out, torch.exp(big_a) * 2.0)
    # where tensors overlap, how they lie against each other is part of the timeline
    flat = torch.zeros(4 * 64 * 128)
    in_place = {simulate(kernel, (flat[k:k + 64 * 128].view(64, 128), 2.0, flat[k:k + 64 * 128].view(64, 128)), A2A3)
                for k in (0, 128 * 64)}
    assert len(in_place) == 1 and timeline not in in_place


# ----------------------------------------------------------------------------- two ways to apply

# Every family a kernel can come from: elementwise, reductions, matmuls, carried and
# slotted buffers, nested loops.
FAMILIES = {"elementwise": ps.elementwise_programs(), "reduction": ps.reduction_programs(),
            "matmul": ps.matmul_programs(), "carried": ps.carried_programs(),
            "loop_body": ps.loop_body_programs(), "nested": ps.nested_loop_programs(),
            "slotted": ps.slotted_programs()}


@pytest.mark.parametrize("family", sorted(FAMILIES))
@settings(max_examples=max(2, settings().max_examples // 15))
@given(data=st.data())
def test_property_a_race_free_timeline_computes_the_same_bits_at_once_as_at_start_and_end(family, data):
    # a checked timeline performs each instruction at once in start order; an unsafe one
    # reads at the start and writes at the end, as hardware does: on a race-free kernel the
    # two agree bit for bit
    case = data.draw(FAMILIES[family], label="case")
    compiled = compile_case(case)
    for kernel in compiled.kernels.values():
        args = case.args()
        outs = {}
        for unsafe in (False, True):
            copies = tuple(a.clone() if isinstance(a, torch.Tensor) else a for a in args)
            timeline = simulate(kernel, copies, A2A3, unsafe=unsafe)
            assert (timeline.steps is None) == unsafe
            apply(timeline, Launch(kernel, copies).tensors())
            outs[unsafe] = [a for a in copies if isinstance(a, torch.Tensor)]
        for x, y in zip(outs[False], outs[True]):
            assert ps.bits_equal(x, y), case.recipe



def _shifted(kernel, by: int):
    """``kernel`` with every buffer ``by`` bytes further into its memory."""
    from pypto.codegen.isa import Buf, Instr, Loop
    from pypto.ir import nodes

    def buf(b):
        return attrs.evolve(b, addr=nodes.BinOp("+", b.addr, nodes.Const(by))) if isinstance(b, Buf) else b

    def body(nodes_):
        out = []
        for x in nodes_:
            if isinstance(x, Instr):
                x = attrs.evolve(x, args=tuple(buf(a) for a in x.args), dst=buf(x.dst))
            elif isinstance(x, Loop):
                x = attrs.evolve(x, body=body(x.body))
            out.append(x)
        return tuple(out)

    return attrs.evolve(kernel, programs=tuple(attrs.evolve(p, body=body(p.body)) for p in kernel.programs))


def test_buffers_torch_cannot_view_as_their_dtype_are_read_and_written_as_bytes():
    # a buffer at an address that is no multiple of its element size (a backend with a
    # smaller alignment than its dtypes) is copied byte-wise, not viewed
    a, out = torch.randn(64, 128), torch.zeros(64, 128)
    kernel = _shifted(kernel_of(a, out), 2)
    timeline = simulate(kernel, (a, 2.0, out), A2A3)
    assert timeline.steps.unaligned
    apply(timeline, {"a": a, "out": out})
    assert torch.equal(out, torch.exp(a) * 2.0)


@pl.jit
def signed_zeros(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [16, 128])
        pos = pl.muls(t, 0.0)
        neg = pl.muls(t, -0.0)
        pl.store(pl.sub(pl.add(pos, neg), pl.muls(t, 0)), [0, 0], out)
    return out


def test_equal_but_different_scalars_stay_apart_in_a_timeline():
    # 0, 0.0 and -0.0 are equal Python numbers; the records that carry them must not merge
    from pypto.sim.data.steps import Steps

    steps = Steps([])
    kept = [steps.intern(x) for x in ((1, 0), (1, 0.0), (1, -0.0), (1, False), (1, 0))]
    assert [type(x[1]) for x in kept] == [int, float, float, bool, int] and str(kept[2][1]) == "-0.0"
    assert kept[0] is kept[4]
    a, out = torch.full((16, 128), -1.0), torch.zeros(16, 128)
    signed_zeros(a, out)
    assert torch.equal(torch.signbit(out), torch.signbit((a * 0.0 + a * -0.0) - a * 0))


def test_a_scalars_sign_of_zero_and_its_type_are_part_of_the_timelines_key():
    a, out = torch.ones(64, 128), torch.zeros(64, 128)
    kernel = kernel_of(a, out)
    plus, minus = simulate(kernel, (a, 0.0, out), A2A3), simulate(kernel, (a, -0.0, out), A2A3)
    assert plus is not minus  # 0.0 == -0.0 in Python, but not in the bits the kernel computes
    apply(minus, {"a": a, "out": out})
    assert torch.signbit(out).all()
    apply(plus, {"a": a, "out": out})
    assert not torch.signbit(out).any()


def test_tensors_that_share_memory_but_not_a_torch_storage_are_checked_and_keyed_by_their_bytes():
    # two tensors made from overlapping slices of one numpy array: two storages, one memory
    import numpy as np

    from pypto.sim.simulator import SimulatorHazard

    base = np.zeros((80, 128), dtype=np.float32)
    a, out = torch.from_numpy(base[0:64]), torch.from_numpy(base[16:80])
    assert a.untyped_storage().data_ptr() != out.untyped_storage().data_ptr()
    kernel = kernel_of(a, out)
    with pytest.raises(SimulatorHazard, match="views of one storage"):
        simulate(kernel, (a, 2.0, out), A2A3)
    apart = simulate(kernel, (torch.from_numpy(base[0:16].repeat(4, 0)), 2.0, out), A2A3)
    assert apart is simulate(kernel, (torch.randn(64, 128), 2.0, torch.zeros(64, 128)), A2A3)


@pl.jit
def shifted_copy(a: pl.Tensor, out: pl.Out[pl.Tensor], r: pl.Scalar[pl.INDEX], w: pl.Scalar[pl.INDEX]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [r, 0], [16, 128])
        pl.store(t, [w, 0], out)
    return out


@pytest.mark.parametrize("r, w, what", [(56, 0, "tile.load: load region [56, 72) on axis 0"),
                                        (0, 60, "tile.store: store region [60, 76) on axis 0")])
def test_a_window_that_leaves_its_tensor_at_run_time_is_refused_at_its_line_both_ways(r, w, what):
    from pypto.errors import ExecutionError

    a, out = torch.randn(64, 128), torch.zeros(64, 128)
    compiled = shifted_copy.compile(a, out, 0, 0)
    kernel = next(iter(compiled.kernels.values()))
    given = {"a": a, "out": out, "r": r, "w": w}
    args = tuple(given[name] for name, _ in kernel.params)
    for unsafe in (False, True):
        timeline = simulate(kernel, args, A2A3, unsafe=unsafe)
        with pytest.raises(ExecutionError, match=rf"{re.escape(what)} is outside the tensor's \[0, 64\)") as info:
            apply(timeline, {"a": a, "out": out})
        assert info.value.span is not None and info.value.span.line > 0
