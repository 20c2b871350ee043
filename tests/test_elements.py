"""One element read or written by the scalar unit: ``pl.read`` / ``pl.write`` of a Vec tile
(the written tile rebinds its name when the call is a statement) and ``pl.write`` of a GM
tensor, in a kernel and in an orchestration. The same bits as torch on both platforms; in
the simulator an element read of a tile steers control flow (trip counts, store offsets)
with the value the pipes computed; the host's write waits for the tasks that touch the
element; the refusals at the user's line."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import pypto.language as pl
from pypto.errors import ExecutionError, TypeCheckError, UnsupportedSyntaxError
from pypto.runtime import RunConfig, run

PLATFORMS = ("ref", "a2a3sim")
DTYPES = {torch.float32: pl.FP32, torch.float16: pl.FP16, torch.int32: pl.INT32}


def _set_then_read(rows: int, cols: int, at: tuple, back: tuple):
    (i, j), (p, q) = at, back

    @pl.jit
    def kernel(x: pl.Tensor, v: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(x, [0, 0], [rows, cols])
            pl.write(t, [i, j], pl.read(v, [0]))  # a statement: t is the updated tile from here
            got = pl.read(t, [p, q])
            pl.store(pl.adds(t, got), [0, 0], out)
        return out
    return kernel


@settings(max_examples=8, deadline=None)
@given(rows=st.integers(1, 16), cols=st.sampled_from([16, 32, 64]), dtype=st.sampled_from(list(DTYPES)),
       data=st.data())
def test_a_written_element_is_read_back_and_computed_with(rows, cols, dtype, data):
    at = (data.draw(st.integers(0, rows - 1)), data.draw(st.integers(0, cols - 1)))
    back = (data.draw(st.integers(0, rows - 1)), data.draw(st.integers(0, cols - 1)))
    seed = data.draw(st.integers(0, 2 ** 16))
    g = torch.Generator().manual_seed(seed)
    x = (torch.randn(rows, cols, generator=g) * 50).to(dtype)
    v = (torch.randn(1, generator=g) * 50).to(dtype)
    want = x.clone()
    want[at] = v[0]
    want = want + want[back]
    kernel = _set_then_read(rows, cols, at, back)
    for platform in PLATFORMS:
        out = torch.zeros(rows, cols, dtype=dtype)
        kernel(x, v, out, config=RunConfig(platform=platform))
        assert torch.equal(out, want), platform


@pl.program
class Steered:
    """A kernel whose trip count and store row come from an index tile it loaded."""

    @pl.function(type=pl.FunctionType.InCore)
    def kernel(self, idx: pl.Tensor[[1, 8], pl.INT32], x: pl.Tensor[[8, 32], pl.FP32],
               out: pl.Out[pl.Tensor[[32, 32], pl.FP32]]) -> pl.Tensor[[32, 32], pl.FP32]:
        it = pl.load(idx, [0, 0], [1, 8])
        row: pl.Scalar[pl.INT32] = pl.tile.read(it, [0, 0])
        trips: pl.Scalar[pl.INT32] = pl.read(it, [0, 1])
        t = pl.load(x, [0, 0], [8, 32])
        for _ in pl.range(trips):
            t = pl.add(t, t)
        return pl.store(t, [row, 0], out)

    @pl.function(type=pl.FunctionType.Orchestration)
    def orchestrator(self, idx: pl.Tensor[[1, 8], pl.INT32], x: pl.Tensor[[8, 32], pl.FP32],
                     out: pl.Out[pl.Tensor[[32, 32], pl.FP32]]) -> pl.Tensor[[32, 32], pl.FP32]:
        out = self.kernel(idx, x, out)
        return out


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("row,trips", [(0, 0), (16, 3), (24, 1)])
def test_an_element_of_a_tile_steers_the_kernel(platform, row, trips, tmp_path):
    idx = torch.tensor([[row, trips, 0, 0, 0, 0, 0, 0]], dtype=torch.int32)
    x = torch.randn(8, 32)
    out = torch.zeros(32, 32)
    config = RunConfig(platform=platform, output_dir=str(tmp_path))
    report = run(Steered, idx, x, out, config=config).run(idx, x, out, config=config)
    want = torch.zeros(32, 32)
    want[row:row + 8] = x * 2 ** trips
    assert torch.equal(out, want)
    if platform == "a2a3sim":  # the scalar unit waits for the load before it reads the tile
        scalar = [e for e in report.events if e.pipe == "SCALAR" and e.kind == "instr"]
        load = next(e for e in report.events if e.name.startswith("TLOAD"))
        assert scalar and all(e.start >= load.end for e in scalar)


@pl.program
class Table:
    """The reference's transposed table: a kernel writes GM elements one by one."""

    @pl.function(type=pl.FunctionType.InCore)
    def write_table(self, vals: pl.Tensor[[32], pl.INT32],
                    table: pl.InOut[pl.Tensor[[16, 32], pl.INT32]]) -> pl.Tensor[[16, 32], pl.INT32]:
        for k in pl.unroll(2):
            for t in pl.unroll(16):
                val: pl.Scalar[pl.INT32] = pl.read(vals, [k * 16 + t])
                table = pl.write(table, [t, k], val)
        return table

    @pl.function(type=pl.FunctionType.InCore)
    def copy(self, table: pl.Tensor[[16, 32], pl.INT32],
             dst: pl.Out[pl.Tensor[[16, 32], pl.INT32]]) -> pl.Tensor[[16, 32], pl.INT32]:
        return pl.store(pl.load(table, [0, 0], [16, 32]), [0, 0], dst)

    @pl.function(type=pl.FunctionType.Orchestration)
    def orchestrator(self, vals: pl.Tensor[[32], pl.INT32], table: pl.InOut[pl.Tensor[[16, 32], pl.INT32]],
                     dst: pl.Out[pl.Tensor[[16, 32], pl.INT32]]) -> pl.Tensor[[16, 32], pl.INT32]:
        table = self.write_table(vals, table)
        dst = self.copy(table, dst)
        return dst


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_kernel_writes_elements_of_gm(platform, tmp_path):
    vals = torch.arange(32, dtype=torch.int32) + 100
    table = torch.full((16, 32), -7, dtype=torch.int32)
    dst = torch.zeros(16, 32, dtype=torch.int32)
    run(Table, vals, table, dst, config=RunConfig(platform=platform, output_dir=str(tmp_path)))
    want = torch.full((16, 32), -7, dtype=torch.int32)
    want[:, :2] = vals.reshape(2, 16).T
    assert torch.equal(table, want) and torch.equal(dst, want)


@pl.program
class HostWrite:
    """The orchestration writes an element between a task that reads the tensor and one
    that reads it again: the first sees the old value, the second the new."""

    @pl.function(type=pl.FunctionType.InCore)
    def copy(self, a: pl.Tensor[[16, 16], pl.FP32],
             dst: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
        return pl.store(pl.load(a, [0, 0], [16, 16]), [0, 0], dst)

    @pl.function(type=pl.FunctionType.Orchestration)
    def orchestrator(self, a: pl.InOut[pl.Tensor[[16, 16], pl.FP32]], before: pl.Out[pl.Tensor[[16, 16], pl.FP32]],
                     after: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
        before = self.copy(a, before)
        pl.write(a, [3, 5], 42.0)
        after = self.copy(a, after)
        return after


@pytest.mark.parametrize("platform", PLATFORMS)
def test_the_hosts_write_lands_between_the_tasks_around_it(platform, tmp_path):
    a = torch.randn(16, 16)
    old = a.clone()
    before, after = torch.zeros(16, 16), torch.zeros(16, 16)
    run(HostWrite, a, before, after, config=RunConfig(platform=platform, output_dir=str(tmp_path)))
    new = old.clone()
    new[3, 5] = 42.0
    assert torch.equal(before, old) and torch.equal(after, new) and torch.equal(a, new)


def _kernel(body: str):
    """A one-scope kernel whose body is ``body`` (x: 16x16 input, out: its output)."""
    src = ("import pypto.language as pl\n\n@pl.jit\ndef k(x: pl.Tensor, out: pl.Out[pl.Tensor]):\n"
           "    with pl.at(level=pl.Level.CORE_GROUP):\n        t = pl.load(x, [0, 0], [16, 16])\n"
           + "".join(f"        {line}\n" for line in body.splitlines()) + "    return out\n")
    return src


@pytest.mark.parametrize("body,error,words", [
    ("pl.write(t, [0, 0], 1.5)\npl.store(t, [0, 0], out)", TypeCheckError, "an integer value"),
    ("pl.write(t, [16, 0], 1)\npl.store(t, [0, 0], out)", TypeCheckError, "outside the tile's 16"),
    ("v = pl.read(t, [0])\npl.store(pl.adds(t, v), [0, 0], out)", TypeCheckError, "one index per axis"),
    ("pl.write(pl.adds(t, 1), [0, 0], 2)\npl.store(t, [0, 0], out)", UnsupportedSyntaxError, "no name to rebind"),
])
def test_mistakes_are_refused_where_written(body, error, words, tmp_path):
    path = tmp_path / "user_kernel.py"
    path.write_text(_kernel(body))
    namespace: dict = {}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    x = torch.zeros(16, 16, dtype=torch.int32)
    with pytest.raises(error) as info:
        namespace["k"](x, torch.zeros(16, 16, dtype=torch.int32), config=RunConfig(platform="ref"))
    assert words in str(info.value) and "user_kernel.py:" in str(info.value)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_read_past_the_valid_region_is_an_error_at_its_line(platform):
    @pl.jit
    def past(x: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(x, [0, 0], [16, 16], valid_shape=[4, 16])
            v = pl.read(t, [8, 0])
            pl.store(pl.adds(pl.fillpad(t), v), [0, 0], out)
        return out

    with pytest.raises(ExecutionError, match="valid region") as info:
        past(torch.zeros(16, 16), torch.zeros(16, 16), config=RunConfig(platform=platform))
    assert "test_elements.py:" in str(info.value)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_long_loop_before_a_tile_read_gives_the_read_its_last_trip(platform):
    """A steady loop is fast-forwarded where no value is read; here its every trip shapes
    the element the store's row comes from."""
    @pl.jit
    def summed(x: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            acc = pl.load(x, [0, 0], [1, 16])
            for _ in pl.range(40):
                acc = pl.add(acc, pl.load(x, [0, 0], [1, 16]))
            row = pl.read(acc, [0, 0])
            pl.store(acc, [row, 0], out)
        return out

    x = torch.ones(1, 16, dtype=torch.int32)
    out = torch.zeros(64, 16, dtype=torch.int32)
    summed(x, out, config=RunConfig(platform=platform))
    want = torch.zeros(64, 16, dtype=torch.int32)
    want[41] = 41
    assert torch.equal(out, want)


def test_a_read_of_gm_the_kernel_wrote_is_the_value_it_wrote():
    """The cube's result, kept in GM for the vector core, read back by the scalar unit after
    the store that wrote it: the same value on both platforms."""
    @pl.jit
    def computed(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            c = pl.matmul(a, b, out_dtype=pl.FP32)
            v = pl.read(c, [3, 7])
            out[:] = pl.adds(c, v)
        return out

    a, b = torch.randn(64, 64).half(), torch.randn(64, 128).half()
    outs = []
    for p in PLATFORMS:
        out = torch.zeros(64, 128)
        computed(a, b, out, config=RunConfig(platform=p))
        outs.append(out)
    assert torch.equal(outs[0], outs[1])
    c = outs[0] - outs[0][3, 7] / 2  # out = c + c[3, 7], so out[3, 7] = 2 c[3, 7]
    torch.testing.assert_close(c, (a.double() @ b.double()).float(), rtol=1e-2, atol=1e-2)