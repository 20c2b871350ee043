# pypto.program: nested
# after: InsertAliasCopies
# memory_planner: PYPTO
# backend: a2a3
import pypto.language as pl


@pl.program
class nested:
    @pl.function(type=pl.FunctionType.InCore)
    def kernel(self, a: pl.Tensor[[64, 128], pl.FP32], out: pl.Out[pl.Tensor[[24, 128], pl.FP32]], last: pl.Out[pl.Tensor[[16, 128], pl.FP32]]) -> pl.Tensor[[24, 128], pl.FP32]:
        c0 = pl.tile.load(a, [0, 0], [8, 128], target_memory=pl.Mem.Vec)
        c1 = pl.tile.load(a, [8, 0], [8, 128], target_memory=pl.Mem.Vec)
        for i, (c0_iter,) in pl.range(0, 2, 2, init_values=(c0,)):
            t0: pl.Tile[[8, 128], pl.FP32, pl.MemRef("pipe_t0", slots=2, pipeline=True)[0], pl.Mem.Vec] = pl.tile.load(a, [(i + 2) * 8, 0], [8, 128], target_memory=pl.Mem.Vec)
            t1: pl.Tile[[8, 128], pl.FP32, pl.MemRef("pipe_t1", slots=2, pipeline=True)[0], pl.Mem.Vec] = pl.tile.load(a, [(i + 2) * 8, 0], [8, 128], target_memory=pl.Mem.Vec)
            v10_3 = pl.tile.minimum(c0_iter, t1)
            t11_3: pl.Tile[[8, 128], pl.FP32, pl.MemRef("pipe_t11", slots=3, pipeline=True)[0], pl.Mem.Vec] = pl.tile.load(a, [(i + 2 + 3) * 8, 0], [8, 128], target_memory=pl.Mem.Vec)
            t12_3: pl.Tile[[8, 128], pl.FP32, pl.MemRef("pipe_t12", slots=3, pipeline=True)[0], pl.Mem.Vec] = pl.tile.load(a, [(i + 2 + 3) * 8, 0], [8, 128], target_memory=pl.Mem.Vec)
            pl.tile.store(c1, [i * 8, 0], out)
            p = pl.tile.add(v10_3, t0)
            t0_1: pl.Tile[[8, 128], pl.FP32, pl.MemRef("pipe_t0", slots=2, pipeline=True)[1], pl.Mem.Vec] = pl.tile.load(a, [(i + 1 + 2) * 8, 0], [8, 128], target_memory=pl.Mem.Vec)
            t1_1: pl.Tile[[8, 128], pl.FP32, pl.MemRef("pipe_t1", slots=2, pipeline=True)[1], pl.Mem.Vec] = pl.tile.load(a, [(i + 1 + 2) * 8, 0], [8, 128], target_memory=pl.Mem.Vec)
            v10_3_1 = pl.tile.minimum(p, t1_1)
            t11_3_1: pl.Tile[[8, 128], pl.FP32, pl.MemRef("pipe_t11", slots=3, pipeline=True)[0], pl.Mem.Vec] = pl.tile.load(a, [(i + 1 + 2 + 3) * 8, 0], [8, 128], target_memory=pl.Mem.Vec)
            t12_3_1: pl.Tile[[8, 128], pl.FP32, pl.MemRef("pipe_t12", slots=3, pipeline=True)[0], pl.Mem.Vec] = pl.tile.load(a, [(i + 1 + 2 + 3) * 8, 0], [8, 128], target_memory=pl.Mem.Vec)
            pl.tile.store(c1, [(i + 1) * 8, 0], out)
            p_1 = pl.tile.add(v10_3_1, t0_1)
            c0_out_1 = pl.yield_(p_1)
        t0_2: pl.Tile[[8, 128], pl.FP32, pl.MemRef("pipe_t0", slots=2, pipeline=True)[0], pl.Mem.Vec] = pl.tile.load(a, [32, 0], [8, 128], target_memory=pl.Mem.Vec)
        t1_2: pl.Tile[[8, 128], pl.FP32, pl.MemRef("pipe_t1", slots=2, pipeline=True)[0], pl.Mem.Vec] = pl.tile.load(a, [32, 0], [8, 128], target_memory=pl.Mem.Vec)
        v10_3_2 = pl.tile.minimum(c0_out_1, t1_2)
        t11_3_2: pl.Tile[[8, 128], pl.FP32, pl.MemRef("pipe_t11", slots=3, pipeline=True)[0], pl.Mem.Vec] = pl.tile.load(a, [56, 0], [8, 128], target_memory=pl.Mem.Vec)
        t12_3_2: pl.Tile[[8, 128], pl.FP32, pl.MemRef("pipe_t12", slots=3, pipeline=True)[0], pl.Mem.Vec] = pl.tile.load(a, [56, 0], [8, 128], target_memory=pl.Mem.Vec)
        pl.tile.store(c1, [16, 0], out)
        p_2 = pl.tile.add(v10_3_2, t0_2)
        pl.tile.store(p_2, [0, 0], last)
        pl.tile.store(c1, [8, 0], last)
        return out
