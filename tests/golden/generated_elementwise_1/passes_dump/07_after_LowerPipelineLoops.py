# pypto.program: elementwise
# after: LowerPipelineLoops
# memory_planner: PYPTO
# backend: a2a3
import pypto.language as pl


@pl.program
class elementwise:
    @pl.function(type=pl.FunctionType.InCore)
    def kernel_incore_0(self, a0: pl.Tensor[[1, 64], pl.INT8], a1: pl.Tensor[[1, 64], pl.INT8], a2: pl.Tensor[[1, 64], pl.INT8], out: pl.Out[pl.Tensor[[1, 64], pl.INT8]]):
        for i in pl.range(1):
            x0 = pl.tile.load(a0, [i * 1, 0], [1, 64], target_memory=pl.Mem.Vec)
            x1 = pl.tile.load(a1, [i * 1, 0], [1, 64], target_memory=pl.Mem.Vec)
            x2 = pl.tile.load(a2, [i * 1, 0], [1, 64], target_memory=pl.Mem.Vec)
            col_min = pl.tile.col_min(x0)
            col_expand_sub = pl.tile.col_expand_sub(x2, col_min)
            subs = pl.tile.subs(col_expand_sub, -49)
            cmp = pl.tile.cmp(subs, x0)
            sel = pl.tile.sel(cmp, subs, x0)
            mul = pl.tile.mul(sel, x1)
            pl.tile.store(mul, [i * 1, 0], out)

    @pl.function(type=pl.FunctionType.Orchestration)
    def kernel(self, a0: pl.Tensor[[1, 64], pl.INT8], a1: pl.Tensor[[1, 64], pl.INT8], a2: pl.Tensor[[1, 64], pl.INT8], out: pl.Out[pl.Tensor[[1, 64], pl.INT8]]) -> pl.Tensor[[1, 64], pl.INT8]:
        self.kernel_incore_0(a0, a1, a2, out)  # task args: Input, Input, Input, OutputExisting
        return out
