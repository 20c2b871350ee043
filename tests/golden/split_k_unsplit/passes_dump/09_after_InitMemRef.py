# pypto.program: unsplit
# after: InitMemRef
# memory_planner: PYPTO
# backend: a2a3
import pypto.language as pl


@pl.program
class unsplit:
    @pl.function(type=pl.FunctionType.InCore)
    def unsplit_incore_0(self, a: pl.Tensor[[64, 4096], pl.FP32], b: pl.Tensor[[4096, 64], pl.FP32], c: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
        a_tile: pl.Tile[[64, 256], pl.FP32, pl.MemRef("mem_mat_0", size=65536, reusable=True), pl.Mem.Mat] = pl.tile.load(a, [0, 0], [64, 256], target_memory=pl.Mem.Mat)
        b_tile: pl.Tile[[256, 64], pl.FP32, pl.MemRef("mem_mat_1", size=65536, reusable=True), pl.Mem.Mat] = pl.tile.load(b, [0, 0], [256, 64], target_memory=pl.Mem.Mat)
        a_tile_Left: pl.Tile[[64, 256], pl.FP32, pl.MemRef("mem_left_2", size=65536, reusable=True), pl.Mem.Left] = pl.tile.move(a_tile, target_memory=pl.Mem.Left)
        b_tile_Right: pl.Tile[[256, 64], pl.FP32, pl.MemRef("mem_right_3", size=65536, reusable=True), pl.Mem.Right] = pl.tile.move(b_tile, target_memory=pl.Mem.Right)
        acc: pl.Tile[[64, 64], pl.FP32, pl.MemRef("mem_acc_4", size=16384, reusable=True), pl.Mem.Acc] = pl.tile.matmul(a_tile_Left, b_tile_Right)
        for ki, (acc_iter,) in pl.range(256, 4096, 256, init_values=(acc,)):
            a_tile_1: pl.Tile[[64, 256], pl.FP32, pl.MemRef("mem_mat_5", size=65536, reusable=True), pl.Mem.Mat] = pl.tile.load(a, [0, ki], [64, 256], target_memory=pl.Mem.Mat)
            b_tile_1: pl.Tile[[256, 64], pl.FP32, pl.MemRef("mem_mat_6", size=65536, reusable=True), pl.Mem.Mat] = pl.tile.load(b, [ki, 0], [256, 64], target_memory=pl.Mem.Mat)
            a_tile_1_Left: pl.Tile[[64, 256], pl.FP32, pl.MemRef("mem_left_7", size=65536, reusable=True), pl.Mem.Left] = pl.tile.move(a_tile_1, target_memory=pl.Mem.Left)
            b_tile_1_Right: pl.Tile[[256, 64], pl.FP32, pl.MemRef("mem_right_8", size=65536, reusable=True), pl.Mem.Right] = pl.tile.move(b_tile_1, target_memory=pl.Mem.Right)
            acc_1: pl.Tile[[64, 64], pl.FP32, pl.MemRef("mem_acc_4", size=16384, reusable=True), pl.Mem.Acc] = pl.tile.matmul_acc(acc_iter, a_tile_1_Left, b_tile_1_Right)
            acc_out = pl.yield_(acc_1)
        pl.tile.store(acc_out, [0, 0], c)
        c_1: pl.Tensor[[64, 64], pl.FP32] = c
        return c_1

    @pl.function(type=pl.FunctionType.Orchestration)
    def unsplit(self, a: pl.Tensor[[64, 4096], pl.FP32], b: pl.Tensor[[4096, 64], pl.FP32], c: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
        c_1 = self.unsplit_incore_0(a, b, c)  # task args: Input, Input, OutputExisting
        return c_1
