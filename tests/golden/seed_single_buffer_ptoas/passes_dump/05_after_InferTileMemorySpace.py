# pypto.program: single_buffer
# after: InferTileMemorySpace
# memory_planner: PTOAS
# backend: a2a3
import pypto.language as pl


@pl.program
class single_buffer:
    @pl.function(type=pl.FunctionType.InCore)
    def single_buffer_incore_0(self, a: pl.Tensor[[512, 128], pl.FP32], out: pl.Out[pl.Tensor[[512, 128], pl.FP32]]):
        for i in pl.range(8):
            tile = pl.tile.load(a, [i * 64, 0], [64, 128], target_memory=pl.Mem.Vec)
            exp = pl.tile.exp(tile)
            pl.tile.store(exp, [i * 64, 0], out)

    @pl.function(type=pl.FunctionType.Orchestration)
    def single_buffer(self, a: pl.Tensor[[512, 128], pl.FP32], out: pl.Out[pl.Tensor[[512, 128], pl.FP32]]) -> pl.Tensor[[512, 128], pl.FP32]:
        self.single_buffer_incore_0(a, out)  # task args: Input, OutputExisting
        return out
