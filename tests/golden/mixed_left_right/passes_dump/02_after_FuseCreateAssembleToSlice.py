# pypto.program: mixed
# after: FuseCreateAssembleToSlice
# memory_planner: PYPTO
# backend: a2a3
import pypto.language as pl


@pl.program
class mixed:
    @pl.function(type=pl.FunctionType.InCore)
    def mixed_1(self, a: pl.Tensor[[128, 64], pl.FP16], b: pl.Tensor[[64, 128], pl.FP16], scale: pl.Tensor[[128, 1], pl.FP32], acc_gm: pl.Out[pl.Tensor[[32, 128], pl.FP32]], out: pl.Out[pl.Tensor[[128, 128], pl.FP32]]):
        acc_gm_ring = pl.system.reserve_buffer(name="acc_gm", size=8192, base=0, slot_num=2)
        for i in pl.range(8):
            slice = pl.tensor.slice(a, [16, 64], [i * 16, 0])
            acc = pl.tensor.matmul(slice, b, out_dtype=pl.FP32)
            slice_1 = pl.tensor.slice(scale, [16, 1], [i * 16, 0])
            acc_gm_2 = pl.tensor.assemble(acc_gm, acc, [i % 2 * 16, 0])
            acc_gm_1 = pl.tensor.slice(acc_gm_2, [16, 128], [i % 2 * 16, 0])
            for aiv_id in pl.split_aiv(2, mode=pl.SplitMode.NONE):
                acc_gm_1_half = pl.tensor.slice(acc_gm_1, [16, 64], [0, aiv_id * 64])
                rows = pl.tensor.row_expand_mul(acc_gm_1_half, slice_1)
                exp = pl.tensor.exp(rows)
                pl.tensor.assemble(out, exp, [i * 16, aiv_id * 64])

    @pl.function(type=pl.FunctionType.Orchestration)
    def mixed(self, a: pl.Tensor[[128, 64], pl.FP16], b: pl.Tensor[[64, 128], pl.FP16], scale: pl.Tensor[[128, 1], pl.FP32], out: pl.Out[pl.Tensor[[128, 128], pl.FP32]]) -> pl.Tensor[[128, 128], pl.FP32]:
        acc_gm = pl.tensor.create([32, 128], dtype=pl.FP32)
        self.mixed_1(a, b, scale, acc_gm, out)  # task args: Input, Input, Input, OutputExisting, OutputExisting
        return out
