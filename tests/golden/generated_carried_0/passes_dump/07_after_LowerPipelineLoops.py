# pypto.program: carried
# after: LowerPipelineLoops
# memory_planner: PYPTO
# backend: a2a3
import pypto.language as pl


@pl.program
class carried:
    @pl.function(type=pl.FunctionType.InCore)
    def kernel(self, a: pl.Tensor[[2, 128], pl.INT32], out: pl.Out[pl.Tensor[[1, 128], pl.INT32]]) -> pl.Tensor[[1, 128], pl.INT32]:
        acc = pl.tile.load(a, [0, 0], [1, 128], target_memory=pl.Mem.Vec)
        for i, (acc_iter,) in pl.range(1, 2, init_values=(acc,)):
            t = pl.tile.load(a, [i * 1, 0], [1, 128], target_memory=pl.Mem.Vec)
            acc_1 = pl.tile.minimum(acc_iter, t)
            acc_out = pl.yield_(acc_1)
        pl.tile.store(acc_out, [0, 0], out)
        return out
