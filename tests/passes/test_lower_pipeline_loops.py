from helpers import check_pass, program_text, same_results

from pypto.ir import parse
from pypto.passes.context import PassContext
from pypto.passes.lower_pipeline_loops import lower_pipeline_loops


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
    after = lower_pipeline_loops(before, PassContext()).program
    for n in range(1, 5):
        same_results(before, after, "k", seeds=(n,), scalars={"n": n})
