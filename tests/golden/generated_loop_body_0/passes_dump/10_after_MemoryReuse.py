# pypto.program: loop_body
# after: MemoryReuse
# memory_planner: PYPTO
# backend: a2a3
import pypto.language as pl


@pl.program
class loop_body:
    @pl.function(type=pl.FunctionType.InCore)
    def kernel(self, a: pl.Tensor[[32, 128], pl.FP32], out: pl.Out[pl.Tensor[[8, 128], pl.FP32]], keep: pl.Out[pl.Tensor[[24, 128], pl.FP32]], after: pl.Out[pl.Tensor[[16, 128], pl.FP32]]) -> pl.Tensor[[8, 128], pl.FP32]:
        c0: pl.Tile[[8, 128], pl.FP32, pl.MemRef("mem_vec_0", size=4096), pl.Mem.Vec] = pl.tile.load(a, [0, 0], [8, 128], target_memory=pl.Mem.Vec)
        c1: pl.Tile[[8, 128], pl.FP32, pl.MemRef("mem_vec_1", size=4096), pl.Mem.Vec] = pl.tile.load(a, [8, 0], [8, 128], target_memory=pl.Mem.Vec)
        c2: pl.Tile[[8, 128], pl.FP32, pl.MemRef("mem_vec_2", size=4096), pl.Mem.Vec] = pl.tile.load(a, [16, 0], [8, 128], target_memory=pl.Mem.Vec)
        pl.tile.store(c1, [0, 0], after)
        p: pl.Tile[[8, 128], pl.FP32, pl.MemRef("mem_vec_3", size=4096), pl.Mem.Vec] = pl.tile.minimum(c1, c1)
        pl.tile.store(p, [8, 0], after)
        pl.tile.store(c0, [0, 0], keep)
        pl.tile.store(c1, [8, 0], keep)
        pl.tile.store(c2, [16, 0], keep)
        return out
