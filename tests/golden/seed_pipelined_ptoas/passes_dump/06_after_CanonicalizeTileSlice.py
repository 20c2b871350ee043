# pypto.program: pipelined
# after: CanonicalizeTileSlice
# memory_planner: PTOAS
# backend: a2a3
import pypto.language as pl


@pl.program
class pipelined:
    @pl.function(type=pl.FunctionType.InCore)
    def pipelined_incore_0(self, a: pl.Tensor[[512, 128], pl.FP32], out: pl.Out[pl.Tensor[[512, 128], pl.FP32]]):
        for i in pl.pipeline(8, stage=2):
            tile = pl.tile.load(a, [i * 64, 0], [64, 128], target_memory=pl.Mem.Vec)
            exp = pl.tile.exp(tile)
            pl.tile.store(exp, [i * 64, 0], out)

    @pl.function(type=pl.FunctionType.Orchestration)
    def pipelined(self, a: pl.Tensor[[512, 128], pl.FP32], out: pl.Out[pl.Tensor[[512, 128], pl.FP32]]) -> pl.Tensor[[512, 128], pl.FP32]:
        self.pipelined_incore_0(a, out)  # task args: Input, OutputExisting
        return out
