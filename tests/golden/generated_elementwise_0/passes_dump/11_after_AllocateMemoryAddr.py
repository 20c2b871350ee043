# pypto.program: elementwise
# after: AllocateMemoryAddr
# memory_planner: PYPTO
# backend: a2a3
import pypto.language as pl


@pl.program
class elementwise:
    @pl.function(type=pl.FunctionType.InCore)
    def kernel_incore_0(self, a0: pl.Tensor[[1, 64], pl.INT8], a1: pl.Tensor[[1, 64], pl.INT8], a2: pl.Tensor[[1, 64], pl.INT8], out: pl.Out[pl.Tensor[[1, 64], pl.INT8]]):
        for i in pl.range(1):
            x0: pl.Tile[[1, 64], pl.INT8, pl.MemRef("mem_vec_0", 0, 128), pl.Mem.Vec] = pl.tile.load(a0, [i * 1, 0], [1, 64], target_memory=pl.Mem.Vec)
            x1: pl.Tile[[1, 64], pl.INT8, pl.MemRef("mem_vec_1", 128, 128), pl.Mem.Vec] = pl.tile.load(a1, [i * 1, 0], [1, 64], target_memory=pl.Mem.Vec)
            x2: pl.Tile[[1, 64], pl.INT8, pl.MemRef("mem_vec_2", 256, 128), pl.Mem.Vec] = pl.tile.load(a2, [i * 1, 0], [1, 64], target_memory=pl.Mem.Vec)
            col_min: pl.Tile[[1, 64], pl.INT8, pl.MemRef("mem_vec_3", 384, 128), pl.Mem.Vec] = pl.tile.col_min(x0)
            col_expand_sub: pl.Tile[[1, 64], pl.INT8, pl.MemRef("mem_vec_2", 256, 128), pl.Mem.Vec] = pl.tile.col_expand_sub(x2, col_min)
            subs: pl.Tile[[1, 64], pl.INT8, pl.MemRef("mem_vec_2", 256, 128), pl.Mem.Vec] = pl.tile.subs(col_expand_sub, -49)
            cmp: pl.Tile[[1, 32], pl.UINT8, pl.MemRef("mem_vec_3", 384, 128), pl.Mem.Vec] = pl.tile.cmp(subs, x0, cmp_type=1)
            sel: pl.Tile[[1, 64], pl.INT8, pl.MemRef("mem_vec_2", 256, 128), pl.Mem.Vec] = pl.tile.sel(cmp, subs, x0)
            mul: pl.Tile[[1, 64], pl.INT8, pl.MemRef("mem_vec_1", 128, 128), pl.Mem.Vec] = pl.tile.mul(x1, sel)
            pl.tile.store(mul, [i * 1, 0], out)

    @pl.function(type=pl.FunctionType.Orchestration)
    def kernel(self, a0: pl.Tensor[[1, 64], pl.INT8], a1: pl.Tensor[[1, 64], pl.INT8], a2: pl.Tensor[[1, 64], pl.INT8], out: pl.Out[pl.Tensor[[1, 64], pl.INT8]]) -> pl.Tensor[[1, 64], pl.INT8]:
        self.kernel_incore_0(a0, a1, a2, out)  # task args: Input, Input, Input, OutputExisting
        return out
