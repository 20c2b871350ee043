import torch
from helpers import check_pass

import pypto.language as pl
from pypto.passes.allocation.memory_reuse import memory_reuse
from pypto.runtime import RunConfig


def test_elementwise_results_take_the_buffer_of_an_operand_that_dies_with_them():
    check_pass(memory_reuse, """
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[16, 128], pl.FP32], out: pl.Out[pl.Tensor[[16, 128], pl.FP32]]):
            x: pl.Tile[[16, 128], pl.FP32, pl.MemRef("mem_vec_0", size=8192, reusable=True), pl.Mem.Vec] = pl.tile.load(a, [0, 0], [16, 128], target_memory=pl.Mem.Vec)
            y: pl.Tile[[16, 128], pl.FP32, pl.MemRef("mem_vec_1", size=8192, reusable=True), pl.Mem.Vec] = pl.tile.exp(x)
            z: pl.Tile[[16, 128], pl.FP32, pl.MemRef("mem_vec_2", size=8192, reusable=True), pl.Mem.Vec] = pl.tile.add(y, x)
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
            x: pl.Tile[[16, 128], pl.FP32, pl.MemRef("mem_vec_0", size=8192, reusable=True), pl.Mem.Vec] = pl.tile.load(a, [0, 0], [16, 128], target_memory=pl.Mem.Vec)
            s: pl.Tile[[16, 1], pl.FP32, pl.MemRef("mem_vec_1", size=128, reusable=True), pl.Mem.Vec] = pl.tile.row_sum(x)
            z: pl.Tile[[16, 128], pl.FP32, pl.MemRef("mem_vec_2", size=8192, reusable=True), pl.Mem.Vec] = pl.tile.load(a, [0, 0], [16, 128], target_memory=pl.Mem.Vec)
            w: pl.Tile[[16, 128], pl.FP32, pl.MemRef("mem_vec_3", size=8192, reusable=True), pl.Mem.Vec] = pl.tile.row_expand_sub(z, s)
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


@pl.jit
def two_operands(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.pipeline(8, stage=4):  # two 32 KiB loads per stage: depth 4 needs 256 KiB, 5 slots fit
            t = pl.load(a, [i * 16, 0], [16, 512])
            u = pl.load(a, [i * 16 + 128, 0], [16, 512])
            pl.store(pl.add(t, u), [i * 16, 0], out)
    return out


@pl.jit
def too_wide(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.pipeline(7, stage=3):  # two 64 KiB loads per stage: only one stage fits
            t = pl.load(a, [i * 16, 0], [16, 1024])
            u = pl.load(a, [i * 16 + 112, 0], [16, 1024])
            pl.store(pl.add(t, u), [i * 16, 0], out)
    return out


def test_the_operands_of_one_pipeline_share_the_space_and_shed_slots_jointly(tmp_path):
    a, out = torch.randn(256, 512), torch.zeros(128, 512)
    compiled = two_operands.compile(a, out, config=RunConfig(output_dir=tmp_path))
    text = compiled.lowered.as_python()
    # 5 of the 8 slots fit; the group holding more bytes sheds first.
    assert 'slots=2)' in text and 'pl.MemRef("pipe_u", 0, 98304, slots=3)' in text
    hints = [h.line() for h in compiled.perf_hints]
    assert len(hints) == 2
    assert "pipeline group 0 in Vec, but only 2 of 4 buffers fit (32768 B per stage, 188416 B free)" in hints[0]
    assert "pipeline group 1 in Vec, but only 3 of 4 buffers fit" in hints[1]
    assert "The operand would fit depth 4 on its own, but co-resident buffers / other pipeline groups" in hints[0]
    compiled.run(a, out)
    assert torch.equal(out, a[:128] + a[128:])


def test_a_pipeline_that_fits_once_becomes_plain_buffers(tmp_path):
    a, out = torch.randn(224, 1024), torch.zeros(112, 1024)
    config = RunConfig(output_dir=tmp_path, verification_level="ROUNDTRIP", disabled_diagnostics=["PH001"])
    compiled = too_wide.compile(a, out, config=config)
    text = compiled.lowered.as_python()
    assert "slots=" not in text and "pipe_t" in text
    assert all("only 1 of 3 buffers fit" in h.line() for h in compiled.perf_hints)
    compiled.run(a, out)
    assert torch.equal(out, a[:112] + a[112:])


def two_groups(rows: int):
    """A stage=4 pipeline with a 16 KiB and a ``rows`` x 512 B load per stage, beside a 16 KiB bias."""
    @pl.jit
    def kernel(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor], out2: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            bias = pl.load(b, [0, 0], [32, 128])
            for i in pl.pipeline(4, stage=4):
                small = pl.load(a, [i * 128, 0], [32, 128])
                big = pl.load(a, [i * 128, 0], [rows, 128])
                pl.store(pl.exp(big), [i * 128, 0], out)
                pl.store(pl.add(small, bias), [i * 32, 0], out2)
        return out
    return kernel


def test_the_depth_lever_leaves_room_for_the_loops_other_pipeline_groups(tmp_path):
    import re

    a, b = torch.randn(512, 128), torch.randn(32, 128)
    out, out2 = torch.zeros(512, 128), torch.zeros(128, 128)
    (hint,) = two_groups(128).compile(a, b, out, out2, config=RunConfig(output_dir=tmp_path / "a")).perf_hints
    line = hint.line()
    assert "(65536 B per stage, 172032 B free after 16384 B reserved)" in line
    budget = int(re.search(r"shrink the per-stage tile to <= (\d+) B \(the other pipeline groups of this loop "
                           r"keeping the 65536 B their depths request\)", line)[1])
    assert budget == (172032 - 4 * 16384) // 4
    shrunk = two_groups(budget // 512)  # follow the lever: the hint is gone, the answer unchanged
    compiled = shrunk.compile(a, b, out, out2, config=RunConfig(output_dir=tmp_path / "b"))
    assert compiled.perf_hints == () and (tmp_path / "b" / "report" / "perf_hints.log").read_text() == ""
    compiled.run(a, b, out, out2)
    rows = budget // 512
    assert torch.equal(out.view(4, 128, 128)[:, :rows], torch.exp(a.view(4, 128, 128)[:, :rows]))
    assert torch.equal(out2, (a.view(4, 128, 128)[:, :32] + b).reshape(128, 128))


def test_an_operand_takes_the_buffer_of_an_in_place_result_whose_buffer_a_loop_shares():
    # y's buffer is the loop's carried chain already, so x (dying at exp) moves into it
    check_pass(memory_reuse, """
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[16, 128], pl.FP32], out: pl.Out[pl.Tensor[[16, 128], pl.FP32]]):
            x: pl.Tile[[16, 128], pl.FP32, pl.MemRef("mem_vec_0", size=8192, reusable=True), pl.Mem.Vec] = pl.tile.load(a, [0, 0], [16, 128], target_memory=pl.Mem.Vec)
            y: pl.Tile[[16, 128], pl.FP32, pl.MemRef("mem_vec_1", size=8192, reusable=True), pl.Mem.Vec] = pl.tile.exp(x)
            for i, (it,) in pl.range(2, init_values=(y,)):
                w: pl.Tile[[16, 128], pl.FP32, pl.MemRef("mem_vec_1", size=8192, reusable=True), pl.Mem.Vec] = pl.tile.add(it, it)
                r = pl.yield_(w)
            pl.tile.store(r, [0, 0], out)
    """, """
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[16, 128], pl.FP32], out: pl.Out[pl.Tensor[[16, 128], pl.FP32]]):
            x: pl.Tile[[16, 128], pl.FP32, pl.MemRef("mem_vec_1", size=8192), pl.Mem.Vec] = pl.tile.load(a, [0, 0], [16, 128], target_memory=pl.Mem.Vec)
            y: pl.Tile[[16, 128], pl.FP32, pl.MemRef("mem_vec_1", size=8192), pl.Mem.Vec] = pl.tile.exp(x)
            for i, (it,) in pl.range(2, init_values=(y,)):
                w: pl.Tile[[16, 128], pl.FP32, pl.MemRef("mem_vec_1", size=8192), pl.Mem.Vec] = pl.tile.add(it, it)
                r = pl.yield_(w)
            pl.tile.store(r, [0, 0], out)
    """)


def test_a_matmul_and_an_accumulation_of_it_in_blocks_as_large_as_acc_share_acc():
    # the first product's block and the K loop that accumulates into it are one Acc buffer
    @pl.jit
    def two(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            acc = pl.matmul(a[:, 0:256], b[0:256, :])
            acc = pl.matmul_acc(acc, a[:, 256:512], b[256:512, :])
            out[:] = acc
        return out

    a = torch.randn(256, 512, dtype=torch.float16)
    b = torch.randn(512, 512, dtype=torch.float16)
    want = a.float() @ b.float()
    for planner in ("PYPTO", "PTOAS"):
        out = torch.full((256, 512), float("nan"))
        two(a, b, out, config=RunConfig(platform="a2a3sim", memory_planner=planner))
        torch.testing.assert_close(out, want, rtol=1e-3, atol=1e-3)
