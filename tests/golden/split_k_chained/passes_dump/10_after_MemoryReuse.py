# pypto.program: split_k_chained
# after: MemoryReuse
# memory_planner: PYPTO
# backend: a2a3
import pypto.language as pl


@pl.program
class split_k_chained:
    @pl.function(type=pl.FunctionType.InCore)
    def zero_init(self, c: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
        full_1: pl.Tile[[64, 64], pl.FP32, pl.MemRef("mem_vec_0", size=16384), pl.Mem.Vec] = pl.tile.full([64, 64], dtype=pl.FP32, value=0.0)
        pl.tile.store(full_1, [0, 0], c)
        c_1: pl.Tensor[[64, 64], pl.FP32] = c
        return c_1

    @pl.function(type=pl.FunctionType.InCore)
    def split_k(self, ks: pl.Scalar[pl.INDEX], a: pl.Tensor[[64, 4096], pl.FP32], b: pl.Tensor[[4096, 64], pl.FP32], c_2: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
        k0 = ks * 512
        slice_tile: pl.Tile[[64, 256], pl.FP32, pl.MemRef("mem_mat_0", size=65536), pl.Mem.Mat] = pl.tile.load(a, [0, k0], [64, 256], target_memory=pl.Mem.Mat)
        slice_1_tile: pl.Tile[[256, 64], pl.FP32, pl.MemRef("mem_mat_1", size=65536), pl.Mem.Mat] = pl.tile.load(b, [k0, 0], [256, 64], target_memory=pl.Mem.Mat)
        slice_tile_Left: pl.Tile[[64, 256], pl.FP32, pl.MemRef("mem_left_2", size=65536), pl.Mem.Left] = pl.tile.move(slice_tile, target_memory=pl.Mem.Left)
        slice_1_tile_Right: pl.Tile[[256, 64], pl.FP32, pl.MemRef("mem_right_3", size=65536), pl.Mem.Right] = pl.tile.move(slice_1_tile, target_memory=pl.Mem.Right)
        acc: pl.Tile[[64, 64], pl.FP32, pl.MemRef("mem_acc_4", size=16384), pl.Mem.Acc] = pl.tile.matmul(slice_tile_Left, slice_1_tile_Right)
        slice_tile_1: pl.Tile[[64, 256], pl.FP32, pl.MemRef("mem_mat_0", size=65536), pl.Mem.Mat] = pl.tile.load(a, [0, k0 + 256], [64, 256], target_memory=pl.Mem.Mat)
        slice_1_tile_1: pl.Tile[[256, 64], pl.FP32, pl.MemRef("mem_mat_1", size=65536), pl.Mem.Mat] = pl.tile.load(b, [k0 + 256, 0], [256, 64], target_memory=pl.Mem.Mat)
        slice_tile_1_Left: pl.Tile[[64, 256], pl.FP32, pl.MemRef("mem_left_2", size=65536), pl.Mem.Left] = pl.tile.move(slice_tile_1, target_memory=pl.Mem.Left)
        slice_1_tile_1_Right: pl.Tile[[256, 64], pl.FP32, pl.MemRef("mem_right_3", size=65536), pl.Mem.Right] = pl.tile.move(slice_1_tile_1, target_memory=pl.Mem.Right)
        acc_1: pl.Tile[[64, 64], pl.FP32, pl.MemRef("mem_acc_4", size=16384), pl.Mem.Acc] = pl.tile.matmul_acc(acc, slice_tile_1_Left, slice_1_tile_1_Right)
        pl.tile.store(acc_1, [0, 0], c_2, atomic=pl.AtomicType.Add)
        c_3: pl.Tensor[[64, 64], pl.FP32] = c_2
        return c_3

    @pl.function(type=pl.FunctionType.Orchestration)
    def split_k_chained(self, a: pl.Tensor[[64, 4096], pl.FP32], b: pl.Tensor[[4096, 64], pl.FP32], c: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
        c_1 = self.zero_init(c)  # task args: OutputExisting
        for ks, (c_2,) in pl.parallel(8, init_values=(c_1,)):
            c_3 = self.split_k(ks, a, b, c_2)  # task args: Scalar, Input, Input, InOut
            c_4 = pl.yield_(c_3)
        return c_4
