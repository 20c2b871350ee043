# pypto.program: nested
# after: InitMemRef
# memory_planner: PYPTO
# backend: a2a3
import pypto.language as pl


@pl.program
class nested:
    @pl.function(type=pl.FunctionType.InCore)
    def kernel(self, a: pl.Tensor[[64, 128], pl.FP32], out: pl.Out[pl.Tensor[[24, 128], pl.FP32]], last: pl.Out[pl.Tensor[[16, 128], pl.FP32]]) -> pl.Tensor[[24, 128], pl.FP32]:
        c0: pl.Tile[[8, 128], pl.FP32, pl.MemRef("mem_vec_0", size=4096, reusable=True), pl.Mem.Vec] = pl.tile.load(a, [0, 0], [8, 128], target_memory=pl.Mem.Vec)
        c1: pl.Tile[[8, 128], pl.FP32, pl.MemRef("mem_vec_1", size=4096, reusable=True), pl.Mem.Vec] = pl.tile.load(a, [8, 0], [8, 128], target_memory=pl.Mem.Vec)
        for i, (c0_iter,) in pl.range(0, 3, 3, init_values=(c0,)):
            t0: pl.Tile[[8, 128], pl.FP32, pl.MemRef("pipe_t0", size=12288, slots=3, pipeline=True)[0], pl.Mem.Vec] = pl.tile.load(a, [(i + 2) * 8, 0], [8, 128], target_memory=pl.Mem.Vec)
            t1: pl.Tile[[8, 128], pl.FP32, pl.MemRef("pipe_t1", size=12288, slots=3, pipeline=True)[0], pl.Mem.Vec] = pl.tile.load(a, [(i + 2) * 8, 0], [8, 128], target_memory=pl.Mem.Vec)
            v10_3: pl.Tile[[8, 128], pl.FP32, pl.MemRef("mem_vec_2", size=4096, reusable=True), pl.Mem.Vec] = pl.tile.minimum(c0_iter, t1)
            t11_3: pl.Tile[[8, 128], pl.FP32, pl.MemRef("pipe_t11", size=12288, slots=3, pipeline=True)[0], pl.Mem.Vec] = pl.tile.load(a, [(i + 2 + 3) * 8, 0], [8, 128], target_memory=pl.Mem.Vec)
            t12_3: pl.Tile[[8, 128], pl.FP32, pl.MemRef("pipe_t12", size=12288, slots=3, pipeline=True)[0], pl.Mem.Vec] = pl.tile.load(a, [(i + 2 + 3) * 8, 0], [8, 128], target_memory=pl.Mem.Vec)
            pl.tile.store(c1, [i * 8, 0], out)
            p: pl.Tile[[8, 128], pl.FP32, pl.MemRef("mem_vec_3", size=4096, reusable=True), pl.Mem.Vec] = pl.tile.minimum(v10_3, t0)
            t0_1: pl.Tile[[8, 128], pl.FP32, pl.MemRef("pipe_t0", size=12288, slots=3, pipeline=True)[1], pl.Mem.Vec] = pl.tile.load(a, [(i + 1 + 2) * 8, 0], [8, 128], target_memory=pl.Mem.Vec)
            t1_1: pl.Tile[[8, 128], pl.FP32, pl.MemRef("pipe_t1", size=12288, slots=3, pipeline=True)[1], pl.Mem.Vec] = pl.tile.load(a, [(i + 1 + 2) * 8, 0], [8, 128], target_memory=pl.Mem.Vec)
            v10_3_1: pl.Tile[[8, 128], pl.FP32, pl.MemRef("mem_vec_4", size=4096, reusable=True), pl.Mem.Vec] = pl.tile.minimum(p, t1_1)
            t11_3_1: pl.Tile[[8, 128], pl.FP32, pl.MemRef("pipe_t11", size=12288, slots=3, pipeline=True)[0], pl.Mem.Vec] = pl.tile.load(a, [(i + 1 + 2 + 3) * 8, 0], [8, 128], target_memory=pl.Mem.Vec)
            t12_3_1: pl.Tile[[8, 128], pl.FP32, pl.MemRef("pipe_t12", size=12288, slots=3, pipeline=True)[0], pl.Mem.Vec] = pl.tile.load(a, [(i + 1 + 2 + 3) * 8, 0], [8, 128], target_memory=pl.Mem.Vec)
            pl.tile.store(c1, [(i + 1) * 8, 0], out)
            p_1: pl.Tile[[8, 128], pl.FP32, pl.MemRef("mem_vec_5", size=4096, reusable=True), pl.Mem.Vec] = pl.tile.minimum(v10_3_1, t0_1)
            t0_2: pl.Tile[[8, 128], pl.FP32, pl.MemRef("pipe_t0", size=12288, slots=3, pipeline=True)[2], pl.Mem.Vec] = pl.tile.load(a, [(i + 2 + 2) * 8, 0], [8, 128], target_memory=pl.Mem.Vec)
            t1_2: pl.Tile[[8, 128], pl.FP32, pl.MemRef("pipe_t1", size=12288, slots=3, pipeline=True)[2], pl.Mem.Vec] = pl.tile.load(a, [(i + 2 + 2) * 8, 0], [8, 128], target_memory=pl.Mem.Vec)
            v10_3_2: pl.Tile[[8, 128], pl.FP32, pl.MemRef("mem_vec_6", size=4096, reusable=True), pl.Mem.Vec] = pl.tile.minimum(p_1, t1_2)
            t11_3_2: pl.Tile[[8, 128], pl.FP32, pl.MemRef("pipe_t11", size=12288, slots=3, pipeline=True)[0], pl.Mem.Vec] = pl.tile.load(a, [(i + 2 + 2 + 3) * 8, 0], [8, 128], target_memory=pl.Mem.Vec)
            t12_3_2: pl.Tile[[8, 128], pl.FP32, pl.MemRef("pipe_t12", size=12288, slots=3, pipeline=True)[0], pl.Mem.Vec] = pl.tile.load(a, [(i + 2 + 2 + 3) * 8, 0], [8, 128], target_memory=pl.Mem.Vec)
            pl.tile.store(c1, [(i + 2) * 8, 0], out)
            p_2: pl.Tile[[8, 128], pl.FP32, pl.MemRef("mem_vec_0", size=4096, reusable=True), pl.Mem.Vec] = pl.tile.minimum(v10_3_2, t0_2)
            c0_out_1 = pl.yield_(p_2)
        pl.tile.store(c0_out_1, [0, 0], last)
        pl.tile.store(c1, [8, 0], last)
        return out
