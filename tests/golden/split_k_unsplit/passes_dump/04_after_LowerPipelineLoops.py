# pypto.program: unsplit
# after: LowerPipelineLoops
# memory_planner: PYPTO
# backend: a2a3
import pypto.language as pl


@pl.program
class unsplit:
    @pl.function(type=pl.FunctionType.InCore)
    def unsplit_incore_0(self, a: pl.Tensor[[16, 512], pl.FP16], w: pl.Tensor[[512, 256], pl.FP16], out: pl.Out[pl.Tensor[[16, 256], pl.FP32]]):
        load = pl.tile.load(a, [0, 0], [16, 128], target_memory=pl.Mem.Mat)
        x = pl.tile.move(load, target_memory=pl.Mem.Left)
        load_1 = pl.tile.load(w, [0, 0], [128, 256], target_memory=pl.Mem.Mat)
        y = pl.tile.move(load_1, target_memory=pl.Mem.Right)
        acc = pl.tile.matmul(x, y)
        for k, (acc_1,) in pl.range(1, 4, init_values=(acc,)):
            load_2 = pl.tile.load(a, [0, k * 128], [16, 128], target_memory=pl.Mem.Mat)
            x_1 = pl.tile.move(load_2, target_memory=pl.Mem.Left)
            load_3 = pl.tile.load(w, [k * 128, 0], [128, 256], target_memory=pl.Mem.Mat)
            y_1 = pl.tile.move(load_3, target_memory=pl.Mem.Right)
            acc_2 = pl.tile.matmul_acc(acc_1, x_1, y_1)
            acc_3 = pl.yield_(acc_2)
        pl.tile.store(acc_3, [0, 0], out)

    @pl.function(type=pl.FunctionType.Orchestration)
    def unsplit(self, a: pl.Tensor[[16, 512], pl.FP16], w: pl.Tensor[[512, 256], pl.FP16], out: pl.Out[pl.Tensor[[16, 256], pl.FP32]]) -> pl.Tensor[[16, 256], pl.FP32]:
        self.unsplit_incore_0(a, w, out)  # task args: Input, Input, OutputExisting
        return out
