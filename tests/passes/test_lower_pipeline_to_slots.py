import torch
from helpers import check_pass, program_text
from test_memory_reuse import deep  # 64 KiB per stage, stage=4: two fit

import pypto.language as pl
from pypto.lang import parse
from pypto.passes.context import PassContext, Planner
from pypto.passes.lower_pipeline_to_slots import lower_pipeline_to_slots
from pypto.runtime import RunConfig
from pypto.backend import A2A3

PTOAS = PassContext(soc=A2A3, planner=Planner.PTOAS)


def test_top_level_loads_rotate_through_slots_and_the_loop_is_demoted():
    check_pass(lower_pipeline_to_slots, """
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[80, 128], pl.FP32], out: pl.Out[pl.Tensor[[80, 128], pl.FP32]]):
            for i in pl.pipeline(5, stage=2):
                t = pl.tile.load(a, [i * 16, 0], [16, 128], target_memory=pl.Mem.Vec)
                pl.tile.store(pl.tile.exp(t), [i * 16, 0], out)
    """, """
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[80, 128], pl.FP32], out: pl.Out[pl.Tensor[[80, 128], pl.FP32]]):
            for i in pl.range(5):
                t: pl.Tile[[16, 128], pl.FP32, pl.MemRef("pipe_t", slots=2, pipeline=True)[i % 2], pl.Mem.Vec] = pl.tile.load(a, [i * 16, 0], [16, 128], target_memory=pl.Mem.Vec)
                exp = pl.tile.exp(t)
                pl.tile.store(exp, [i * 16, 0], out)
    """, PTOAS)


def test_loops_a_slot_cannot_express_are_left_alone():
    for header in ("pl.pipeline(1, 5, stage=2)", "pl.pipeline(0, 6, 2, stage=2)", "pl.pipeline(5, stage=17)"):
        program = parse(program_text(f"""
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, a: pl.Tensor[[160, 128], pl.FP32], out: pl.Out[pl.Tensor[[160, 128], pl.FP32]]):
                for i in {header}:
                    t = pl.tile.load(a, [i * 16, 0], [16, 128], target_memory=pl.Mem.Vec)
                    pl.tile.store(t, [i * 16, 0], out)
        """))
        assert lower_pipeline_to_slots(program, PTOAS).program == program


def test_under_ptoas_a_pipeline_deeper_than_fits_gets_the_slots_that_fit(tmp_path):
    a, out = torch.randn(512, 256), torch.zeros(512, 256)
    compiled = deep.compile(a, out, config=RunConfig(memory_planner="PTOAS", output_dir=tmp_path))
    (hint,) = compiled.perf_hints
    assert hint.code == "PH-MR-001" and hint.rule == "PlanPtoasMemory"
    assert "requested depth 4" in hint.line() and "only 2 of 4 buffers fit" in hint.line()
    assert "slots=2)[i % 2]" in compiled.lowered.as_python()
    compiled.run(a, out)
    assert torch.equal(out, torch.exp(a))


@pl.jit
def reload_or_scale(a: pl.Tensor, out: pl.Out[pl.Tensor], n: pl.Scalar[pl.INT32]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [16, 128])
        for i in pl.pipeline(4, stage=2):
            t = pl.load(a, [i * 16, 0], [16, 128])  # carried out through the if's result
            if n == 0:
                t = pl.muls(t, 2.0)
        pl.store(t, [0, 0], out)
    return out


def test_a_load_carried_out_through_an_if_keeps_one_place():
    a = torch.randn(64, 128)
    for n in (0, 1):
        want = a[48:] * 2 if n == 0 else a[48:]
        for planner in ("PYPTO", "PTOAS"):
            out = torch.zeros(16, 128)
            reload_or_scale(a, out, n, config=RunConfig(memory_planner=planner))
            assert torch.equal(out, want), (n, planner)
