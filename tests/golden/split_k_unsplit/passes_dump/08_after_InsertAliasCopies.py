# pypto.program: unsplit
# after: InsertAliasCopies
# memory_planner: PYPTO
# backend: a2a3
import pypto.language as pl


@pl.program
class unsplit:
    @pl.function(type=pl.FunctionType.InCore)
    def unsplit_incore_0(self, a: pl.Tensor[[64, 4096], pl.FP32], b: pl.Tensor[[4096, 64], pl.FP32], c: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
        a_tile = pl.tile.load(a, [0, 0], [64, 256], target_memory=pl.Mem.Mat)
        b_tile = pl.tile.load(b, [0, 0], [256, 64], target_memory=pl.Mem.Mat)
        a_tile_Left = pl.tile.move(a_tile, target_memory=pl.Mem.Left)
        b_tile_Right = pl.tile.move(b_tile, target_memory=pl.Mem.Right)
        acc = pl.tile.matmul(a_tile_Left, b_tile_Right)
        for ki, (acc_iter,) in pl.range(256, 4096, 256, init_values=(acc,)):
            a_tile_1 = pl.tile.load(a, [0, ki], [64, 256], target_memory=pl.Mem.Mat)
            b_tile_1 = pl.tile.load(b, [ki, 0], [256, 64], target_memory=pl.Mem.Mat)
            a_tile_1_Left = pl.tile.move(a_tile_1, target_memory=pl.Mem.Left)
            b_tile_1_Right = pl.tile.move(b_tile_1, target_memory=pl.Mem.Right)
            acc_1 = pl.tile.matmul_acc(acc_iter, a_tile_1_Left, b_tile_1_Right)
            acc_out = pl.yield_(acc_1)
        pl.tile.store(acc_out, [0, 0], c)
        c_1: pl.Tensor[[64, 64], pl.FP32] = c
        return c_1

    @pl.function(type=pl.FunctionType.Orchestration)
    def unsplit(self, a: pl.Tensor[[64, 4096], pl.FP32], b: pl.Tensor[[4096, 64], pl.FP32], c: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
        c_1 = self.unsplit_incore_0(a, b, c)  # task args: Input, Input, OutputExisting
        return c_1
