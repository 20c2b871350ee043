"""PlanPtoasMemory, and the rule it serves: a program is accepted or refused alike on every
platform and planner, because every compile-time check of on-chip memory is in the pass
pipeline (``ref`` runs no codegen). Under PTOAS a pipeline sheds depth with PH-MR-001 as it
does under PYPTO, sized against what else is live in its space."""

import re

import pytest
import torch
from helpers import check_pass

import pypto.language as pl
from pypto.errors import CodegenError, MemorySpaceError
from pypto.passes.context import PassContext, Planner
from pypto.passes.allocation.plan_ptoas_memory import plan_ptoas_memory
from pypto.runtime import RunConfig
from pypto.backend import A2A3

PTOAS = PassContext(soc=A2A3, planner=Planner.PTOAS)
CONFIGS = [(platform, planner) for platform in ("ref", "a2a3sim") for planner in ("PYPTO", "PTOAS")]


def config(platform, planner, **kw):
    return RunConfig(platform=platform, memory_planner=planner, disabled_diagnostics=["PH001"], **kw)


def sentinel(*shape):
    return torch.full(shape, -777.0)


# ----------------------------------------------------------------------------- the pass


def test_a_slotted_load_gets_the_depth_that_fits_beside_the_results_it_holds_in_place():
    # exp runs in place over the dying load (as the assembler lays it out), so 2 of the 4
    # 64 KiB slots fit; counting exp's buffer on its own would leave room for one.
    got = check_pass(plan_ptoas_memory, """
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[256, 256], pl.FP32], out: pl.Out[pl.Tensor[[256, 256], pl.FP32]]):
            for i in pl.range(4):
                t: pl.Tile[[64, 256], pl.FP32, pl.MemRef("pipe_t", size=262144, slots=4, pipeline=True)[i % 4], pl.Mem.Vec] = pl.tile.load(a, [i * 64, 0], [64, 256], target_memory=pl.Mem.Vec)
                e: pl.Tile[[64, 256], pl.FP32, pl.MemRef("mem_vec_0", size=65536, reusable=True), pl.Mem.Vec] = pl.tile.exp(t)
                pl.tile.store(e, [i * 64, 0], out)
    """, """
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[256, 256], pl.FP32], out: pl.Out[pl.Tensor[[256, 256], pl.FP32]]):
            for i in pl.range(4):
                t: pl.Tile[[64, 256], pl.FP32, pl.MemRef("pipe_t", size=131072, slots=2)[i % 2], pl.Mem.Vec] = pl.tile.load(a, [i * 64, 0], [64, 256], target_memory=pl.Mem.Vec)
                e: pl.Tile[[64, 256], pl.FP32, pl.MemRef("mem_vec_0", size=65536, reusable=True), pl.Mem.Vec] = pl.tile.exp(t)
                pl.tile.store(e, [i * 64, 0], out)
    """, PTOAS)
    (hint,) = got.diagnostics
    assert hint.code == "PH-MR-001" and hint.rule == "PlanPtoasMemory"
    assert "only 2 of 4 buffers fit (65536 B per stage, 188416 B free)" in hint.message


def test_a_tile_live_through_the_loop_leaves_the_slots_less_room():
    # the whole space would hold 2 slots; beside the 64 KiB bias, only one: a plain buffer
    got = check_pass(plan_ptoas_memory, """
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[256, 256], pl.FP32], out: pl.Out[pl.Tensor[[256, 256], pl.FP32]]):
            bias: pl.Tile[[64, 256], pl.FP32, pl.MemRef("mem_vec_0", size=65536, reusable=True), pl.Mem.Vec] = pl.tile.load(a, [0, 0], [64, 256], target_memory=pl.Mem.Vec)
            for i in pl.range(4):
                t: pl.Tile[[64, 256], pl.FP32, pl.MemRef("pipe_t", size=131072, slots=2, pipeline=True)[i % 2], pl.Mem.Vec] = pl.tile.load(a, [i * 64, 0], [64, 256], target_memory=pl.Mem.Vec)
                e: pl.Tile[[64, 256], pl.FP32, pl.MemRef("mem_vec_1", size=65536, reusable=True), pl.Mem.Vec] = pl.tile.add(t, bias)
                pl.tile.store(e, [i * 64, 0], out)
    """, """
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[256, 256], pl.FP32], out: pl.Out[pl.Tensor[[256, 256], pl.FP32]]):
            bias: pl.Tile[[64, 256], pl.FP32, pl.MemRef("mem_vec_0", size=65536, reusable=True), pl.Mem.Vec] = pl.tile.load(a, [0, 0], [64, 256], target_memory=pl.Mem.Vec)
            for i in pl.range(4):
                t: pl.Tile[[64, 256], pl.FP32, pl.MemRef("pipe_t", size=65536), pl.Mem.Vec] = pl.tile.load(a, [i * 64, 0], [64, 256], target_memory=pl.Mem.Vec)
                e: pl.Tile[[64, 256], pl.FP32, pl.MemRef("mem_vec_1", size=65536, reusable=True), pl.Mem.Vec] = pl.tile.add(t, bias)
                pl.tile.store(e, [i * 64, 0], out)
    """, PTOAS)
    (hint,) = got.diagnostics
    assert "only 1 of 2 buffers fit (65536 B per stage, 122880 B free after 65536 B reserved)" in hint.message


# ----------------------------------------------------------------------------- every platform, both planners


@pl.jit
def huge(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [512, 512])  # 1 MiB: Vec holds 184 KiB  MARK-huge
        pl.store(pl.exp(t), [0, 0], out)
    return out


@pytest.mark.parametrize("platform, planner", CONFIGS)
def test_a_tile_too_large_for_vec_is_refused_everywhere_at_its_line(platform, planner):
    with pytest.raises(MemorySpaceError) as info:
        huge(torch.randn(512, 512), sentinel(512, 512), config=config(platform, planner))
    text = str(info.value)
    assert "Vec cannot hold the tiles of 'huge_incore_0': 1048576 B needed, 188416 B available" in text
    assert f"{__file__}:" in text and "MARK-huge" in text


def piped(stage: int, step: int):
    """``pl.pipeline`` over 32 KiB loads beside a carried 32 KiB accumulator and the 32 KiB
    log of each load: 3 stages fit. With a step of 2 LowerPipelineLoops replicates the body
    on both planners; with 1, PTOAS slots the loads instead."""
    @pl.jit
    def kernel(a: pl.Tensor, out: pl.Out[pl.Tensor], accout: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            acc = pl.load(a, [0, 0], [32, 256])
            for i in pl.pipeline(0, 10, step, stage=stage):
                x = pl.load(a, [i * 32, 0], [32, 256])
                pl.store(pl.log(x), [i * 32, 0], out)
                acc = pl.maximum(acc, x)
            pl.store(acc, [0, 0], accout)
        return out
    return kernel


def run_piped(kernel, step, cfg):
    a = torch.rand(320, 256) + 0.5
    out, accout = sentinel(320, 256), sentinel(32, 256)
    compiled = kernel.compile(a, out, accout, config=cfg)
    compiled.run(a, out, accout)
    rows = torch.arange(0, 10, step)
    blocks = a.view(10, 32, 256)[rows]
    want = sentinel(10, 32, 256)
    want[rows] = torch.log(blocks)
    assert torch.equal(out, want.view(320, 256))
    assert torch.equal(accout, torch.maximum(a[:32], blocks.amax(0)))
    return compiled


def without_rule(line: str) -> str:
    return re.sub(r"^\[perf_hint PH-MR-001\] \w+: ", "", line)


@pytest.mark.parametrize("step", [1, 2])
def test_a_pipeline_deeper_than_fits_gets_the_same_hint_and_depth_everywhere(step, tmp_path):
    hints = {}
    for platform, planner in CONFIGS:
        compiled = run_piped(piped(4, step), step, config(platform, planner, output_dir=tmp_path / platform / planner))
        (hint,) = compiled.perf_hints
        assert hint.code == "PH-MR-001"
        assert hint.rule == ("MemoryReuse" if planner == "PYPTO" else "PlanPtoasMemory")
        hints[platform, planner] = without_rule(hint.line())
        if planner == "PTOAS" and step == 1:  # the slots the region gets are in the program
            assert re.search(r'pl\.MemRef\("pipe_x", size=98304, slots=3\)\[i % 3\]', compiled.lowered.as_python())
    assert len(set(hints.values())) == 1, hints
    line = next(iter(hints.values()))
    assert "only 3 of 4 buffers fit (32768 B per stage, 122880 B free after 65536 B reserved)" in line
    assert "reduce the pipeline depth (e.g. `pl.pipeline(stage=)`) to 3" in line


@pytest.mark.parametrize("step", [1, 2])
@pytest.mark.parametrize("platform, planner", CONFIGS)
def test_a_pipeline_that_fits_keeps_its_depth_and_gets_no_hint(platform, planner, step, tmp_path):
    compiled = run_piped(piped(3, step), step, config(platform, planner, output_dir=tmp_path))
    assert compiled.perf_hints == ()
    if planner == "PTOAS" and step == 1:
        assert re.search(r'pl\.MemRef\("pipe_x", size=98304, slots=3\)\[i % 3\]', compiled.lowered.as_python())


NT, TR, TC = 8, 64, 128


@pl.jit
def colive(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(NT):
            x: pl.Tile[[TR, TC], pl.FP32, pl.MemRef("ring", slots=2)[i % 2], pl.Mem.Vec] = pl.load(a, [i * TR, 0], [TR, TC])
            y: pl.Tile[[TR, TC], pl.FP32, pl.MemRef("ring", slots=2)[(i + 1) % 2], pl.Mem.Vec] = pl.load(b, [i * TR, 0], [TR, TC])  # noqa: E501  MARK-second
            pl.store(pl.add(x, y), [i * TR, 0], out)
    return out


def colive_args():
    g = torch.Generator().manual_seed(3)
    return torch.randn(NT * TR, TC, generator=g), torch.randn(NT * TR, TC, generator=g), sentinel(NT * TR, TC)


@pytest.mark.parametrize("platform, planner", CONFIGS)
def test_co_live_slots_of_one_region_are_refused_under_ptoas_on_every_platform(platform, planner):
    a, b, out = colive_args()
    if planner == "PTOAS":
        with pytest.raises(CodegenError) as info:
            colive(a, b, out, config=config(platform, planner))
        text = str(info.value)
        assert "two of its slots are live at once inside a loop ('x' and 'y')" in text
        assert "MARK-second" in text and 'memory_planner="PYPTO"' in text
        assert torch.equal(out, sentinel(NT * TR, TC))  # refused before anything ran
    else:
        colive(a, b, out, config=config(platform, planner))
        assert torch.equal(out, a + b)


@pytest.mark.parametrize("platform", ["ref", "a2a3sim"])
def test_the_unsafe_switch_lets_them_through_and_only_the_simulator_races(platform):
    a, b, out = colive_args()
    colive(a, b, out, config=config(platform, "PTOAS", unsafe_allow_colive_slots=True))
    assert torch.equal(out, a + b) == (platform == "ref")


@pytest.mark.parametrize("name", ["PH-MR-001", "PipelineDepth", "MemoryReuse", "PlanPtoasMemory"])
@pytest.mark.parametrize("planner", ["PYPTO", "PTOAS"])
def test_the_depth_hint_is_silenced_alike_on_both_planners(planner, name, tmp_path):
    cfg = RunConfig(platform="ref", memory_planner=planner, disabled_diagnostics=["PH001", name], output_dir=tmp_path)
    compiled = run_piped(piped(4, 1), 1, cfg)
    assert compiled.perf_hints == ()
    if planner == "PTOAS":  # silenced, not skipped: the region still gets the slots that fit
        assert "slots=3)[i % 3]" in compiled.lowered.as_python()
