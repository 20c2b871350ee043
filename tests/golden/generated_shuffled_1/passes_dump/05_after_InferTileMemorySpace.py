# pypto.program: shuffled
# after: InferTileMemorySpace
# memory_planner: PYPTO
# backend: a2a3
import pypto.language as pl


@pl.program
class shuffled:
    @pl.function(type=pl.FunctionType.InCore)
    def kernel(self, a: pl.Tensor[[16, 64], pl.INT32], out: pl.Out[pl.Tensor[[12, 64], pl.INT32]]) -> pl.Tensor[[12, 64], pl.INT32]:
        i0 = pl.tile.load(a, [0, 0], [4, 64], target_memory=pl.Mem.Vec)
        i1 = pl.tile.load(a, [4, 0], [4, 64], target_memory=pl.Mem.Vec)
        i2 = pl.tile.load(a, [8, 0], [4, 64], target_memory=pl.Mem.Vec)
        for i, (i2_iter, i1_iter, i1_iter_1) in pl.pipeline(0, stage=2, init_values=(i2, i1, i1)):
            v0 = pl.tile.add(i1_iter, i1_iter_1)
            t2 = pl.tile.load(a, [(i + 3) * 4, 0], [4, 64], target_memory=pl.Mem.Vec)
            v2 = pl.tile.minimum(i1_iter, t2)
            i2_out, i1_out, i1_iter_1_out = pl.yield_(v0, i2_iter, v2)
        o0 = pl.tile.add(i2_out, i0)
        pl.tile.store(o0, [0, 0], out)
        o1 = pl.tile.add(i1_out, i0)
        pl.tile.store(o1, [4, 0], out)
        o2 = pl.tile.add(i1_iter_1_out, i0)
        pl.tile.store(o2, [8, 0], out)
        return out
