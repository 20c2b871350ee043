"""Random task graphs (``pypto.fuzz.tasks``): those the rules order give the same bits on
a2a3sim as on ref and as torch in program order; an opt-out that drops a needed edge is
reported as a race."""

import hypothesis.strategies as st
import torch
from hypothesis import assume, given, settings

from pypto.chip.races import TaskRace
from pypto.fuzz.tasks import BANDS, C, INPUTS, OUTPUTS, R, graphs, oracle, race_free, source
from helpers import load_kernel
from pypto.runtime import RunConfig


def _load(tmp_path, text: str, name: str):
    path = tmp_path / f"{name}.py"
    path.write_text(text)
    return load_kernel(path, "graph")


def _inputs():
    g = torch.Generator().manual_seed(0)
    return {x: torch.randn(BANDS * R, C, generator=g) for x in INPUTS}


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
        assert torch.equal(ref[y], want[y])
    if race_free(steps):
        sim = _run(kernel, inputs, "a2a3sim")
        for y in OUTPUTS:
            assert torch.equal(sim[y], want[y]), source(steps)
    else:  # the schedule may or may not have run the unordered pair apart; if it ran, it is the program's
        try:
            sim = _run(kernel, inputs, "a2a3sim")
        except TaskRace:
            return
        for y in OUTPUTS:
            assert torch.equal(sim[y], want[y]), source(steps)


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
