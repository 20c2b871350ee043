"""Transfers by index between GM and Vec: ``pl.tile.mgather`` reads rows (``coalesce="row"``)
or elements (``"elem"``) of a tensor at the positions an INT32 index tile holds, with the
``gather_oob`` policies for an index past the tensor; ``pl.tile.mscatter`` writes a tile's
elements to positions of a tensor. The same values as torch's indexing on both platforms,
the vector pipe busy for them in the simulator, and the refusals at the user's line."""

import inspect

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import pypto.language as pl
from pypto.errors import ExecutionError, TypeCheckError, UnsupportedSyntaxError
from pypto.runtime import RunConfig

PLATFORMS = ("ref", "a2a3sim")


def _oracle(table: torch.Tensor, picked: torch.Tensor, policy: str) -> torch.Tensor:
    """The reference's golden: an INT32 index is read as an unsigned 32-bit offset, so a
    negative one is past the table (-1 clamps to the last row, wraps as 2**32 - 1)."""
    n = table.shape[0]
    offset = picked & 0xFFFFFFFF
    bad = offset >= n
    where = {"clamp": offset.clamp(max=n - 1), "wrap": offset.remainder(n)}.get(policy, offset.where(~bad, 0))
    got = table[where]
    return got.masked_fill(bad.reshape(-1, *[1] * (got.dim() - 1)), 0) if policy == "zero" else got


def _row_gather(rows: int, column: bool, policy: str):
    shape = [rows, 1] if column else [1, rows]

    @pl.jit
    def gather(mem: pl.Tensor, idx: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.tile.mgather(mem, pl.load(idx, [0, 0], shape), gather_oob=policy)
            pl.store(t, [0, 0], out)
        return out
    return gather


def _elem_gather(rows: int, cols: int, policy: str):
    @pl.jit
    def gather(mem: pl.Tensor, idx: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.mgather(mem, pl.load(idx, [0, 0], [rows, cols]), coalesce="elem", gather_oob=policy)
            pl.store(t, [0, 0], out)
        return out
    return gather


@settings(max_examples=10, deadline=None)
@given(table_rows=st.integers(1, 40), cols=st.sampled_from([16, 64, 128]), rows=st.integers(1, 16),
       column=st.booleans(), policy=st.sampled_from(["undefined", "clamp", "wrap", "zero"]),
       dtype=st.sampled_from([torch.float32, torch.float16, torch.int32]), seed=st.integers(0, 2 ** 16))
def test_a_row_gather_is_torchs_row_indexing(table_rows, cols, rows, column, policy, dtype, seed):
    g = torch.Generator().manual_seed(seed)
    mem = (torch.randn(table_rows, cols, generator=g) * 100).to(dtype)
    low, high = (0, table_rows) if policy == "undefined" else (-2 * table_rows, 3 * table_rows)
    idx = torch.randint(low, high, (rows, 1) if column else (1, rows), generator=g, dtype=torch.int32)
    want = _oracle(mem, idx.reshape(-1).long(), policy)
    kernel = _row_gather(rows, column, policy)
    for platform in PLATFORMS:
        out = torch.zeros(rows, cols, dtype=dtype)
        kernel(mem, idx, out, config=RunConfig(platform=platform))
        assert torch.equal(out, want), platform


@settings(max_examples=10, deadline=None)
@given(shape=st.sampled_from([(4, 8, 16), (64, 64), (3, 512)]), rows=st.integers(1, 8),
       cols=st.sampled_from([8, 16, 64]), policy=st.sampled_from(["undefined", "clamp", "wrap", "zero"]),
       seed=st.integers(0, 2 ** 16))
def test_an_element_gather_is_torchs_flat_indexing(shape, rows, cols, policy, seed):
    g = torch.Generator().manual_seed(seed)
    mem = torch.randn(shape, generator=g)
    n = mem.numel()
    low, high = (0, n) if policy == "undefined" else (-n, 2 * n)
    idx = torch.randint(low, high, (rows, cols), generator=g, dtype=torch.int32)
    want = _oracle(mem.reshape(-1), idx.long().reshape(-1), policy).reshape(rows, cols)
    kernel = _elem_gather(rows, cols, policy)
    for platform in PLATFORMS:
        out = torch.zeros(rows, cols)
        kernel(mem, idx, out, config=RunConfig(platform=platform))
        assert torch.equal(out, want), platform


R, C = 16, 64


@pl.jit
def scatter(src: pl.Tensor, idx: pl.Tensor, out: pl.InOut[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        pl.mscatter(pl.load(src, [0, 0], [R, C]), pl.load(idx, [0, 0], [R, C]), out)
    return out


@settings(max_examples=10, deadline=None)
@given(size=st.sampled_from([R * C, 4096, 3 * R * C + 5]), repeats=st.booleans(), seed=st.integers(0, 2 ** 16))
def test_a_scatter_writes_each_position_its_last_element(size, repeats, seed):
    g = torch.Generator().manual_seed(seed)
    src = torch.randn(R, C, generator=g)
    idx = (torch.randint(0, size, (R, C), generator=g) if repeats else torch.randperm(size, generator=g)[:R * C]
           .reshape(R, C)).int()
    base = torch.randn(size, generator=g).reshape(1, size)
    want = base.clone().reshape(-1)
    for k, p in enumerate(idx.reshape(-1).tolist()):  # row-major order: the later element wins
        want[p] = src.reshape(-1)[k]
    for platform in PLATFORMS:
        out = base.clone()
        scatter(src, idx, out, config=RunConfig(platform=platform))
        assert torch.equal(out.reshape(-1), want), platform


def test_the_vector_pipe_walks_the_index_tile_one_burst_per_row():
    from pypto.backend import A2A3

    kernel = _row_gather(8, True, "undefined")
    mem, idx = torch.randn(32, 128), torch.randint(0, 32, (8, 1), dtype=torch.int32)
    compiled = kernel.compile(mem, idx, torch.zeros(8, 128))
    report = compiled.run(mem, idx, torch.zeros(8, 128))
    c = A2A3.costs
    row = max(128 * 4, c.short_row_bytes)
    busy = report.pipe_cycles["aiv0"]  # the gather, its wait for the index load and its flag to the store
    assert busy["VECTOR"] == c.gm_latency + -(-8 * row // c.gm_bytes_per_cycle) + 2 * c.sync_cycles


@pl.jit
def partial_rows(mem: pl.Tensor, idx: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.tile.mgather(mem, pl.load(idx, [0, 0], [8, 1], valid_shape=[5, 1]))
        pl.store(t, [0, 0], out)
    return out


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_partial_index_tile_gathers_its_valid_rows(platform):
    mem = torch.randn(32, 64)
    idx = torch.tensor([[3], [31], [0], [7], [7], [99], [-4], [64]], dtype=torch.int32)  # past the 5: never read
    out = torch.full((8, 64), -1.0)
    partial_rows(mem, idx, out, config=RunConfig(platform=platform))
    assert torch.equal(out[:5], mem[idx[:5, 0].long()]) and torch.equal(out[5:], torch.full((3, 64), -1.0))


@pl.jit
def of_a_slice(mem: pl.Tensor, idx: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        v = pl.slice(mem, [4, 16], [4, 0])
        t = pl.tile.mgather(v, pl.load(idx, [0, 0], [4, 1]))  # MARK-slice
        pl.store(t, [0, 0], out)
    return out


@pl.jit
def four_rows(mem: pl.Tensor, idx: pl.Tensor, out: pl.Out[pl.Tensor]):  # an index past mem, or of floats
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.tile.mgather(mem, pl.load(idx, [0, 0], [4, 1]))  # MARK-rows
        pl.store(t, [0, 0], out)
    return out


@pl.jit
def square_rows(mem: pl.Tensor, idx: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.tile.mgather(mem, pl.load(idx, [0, 0], [4, 4]))  # MARK-square
        pl.store(t, [0, 0], out)
    return out


@pl.jit
def into_mat(mem: pl.Tensor, idx: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.tile.mgather(mem, pl.load(idx, [0, 0], [4, 1]), target_memory=pl.Mem.Mat)  # MARK-mat
        pl.store(t, [0, 0], out)
    return out


@pl.jit
def bad_policy(mem: pl.Tensor, idx: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.tile.mgather(mem, pl.load(idx, [0, 0], [4, 1]), gather_oob="saturate")  # MARK-policy
        pl.store(t, [0, 0], out)
    return out


@pl.jit
def mixed_scatter(src: pl.Tensor, idx: pl.Tensor, out: pl.InOut[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        pl.mscatter(pl.load(src, [0, 0], [4, 16]), pl.load(idx, [0, 0], [4, 16]), out)  # MARK-scatter
    return out


def _line(marker):
    lines, _ = inspect.getsourcelines(inspect.getmodule(_line))
    return next(k for k, text in enumerate(lines, start=1) if f"# {marker}" in text)


I32 = torch.int32


@pytest.mark.parametrize("kernel, args, error, marker, match", [
    (of_a_slice, (torch.zeros(8, 16), torch.zeros(4, 1, dtype=I32), torch.zeros(4, 16)), UnsupportedSyntaxError,
     "MARK-slice", "mgather addresses a tensor by the positions its index tile holds, and 'v' is a slice"),
    (four_rows, (torch.zeros(8, 16), torch.tensor([[1], [8], [2], [3]], dtype=I32), torch.zeros(4, 16)),
     ExecutionError, "MARK-rows", r"index 8 at \[1, 0\] is outside mem's 8 rows \(gather_oob='clamp'"),
    (four_rows, (torch.zeros(8, 16), torch.zeros(4, 1), torch.zeros(4, 16)), TypeCheckError, "MARK-rows",
     "The operator tile.mgather requires an INT32 idx tile, but got FP32"),
    (square_rows, (torch.zeros(8, 16), torch.zeros(4, 4, dtype=I32), torch.zeros(4, 16)), TypeCheckError,
     "MARK-square", r"requires a \[1, R\] or \[R, 1\] idx tile in row mode, but got \[4, 4\]"),
    (into_mat, (torch.zeros(8, 16), torch.zeros(4, 1, dtype=I32), torch.zeros(4, 16)), TypeCheckError, "MARK-mat",
     r"requires target_memory=pl.Mem.Vec"),
    (bad_policy, (torch.zeros(8, 16), torch.zeros(4, 1, dtype=I32), torch.zeros(4, 16)), TypeCheckError,
     "MARK-policy", "requires gather_oob one of 'undefined', 'clamp', 'wrap', 'zero', but got 'saturate'"),
    (mixed_scatter, (torch.zeros(4, 16), torch.zeros(4, 16, dtype=I32), torch.zeros(64, 16, dtype=I32)),
     TypeCheckError, "MARK-scatter", "requires an output_tensor of src's dtype, but got INT32 and FP32"),
])
@pytest.mark.parametrize("platform", PLATFORMS)
def test_mistakes_name_the_line(kernel, args, error, marker, match, platform):
    with pytest.raises(error, match=match) as info:
        kernel(*args, config=RunConfig(platform=platform))
    assert info.value.span.file == __file__ and info.value.span.line == _line(marker)
