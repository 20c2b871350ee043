# pypto.program: mixed
# after: AllocateMemoryAddr
# memory_planner: PYPTO
# backend: a2a3
import pypto.language as pl


@pl.program
class mixed:
    @pl.function(type=pl.FunctionType.InCore)
    def mixed_1(self, a: pl.Tensor[[128, 64], pl.FP16], b: pl.Tensor[[64, 128], pl.FP16], scale: pl.Tensor[[128, 1], pl.FP32], acc_gm: pl.Out[pl.Tensor[[32, 128], pl.FP32]], out: pl.Out[pl.Tensor[[128, 128], pl.FP32]]):
        acc_gm_ring = pl.system.reserve_buffer(name="acc_gm", size=16384, base=0, slot_num=2)
        for i in pl.range(8):
            slice_tile: pl.Tile[[16, 64], pl.FP16, pl.MemRef("mem_mat_0", 16384, 2048), pl.Mem.Mat] = pl.tile.load(a, [i * 16, 0], [16, 64], target_memory=pl.Mem.Mat)
            b_tile: pl.Tile[[64, 128], pl.FP16, pl.MemRef("mem_mat_1", 0, 16384), pl.Mem.Mat] = pl.tile.load(b, [0, 0], [64, 128], target_memory=pl.Mem.Mat)
            slice_tile_Left: pl.Tile[[16, 64], pl.FP16, pl.MemRef("mem_left_2", 0, 2048), pl.Mem.Left] = pl.tile.move(slice_tile, target_memory=pl.Mem.Left)
            b_tile_Right: pl.Tile[[64, 128], pl.FP16, pl.MemRef("mem_right_3", 0, 16384), pl.Mem.Right] = pl.tile.move(b_tile, target_memory=pl.Mem.Right)
            acc_1: pl.Tile[[16, 128], pl.FP32, pl.MemRef("mem_acc_4", 0, 8192), pl.Mem.Acc] = pl.tile.matmul(slice_tile_Left, b_tile_Right)
            pl.tile.store(acc_1, [i % 2 * 16, 0], acc_gm)
            acc_gm_2: pl.Tensor[[32, 128], pl.FP32] = acc_gm
            acc_gm_1_tile: pl.Tile[[16, 128], pl.FP32, pl.MemRef("mem_vec_5", 16384, 8192), pl.Mem.Vec] = pl.tile.load(acc_gm_2, [i % 2 * 16, 0], [16, 128], target_memory=pl.Mem.Vec)
            slice_1_tile: pl.Tile[[16, 1], pl.FP32, pl.MemRef("mem_vec_6", 24576, 128), pl.Mem.Vec] = pl.tile.load(scale, [i * 16, 0], [16, 1], target_memory=pl.Mem.Vec)
            rows_1: pl.Tile[[16, 128], pl.FP32, pl.MemRef("mem_vec_5", 16384, 8192), pl.Mem.Vec] = pl.tile.row_expand_mul(acc_gm_1_tile, slice_1_tile)
            exp_1: pl.Tile[[16, 128], pl.FP32, pl.MemRef("mem_vec_5", 16384, 8192), pl.Mem.Vec] = pl.tile.exp(rows_1)
            pl.tile.store(exp_1, [i * 16, 0], out)

    @pl.function(type=pl.FunctionType.Orchestration)
    def mixed(self, a: pl.Tensor[[128, 64], pl.FP16], b: pl.Tensor[[64, 128], pl.FP16], scale: pl.Tensor[[128, 1], pl.FP32], out: pl.Out[pl.Tensor[[128, 128], pl.FP32]]) -> pl.Tensor[[128, 128], pl.FP32]:
        acc_gm = pl.tensor.create([32, 128], dtype=pl.FP32)
        self.mixed_1(a, b, scale, acc_gm, out)  # task args: Input, Input, Input, OutputExisting, OutputExisting
        return out
