# pypto.program: split_k_chained
# after: AutoTileMatmulL0
# memory_planner: PYPTO
# backend: a2a3
import pypto.language as pl


@pl.program
class split_k_chained:
    @pl.function(type=pl.FunctionType.InCore)
    def zero_init(self, c: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
        full_1 = pl.tile.full([64, 64], dtype=pl.FP32, value=0.0)
        pl.tile.store(full_1, [0, 0], c)
        c_1: pl.Tensor[[64, 64], pl.FP32] = c
        return c_1

    @pl.function(type=pl.FunctionType.InCore)
    def split_k(self, ks: pl.Scalar[pl.INDEX], a: pl.Tensor[[64, 4096], pl.FP32], b: pl.Tensor[[4096, 64], pl.FP32], c_2: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
        k0 = ks * 512
        slice_tile = pl.tile.load(a, [0, k0], [64, 256], target_memory=None)
        slice_1_tile = pl.tile.load(b, [k0, 0], [256, 64], target_memory=None)
        acc = pl.tile.matmul(slice_tile, slice_1_tile)
        slice_tile_1 = pl.tile.load(a, [0, k0 + 256], [64, 256], target_memory=None)
        slice_1_tile_1 = pl.tile.load(b, [k0 + 256, 0], [256, 64], target_memory=None)
        acc_1 = pl.tile.matmul_acc(acc, slice_tile_1, slice_1_tile_1)
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
