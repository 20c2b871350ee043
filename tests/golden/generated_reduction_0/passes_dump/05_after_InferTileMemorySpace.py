# pypto.program: reduction
# after: InferTileMemorySpace
# memory_planner: PYPTO
# backend: a2a3
import pypto.language as pl


@pl.program
class reduction:
    @pl.function(type=pl.FunctionType.InCore)
    def kernel(self, a: pl.Tensor[[11, 128], pl.INT32], out: pl.Out[pl.Tensor[[11, 1], pl.INT32]]) -> pl.Tensor[[11, 1], pl.INT32]:
        x = pl.tile.load(a, [0, 0], [16, 128], valid_shape=[11, 128], target_memory=pl.Mem.Vec)
        row_min = pl.tile.row_min(x)
        pl.tile.store(row_min, [0, 0], out)
        return out
