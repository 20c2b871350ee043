# pypto.program: explicit_slots
# after: AutoTileMatmulL0
# memory_planner: DSA_RP
# backend: a2a3
import pypto.language as pl


@pl.program
class explicit_slots:
    @pl.function(type=pl.FunctionType.InCore)
    def explicit_slots_incore_0(self, a: pl.Tensor[[512, 128], pl.FP32], out: pl.Out[pl.Tensor[[512, 128], pl.FP32]]):
        for i in pl.range(8):
            tile: pl.Tile[[64, 128], pl.FP32, pl.MemRef("ub", slots=2)[i % 2], pl.Mem.Vec] = pl.tile.load(a, [i * 64, 0], [64, 128], target_memory=pl.Mem.Vec)
            exp = pl.tile.exp(tile)
            pl.tile.store(exp, [i * 64, 0], out)

    @pl.function(type=pl.FunctionType.Orchestration)
    def explicit_slots(self, a: pl.Tensor[[512, 128], pl.FP32], out: pl.Out[pl.Tensor[[512, 128], pl.FP32]]) -> pl.Tensor[[512, 128], pl.FP32]:
        self.explicit_slots_incore_0(a, out)  # task args: Input, OutputExisting
        return out
