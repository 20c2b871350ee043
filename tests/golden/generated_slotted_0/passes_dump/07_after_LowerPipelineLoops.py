# pypto.program: slotted
# after: LowerPipelineLoops
# memory_planner: PYPTO
# backend: a2a3
import pypto.language as pl


@pl.program
class slotted:
    @pl.function(type=pl.FunctionType.InCore)
    def kernel(self, a0: pl.Tensor[[48, 64], pl.INT16], out: pl.Out[pl.Tensor[[48, 64], pl.INT16]]) -> pl.Tensor[[48, 64], pl.INT16]:
        for i in pl.range(3):
            x0: pl.Tile[[16, 64], pl.INT16, pl.MemRef("ub", slots=2)[(i + 1) % 2], pl.Mem.Vec] = pl.tile.load(a0, [i * 16, 0], [16, 64], target_memory=pl.Mem.Vec)
            cmp = pl.tile.cmp(x0, x0, cmp_type=4)
            sel = pl.tile.sel(cmp, x0, x0)
            cmp_1 = pl.tile.cmp(sel, x0)
            sel_1 = pl.tile.sel(cmp_1, sel, x0)
            minimum = pl.tile.minimum(x0, sel_1)
            pl.tile.store(minimum, [i * 16, 0], out)
        return out
