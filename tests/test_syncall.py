"""``pl.system.syncall``: the barrier every participant of an SPMD launch reaches before
any goes on. Numerically nothing (both platforms compute the same bits); at the chip the
blocks go on from the last arrival; a launch whose barrier could not release on the
device is refused where it is launched, on every platform."""

import inspect
import types

import attrs

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pypto.language as pl
from pypto.backend import A2A3
from pypto.chip import barriers
from pypto.errors import PyptoError, TypeCheckError
from pypto.runtime import RunConfig, run
from tests.test_roundtrip import exact

AIV = A2A3.clusters * A2A3.aiv_per_cluster  # the chip's vector cores: a hard barrier's full occupancy
ROWS = 16


def _line(marker: str) -> int:
    lines, _ = inspect.getsourcelines(inspect.getmodule(_line))
    return next(k for k, t in enumerate(lines, start=1) if marker in t and "_line(" not in t)


@pl.program
class Hard:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[AIV * ROWS, 32], pl.FP32], b: pl.Tensor[[AIV * ROWS, 32], pl.FP32],
          out: pl.Out[pl.Tensor[[AIV * ROWS, 32], pl.FP32]]) -> pl.Tensor[[AIV * ROWS, 32], pl.FP32]:
        off = pl.tile.get_block_idx() * ROWS
        ta = pl.load(a, [off, 0], [ROWS, 32])
        tb = pl.load(b, [off, 0], [ROWS, 32])
        pl.system.syncall(core_type="aiv_only")
        return pl.store(pl.add(ta, tb), [off, 0], out)

    @pl.function(type=pl.FunctionType.Orchestration)
    def orchestrator(self, a: pl.Tensor[[AIV * ROWS, 32], pl.FP32], b: pl.Tensor[[AIV * ROWS, 32], pl.FP32],
                     out: pl.Out[pl.Tensor[[AIV * ROWS, 32], pl.FP32]]) -> pl.Tensor[[AIV * ROWS, 32], pl.FP32]:
        with pl.spmd(pl.system.available_aiv_count(), sync_start=True):
            out = self.k(a, b, out)
        return out


@pytest.mark.parametrize("platform", ["ref", "a2a3sim"])
def test_a_hard_barrier_at_full_occupancy_computes_the_bits_of_none(platform):
    a, b, out = torch.randn(AIV * ROWS, 32), torch.randn(AIV * ROWS, 32), torch.zeros(AIV * ROWS, 32)
    run(Hard, a, b, out, config=RunConfig(platform=platform))
    assert torch.equal(out, a + b)


def _soft(blocks: int, used: int, heavy_first: bool, barrier: bool = True):
    """A soft barrier in a ``blocks``-block launch; block 0 works 10x as long before it as
    after it (or the other way round, ``heavy_first`` False), the others less unevenly —
    more work than the pipe queues hold, so the scalar unit reaches the barrier late."""
    rows = blocks * ROWS
    sync = f'pl.system.syncall(mode="soft", core_type="aiv_only", gm_workspace=ws, used_cores={used})'
    src = f'''
import pypto.language as pl


@pl.program
class Soft:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[{rows}, 64], pl.FP32], ws: pl.Tensor[[16], pl.INT32],
          out: pl.Out[pl.Tensor[[{rows}, 64], pl.FP32]]) -> pl.Tensor[[{rows}, 64], pl.FP32]:
        i = pl.tile.get_block_idx()
        t = pl.load(a, [i * {ROWS}, 0], [{ROWS}, 64])
        first = {"4 + 36 // (4 * i + 1)" if heavy_first else "40 - 36 // (4 * i + 1)"}
        for _ in pl.range(first):
            t = pl.exp(pl.mul(pl.exp(pl.mul(t, 0.5)), 0.25))
        {sync if barrier else ""}
        for _ in pl.range(44 - first):
            t = pl.exp(pl.mul(pl.exp(pl.mul(t, 0.5)), 0.25))
        return pl.store(t, [i * {ROWS}, 0], out)

    @pl.function(type=pl.FunctionType.Orchestration)
    def orchestrator(self, a: pl.Tensor[[{rows}, 64], pl.FP32], ws: pl.Tensor[[16], pl.INT32],
                     out: pl.Out[pl.Tensor[[{rows}, 64], pl.FP32]]) -> pl.Tensor[[{rows}, 64], pl.FP32]:
        with pl.spmd({blocks}):
            out = self.k(a, ws, out)
        return out
'''
    from pypto.lang import parse

    return parse(src, filename="soft.py")


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(blocks=st.integers(1, 6), explicit=st.booleans(), seed=st.integers(0, 2 ** 16))
def test_a_soft_barrier_at_partial_occupancy_keeps_both_platforms_bit_identical(blocks, explicit, seed):
    program = _soft(blocks, blocks if explicit else 0, True)
    torch.manual_seed(seed)
    a, ws = torch.randn(blocks * ROWS, 64), torch.zeros(16, dtype=torch.int32)
    outs = []
    for platform in ("ref", "a2a3sim"):
        out = torch.zeros(blocks * ROWS, 64)
        run(program, a, ws, out, config=RunConfig(platform=platform))
        outs.append(out)
    assert torch.equal(outs[0], outs[1])
    assert torch.equal(ws, torch.zeros(16, dtype=torch.int32))  # the counter is the barrier's own


def test_the_blocks_go_on_from_the_last_arrival():
    # block 0 works mostly before the barrier, block 1 mostly after it: met there, block 1
    # goes on only when block 0 arrives, and the launch takes about the two long parts
    a, ws = torch.randn(2 * ROWS, 64), torch.zeros(16, dtype=torch.int32)
    cycles = {}
    for barrier in (True, False):
        compiled = run(_soft(2, 2, True, barrier), a, ws, torch.zeros(2 * ROWS, 64),
                       config=RunConfig(platform="a2a3sim"))
        cycles[barrier] = compiled.run(a, ws, torch.zeros(2 * ROWS, 64), config=RunConfig(platform="a2a3sim")).cycles
    assert cycles[True] > cycles[False] * 1.3


@attrs.frozen
class _Run:
    arrivals: tuple
    cycles: int


def _model(cores: dict, block: int, holds: tuple) -> _Run:
    """A block whose cores each run ``gaps`` to its barriers and ``tail`` after the last, held
    at barrier k for ``holds[k][core]`` (the chip's model of a core, reduced to arithmetic)."""
    arrivals, end = [], 0
    for k in range(len(next(iter(cores[block].values()))[0])):
        arrivals.append([])
    for core, (gaps, tail) in cores[block].items():
        t = 0
        for k, gap in enumerate(gaps):
            t += gap
            arrivals[k].append((core, t))
            t += dict(holds[k]).get(core, 0) if k < len(holds) else 0
        end = max(end, t + tail)
    return _Run(tuple(tuple(sorted(a)) for a in arrivals), end)


_CORE = st.tuples(st.lists(st.integers(0, 300), min_size=2, max_size=2), st.integers(0, 300))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.dictionaries(st.sampled_from(["aic0", "aiv0", "aiv1"]), _CORE, min_size=1), min_size=1,
                max_size=5), st.integers(0, 50))
def test_every_core_is_held_at_each_barrier_until_the_last_arrival_of_any_block(cores, cost):
    kernel = types.SimpleNamespace(name="k", programs=())
    runs = barriers.held(kernel, lambda b, holds: _model(dict(enumerate(cores)), b, holds), len(cores), cost)
    release = [max(at for r in runs for _, at in r.arrivals[k]) + cost for k in range(2)]
    for b, r in enumerate(runs):  # every core leaves each barrier at its release: the last arrival of any block
        for core, at in r.arrivals[1]:
            assert at == release[0] + cores[b][core][0][1]
        assert r.cycles == release[1] + max(tail for _, tail in cores[b].values())
    # started together, the blocks end as held; staggered, the first release waits for the late one
    ends = barriers.released([0] * len(runs), tuple(r.cycles for r in runs), tuple(r.arrivals for r in runs))
    assert ends == [r.cycles for r in runs]
    starts = list(range(0, 7 * len(runs), 7))
    ends = barriers.released(starts, tuple(r.cycles for r in runs), tuple(r.arrivals for r in runs))
    first = [max(at for _, at in r.arrivals[0]) for r in runs]
    release = max(s + a for s, a in zip(starts, first)) + cost
    for end, r in zip(ends, runs):  # each leaves the first barrier at its release (then they run in step)
        assert end - r.cycles + max(first) + cost == release
    assert barriers.released(starts, (5,) * len(runs), ()) == [s + 5 for s in starts]


@pytest.mark.parametrize("platform", ["ref", "a2a3sim"])
def test_a_launch_whose_barrier_could_not_release_is_refused_at_the_launch(platform):
    @pl.program
    class Partial:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[64, 32], pl.FP32], out: pl.Out[pl.Tensor[[64, 32], pl.FP32]]
              ) -> pl.Tensor[[64, 32], pl.FP32]:
            t = pl.load(a, [pl.tile.get_block_idx() * 16, 0], [16, 32])
            pl.system.syncall(core_type="aiv_only")
            return pl.store(t, [pl.tile.get_block_idx() * 16, 0], out)

        @pl.function(type=pl.FunctionType.Orchestration)
        def orchestrator(self, a: pl.Tensor[[64, 32], pl.FP32], out: pl.Out[pl.Tensor[[64, 32], pl.FP32]]
                         ) -> pl.Tensor[[64, 32], pl.FP32]:
            with pl.spmd(4, sync_start=True):
                out = self.k(a, out)  # MARK-partial
            return out

    with pytest.raises(PyptoError, match=rf"waits for every one of the {AIV} AIV core\(s\) of a2a3, all resident at "
                                         r"once, and this pl.spmd\(4, sync_start=True\) launch gives 4: the device "
                                         r"would hang") as info:
        run(Partial, torch.zeros(64, 32), torch.zeros(64, 32), config=RunConfig(platform=platform))
    assert info.value.span.line == _line("MARK-partial") and "mode='soft'" in info.value.hint
    with pytest.raises(PyptoError, match=r"counts used_cores=5 arrivals, and this launch of 3 block\(s\) has 3 "
                                         r"participant\(s\): the barrier would never release") as info:
        run(_soft(3, 5, True), torch.zeros(48, 64), torch.zeros(16, dtype=torch.int32), torch.zeros(48, 64),
            config=RunConfig(platform=platform))
    assert "used_cores=3" in info.value.hint


@pytest.mark.parametrize("call, message", [
    ('pl.system.syncall(core_type="aiv")', "core_type 'aiv_only', 'aic_only' or 'mix'"),
    ('pl.system.syncall(core_type="aiv_only", mode="spin")', "mode 'hard' or 'soft'"),
    ('pl.system.syncall(core_type="aiv_only", gm_workspace=ws)', "no gm_workspace/used_cores in mode='hard'"),
    ('pl.system.syncall(mode="soft", core_type="aiv_only", used_cores=2)', "a gm_workspace tensor in mode='soft'"),
    ('pl.system.syncall(mode="soft", core_type="aiv_only", gm_workspace=ws)', "an explicit used_cores"),
    ('pl.system.syncall(mode="soft", core_type="aiv_only", gm_workspace=small, used_cores=2)',
     "an INT32 gm_workspace of at least 16 elements"),
    ('pl.system.syncall(mode="soft", core_type="aiv_only", gm_workspace=ws, used_cores=-1)',
     r"a used_cores in the INT32 range"),
])
def test_syncall_mistakes_are_located(call, message):
    from pypto.lang import parse

    src = ("import pypto.language as pl\n\n\n@pl.program\nclass P:\n    @pl.function(type=pl.FunctionType.InCore)\n"
           "    def k(self, a: pl.Tensor[[16, 32], pl.FP32], ws: pl.Tensor[[16], pl.INT32], small: pl.Tensor[[8], "
           "pl.INT32], out: pl.Out[pl.Tensor[[16, 32], pl.FP32]]) -> pl.Tensor[[16, 32], pl.FP32]:\n"
           "        t = pl.load(a, [0, 0], [16, 32])\n"
           f"        {call}\n"
           "        return pl.store(t, [0, 0], out)\n")
    with pytest.raises(TypeCheckError, match=message) as info:
        parse(src, filename="bad.py")
    assert info.value.span.line == 9 and info.value.hint


def test_syncall_prints_and_parses_back():
    text = exact(_soft(2, 2, True))
    assert 'pl.system.syncall(core_type="aiv_only", mode="soft", gm_workspace=ws, used_cores=2)' in text
    assert 'pl.system.syncall(core_type="aiv_only")' in exact(Hard)
