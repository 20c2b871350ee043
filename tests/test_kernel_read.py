"""``pl.read`` inside a kernel: the core's scalar unit reads one element of a GM tensor, a
value known only when the kernel runs, for branches, trip counts and valid shapes. Both
platforms give the same bits; the simulator's timeline follows the data it read; on the
chip the element's producer runs first; a read of bytes the kernel itself writes, or out
of the tensor, is a located error."""

import pytest
import torch

import pypto.language as pl
from pypto.errors import PyptoError, UnsupportedSyntaxError
from pypto.runtime import RunConfig

PLATFORMS = ("ref", "a2a3sim")
NEG_INF = float("-inf")


@pl.jit
def branch_width(data: pl.Tensor, cfg: pl.Tensor, output: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        is_last = pl.read(cfg, [0])
        if is_last == 1:
            vlen = pl.read(cfg, [1])
        else:
            vlen = pl.read(cfg, [2])
        tile = pl.load(data, [0, 0], [16, 64], valid_shape=[16, vlen], target_memory=pl.MemorySpace.Vec)
        pl.store(pl.tile.fillpad(tile, pad_value=pl.PadValue.min), [0, 0], output)
    return output


@pl.jit
def ragged(data: pl.Tensor, cfg: pl.Tensor, output: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        blocks = pl.cast(pl.read(cfg, [0]), pl.INDEX)
        tail = pl.cast(pl.read(cfg, [1]), pl.INDEX)
        for i in pl.range(blocks):
            if i == blocks - 1:
                vlen = tail
            else:
                vlen = 64
            tile = pl.load(data, [i * 16, 0], [16, 64], valid_shape=[16, vlen], target_memory=pl.MemorySpace.Vec)
            pl.store(pl.tile.fillpad(tile, pad_value=pl.PadValue.min), [i * 16, 0], output)
    return output


@pl.jit
def produced(data: pl.Tensor, cfg: pl.Tensor, doubled: pl.Out[pl.Tensor], output: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):  # the producer of what the next kernel reads
        t = pl.load(cfg, [0, 0], [1, 8], target_memory=pl.MemorySpace.Vec)
        pl.store(pl.add(t, t), [0, 0], doubled)
    with pl.at(level=pl.Level.CORE_GROUP):
        trips = pl.cast(pl.read(doubled, [0, 0]), pl.INDEX)
        for i in pl.range(trips):
            pl.store(pl.exp(pl.load(data, [i * 16, 0], [16, 64], target_memory=pl.MemorySpace.Vec)), [i * 16, 0],
                     output)
    return output


@pl.jit
def indexed(data: pl.Tensor, table: pl.Tensor, output: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(2):
            row = pl.cast(pl.read(table, [i]), pl.INDEX)  # a block table: where each block comes from
            pl.store(pl.load(data, [row * 16, 0], [16, 64], target_memory=pl.MemorySpace.Vec), [i * 16, 0], output)
    return output


def padded(data, widths):
    want = data.clone()
    for block, width in enumerate(widths):
        want[block * 16:(block + 1) * 16, width:] = NEG_INF
    return want


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_branch_on_a_read_value_picks_the_valid_width(platform):
    data = torch.randn(16, 64)
    for cfg, width in (([1, 48, 64], 48), ([0, 48, 64], 64), ([1, 5, 64], 5)):
        out = torch.zeros(16, 64)
        branch_width(data, torch.tensor(cfg, dtype=torch.int64), out, config=RunConfig(platform=platform))
        assert torch.equal(out, padded(data, [width]))


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_trip_count_read_at_run_time_and_a_ragged_tail(platform):
    data = torch.randn(64, 64)
    for blocks, tail in ((3, 40), (2, 64), (4, 1), (0, 7)):
        out = torch.zeros(64, 64)
        ragged(data, torch.tensor([blocks, tail], dtype=torch.int32), out, config=RunConfig(platform=platform))
        want = padded(data, [64] * (blocks - 1) + [tail] if blocks else [])
        want[blocks * 16:] = 0
        assert torch.equal(out, want), (blocks, tail)


def test_the_simulated_time_follows_the_data_read(tmp_path):
    data = torch.randn(64, 64)
    out = torch.zeros(64, 64)
    compiled = ragged.compile(data, torch.tensor([1, 64], dtype=torch.int32), out,
                              config=RunConfig(output_dir=str(tmp_path)))
    one, four = (compiled.run(data, torch.tensor([blocks, 64], dtype=torch.int32), out) for blocks in (1, 4))
    assert four.cycles > one.cycles and four.instructions > one.instructions
    again = compiled.run(data, torch.tensor([1, 64], dtype=torch.int32), out)  # not the last data's timeline
    assert again.cycles == one.cycles


@pytest.mark.parametrize("platform", PLATFORMS)
def test_an_element_another_task_writes_is_read_once_it_has(platform):
    data = torch.randn(128, 64)
    cfg = torch.zeros(1, 8, dtype=torch.int32)
    cfg[0, 0] = 3
    out, doubled = torch.zeros(128, 64), torch.zeros(1, 8, dtype=torch.int32)
    produced(data, cfg, doubled, out, config=RunConfig(platform=platform))
    want = torch.zeros(128, 64)
    want[:96] = torch.exp(data[:96])
    assert torch.equal(out, want)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_read_values_index_gm(platform):
    data = torch.randn(64, 64)
    out = torch.zeros(32, 64)
    indexed(data, torch.tensor([3, 1], dtype=torch.int32), out, config=RunConfig(platform=platform))
    assert torch.equal(out, torch.cat([data[48:64], data[16:32]]))


def test_an_index_outside_the_tensor_is_located_on_both_platforms():
    data = torch.randn(64, 64)
    line = next(k for k, text in enumerate(open(__file__).read().splitlines(), 1) if "a block table: where" in text)
    for platform in PLATFORMS:
        out = torch.zeros(32, 64)
        with pytest.raises(PyptoError, match="outside") as info:
            indexed(data, torch.tensor([3], dtype=torch.int32), out, config=RunConfig(platform=platform))
        assert info.value.span is not None and info.value.span.line == line, platform


@pl.jit
def steered_by_what_it_wrote(data: pl.Tensor, cfg: pl.Out[pl.Tensor], rows: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        pl.store(pl.load(data, [0, 0], [1, 8], target_memory=pl.MemorySpace.Vec), [0, 0], cfg)
        n = pl.cast(pl.read(cfg, [0, 1]), pl.INDEX)  # MARK-written
        for i in pl.range(n):
            pl.store(pl.adds(pl.load(data, [0, 0], [1, 8], target_memory=pl.MemorySpace.Vec), i), [i, 0], rows)
    return cfg, rows


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_read_of_bytes_the_kernel_wrote_sees_them_on_both_platforms(platform):
    """The scalar unit reads a tensor the kernel writes in its place among the pipes' work:
    after the store before it (a flag from MTE3), as the interpreter reads it."""
    data = torch.arange(8, dtype=torch.int32).reshape(1, 8) * 3  # cfg[0, 1] is 3: three rows
    cfg, rows = torch.zeros(1, 8, dtype=torch.int32), torch.zeros(4, 8, dtype=torch.int32)
    compiled = steered_by_what_it_wrote.compile(data, cfg, rows, config=RunConfig(platform=platform))
    compiled.run(data, cfg, rows)
    assert torch.equal(cfg, data)
    assert torch.equal(rows, torch.cat([data + i for i in range(3)] + [torch.zeros(1, 8, dtype=torch.int32)]))
    from pypto.codegen.listing import listing

    kernel = next(iter(compiled.kernels.values()))
    text = listing(kernel, kernel.programs[0], backend="a2a3", planner=compiled.config.memory_planner)
    assert "wait_flag(MTE3 -> SCALAR" in text and "SLOADGM" in text


def test_a_scalar_cast_from_a_float_to_an_integer_is_refused(tmp_path):
    from pypto.lang import parse

    text = '''import pypto.language as pl


@pl.program
class P:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, cfg: pl.Tensor[[4], pl.FP32], out: pl.Out[pl.Tensor[[16, 64], pl.FP32]]):
        x = pl.cast(pl.read(cfg, [0]), pl.INT32)
        return out
'''
    with pytest.raises(UnsupportedSyntaxError, match="from FP32 to INT32 is not supported") as info:
        parse(text, filename="cast.py")
    assert (info.value.span.line, info.value.span.col) == (8, 13)


def test_the_listing_shows_the_scalar_load(tmp_path):
    data = torch.randn(64, 64)
    compiled = ragged.compile(data, torch.tensor([2, 8], dtype=torch.int32), torch.zeros(64, 64),
                              config=RunConfig(output_dir=str(tmp_path)))
    listing = "\n".join(p.read_text() for p in compiled.output_dir.rglob("*.pto"))
    assert "load_scalar cfg[0]" in listing and "load_scalar cfg[1]" in listing


@pl.jit
def flat_table(data: pl.Tensor, table: pl.Tensor, output: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(2):
            row = pl.read(table, i + 1)  # a bare index: an element of a 1-D tensor
            tile = pl.load(data, [row * 16, 0], [16, 64], target_memory=pl.MemorySpace.Vec)
            output = pl.store(tile, [i * 16, 0], output, [16, 64])  # shapes=: the region, the tile's shape
    return output


@pl.jit
def shapes_unlike_the_tile(data: pl.Tensor, output: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        tile = pl.load(data, [0, 0], [16, 64], target_memory=pl.MemorySpace.Vec)
        pl.store(tile, [0, 0], output, [8, 64])
    return output


@pl.jit
def transposed_right(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        left = pl.move(pl.load(a, [0, 0], [16, 32], target_memory=pl.MemorySpace.Mat),
                       target_memory=pl.MemorySpace.Left)
        b_mat = pl.load(b, [0, 0], [16, 32], target_memory=pl.MemorySpace.Mat)
        right = pl.move(pl.tile.transpose_view(b_mat), target_memory=pl.MemorySpace.Right)
        pl.store(pl.matmul(left, right), [0, 0], out)
    return out


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_bare_index_reads_a_1d_tensor_and_store_takes_the_region_shape(platform):
    data = torch.randn(64, 64)
    out = torch.zeros(32, 64)
    flat_table(data, torch.tensor([9, 2, 0], dtype=torch.int32), out, config=RunConfig(platform=platform))
    assert torch.equal(out, torch.cat([data[32:48], data[0:16]]))


def test_a_store_region_unlike_the_tile_is_refused_at_the_line():
    line = next(k for k, text in enumerate(open(__file__).read().splitlines(), 1) if "[0, 0], output, [8, 64])" in text)
    with pytest.raises(PyptoError, match=r"shapes equal to the tile's \[16, 64\]") as info:
        shapes_unlike_the_tile(torch.randn(16, 64), torch.zeros(16, 64))
    assert info.value.span.line == line


@pytest.mark.parametrize("platform", PLATFORMS)
def test_transpose_view_feeds_the_cube_the_other_layout(platform):
    a, b = torch.randn(16, 32), torch.randn(16, 32)
    out = torch.zeros(16, 16)
    transposed_right(a, b, out, config=RunConfig(platform=platform))
    torch.testing.assert_close(out, a @ b.T, rtol=1e-4, atol=1e-4)


@pl.jit
def read_in_an_expression(data: pl.Tensor, cfg: pl.Tensor, output: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(pl.read(cfg, [0]) + 1):  # a read inside an expression: bound to a name first
            pl.store(pl.load(data, [i * 16, 0], [16, 64], target_memory=pl.MemorySpace.Vec), [i * 16, 0], output)
    return output


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_read_inside_an_expression(platform):
    data, out = torch.randn(64, 64), torch.zeros(64, 64)
    read_in_an_expression(data, torch.tensor([2], dtype=torch.int32), out, config=RunConfig(platform=platform))
    want = torch.zeros(64, 64)
    want[:48] = data[:48]
    assert torch.equal(out, want)


@pl.jit
def narrowed(data: pl.Tensor, cfg: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        small = pl.cast(pl.read(cfg, [0]), pl.INT8)  # the low 8 bits, two's complement
        trips = pl.cast(small, pl.INDEX)
        for i in pl.range(trips):
            pl.store(pl.load(data, [i * 16, 0], [16, 64], target_memory=pl.MemorySpace.Vec), [i * 16, 0], out)
    return out


@pl.jit
def width_from_data(data: pl.Tensor, cfg: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        v = pl.read(cfg, [0])
        t = pl.load(data, [0, 0], [16, 64], valid_shape=[16, v], target_memory=pl.MemorySpace.Vec)  # v of 0..64
        pl.store(pl.tile.fillpad(t), [0, 0], out)
    return out


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_narrowing_scalar_cast_keeps_the_low_bits(platform):
    data = torch.randn(64, 64)
    for value, trips in ((260, 4), (200, 0), (3, 3)):
        out = torch.zeros(64, 64)
        narrowed(data, torch.tensor([value], dtype=torch.int32), out, config=RunConfig(platform=platform))
        assert int((out != 0).any(dim=1).sum()) == 16 * trips, value


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_valid_extent_outside_the_tile_at_run_time_is_located(platform):
    line = next(k for k, text in enumerate(open(__file__).read().splitlines(), 1) if "# v of 0..64" in text)
    for bad in (-3, 65):
        want = r"valid shape \[16, %d\] at run time, outside its shape \[16, 64\]|negative extent %d|valid shape \[16, %d\] is outside the tile's shape" % (
            bad, bad, bad)
        with pytest.raises(PyptoError, match=want) as info:
            width_from_data(torch.randn(16, 128), torch.tensor([bad], dtype=torch.int32), torch.zeros(16, 64),
                            config=RunConfig(platform=platform))
        assert info.value.span.line == line


def test_a_float_value_read_for_an_integer_tile_is_refused_at_the_line():
    from pypto.lang import parse

    text = ("import pypto.language as pl\n\n\n@pl.program\nclass P:\n    @pl.function(type=pl.FunctionType.InCore)\n"
            "    def k(self, x: pl.Tensor[[16, 64], pl.INT32], s: pl.Tensor[[1], pl.FP32],\n"
            "          out: pl.Out[pl.Tensor[[16, 64], pl.INT32]]):\n"
            "        t = pl.load(x, [0, 0], [16, 64])\n"
            "        out = pl.store(pl.adds(t, pl.read(s, [0])), [0, 0], out)\n        return out\n")
    with pytest.raises(PyptoError, match="an integer scalar for a INT32 tile, but got a FP32 value") as info:
        parse(text, filename="mixed.py")
    assert info.value.span.line == 10


@pl.jit
def cast_in_expression(x: pl.Tensor, cfg: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        n = pl.cast(pl.read(cfg, 0), pl.INDEX) + 1  # a scalar's cast inside an expression
        for i in pl.range(pl.min(n, pl.cast(pl.read(cfg, 1), pl.INDEX) * 2)):
            pl.store(pl.adds(pl.load(x, [i * 16, 0], [16, 128]), 1.0), [i * 16, 0], out)
    return out


@pytest.mark.parametrize("platform", ["ref", "a2a3sim"])
def test_a_scalar_cast_inside_an_expression(platform):
    x, out = torch.randn(64, 128), torch.zeros(64, 128)
    cast_in_expression(x, torch.tensor([2, 5], dtype=torch.int32), out, config=RunConfig(platform=platform))
    assert torch.equal(out[:48], x[:48] + 1) and torch.equal(out[48:], torch.zeros(16, 128))


@pl.jit
def divided(x: pl.Tensor, cfg: pl.Tensor, d: pl.Scalar[pl.INT32], out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        v = pl.read(cfg, [0, 8 // d])  # MARK-index
        if 4 // d > 1:
            pl.store(pl.adds(pl.load(x, [0, 0], [1, 32]), v), [0, 0], out)
    return out


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_division_by_zero_on_the_scalar_unit_names_its_line(platform):
    lines = {m: next(k for k, text in enumerate(open(__file__).read().splitlines(), 1) if m in text)
             for m in ("MARK-index",)}
    cfg = torch.ones(1, 10, dtype=torch.int32)
    with pytest.raises(PyptoError, match="division by zero") as info:
        divided(torch.randn(1, 32), cfg, 0, torch.zeros(1, 32), config=RunConfig(platform=platform))
    assert info.value.span.line == lines["MARK-index"]


@pl.jit
def steers_the_cube(a: pl.Tensor, b: pl.Tensor, flag: pl.InOut[pl.Tensor], d: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        flag = pl.assemble(flag, pl.adds(pl.slice(flag, [1, 8], [0, 0]), 1), [0, 0])  # the vector core writes it
        n = pl.read(flag, [0, 0])
        for i in pl.range(n):  # MARK-cube
            d = pl.assemble(d, pl.matmul(a, b, out_dtype=pl.FP32), [0, 0])
    return flag, d


def test_a_value_one_core_read_of_gm_it_wrote_is_refused_where_the_cube_uses_it():
    from pypto.errors import CodegenError

    line = next(k for k, text in enumerate(open(__file__).read().splitlines(), 1) if "MARK-cube" in text)
    a, b = torch.randn(16, 32).half(), torch.randn(32, 32).half()
    with pytest.raises(CodegenError, match="which the other core's scalar unit read") as info:
        steers_the_cube(a, b, torch.zeros(1, 8, dtype=torch.int32), torch.zeros(16, 32))
    assert info.value.span.line == line and "kernel input" in info.value.hint


@pl.jit
def read_in_a_split(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor], d: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(pl.SplitMode.UP_DOWN)]):
        c = pl.assemble(c, pl.muls(pl.matmul(a, b, out_dtype=pl.FP32), 2.0), [0, 0])
        s = pl.read(c, [15, 31])  # MARK-split-read
        d = pl.assemble(d, pl.adds(c, s), [0, 0])
    return c, d


def test_a_read_of_what_both_vector_cores_store_is_refused_at_its_line():
    line = next(k for k, text in enumerate(open(__file__).read().splitlines(), 1) if "MARK-split-read" in text)
    a, b = torch.randn(16, 32).half(), torch.randn(32, 32).half()
    with pytest.raises(PyptoError, match="pl.read of 'c', which the split scope's two vector cores each store") as info:
        read_in_a_split(a, b, torch.zeros(16, 32), torch.zeros(16, 32))
    assert info.value.span.line == line
