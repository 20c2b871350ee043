# pypto.program: matmul
# after: AllocateMemoryAddr
# memory_planner: PYPTO
# backend: a2a3
import pypto.language as pl


@pl.program
class matmul:
    @pl.function(type=pl.FunctionType.InCore)
    def kernel(self, a: pl.Tensor[[16, 192], pl.BF16], b: pl.Tensor[[192, 32], pl.BF16], out: pl.Out[pl.Tensor[[16, 32], pl.FP32]]) -> pl.Tensor[[16, 32], pl.FP32]:
        a_mat: pl.Tile[[16, 64], pl.BF16, pl.MemRef("mem_mat_0", 4096, 2048), pl.Mem.Mat] = pl.tile.load(a, [0, 0], [16, 64], target_memory=pl.Mem.Mat)
        b_mat: pl.Tile[[64, 32], pl.BF16, pl.MemRef("mem_mat_1", 0, 4096), pl.Mem.Mat] = pl.tile.load(b, [0, 0], [64, 32], target_memory=pl.Mem.Mat)
        a_left: pl.Tile[[16, 64], pl.BF16, pl.MemRef("mem_left_2", 0, 2048), pl.Mem.Left] = pl.tile.move(a_mat, target_memory=pl.Mem.Left)
        b_right: pl.Tile[[64, 32], pl.BF16, pl.MemRef("mem_right_3", 0, 4096), pl.Mem.Right] = pl.tile.move(b_mat, target_memory=pl.Mem.Right)
        acc: pl.Tile[[16, 32], pl.FP32, pl.MemRef("mem_acc_4", 0, 2048), pl.Mem.Acc] = pl.tile.matmul(a_left, b_right)
        for kk, (acc_iter,) in pl.range(1, 3, init_values=(acc,)):
            a_mat_1: pl.Tile[[16, 64], pl.BF16, pl.MemRef("mem_mat_0", 4096, 2048), pl.Mem.Mat] = pl.tile.load(a, [0, kk * 64], [16, 64], target_memory=pl.Mem.Mat)
            b_mat_1: pl.Tile[[64, 32], pl.BF16, pl.MemRef("mem_mat_1", 0, 4096), pl.Mem.Mat] = pl.tile.load(b, [kk * 64, 0], [64, 32], target_memory=pl.Mem.Mat)
            a_left_1: pl.Tile[[16, 64], pl.BF16, pl.MemRef("mem_left_2", 0, 2048), pl.Mem.Left] = pl.tile.move(a_mat_1, target_memory=pl.Mem.Left)
            b_right_1: pl.Tile[[64, 32], pl.BF16, pl.MemRef("mem_right_3", 0, 4096), pl.Mem.Right] = pl.tile.move(b_mat_1, target_memory=pl.Mem.Right)
            acc_1: pl.Tile[[16, 32], pl.FP32, pl.MemRef("mem_acc_4", 0, 2048), pl.Mem.Acc] = pl.tile.matmul_acc(acc_iter, a_left_1, b_right_1)
            acc_out = pl.yield_(acc_1)
        pl.tile.store(acc_out, [0, 0], out)
        return out
