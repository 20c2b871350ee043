"""Core instances: launches simulated together on one clock, each on cores of its own.
Two vector cores of one cluster have their own UB and their own flags (the same addresses
and event ids do not meet); GM is shared, so unordered writes of one byte are a hazard."""

import pytest
import torch

import pypto.language as pl
from pypto.backend import A2A3
from pypto.sim.simulator import Launch, SimulatorError, SimulatorHazard, apply, simulate, simulate_together


@pl.jit
def exp_rows(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.pipeline(4, stage=2):
            t = pl.load(a, [i * 16, 0], [16, 128])
            pl.store(pl.exp(t), [i * 16, 0], out)
    return out


def kernel_of(a, out):
    return next(iter(exp_rows.compile(a, out).kernels.values()))


def test_two_vector_cores_of_a_cluster_run_at_once_with_their_own_memories_and_flags():
    a, b = torch.randn(64, 128), torch.randn(64, 128)
    out_a, out_b = torch.full((64, 128), float("nan")), torch.full((64, 128), float("nan"))
    kernel = kernel_of(a, out_a)
    alone = simulate(kernel, (a, out_a), A2A3)
    both = simulate_together([Launch(kernel, (a, out_a), 0, 0), Launch(kernel, (b, out_b), 0, 1)], A2A3)
    apply(both, {"a": a, "out": out_a}, {"a": b, "out": out_b})
    assert torch.equal(out_a, torch.exp(a)) and torch.equal(out_b, torch.exp(b))
    events = both.report().events
    assert {e.core for e in events} == {"aiv0", "aiv1"}
    # the same UB addresses, the same flag ids, on two cores: neither waits for the other
    assert both.cycles == alone.cycles
    assert {e.flag[4] for e in events if e.core == "aiv0" and e.flag} == \
        {e.flag[4] for e in events if e.core == "aiv1" and e.flag}
    assert set(both.pipe_cycles) == {"aiv0", "aiv1"}


def test_launches_on_other_clusters_are_named_as_the_chip_numbers_its_cores():
    a, out = torch.randn(64, 128), torch.zeros(64, 128)
    kernel = kernel_of(a, out)
    timeline = simulate(kernel, (a, out), A2A3, cluster=5, lane=1)
    assert {e.core for e in timeline.report().events} == {"aiv11"}
    apply(timeline, {"a": a, "out": out})
    assert torch.equal(out, torch.exp(a))


def test_two_launches_writing_the_same_gm_bytes_are_a_hazard():
    a, out = torch.randn(64, 128), torch.zeros(64, 128)
    kernel = kernel_of(a, out)
    with pytest.raises(SimulatorHazard, match=r"GM tensor 'out'") as info:
        simulate_together([Launch(kernel, (a, out), 0, 0), Launch(kernel, (a, out), 3, 0)], A2A3)
    assert "aiv0.MTE3" in info.value.message and "aiv6.MTE3" in info.value.message
    assert "two launches that run at once" in info.value.hint


def test_launches_may_share_what_they_only_read():
    a = torch.randn(64, 128)
    out_a, out_b = torch.zeros(64, 128), torch.zeros(64, 128)
    kernel = kernel_of(a, out_a)
    both = simulate_together([Launch(kernel, (a, out_a), 0, 0), Launch(kernel, (a, out_b), 0, 1)], A2A3)
    apply(both, {"a": a, "out": out_a}, {"a": a, "out": out_b})
    assert torch.equal(out_a, torch.exp(a)) and torch.equal(out_b, out_a)


def test_two_launches_on_one_core_or_a_core_the_cluster_lacks_are_refused():
    a, out = torch.randn(64, 128), torch.zeros(64, 128)
    kernel = kernel_of(a, out)
    with pytest.raises(SimulatorError, match="two launches run on aiv1 at once"):
        simulate_together([Launch(kernel, (a, out), 0, 1), Launch(kernel, (a, torch.zeros(64, 128)), 0, 1)], A2A3)
    with pytest.raises(SimulatorError, match="vector cores 0..1, not 2"):
        simulate(kernel, (a, out), A2A3, lane=2)
    with pytest.raises(ValueError, match="clusters 0..23"):
        simulate(kernel, (a, out), A2A3, cluster=24)
