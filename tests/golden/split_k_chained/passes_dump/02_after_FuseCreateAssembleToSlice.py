# pypto.program: split_k_chained
# after: FuseCreateAssembleToSlice
# memory_planner: PYPTO
# backend: a2a3
import pypto.language as pl


@pl.program
class split_k_chained:
    @pl.function(type=pl.FunctionType.InCore)
    def zero_init(self, c: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
        full = pl.tensor.full([64, 64], dtype=pl.FP32, value=0.0)
        c_1 = pl.tensor.assemble(c, full, [0, 0])
        return c_1

    @pl.function(type=pl.FunctionType.InCore)
    def split_k(self, ks: pl.Scalar[pl.INDEX], a: pl.Tensor[[64, 4096], pl.FP32], b: pl.Tensor[[4096, 64], pl.FP32], c_2: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
        k0 = ks * 512
        slice = pl.tensor.slice(a, [64, 512], [0, k0])
        slice_1 = pl.tensor.slice(b, [512, 64], [k0, 0])
        partial = pl.tensor.matmul(slice, slice_1, out_dtype=pl.FP32)
        c_3 = pl.tensor.assemble(c_2, partial, [0, 0], atomic=pl.AtomicType.Add)
        return c_3

    @pl.function(type=pl.FunctionType.Orchestration)
    def split_k_chained(self, a: pl.Tensor[[64, 4096], pl.FP32], b: pl.Tensor[[4096, 64], pl.FP32], c: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
        c_1 = self.zero_init(c)  # task args: OutputExisting
        for ks, (c_2,) in pl.parallel(8, init_values=(c_1,)):
            c_3 = self.split_k(ks, a, b, c_2)  # task args: Scalar, Input, Input, InOut
            c_4 = pl.yield_(c_3)
        return c_4
