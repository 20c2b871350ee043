# pypto.program: loop_body
# after: CanonicalizeTileSlice
# memory_planner: PYPTO
# backend: a2a3
import pypto.language as pl


@pl.program
class loop_body:
    @pl.function(type=pl.FunctionType.InCore)
    def kernel(self, a: pl.Tensor[[32, 128], pl.FP32], out: pl.Out[pl.Tensor[[8, 128], pl.FP32]], keep: pl.Out[pl.Tensor[[24, 128], pl.FP32]], after: pl.Out[pl.Tensor[[16, 128], pl.FP32]]) -> pl.Tensor[[8, 128], pl.FP32]:
        c0 = pl.tile.load(a, [0, 0], [8, 128], target_memory=pl.Mem.Vec)
        c1 = pl.tile.load(a, [8, 0], [8, 128], target_memory=pl.Mem.Vec)
        c2 = pl.tile.load(a, [16, 0], [8, 128], target_memory=pl.Mem.Vec)
        for i, (c1_iter,) in pl.pipeline(0, stage=2, init_values=(c1,)):
            pl.tile.store(c1, [i * 8, 0], out)
            t0 = pl.tile.load(a, [(i + 3) * 8, 0], [8, 128], target_memory=pl.Mem.Vec)
            t1 = pl.tile.load(a, [(i + 3) * 8, 0], [8, 128], target_memory=pl.Mem.Vec)
            v2 = pl.tile.add(t0, c1)
            c1_out = pl.yield_(t0)
        pl.tile.store(c1_out, [0, 0], after)
        p = pl.tile.minimum(c1_out, c1_out)
        pl.tile.store(p, [8, 0], after)
        pl.tile.store(c0, [0, 0], keep)
        pl.tile.store(c1, [8, 0], keep)
        pl.tile.store(c2, [16, 0], keep)
        return out
