"""``pl.tile.mgather``'s out-of-range policies read an INT32 index as the hardware does, an
unsigned 32-bit offset (the reference's goldens mask it with 0xFFFFFFFF): a negative index
is past every table, so ``clamp`` takes the last row (element), ``wrap`` takes 2**32 + i
modulo the count, ``zero`` reads 0 and ``undefined`` is a located error naming the offset —
for row and element gathers, indices anywhere in INT32, on both platforms."""

import functools

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import pypto.language as pl
from pypto.errors import ExecutionError
from pypto.runtime import RunConfig

PLATFORMS = ("ref", "a2a3sim")
POLICIES = ("clamp", "wrap", "zero", "undefined")
N, COLS = 16, 16


def golden(table: torch.Tensor, idx: torch.Tensor, policy: str) -> torch.Tensor:
    """What each index reads, one at a time, as unsigned offsets (``table``'s first axis)."""
    n = table.shape[0]
    out = []
    for i in idx.reshape(-1).tolist():
        offset = i % 2 ** 32
        if policy == "clamp":
            out.append(table[min(offset, n - 1)])
        elif policy == "wrap":
            out.append(table[offset % n])
        else:
            out.append(table[offset] if offset < n else torch.zeros_like(table[0]))
    return torch.stack(out)


def indices(n: int, policy: str):
    in_range = st.integers(0, n - 1)
    if policy == "undefined":
        return in_range
    return st.one_of(in_range, st.sampled_from([-1, -2, -n, n, n + 1, -2 ** 31, 2 ** 31 - 1, -2 ** 31 + 1]),
                     st.integers(-2 ** 31, 2 ** 31 - 1))


@functools.lru_cache(maxsize=None)
def gather(coalesce: str, policy: str):
    if coalesce == "row":
        @pl.jit
        def rows(mem: pl.Tensor, idx: pl.Tensor, out: pl.Out[pl.Tensor]):
            with pl.at(level=pl.Level.CORE_GROUP):
                pl.store(pl.tile.mgather(mem, pl.load(idx, [0, 0], [1, N]), gather_oob=policy), [0, 0], out)
            return out
        return rows

    @pl.jit
    def elements(mem: pl.Tensor, idx: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.mgather(mem, pl.load(idx, [0, 0], [1, N]), coalesce="elem", gather_oob=policy)  # MARK-elem
            pl.store(t, [0, 0], out)
        return out
    return elements


@settings(max_examples=max(8, settings().max_examples // 2))
@given(coalesce=st.sampled_from(["row", "elem"]), policy=st.sampled_from(POLICIES),
       table_rows=st.sampled_from([7, 64, 100]), data=st.data())
def test_property_an_index_is_an_unsigned_offset_under_every_policy(coalesce, policy, table_rows, data):
    mem = torch.arange(table_rows * COLS, dtype=torch.float32).reshape(table_rows, COLS)
    n = table_rows if coalesce == "row" else mem.numel()
    idx = torch.tensor([data.draw(st.lists(indices(n, policy), min_size=N, max_size=N))], dtype=torch.int32)
    want = golden(mem if coalesce == "row" else mem.reshape(-1), idx, policy)
    for platform in PLATFORMS:
        out = torch.zeros(*want.shape if coalesce == "row" else (1, N))
        gather(coalesce, policy)(mem, idx, out, config=RunConfig(platform=platform))
        assert torch.equal(out.reshape(want.shape), want), (platform, idx.tolist())


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("bad", [-1, -2 ** 31, 4096])
def test_an_undefined_index_past_the_table_is_an_error_naming_its_offset(platform, bad):
    line = next(k for k, text in enumerate(open(__file__).read().splitlines(), 1) if "MARK-elem" in text)
    mem = torch.zeros(64, COLS)
    idx = torch.zeros(1, N, dtype=torch.int32)
    idx[0, 3] = bad
    with pytest.raises(ExecutionError, match=rf"index {bad}\b.* at \[0, 3\] is outside mem's 1024 elements") as info:
        gather("elem", "undefined")(mem, idx, torch.zeros(1, N), config=RunConfig(platform=platform))
    assert info.value.span.line == line
    if bad < 0:
        assert f"unsigned offset {bad % 2 ** 32}" in str(info.value)
