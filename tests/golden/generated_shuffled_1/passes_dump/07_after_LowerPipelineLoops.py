# pypto.program: shuffled
# after: LowerPipelineLoops
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
        o0 = pl.tile.add(i2, i0)
        pl.tile.store(o0, [0, 0], out)
        o1 = pl.tile.add(i1, i0)
        pl.tile.store(o1, [4, 0], out)
        o2 = pl.tile.add(i1, i0)
        pl.tile.store(o2, [8, 0], out)
        return out
