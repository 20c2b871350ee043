from helpers import check_pass, program_text

from pypto.ir import parse
from pypto.passes.context import PassContext, Planner
from pypto.passes.lower_pipeline_to_slots import lower_pipeline_to_slots

PTOAS = PassContext(planner=Planner.PTOAS)


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
                t: pl.Tile[[16, 128], pl.FP32, pl.MemRef("pipe_t", slots=2)[i % 2], pl.Mem.Vec] = pl.tile.load(a, [i * 16, 0], [16, 128], target_memory=pl.Mem.Vec)
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
