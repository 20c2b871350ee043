# pypto.program: slotted
# after: InitMemRef
# memory_planner: PYPTO
# backend: a2a3
import pypto.language as pl


@pl.program
class slotted:
    @pl.function(type=pl.FunctionType.InCore)
    def kernel(self, a0: pl.Tensor[[32, 64], pl.INT8], out: pl.Out[pl.Tensor[[32, 64], pl.INT8]]) -> pl.Tensor[[32, 64], pl.INT8]:
        for i in pl.range(2):
            x0: pl.Tile[[16, 64], pl.INT8, pl.MemRef("ub", size=3072, slots=3)[(i + 1) % 3], pl.Mem.Vec] = pl.tile.load(a0, [i * 16, 0], [16, 64], target_memory=pl.Mem.Vec)
            row_sum: pl.Tile[[16, 1], pl.INT8, pl.MemRef("mem_vec_0", size=128, reusable=True), pl.Mem.Vec] = pl.tile.row_sum(x0)
            row_expand_add: pl.Tile[[16, 64], pl.INT8, pl.MemRef("mem_vec_1", size=1024, reusable=True), pl.Mem.Vec] = pl.tile.row_expand_add(x0, row_sum)
            mul: pl.Tile[[16, 64], pl.INT8, pl.MemRef("mem_vec_2", size=1024, reusable=True), pl.Mem.Vec] = pl.tile.mul(x0, row_expand_add)
            minimums: pl.Tile[[16, 64], pl.INT8, pl.MemRef("mem_vec_3", size=1024, reusable=True), pl.Mem.Vec] = pl.tile.minimums(mul, -11)
            pl.tile.store(minimums, [i * 16, 0], out)
        return out
