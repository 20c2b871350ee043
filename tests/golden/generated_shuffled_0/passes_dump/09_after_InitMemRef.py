# pypto.program: shuffled
# after: InitMemRef
# memory_planner: PYPTO
# backend: a2a3
import pypto.language as pl


@pl.program
class shuffled:
    @pl.function(type=pl.FunctionType.InCore)
    def kernel(self, a: pl.Tensor[[16, 64], pl.INT32], out: pl.Out[pl.Tensor[[12, 64], pl.INT32]]) -> pl.Tensor[[12, 64], pl.INT32]:
        i0: pl.Tile[[4, 64], pl.INT32, pl.MemRef("mem_vec_0", size=1024, reusable=True), pl.Mem.Vec] = pl.tile.load(a, [0, 0], [4, 64], target_memory=pl.Mem.Vec)
        i1: pl.Tile[[4, 64], pl.INT32, pl.MemRef("mem_vec_1", size=1024, reusable=True), pl.Mem.Vec] = pl.tile.load(a, [4, 0], [4, 64], target_memory=pl.Mem.Vec)
        i2: pl.Tile[[4, 64], pl.INT32, pl.MemRef("mem_vec_2", size=1024, reusable=True), pl.Mem.Vec] = pl.tile.load(a, [8, 0], [4, 64], target_memory=pl.Mem.Vec)
        o0: pl.Tile[[4, 64], pl.INT32, pl.MemRef("mem_vec_3", size=1024, reusable=True), pl.Mem.Vec] = pl.tile.add(i1, i0)
        pl.tile.store(o0, [0, 0], out)
        o1: pl.Tile[[4, 64], pl.INT32, pl.MemRef("mem_vec_4", size=1024, reusable=True), pl.Mem.Vec] = pl.tile.add(i1, i0)
        pl.tile.store(o1, [4, 0], out)
        o2: pl.Tile[[4, 64], pl.INT32, pl.MemRef("mem_vec_5", size=1024, reusable=True), pl.Mem.Vec] = pl.tile.add(i1, i0)
        pl.tile.store(o2, [8, 0], out)
        return out
