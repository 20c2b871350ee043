# pypto.program: matmul_b_trans
# after: AutoTileMatmulL0
# memory_planner: PYPTO
# backend: a2a3
import pypto.language as pl


@pl.program
class matmul_b_trans:
    @pl.function(type=pl.FunctionType.InCore)
    def matmul_b_trans_incore_0(self, a: pl.Tensor[[128, 1024], pl.FP16], w: pl.Tensor[[256, 1024], pl.FP16], out: pl.Out[pl.Tensor[[128, 256], pl.FP32]]):
        load = pl.tile.load(a, [0, 0], [128, 64], target_memory=pl.Mem.Mat)
        x0 = pl.tile.move(load, target_memory=pl.Mem.Left)
        load_1 = pl.tile.load(w, [0, 0], [256, 64], target_memory=pl.Mem.Mat, transpose=True)
        y0 = pl.tile.move(load_1, target_memory=pl.Mem.Right)
        acc = pl.tile.matmul(x0, y0)
        for k, (acc_1,) in pl.pipeline(1, 16, stage=2, init_values=(acc,)):
            load_2 = pl.tile.load(a, [0, k * 64], [128, 64], target_memory=pl.Mem.Mat)
            x = pl.tile.move(load_2, target_memory=pl.Mem.Left)
            load_3 = pl.tile.load(w, [0, k * 64], [256, 64], target_memory=pl.Mem.Mat, transpose=True)
            y = pl.tile.move(load_3, target_memory=pl.Mem.Right)
            acc_2 = pl.tile.matmul_acc(acc_1, x, y)
            acc_3 = pl.yield_(acc_2)
        pl.tile.store(acc_3, [0, 0], out)

    @pl.function(type=pl.FunctionType.Orchestration)
    def matmul_b_trans(self, a: pl.Tensor[[128, 1024], pl.FP16], w: pl.Tensor[[256, 1024], pl.FP16], out: pl.Out[pl.Tensor[[128, 256], pl.FP32]]) -> pl.Tensor[[128, 256], pl.FP32]:
        self.matmul_b_trans_incore_0(a, w, out)  # task args: Input, Input, OutputExisting
        return out
