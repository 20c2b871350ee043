# pypto.program: single_buffer
# after: InitMemRef
# memory_planner: PYPTO
# backend: a2a3
import pypto.language as pl


@pl.program
class single_buffer:
    @pl.function(type=pl.FunctionType.InCore)
    def single_buffer_incore_0(self, a: pl.Tensor[[512, 128], pl.FP32], out: pl.Out[pl.Tensor[[512, 128], pl.FP32]]):
        for i in pl.range(8):
            tile: pl.Tile[[64, 128], pl.FP32, pl.MemRef("mem_vec_0", size=32768, reusable=True), pl.Mem.Vec] = pl.tile.load(a, [i * 64, 0], [64, 128], target_memory=pl.Mem.Vec)
            exp: pl.Tile[[64, 128], pl.FP32, pl.MemRef("mem_vec_1", size=32768, reusable=True), pl.Mem.Vec] = pl.tile.exp(tile)
            pl.tile.store(exp, [i * 64, 0], out)

    @pl.function(type=pl.FunctionType.Orchestration)
    def single_buffer(self, a: pl.Tensor[[512, 128], pl.FP32], out: pl.Out[pl.Tensor[[512, 128], pl.FP32]]) -> pl.Tensor[[512, 128], pl.FP32]:
        self.single_buffer_incore_0(a, out)  # task args: Input, OutputExisting
        return out
