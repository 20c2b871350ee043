import pytest
import torch
from helpers import check_pass, program_text, same_results

import pypto.language as pl
from pypto.lang import parse
from pypto.passes.context import PassContext
from pypto.passes.lower_pipeline_loops import lower_pipeline_loops
from pypto.runtime import RunConfig
from pypto.backend import A2A3


def test_static_trip_count_replicates_and_unrolls_the_tail():
    check_pass(lower_pipeline_loops, """
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[80, 128], pl.FP32], out: pl.Out[pl.Tensor[[80, 128], pl.FP32]]):
            for i in pl.pipeline(5, stage=2):
                t = pl.tile.load(a, [i * 16, 0], [16, 128], target_memory=pl.Mem.Vec)
                pl.tile.store(pl.tile.exp(t), [i * 16, 0], out)
    """, """
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[80, 128], pl.FP32], out: pl.Out[pl.Tensor[[80, 128], pl.FP32]]):
            for i in pl.range(0, 4, 2):
                t: pl.Tile[[16, 128], pl.FP32, pl.MemRef("pipe_t", slots=2, pipeline=True)[0], pl.Mem.Vec] = pl.tile.load(a, [i * 16, 0], [16, 128], target_memory=pl.Mem.Vec)
                exp = pl.tile.exp(t)
                pl.tile.store(exp, [i * 16, 0], out)
                t_1: pl.Tile[[16, 128], pl.FP32, pl.MemRef("pipe_t", slots=2, pipeline=True)[1], pl.Mem.Vec] = pl.tile.load(a, [(i + 1) * 16, 0], [16, 128], target_memory=pl.Mem.Vec)
                exp_1 = pl.tile.exp(t_1)
                pl.tile.store(exp_1, [(i + 1) * 16, 0], out)
            t_2: pl.Tile[[16, 128], pl.FP32, pl.MemRef("pipe_t", slots=2, pipeline=True)[0], pl.Mem.Vec] = pl.tile.load(a, [64, 0], [16, 128], target_memory=pl.Mem.Vec)
            exp_2 = pl.tile.exp(t_2)
            pl.tile.store(exp_2, [64, 0], out)
    """)


DYNAMIC = """
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[64, 128], pl.FP32], out: pl.Out[pl.Tensor[[16, 128], pl.FP32]], n: pl.Scalar[pl.INT32]):
        acc = pl.tile.load(a, [0, 0], [16, 128], target_memory=pl.Mem.Vec)
        for i, (s,) in pl.pipeline(1, n, stage=3, init_values=(acc,)):
            t = pl.tile.load(a, [i * 16, 0], [16, 128], target_memory=pl.Mem.Vec)
            s2 = pl.tile.add(s, t)
            r = pl.yield_(s2)
        pl.tile.store(r, [0, 0], out)
"""


def test_dynamic_trip_count_threads_carried_values_through_a_tail_dispatch():
    check_pass(lower_pipeline_loops, DYNAMIC, """
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[64, 128], pl.FP32], out: pl.Out[pl.Tensor[[16, 128], pl.FP32]], n: pl.Scalar[pl.INT32]):
            acc = pl.tile.load(a, [0, 0], [16, 128], target_memory=pl.Mem.Vec)
            for i, (s,) in pl.range(1, 1 + pl.max(n - 1, 0) // 3 * 3, 3, init_values=(acc,)):
                t: pl.Tile[[16, 128], pl.FP32, pl.MemRef("pipe_t", slots=3, pipeline=True)[0], pl.Mem.Vec] = pl.tile.load(a, [i * 16, 0], [16, 128], target_memory=pl.Mem.Vec)
                s2 = pl.tile.add(s, t)
                t_1: pl.Tile[[16, 128], pl.FP32, pl.MemRef("pipe_t", slots=3, pipeline=True)[1], pl.Mem.Vec] = pl.tile.load(a, [(i + 1) * 16, 0], [16, 128], target_memory=pl.Mem.Vec)
                s2_1 = pl.tile.add(s2, t_1)
                t_2: pl.Tile[[16, 128], pl.FP32, pl.MemRef("pipe_t", slots=3, pipeline=True)[2], pl.Mem.Vec] = pl.tile.load(a, [(i + 2) * 16, 0], [16, 128], target_memory=pl.Mem.Vec)
                s2_2 = pl.tile.add(s2_1, t_2)
                r_1 = pl.yield_(s2_2)
            rem = pl.max(n - 1, 0) % 3
            if rem > 0:
                t_3: pl.Tile[[16, 128], pl.FP32, pl.MemRef("pipe_t", slots=3, pipeline=True)[0], pl.Mem.Vec] = pl.tile.load(a, [(1 + pl.max(n - 1, 0) // 3 * 3) * 16, 0], [16, 128], target_memory=pl.Mem.Vec)
                s2_3 = pl.tile.add(r_1, t_3)
                r_2 = pl.yield_(s2_3)
            else:
                r_2 = pl.yield_(r_1)
            if rem > 1:
                t_4: pl.Tile[[16, 128], pl.FP32, pl.MemRef("pipe_t", slots=3, pipeline=True)[1], pl.Mem.Vec] = pl.tile.load(a, [(1 + pl.max(n - 1, 0) // 3 * 3 + 1) * 16, 0], [16, 128], target_memory=pl.Mem.Vec)
                s2_4 = pl.tile.add(r_2, t_4)
                r_3 = pl.yield_(s2_4)
            else:
                r_3 = pl.yield_(r_2)
            pl.tile.store(r_3, [0, 0], out)
    """, scalars={"n": 4})


def test_every_trip_count_computes_the_same():
    before = parse(program_text(DYNAMIC))
    after = lower_pipeline_loops(before, PassContext(soc=A2A3)).program
    for n in range(1, 5):
        same_results(before, after, "k", seeds=(n,), scalars={"n": n})


# ----------------------------------------------------------------------------- end to end

PLATFORMS = [("ref", "PYPTO"), ("a2a3sim", "PYPTO"), ("a2a3sim", "PTOAS")]


@pl.jit
def sliding_difference(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        prev = pl.load(a, [0, 0], [16, 128])
        for i in pl.pipeline(1, 8, stage=2):
            cur = pl.load(a, [i * 16, 0], [16, 128])
            pl.store(pl.sub(cur, prev), [i * 16, 0], out)
            prev = cur
    return out


@pl.jit
def exp_rows(a: pl.Tensor, out: pl.Out[pl.Tensor], s: pl.Scalar[pl.INT32], e: pl.Scalar[pl.INT32]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.pipeline(s, e, stage=3):
            t = pl.load(a, [i * 8, 0], [8, 128])
            pl.store(pl.exp(t), [i * 8, 0], out)
    return out


@pytest.mark.parametrize("platform,planner", PLATFORMS)
def test_a_loaded_tile_carried_to_the_next_stage_is_a_sliding_window(platform, planner):
    a = torch.randn(128, 128)
    out = torch.zeros(128, 128)
    sliding_difference(a, out, config=RunConfig(platform=platform, memory_planner=planner,
                                                verification_level="ROUNDTRIP"))
    want = torch.zeros(128, 128)
    want[16:] = a[16:] - a[:-16]
    assert torch.equal(out, want)


@pytest.mark.parametrize("platform,planner", PLATFORMS)
@pytest.mark.parametrize("start,stop", [(7, 5), (3, 3), (2, 7), (0, 8)])
def test_a_dynamic_pipeline_runs_exactly_its_iterations(platform, planner, start, stop):
    a = torch.randn(64, 128)
    out = torch.zeros(64, 128)
    exp_rows(a, out, start, stop, config=RunConfig(platform=platform, memory_planner=planner))
    want = torch.zeros(64, 128)
    for i in range(start, stop):
        want[i * 8:(i + 1) * 8] = torch.exp(a[i * 8:(i + 1) * 8])
    assert torch.equal(out, want)


@pl.jit
def exp_even_rows(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.pipeline(5, stage=2):
            t = pl.load(a, [i * 4, 0], [4, 128])
            if i % 2 == 0:
                t = pl.exp(t)
            pl.store(t, [i * 4, 0], out)
    return out


@pytest.mark.parametrize("platform,planner", PLATFORMS)
def test_a_branch_over_a_stage_slot_keeps_the_slot_and_the_tail_takes_its_branch_statically(platform, planner):
    a, out = torch.randn(20, 128), torch.zeros(20, 128)
    config = RunConfig(platform=platform, memory_planner=planner)
    compiled = exp_even_rows.compile(a, out, config=config)
    text = compiled.lowered.as_python()
    assert "if True" not in text and "if False" not in text
    assert "pl.tile.move" not in text  # the branch that keeps t needs no copy of it
    exp_even_rows(a, out, config=config)
    want = a.clone()
    want[0:4], want[8:12], want[16:20] = torch.exp(a[0:4]), torch.exp(a[8:12]), torch.exp(a[16:20])
    assert torch.equal(out, want)


@pl.jit
def pairs_summed_in_an_inner_loop(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.pipeline(3, stage=2):
            acc = pl.load(a, [i * 32, 0], [16, 128])
            for j in pl.range(1, 2):
                t = pl.load(a, [i * 32 + j * 16, 0], [16, 128])
                acc = pl.add(acc, t)
            pl.store(acc, [i * 16, 0], out)
    return out


@pytest.mark.parametrize("platform,planner", PLATFORMS)
def test_a_stage_load_an_inner_loop_starts_from(platform, planner):
    a, out = torch.randn(96, 128), torch.zeros(48, 128)
    pairs_summed_in_an_inner_loop(a, out, config=RunConfig(platform=platform, memory_planner=planner,
                                                           verification_level="ROUNDTRIP"))
    assert torch.equal(out, torch.cat([a[i * 32:i * 32 + 16] + a[i * 32 + 16:i * 32 + 32] for i in range(3)]))


@pl.jit
def nested_pipelines(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        acc = pl.load(a, [0, 0], [8, 128])
        for i in pl.pipeline(4, stage=2):
            for j in pl.pipeline(3, stage=2):
                acc = pl.add(acc, pl.load(a, [8 + j * 8, 0], [8, 128]))
            pl.store(acc, [i * 8, 0], out)
    return out


@pl.jit
def last_of_inner(a: pl.Tensor, out: pl.Out[pl.Tensor], m: pl.Scalar[pl.INT32]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [8, 128])
        for i in pl.pipeline(4, stage=3):
            for j in pl.pipeline(m, stage=2):
                t = pl.load(a, [j * 8, 0], [8, 128])
        pl.store(t, [0, 0], out)
    return out


@pytest.mark.parametrize("platform,planner", PLATFORMS)
def test_each_stage_copy_of_an_outer_pipeline_reads_its_own_inner_results(platform, planner):
    config = RunConfig(platform=platform, memory_planner=planner, verification_level="ROUNDTRIP")
    a = torch.randint(-4, 5, (32, 128)).float()
    out = torch.zeros(32, 128)
    nested_pipelines(a, out, config=config)
    step = a[8:16] + a[16:24] + a[24:32]
    assert torch.equal(out, torch.cat([a[:8] + (i + 1) * step for i in range(4)]))
    out = torch.zeros(8, 128)
    last_of_inner(a, out, 3, config=config)
    assert torch.equal(out, a[16:24])


@pl.jit
def last_row_again(a: pl.Tensor, out: pl.Out[pl.Tensor], n: pl.Scalar[pl.INT64]):
    with pl.at(level=pl.Level.CORE_GROUP):
        i = 0
        for i in pl.pipeline(n, stage=2):
            t = pl.load(a, [i * 8, 0], [8, 128])
            pl.store(pl.exp(t), [i * 8, 0], out)
        pl.store(pl.load(a, [i * 8, 0], [8, 128]), [56, 0], out)
    return out


@pytest.mark.parametrize("platform,planner", PLATFORMS)
@pytest.mark.parametrize("n", [0, 3, 4])
def test_a_pipeline_index_over_an_int64_bound_is_carried_out_as_an_index(platform, planner, n):
    a, out = torch.randn(64, 128), torch.zeros(64, 128)
    last_row_again(a, out, n, config=RunConfig(platform=platform, memory_planner=planner,
                                               verification_level="ROUNDTRIP"))
    last = max(n - 1, 0)
    assert torch.equal(out[56:], a[last * 8:last * 8 + 8])
    assert torch.equal(out[:n * 8], torch.exp(a[:n * 8]))
