# pypto.program: mixed
# after: frontend
# memory_planner: PYPTO
# backend: a2a3
import pypto.language as pl


@pl.program
class mixed:
    @pl.function(type=pl.FunctionType.Orchestration)
    def mixed(self, a: pl.Tensor[[128, 64], pl.FP16], b: pl.Tensor[[64, 128], pl.FP16], scale: pl.Tensor[[128, 1], pl.FP32], out: pl.Out[pl.Tensor[[128, 128], pl.FP32]]) -> pl.Tensor[[128, 128], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="mixed", optimizations=[pl.split(pl.SplitMode.NONE), pl.cross_core_slot(slot_num=2)]):
            for i in pl.range(8):
                slice = pl.tensor.slice(a, [16, 64], [i * 16, 0])
                acc = pl.tensor.matmul(slice, b, out_dtype=pl.FP32)
                slice_1 = pl.tensor.slice(scale, [16, 1], [i * 16, 0])
                rows = pl.tensor.row_expand_mul(acc, slice_1)
                exp = pl.tensor.exp(rows)
                pl.tensor.assemble(out, exp, [i * 16, 0])
        return out
