# pypto.program: unsplit
# after: frontend
# memory_planner: PYPTO
# backend: a2a3
import pypto.language as pl


@pl.program
class unsplit:
    @pl.function(type=pl.FunctionType.Orchestration)
    def unsplit(self, a: pl.Tensor[[64, 4096], pl.FP32], b: pl.Tensor[[4096, 64], pl.FP32], c: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP):
            matmul = pl.tensor.matmul(a, b, out_dtype=pl.FP32)
            c_1 = pl.tensor.assemble(c, matmul, [0, 0])
        return c_1
