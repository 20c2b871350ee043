# pypto.program: unsplit
# after: FuseCreateAssembleToSlice
# memory_planner: PYPTO
# backend: a2a3
import pypto.language as pl


@pl.program
class unsplit:
    @pl.function(type=pl.FunctionType.InCore)
    def unsplit_incore_0(self, a: pl.Tensor[[64, 4096], pl.FP32], b: pl.Tensor[[4096, 64], pl.FP32], c: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
        matmul = pl.tensor.matmul(a, b, out_dtype=pl.FP32)
        c_1 = pl.tensor.assemble(c, matmul, [0, 0])
        return c_1

    @pl.function(type=pl.FunctionType.Orchestration)
    def unsplit(self, a: pl.Tensor[[64, 4096], pl.FP32], b: pl.Tensor[[4096, 64], pl.FP32], c: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
        c_1 = self.unsplit_incore_0(a, b, c)  # task args: Input, Input, OutputExisting
        return c_1
