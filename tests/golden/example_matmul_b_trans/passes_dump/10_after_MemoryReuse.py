# pypto.program: matmul_b_trans
# after: MemoryReuse
# memory_planner: PYPTO
# backend: a2a3
import pypto.language as pl


@pl.program
class matmul_b_trans:
    @pl.function(type=pl.FunctionType.InCore)
    def matmul_b_trans_incore_0(self, a: pl.Tensor[[128, 1024], pl.FP16], w: pl.Tensor[[256, 1024], pl.FP16], out: pl.Out[pl.Tensor[[128, 256], pl.FP32]]):
        load: pl.Tile[[128, 64], pl.FP16, pl.MemRef("mem_mat_0", size=16384), pl.Mem.Mat] = pl.tile.load(a, [0, 0], [128, 64], target_memory=pl.Mem.Mat)
        x0: pl.Tile[[128, 64], pl.FP16, pl.MemRef("mem_left_1", size=16384), pl.Mem.Left] = pl.tile.move(load, target_memory=pl.Mem.Left)
        load_1: pl.Tile[[64, 256], pl.FP16, pl.MemRef("mem_mat_2", size=32768), pl.Mem.Mat] = pl.tile.load(w, [0, 0], [256, 64], target_memory=pl.Mem.Mat, transpose=True)
        y0: pl.Tile[[64, 256], pl.FP16, pl.MemRef("mem_right_3", size=32768), pl.Mem.Right] = pl.tile.move(load_1, target_memory=pl.Mem.Right)
        acc: pl.Tile[[128, 256], pl.FP32, pl.MemRef("mem_acc_4", size=131072), pl.Mem.Acc] = pl.tile.matmul(x0, y0)
        for k, (acc_1,) in pl.range(1, 15, 2, init_values=(acc,)):
            load_2: pl.Tile[[128, 64], pl.FP16, pl.MemRef("pipe_load_2", size=32768, slots=2)[0], pl.Mem.Mat] = pl.tile.load(a, [0, k * 64], [128, 64], target_memory=pl.Mem.Mat)
            x: pl.Tile[[128, 64], pl.FP16, pl.MemRef("mem_left_1", size=16384), pl.Mem.Left] = pl.tile.move(load_2, target_memory=pl.Mem.Left)
            load_3: pl.Tile[[64, 256], pl.FP16, pl.MemRef("pipe_load_3", size=65536, slots=2)[0], pl.Mem.Mat] = pl.tile.load(w, [0, k * 64], [256, 64], target_memory=pl.Mem.Mat, transpose=True)
            y: pl.Tile[[64, 256], pl.FP16, pl.MemRef("mem_right_3", size=32768), pl.Mem.Right] = pl.tile.move(load_3, target_memory=pl.Mem.Right)
            acc_2: pl.Tile[[128, 256], pl.FP32, pl.MemRef("mem_acc_4", size=131072), pl.Mem.Acc] = pl.tile.matmul_acc(acc_1, x, y)
            load_2_1: pl.Tile[[128, 64], pl.FP16, pl.MemRef("pipe_load_2", size=32768, slots=2)[1], pl.Mem.Mat] = pl.tile.load(a, [0, (k + 1) * 64], [128, 64], target_memory=pl.Mem.Mat)
            x_1: pl.Tile[[128, 64], pl.FP16, pl.MemRef("mem_left_1", size=16384), pl.Mem.Left] = pl.tile.move(load_2_1, target_memory=pl.Mem.Left)
            load_3_1: pl.Tile[[64, 256], pl.FP16, pl.MemRef("pipe_load_3", size=65536, slots=2)[1], pl.Mem.Mat] = pl.tile.load(w, [0, (k + 1) * 64], [256, 64], target_memory=pl.Mem.Mat, transpose=True)
            y_1: pl.Tile[[64, 256], pl.FP16, pl.MemRef("mem_right_3", size=32768), pl.Mem.Right] = pl.tile.move(load_3_1, target_memory=pl.Mem.Right)
            acc_2_1: pl.Tile[[128, 256], pl.FP32, pl.MemRef("mem_acc_4", size=131072), pl.Mem.Acc] = pl.tile.matmul_acc(acc_2, x_1, y_1)
            acc_3_1 = pl.yield_(acc_2_1)
        load_2_2: pl.Tile[[128, 64], pl.FP16, pl.MemRef("pipe_load_2", size=32768, slots=2)[0], pl.Mem.Mat] = pl.tile.load(a, [0, 960], [128, 64], target_memory=pl.Mem.Mat)
        x_2: pl.Tile[[128, 64], pl.FP16, pl.MemRef("mem_left_1", size=16384), pl.Mem.Left] = pl.tile.move(load_2_2, target_memory=pl.Mem.Left)
        load_3_2: pl.Tile[[64, 256], pl.FP16, pl.MemRef("pipe_load_3", size=65536, slots=2)[0], pl.Mem.Mat] = pl.tile.load(w, [0, 960], [256, 64], target_memory=pl.Mem.Mat, transpose=True)
        y_2: pl.Tile[[64, 256], pl.FP16, pl.MemRef("mem_right_3", size=32768), pl.Mem.Right] = pl.tile.move(load_3_2, target_memory=pl.Mem.Right)
        acc_2_2: pl.Tile[[128, 256], pl.FP32, pl.MemRef("mem_acc_4", size=131072), pl.Mem.Acc] = pl.tile.matmul_acc(acc_3_1, x_2, y_2)
        pl.tile.store(acc_2_2, [0, 0], out)

    @pl.function(type=pl.FunctionType.Orchestration)
    def matmul_b_trans(self, a: pl.Tensor[[128, 1024], pl.FP16], w: pl.Tensor[[256, 1024], pl.FP16], out: pl.Out[pl.Tensor[[128, 256], pl.FP32]]) -> pl.Tensor[[128, 256], pl.FP32]:
        self.matmul_b_trans_incore_0(a, w, out)  # task args: Input, Input, OutputExisting
        return out
