# pypto.program: combine
# after: InitMemRef
# memory_planner: PYPTO
# backend: a2a3
import pypto.language as pl


@pl.program
class combine:
    @pl.function(type=pl.FunctionType.InCore)
    def combine_incore_0(self, part: pl.Tensor[[64, 256], pl.FP32], out: pl.Out[pl.Tensor[[16, 256], pl.FP32]]):
        total: pl.Tile[[16, 256], pl.FP32, pl.MemRef("mem_vec_0", size=16384, reusable=True), pl.Mem.Vec] = pl.tile.load(part, [0, 0], [16, 256], target_memory=pl.Mem.Vec)
        for ks, (total_1,) in pl.range(1, 4, init_values=(total,)):
            load: pl.Tile[[16, 256], pl.FP32, pl.MemRef("mem_vec_1", size=16384, reusable=True), pl.Mem.Vec] = pl.tile.load(part, [ks * 16, 0], [16, 256], target_memory=pl.Mem.Vec)
            total_2: pl.Tile[[16, 256], pl.FP32, pl.MemRef("mem_vec_0", size=16384, reusable=True), pl.Mem.Vec] = pl.tile.add(total_1, load)
            total_3 = pl.yield_(total_2)
        pl.tile.store(total_3, [0, 0], out)

    @pl.function(type=pl.FunctionType.Orchestration)
    def combine(self, part: pl.Tensor[[64, 256], pl.FP32], out: pl.Out[pl.Tensor[[16, 256], pl.FP32]]) -> pl.Tensor[[16, 256], pl.FP32]:
        self.combine_incore_0(part, out)  # task args: Input, OutputExisting
        return out
