# pypto.program: nested
# after: CanonicalizeTileSlice
# memory_planner: PYPTO
# backend: a2a3
import pypto.language as pl


@pl.program
class nested:
    @pl.function(type=pl.FunctionType.InCore)
    def kernel(self, a: pl.Tensor[[64, 128], pl.FP32], out: pl.Out[pl.Tensor[[24, 128], pl.FP32]], last: pl.Out[pl.Tensor[[16, 128], pl.FP32]]) -> pl.Tensor[[24, 128], pl.FP32]:
        c0 = pl.tile.load(a, [0, 0], [8, 128], target_memory=pl.Mem.Vec)
        c1 = pl.tile.load(a, [8, 0], [8, 128], target_memory=pl.Mem.Vec)
        for i, (c0_iter,) in pl.pipeline(3, stage=3, init_values=(c0,)):
            t0 = pl.tile.load(a, [(i + 2) * 8, 0], [8, 128], target_memory=pl.Mem.Vec)
            t1 = pl.tile.load(a, [(i + 2) * 8, 0], [8, 128], target_memory=pl.Mem.Vec)
            for j, (c1_iter,) in pl.pipeline(1, stage=3, init_values=(c1,)):
                v10 = pl.tile.minimum(c0_iter, t1)
                t11 = pl.tile.load(a, [(i * 1 + j + 2 + 3) * 8, 0], [8, 128], target_memory=pl.Mem.Vec)
                t12 = pl.tile.load(a, [(i * 1 + j + 2 + 3) * 8, 0], [8, 128], target_memory=pl.Mem.Vec)
                pl.tile.store(c1_iter, [(i * 1 + j) * 8, 0], out)
                c1_out = pl.yield_(v10)
            p = pl.tile.minimum(c1_out, t0)
            c0_out = pl.yield_(p)
        pl.tile.store(c0_out, [0, 0], last)
        pl.tile.store(c1, [8, 0], last)
        return out
