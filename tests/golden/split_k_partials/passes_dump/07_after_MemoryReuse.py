# pypto.program: partials
# after: MemoryReuse
# memory_planner: PYPTO
# backend: a2a3
import pypto.language as pl


@pl.program
class partials:
    @pl.function(type=pl.FunctionType.InCore)
    def partials_incore_0(self, a: pl.Tensor[[16, 512], pl.FP16], w: pl.Tensor[[512, 256], pl.FP16], part: pl.Out[pl.Tensor[[64, 256], pl.FP32]]):
        for ks in pl.parallel(4):
            load: pl.Tile[[16, 128], pl.FP16, pl.MemRef("mem_mat_0", size=4096), pl.Mem.Mat] = pl.tile.load(a, [0, ks * 128], [16, 128], target_memory=pl.Mem.Mat)
            x: pl.Tile[[16, 128], pl.FP16, pl.MemRef("mem_left_1", size=4096), pl.Mem.Left] = pl.tile.move(load, target_memory=pl.Mem.Left)
            load_1: pl.Tile[[128, 256], pl.FP16, pl.MemRef("mem_mat_2", size=65536), pl.Mem.Mat] = pl.tile.load(w, [ks * 128, 0], [128, 256], target_memory=pl.Mem.Mat)
            y: pl.Tile[[128, 256], pl.FP16, pl.MemRef("mem_right_3", size=65536), pl.Mem.Right] = pl.tile.move(load_1, target_memory=pl.Mem.Right)
            matmul: pl.Tile[[16, 256], pl.FP32, pl.MemRef("mem_acc_4", size=16384), pl.Mem.Acc] = pl.tile.matmul(x, y)
            pl.tile.store(matmul, [ks * 16, 0], part)

    @pl.function(type=pl.FunctionType.Orchestration)
    def partials(self, a: pl.Tensor[[16, 512], pl.FP16], w: pl.Tensor[[512, 256], pl.FP16], part: pl.Out[pl.Tensor[[64, 256], pl.FP32]]) -> pl.Tensor[[64, 256], pl.FP32]:
        self.partials_incore_0(a, w, part)  # task args: Input, Input, OutputExisting
        return part
