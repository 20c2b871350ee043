# pypto.program: partials
# after: ConvertTensorToTileOps
# memory_planner: PYPTO
# backend: a2a3
import pypto.language as pl


@pl.program
class partials:
    @pl.function(type=pl.FunctionType.InCore)
    def partials_incore_0(self, a: pl.Tensor[[16, 512], pl.FP16], w: pl.Tensor[[512, 256], pl.FP16], part: pl.Out[pl.Tensor[[64, 256], pl.FP32]]):
        for ks in pl.parallel(4):
            load = pl.tile.load(a, [0, ks * 128], [16, 128], target_memory=pl.Mem.Mat)
            x = pl.tile.move(load, target_memory=pl.Mem.Left)
            load_1 = pl.tile.load(w, [ks * 128, 0], [128, 256], target_memory=pl.Mem.Mat)
            y = pl.tile.move(load_1, target_memory=pl.Mem.Right)
            matmul = pl.tile.matmul(x, y)
            pl.tile.store(matmul, [ks * 16, 0], part)

    @pl.function(type=pl.FunctionType.Orchestration)
    def partials(self, a: pl.Tensor[[16, 512], pl.FP16], w: pl.Tensor[[512, 256], pl.FP16], part: pl.Out[pl.Tensor[[64, 256], pl.FP32]]) -> pl.Tensor[[64, 256], pl.FP32]:
        self.partials_incore_0(a, w, part)  # task args: Input, Input, OutputExisting
        return part
