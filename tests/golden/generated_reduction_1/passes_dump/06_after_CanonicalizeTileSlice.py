# pypto.program: reduction
# after: CanonicalizeTileSlice
# memory_planner: PYPTO
# backend: a2a3
import pypto.language as pl


@pl.program
class reduction:
    @pl.function(type=pl.FunctionType.InCore)
    def kernel(self, a: pl.Tensor[[1, 128], pl.FP16], out: pl.Out[pl.Tensor[[1, 128], pl.FP16]]) -> pl.Tensor[[1, 128], pl.FP16]:
        x = pl.tile.load(a, [0, 0], [1, 128], valid_shape=[1, 128], target_memory=pl.Mem.Vec)
        col_min = pl.tile.col_min(x)
        pl.tile.store(col_min, [0, 0], out)
        return out
