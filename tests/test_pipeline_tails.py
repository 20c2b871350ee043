"""``pl.pipeline(start, stop, step, stage=F)`` runs exactly the iterations of
``range(start, stop, step)`` — the unrolled main loop and the tail for the rest — whatever
the step, the stage count, the start and whether the bounds are static or run-time values,
on both platforms and under both planners. The body loads, stores per iteration into a
sentinel-filled output (a skipped or doubled or misplaced iteration shows) and carries a
sum through the loop (a tail copy reading the wrong carried value shows)."""

import functools

import pytest
import torch
from helpers import check_pass, program_text
from hypothesis import given
from hypothesis import strategies as st

from pypto.lang import parse
from pypto.passes.lower_pipeline_loops import lower_pipeline_loops
from pypto.runtime import RunConfig
from pypto.runtime.compiled import compile_program

ROWS, COLS, R = 160, 64, 4  # a holds 40 blocks of R rows: enough for i < 40
SENTINEL = -999.0
CONFIGS = [("ref", "PYPTO"), ("a2a3sim", "PYPTO"), ("a2a3sim", "DSA_RP"), ("a2a3sim", "PTOAS")]


def kernel_text(start, stop, step, stage) -> str:
    """Bounds are ints (static) or the names ``m`` / ``n`` (run-time INT32 scalars)."""
    return program_text(f"""
@pl.function(type=pl.FunctionType.InCore)
def k(self, a: pl.Tensor[[{ROWS}, {COLS}], pl.FP32], out: pl.Out[pl.Tensor[[{ROWS}, {COLS}], pl.FP32]], total: pl.Out[pl.Tensor[[{R}, {COLS}], pl.FP32]], m: pl.Scalar[pl.INT32], n: pl.Scalar[pl.INT32]):
    acc = pl.tile.load(a, [0, 0], [{R}, {COLS}])
    for i in pl.pipeline({start}, {stop}, {step}, stage={stage}):
        t = pl.tile.load(a, [i * {R}, 0], [{R}, {COLS}])
        pl.tile.store(pl.tile.muls(t, 2.0), [i * {R}, 0], out)
        acc = pl.tile.add(acc, t)
    pl.tile.store(acc, [0, 0], total)
""", name="k")


@functools.lru_cache(maxsize=None)
def compiled(text: str, platform: str, planner: str):
    config = RunConfig(platform=platform, memory_planner=planner, disabled_diagnostics=("PH001", "PH-MR-001"))
    return compile_program(parse(text), ("a", "out", "total", "m", "n"), config, write=False)


def data():
    # small integers: the carried sum is exact whatever order a wrong lowering adds in
    return torch.randint(-8, 9, (ROWS, COLS), generator=torch.Generator().manual_seed(5)).float()


def expected(a, start, stop, step):
    out = torch.full((ROWS, COLS), SENTINEL)
    total = a[:R].clone()
    for i in range(start, stop, step):
        out[i * R:(i + 1) * R] = a[i * R:(i + 1) * R] * 2
        total += a[i * R:(i + 1) * R]
    return out, total


def check(text, platform, planner, start, stop, step, m=0, n=0):
    a = data()
    out, total = torch.full((ROWS, COLS), SENTINEL), torch.full((R, COLS), SENTINEL)
    compiled(text, platform, planner).run(a, out, total, m, n)
    want_out, want_total = expected(a, start, stop, step)
    what = f"pl.pipeline({start}, {stop}, {step}) on {platform}/{planner}"
    ran = sorted({int(r) // R for r in torch.nonzero((out != SENTINEL).any(1)).flatten()})
    assert ran == list(range(start, stop, step)), f"{what}: iterations {ran} ran"
    assert torch.equal(out, want_out), f"{what}: stores differ"
    assert torch.equal(total, want_total), f"{what}: the carried sum differs"


BOUNDS = [(0, 10, 2), (0, 11, 2), (1, 12, 3), (3, 20, 4), (2, 9, 2), (5, 6, 3), (0, 7, 1), (4, 4, 2), (6, 2, 2)]


@pytest.mark.parametrize("platform, planner", CONFIGS)
@pytest.mark.parametrize("stage", [2, 3, 4])
@pytest.mark.parametrize("start, stop, step", BOUNDS)
def test_static_bounds_run_exactly_the_range(start, stop, step, stage, platform, planner):
    check(kernel_text(start, stop, step, stage), platform, planner, start, stop, step)


@pytest.mark.parametrize("platform, planner", CONFIGS)
@pytest.mark.parametrize("stage", [3, 4])
@pytest.mark.parametrize("step", [1, 2, 3])
def test_a_runtime_stop_runs_exactly_the_range(step, stage, platform, planner):
    text = kernel_text(1, "n", step, stage)
    for n in range(0, 15):
        check(text, platform, planner, 1, n, step, n=n)


@pytest.mark.parametrize("platform, planner", CONFIGS)
@pytest.mark.parametrize("stage", [2, 3])
def test_runtime_start_and_stop_run_exactly_the_range(stage, platform, planner):
    text = kernel_text("m", "n", 2, stage)
    for m, n in ((0, 10), (3, 10), (3, 4), (5, 5), (7, 3), (2, 19)):
        check(text, platform, planner, m, n, 2, m=m, n=n)


def test_the_static_tail_of_a_strided_pipeline_continues_the_stride():
    """pl.pipeline(0, 10, 2, stage=3): five iterations; the main loop runs one group of
    three (i = 0, 2, 4) and the tail the last two at i = 6 and i = 8."""
    check_pass(lower_pipeline_loops, """
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
            for i in pl.pipeline(0, 10, 2, stage=3):
                t = pl.tile.load(a, [i * 4, 0], [4, 64], target_memory=pl.Mem.Vec)
                pl.tile.store(t, [i * 4, 0], out)
    """, """
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
            for i in pl.range(0, 6, 6):
                t: pl.Tile[[4, 64], pl.FP32, pl.MemRef("pipe_t", slots=3, pipeline=True)[0], pl.Mem.Vec] = pl.tile.load(a, [i * 4, 0], [4, 64], target_memory=pl.Mem.Vec)
                pl.tile.store(t, [i * 4, 0], out)
                t_1: pl.Tile[[4, 64], pl.FP32, pl.MemRef("pipe_t", slots=3, pipeline=True)[1], pl.Mem.Vec] = pl.tile.load(a, [(i + 2) * 4, 0], [4, 64], target_memory=pl.Mem.Vec)
                pl.tile.store(t_1, [(i + 2) * 4, 0], out)
                t_2: pl.Tile[[4, 64], pl.FP32, pl.MemRef("pipe_t", slots=3, pipeline=True)[2], pl.Mem.Vec] = pl.tile.load(a, [(i + 4) * 4, 0], [4, 64], target_memory=pl.Mem.Vec)
                pl.tile.store(t_2, [(i + 4) * 4, 0], out)
            t_3: pl.Tile[[4, 64], pl.FP32, pl.MemRef("pipe_t", slots=3, pipeline=True)[0], pl.Mem.Vec] = pl.tile.load(a, [24, 0], [4, 64], target_memory=pl.Mem.Vec)
            pl.tile.store(t_3, [24, 0], out)
            t_4: pl.Tile[[4, 64], pl.FP32, pl.MemRef("pipe_t", slots=3, pipeline=True)[1], pl.Mem.Vec] = pl.tile.load(a, [32, 0], [4, 64], target_memory=pl.Mem.Vec)
            pl.tile.store(t_4, [32, 0], out)
    """)


# ----------------------------------------------------------------------------- property

bounds = st.tuples(st.integers(0, 6), st.integers(-2, 24), st.integers(1, 4), st.integers(1, 5))


@given(bounds, st.sampled_from(CONFIGS), st.booleans())
def test_property_a_pipeline_runs_exactly_its_range(case, config, runtime):
    start, stop, step, stage = case
    stop = min(stop, (ROWS // R) - 1)
    if runtime:
        check(kernel_text("m", "n", step, stage), *config, start, stop, step, m=start, n=stop)
    else:
        check(kernel_text(start, stop, step, stage), *config, start, stop, step)


def test_a_tail_with_an_int32_trip_count_keeps_its_index_an_index():
    # the tail's index is `max(n, 0) // 2 * 2` over an INT32 n: a branch that yields either
    # it or a constant must still see an index (it failed verification after the lowering)
    import pypto.language as pl

    @pl.jit
    def pick(a: pl.Tensor, out: pl.Out[pl.Tensor], n: pl.Scalar[pl.INT32], s: pl.Scalar[pl.INT64]):
        with pl.at(level=pl.Level.CORE_GROUP):
            u = pl.load(a, [0, 0], [16, 128])
            for i in pl.pipeline(n, stage=2):
                if s > 0:
                    for i in pl.range(2):
                        pass
                u = pl.load(a, [i * 16, 0], [16, 128])
            pl.store(u, [0, 0], out)
        return out

    a = torch.arange(4 * 16, dtype=torch.float32).repeat_interleave(128).reshape(4 * 16, 128)
    for platform in ("ref", "a2a3sim"):
        for s, n in ((1, 3), (0, 3), (0, 4)):
            out = torch.zeros(16, 128)
            pick(a, out, n, s, config=RunConfig(platform=platform))
            last = 1 if s > 0 else n - 1  # Python's i after the body's last run
            assert torch.equal(out, a[last * 16:(last + 1) * 16]), (platform, s, n)
