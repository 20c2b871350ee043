"""Random task graphs (``pypto.fuzz.tasks``): those the rules order give the same bits on
a2a3sim as on ref and as torch in program order; an opt-out that drops a needed edge is
reported as a race."""

import hypothesis.strategies as st
import torch
from hypothesis import assume, given, settings

from pypto.chip.races import TaskRace
from pypto.fuzz.tasks import (BANDS, C, INPUTS, OUTPUTS, R, atomic_graphs, atomic_oracle, atomic_source, graphs, oracle,
                               race_free, source)
from helpers import load_kernel
from pypto.runtime import RunConfig


def _load(tmp_path, text: str, name: str):
    path = tmp_path / f"{name}.py"
    path.write_text(text)
    return load_kernel(path, "graph")


def _inputs():
    g = torch.Generator().manual_seed(0)
    return {x: torch.randn(BANDS * R, C, generator=g) for x in INPUTS}


def _same(got, want) -> bool:
    """Equal values, NaN where torch has NaN (its NaN bits are the host's; ours are the one
    canonical NaN, which the platforms' bit-for-bit comparison checks)."""
    nan = torch.isnan(want)
    return torch.equal(torch.isnan(got), nan) and torch.equal(got[~nan], want[~nan])


def _run(kernel, inputs, platform: str):
    outs = [torch.zeros(BANDS * R, C) for _ in OUTPUTS]
    args = [inputs[x] for x in INPUTS] + outs + [torch.zeros(BANDS * R, C)]
    kernel.compile(*args, config=RunConfig(platform=platform)).run(*args)
    return dict(zip(OUTPUTS, outs))


@settings(deadline=None)
@given(steps=graphs())
def test_property_race_free_graphs_give_the_same_bits_everywhere(tmp_path_factory, steps):
    kernel = _load(tmp_path_factory.mktemp("g"), source(steps), "graph")
    inputs = _inputs()
    want = oracle(steps, inputs)
    ref = _run(kernel, inputs, "ref")
    for y in OUTPUTS:
        assert _same(ref[y], want[y])
    if race_free(steps):
        sim = _run(kernel, inputs, "a2a3sim")
        for y in OUTPUTS:
            assert torch.equal(sim[y].view(torch.int32), ref[y].view(torch.int32)), source(steps)
    else:  # the schedule may or may not have run the unordered pair apart; if it ran, it is the program's
        try:
            sim = _run(kernel, inputs, "a2a3sim")
        except TaskRace:
            return
        for y in OUTPUTS:
            assert _same(sim[y], want[y]), source(steps)


@settings(deadline=None)
@given(steps=graphs(), op=st.sampled_from(["exp", "neg"]), band=st.integers(0, BANDS - 1))
def test_property_an_opt_out_that_drops_a_needed_edge_is_a_race(tmp_path_factory, steps, op, band):
    # the pair's producer waits for nothing and runs longer than the orchestrator takes to
    # submit the consumer, which waits for nothing either: they overlap, or the consumer runs first
    assume(race_free(steps))  # the only race is the one the opt-out makes
    text = source(steps, opt_out=(op, band))
    kernel = _load(tmp_path_factory.mktemp("g"), text, "graph")
    try:
        _run(kernel, _inputs(), "a2a3sim")
    except TaskRace as race:
        assert "no dependency orders them" in race.message and "'w'" not in race.message
        assert f"w[{band * R}, 0]" in race.message
        return
    raise AssertionError(f"the consumer's opt-out dropped its edge on the producer, and no race was reported:\n{text}")


@settings(deadline=None)
@given(steps=atomic_graphs())
def test_property_atomic_adds_in_any_order_give_the_oracles_bits(tmp_path_factory, steps):
    """Integer adds commute: whatever order the chip lands them in (and whatever a seed
    permutes), the sums are torch's; adds into the same bytes never race each other."""
    path = tmp_path_factory.mktemp("a") / "adds.py"
    path.write_text(atomic_source(steps))
    kernel = load_kernel(path, "adds")
    g = torch.Generator().manual_seed(1)
    x0 = torch.randint(-1000, 1000, (BANDS * R, C), generator=g, dtype=torch.int32)
    start = {y: torch.randint(-5, 5, (BANDS * R, C), generator=g, dtype=torch.int32) for y in OUTPUTS}
    want = atomic_oracle(steps, x0, start)
    for config in (RunConfig(platform="ref"), RunConfig(), RunConfig(atomic_order_seed=7)):
        outs = {y: v.clone() for y, v in start.items()}
        kernel(x0, *outs.values(), config=config)
        for y in OUTPUTS:
            assert torch.equal(outs[y], want[y]), atomic_source(steps)
