import torch
from helpers import check_pass

import pypto.language as pl
from pypto.passes.memory_reuse import memory_reuse
from pypto.runtime import RunConfig


def test_elementwise_results_take_the_buffer_of_an_operand_that_dies_with_them():
    check_pass(memory_reuse, """
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[16, 128], pl.FP32], out: pl.Out[pl.Tensor[[16, 128], pl.FP32]]):
            x: pl.Tile[[16, 128], pl.FP32, pl.MemRef("mem_vec_0", size=8192), pl.Mem.Vec] = pl.tile.load(a, [0, 0], [16, 128], target_memory=pl.Mem.Vec)
            y: pl.Tile[[16, 128], pl.FP32, pl.MemRef("mem_vec_1", size=8192), pl.Mem.Vec] = pl.tile.exp(x)
            z: pl.Tile[[16, 128], pl.FP32, pl.MemRef("mem_vec_2", size=8192), pl.Mem.Vec] = pl.tile.add(y, x)
            pl.tile.store(z, [0, 0], out)
    """, """
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[16, 128], pl.FP32], out: pl.Out[pl.Tensor[[16, 128], pl.FP32]]):
            x: pl.Tile[[16, 128], pl.FP32, pl.MemRef("mem_vec_0", size=8192), pl.Mem.Vec] = pl.tile.load(a, [0, 0], [16, 128], target_memory=pl.Mem.Vec)
            y: pl.Tile[[16, 128], pl.FP32, pl.MemRef("mem_vec_1", size=8192), pl.Mem.Vec] = pl.tile.exp(x)
            z: pl.Tile[[16, 128], pl.FP32, pl.MemRef("mem_vec_1", size=8192), pl.Mem.Vec] = pl.tile.add(y, x)
            pl.tile.store(z, [0, 0], out)
    """)


def test_buffers_with_disjoint_lifetimes_share_one_memref():
    check_pass(memory_reuse, """
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[16, 128], pl.FP32], out: pl.Out[pl.Tensor[[16, 128], pl.FP32]]):
            x: pl.Tile[[16, 128], pl.FP32, pl.MemRef("mem_vec_0", size=8192), pl.Mem.Vec] = pl.tile.load(a, [0, 0], [16, 128], target_memory=pl.Mem.Vec)
            s: pl.Tile[[16, 1], pl.FP32, pl.MemRef("mem_vec_1", size=128), pl.Mem.Vec] = pl.tile.row_sum(x)
            z: pl.Tile[[16, 128], pl.FP32, pl.MemRef("mem_vec_2", size=8192), pl.Mem.Vec] = pl.tile.load(a, [0, 0], [16, 128], target_memory=pl.Mem.Vec)
            w: pl.Tile[[16, 128], pl.FP32, pl.MemRef("mem_vec_3", size=8192), pl.Mem.Vec] = pl.tile.row_expand_sub(z, s)
            pl.tile.store(w, [0, 0], out)
    """, """
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[16, 128], pl.FP32], out: pl.Out[pl.Tensor[[16, 128], pl.FP32]]):
            x: pl.Tile[[16, 128], pl.FP32, pl.MemRef("mem_vec_0", size=8192), pl.Mem.Vec] = pl.tile.load(a, [0, 0], [16, 128], target_memory=pl.Mem.Vec)
            s: pl.Tile[[16, 1], pl.FP32, pl.MemRef("mem_vec_1", size=128), pl.Mem.Vec] = pl.tile.row_sum(x)
            z: pl.Tile[[16, 128], pl.FP32, pl.MemRef("mem_vec_0", size=8192), pl.Mem.Vec] = pl.tile.load(a, [0, 0], [16, 128], target_memory=pl.Mem.Vec)
            w: pl.Tile[[16, 128], pl.FP32, pl.MemRef("mem_vec_0", size=8192), pl.Mem.Vec] = pl.tile.row_expand_sub(z, s)
            pl.tile.store(w, [0, 0], out)
    """)


@pl.jit
def deep(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.pipeline(8, stage=4):  # a 64 KiB load per stage (exp runs in place): two fit
            t = pl.load(a, [i * 64, 0], [64, 256])
            pl.store(pl.exp(t), [i * 64, 0], out)
    return out


def test_a_pipeline_deeper_than_fits_gets_ph_mr_001_and_stays_correct(tmp_path, capsys):
    a, out = torch.randn(512, 256), torch.zeros(512, 256)
    compiled = deep.compile(a, out, config=RunConfig(output_dir=tmp_path / "deep"))
    (hint,) = compiled.perf_hints
    assert hint.code == "PH-MR-001" and hint.rule == "MemoryReuse"
    line = hint.line()
    assert "requested depth 4" in line and "only 2 of 4 buffers fit" in line
    assert "(65536 B per stage, 188416 B free)" in line
    assert "shrink the per-stage tile to <= 47104 B, or reduce the pipeline depth" in line
    assert line.endswith(f"at {__file__}:{deep.fn.__code__.co_firstlineno + 3}:9")
    log = (tmp_path / "deep" / "report" / "perf_hints.log").read_text()
    assert log == line + "\n"
    assert capsys.readouterr().err.strip() == f"[perf_hint] 1 hint across 1 site; see {tmp_path / 'deep' / 'report' / 'perf_hints.log'}"
    # Stages 2 apart share a slot: slots 0, 1, 0, 1.
    text = compiled.lowered.as_python()
    assert [text.count(f'pl.MemRef("pipe_t", 0, 131072, slots=2)[{k}]') for k in (0, 1)] == [4, 4]
    compiled.run(a, out)
    assert torch.equal(out, torch.exp(a))


def test_the_depth_hint_can_be_disabled_by_code(tmp_path):
    a, out = torch.randn(512, 256), torch.zeros(512, 256)
    compiled = deep.compile(a, out, config=RunConfig(output_dir=tmp_path, disabled_diagnostics=["PH-MR-001"]))
    assert compiled.perf_hints == ()
