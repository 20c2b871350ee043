"""The sort family: ``sort32`` sorts each row's 32-element blocks descending into (value,
index) pairs, ``mrgsort`` merges sorted runs (format 1 within a row, format 2 across tiles),
``gather_mask`` / ``scatter_mask`` take pairs apart and put columns back, and the tensor
forms (``gather`` / ``scatter`` by column index too) computed in blocks of rows. The same
bits on both platforms as a torch oracle; the refusals at the user's line."""

import heapq
import inspect

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import pypto.language as pl
from pypto.errors import PyptoError, TypeCheckError
from pypto.runtime import RunConfig

PLATFORMS = ("ref", "a2a3sim")


def _pairs(values: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    return torch.stack([values, index.view(torch.float32)], -1).reshape(values.shape[0], -1)


def _oracle_sort(x: torch.Tensor):
    """Descending, ties by the smaller index (the indices ascend with the position)."""
    order = torch.sort(x, dim=-1, descending=True, stable=True).indices
    return x.gather(-1, order), order.to(torch.int32)


@pl.jit
def sort_row(x: pl.Tensor, idx: pl.Tensor, vals: pl.Out[pl.Tensor], ids: pl.Out[pl.Tensor]):
    """A whole row sorted: sort32, then format-1 merges of 4 runs until one run is left."""
    with pl.at(level=pl.Level.CORE_GROUP):
        n = pl.dim(x, 1)
        pairs = pl.tile.sort32(pl.load(x, [0, 0], [1, n]), pl.load(idx, [0, 0], [1, n]))
        for i, (acc,) in pl.range(pl.dim(x, 0), init_values=(pairs,)):  # dim 0 of x: the merge rounds
            merged = pl.tile.mrgsort(acc, block_len=1 << (6 + 2 * i))
            acc = pl.yield_(merged)
        pl.store(pl.tile.gather_mask(acc, mask_pattern=pl.tile.MaskPattern.P0101), [0, 0], vals)
        pl.store(pl.tile.gather_mask(acc, pl.tile.MaskPattern.P1010, output_dtype=pl.UINT32), [0, 0], ids)
    return vals, ids


@settings(max_examples=settings().max_examples // 5, deadline=None)
@given(rounds=st.integers(1, 3), ties=st.booleans(), seed=st.integers(0, 2 ** 16))
def test_property_a_row_sorts_as_torch_on_both_platforms(rounds, ties, seed):
    n = 32 * 4 ** rounds  # sort32 blocks, then `rounds` merges of 4 runs
    g = torch.Generator().manual_seed(seed)
    row = torch.randint(-4, 4, (1, n), generator=g).float() if ties else torch.randn(1, n, generator=g)
    x = torch.zeros(rounds, n)
    x[0] = row
    idx = torch.arange(n, dtype=torch.int32).reshape(1, n).view(torch.uint32)
    want_v, want_i = _oracle_sort(row)
    for platform in PLATFORMS:
        vals, ids = torch.zeros(1, n), torch.zeros(1, n, dtype=torch.uint32)
        sort_row(x, idx, vals, ids, config=RunConfig(platform=platform))
        assert torch.equal(vals, want_v), platform
        assert torch.equal(ids.view(torch.int32), want_i), platform


@pl.jit
def sort_blocks(x: pl.Tensor, idx: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        r, c = pl.dim(x, 0), pl.dim(x, 1)
        pl.store(pl.tile.sort32(pl.load(x, [0, 0], [r, c]), pl.load(idx, [0, 0], [r, c])), [0, 0], out)
    return out


def test_ties_go_to_the_smaller_index_nan_sorts_first_and_negative_zero_equals_zero():
    x = torch.tensor([[1.0, float("nan"), -0.0, 2.0, 0.0, 1.0, float("-inf"), float("inf")] * 4])
    idx = torch.arange(31, -1, -1, dtype=torch.int32).reshape(1, 32).view(torch.uint32)  # descending indices
    ids = idx.view(torch.int32)[0].tolist()
    key = [(0, 0.0, i) if v != v else (1, -v, i) for v, i in zip(x[0].tolist(), ids)]
    order = sorted(range(32), key=lambda k: key[k])
    want = _pairs(x[:, order], torch.tensor([[ids[k] for k in order]], dtype=torch.int32))
    for platform in PLATFORMS:
        out = torch.zeros(1, 64)
        sort_blocks(x, idx, out, config=RunConfig(platform=platform))
        assert torch.equal(out.view(torch.int32), want.view(torch.int32)), platform


def test_each_block_of_32_sorts_alone_and_a_short_last_block_too():
    g = torch.Generator().manual_seed(7)
    x = torch.randn(4, 48, generator=g)
    idx = torch.arange(4 * 48, dtype=torch.int32).reshape(4, 48).view(torch.uint32)
    want = []
    for lo, hi in ((0, 32), (32, 48)):
        v, o = _oracle_sort(x[:, lo:hi])
        want.append(_pairs(v, idx.view(torch.int32)[:, lo:hi].gather(1, o.long())))
    want = torch.cat(want, 1)
    for platform in PLATFORMS:
        out = torch.zeros(4, 96)
        sort_blocks(x, idx, out, config=RunConfig(platform=platform))
        assert torch.equal(out.view(torch.int32), want.view(torch.int32)), platform


def _list(n: int, seed: int, base: int) -> torch.Tensor:
    v = torch.sort(torch.randint(-6, 6, (n,), generator=torch.Generator().manual_seed(seed)).float(),
                   descending=True).values
    return _pairs(v.reshape(1, n), torch.arange(base, base + n, dtype=torch.int32).reshape(1, n))


def _greedy(lists, exhausted: bool, width: int) -> torch.Tensor:
    """The merge unit: the greatest head next, the earlier list's on a tie; with
    ``exhausted``, done when any list is; the rest of the result is tmp's (zeros)."""
    rows = [list(zip(l[0, 0::2].tolist(), l[0].contiguous().view(torch.int64).tolist())) for l in lists]
    if exhausted:
        at, out = [0] * len(rows), []
        while all(a < len(r) for a, r in zip(at, rows)):
            k = min(range(len(rows)), key=lambda i: (-rows[i][at[i]][0], i))
            out.append(rows[k][at[k]][1])
            at[k] += 1
    else:
        out = [w for _, w in heapq.merge(*rows, key=lambda vw: -vw[0])]
    words = torch.zeros(width // 2, dtype=torch.int64)
    words[:len(out)] = torch.tensor(out, dtype=torch.int64)
    return words.view(torch.float32).reshape(1, width)


def _mergers(exhausted: bool):
    @pl.jit
    def merge2(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            ta, tb = pl.load(a, [0, 0], [1, pl.dim(a, 1)]), pl.load(b, [0, 0], [1, pl.dim(b, 1)])
            tmp = pl.tile.create([1, pl.dim(out, 1)], dtype=pl.FP32)
            pl.store(pl.tile.mrgsort(ta, tb, tmp=tmp, exhausted=exhausted), [0, 0], out)
        return out

    @pl.jit
    def merge4(a: pl.Tensor, b: pl.Tensor, c: pl.Tensor, d: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            ta, tb = pl.load(a, [0, 0], [1, pl.dim(a, 1)]), pl.load(b, [0, 0], [1, pl.dim(b, 1)])
            tc, td = pl.load(c, [0, 0], [1, pl.dim(c, 1)]), pl.load(d, [0, 0], [1, pl.dim(d, 1)])
            tmp = pl.tile.create([1, pl.dim(out, 1)], dtype=pl.FP32)
            pl.store(pl.tile.mrgsort(ta, tb, tc, td, tmp, exhausted=exhausted), [0, 0], out)
        return out
    return merge2, merge4


@pytest.mark.parametrize("exhausted", [False, True])
def test_format_2_merges_two_and_four_lists_greedily(exhausted):
    a, b, c, d = _list(16, 1, 0), _list(32, 2, 100), _list(8, 3, 200), _list(24, 4, 300)
    merge2, merge4 = _mergers(exhausted)
    for platform in PLATFORMS:
        out = torch.zeros(1, 96)
        merge2(a, b, out, config=RunConfig(platform=platform))
        assert torch.equal(out.view(torch.int32), _greedy([a, b], exhausted, 96).view(torch.int32)), platform
        out = torch.zeros(1, 160)
        merge4(a, b, c, d, out, config=RunConfig(platform=platform))
        assert torch.equal(out.view(torch.int32), _greedy([a, b, c, d], exhausted, 160).view(torch.int32)), platform


@pl.jit
def tensor_sort(src: pl.Tensor, idx: pl.Tensor, vals: pl.Out[pl.Tensor], ids: pl.Out[pl.Tensor]):
    """The reference's tensor-level pipeline: one pl.at scope hands back two tensors."""
    with pl.at(level=pl.Level.CORE_GROUP):
        left = pl.sort32(pl.slice(src, [1, 512], [0, 0]), pl.slice(idx, [1, 512], [0, 0]))
        right = pl.tensor.sort32(pl.slice(src, [1, 512], [0, 512]), pl.slice(idx, [1, 512], [0, 512]))
        left = pl.mrgsort(pl.mrgsort(left, block_len=64), block_len=256)
        right = pl.tensor.mrgsort(pl.tensor.mrgsort(right, block_len=64), block_len=256)
        merged = pl.mrgsort(left, right)
        vals = pl.assemble(vals, pl.gather(merged, mask_pattern=pl.tile.MaskPattern.P0101), [0, 0])
        ids = pl.assemble(ids, pl.tensor.gather(merged, mask_pattern=pl.tile.MaskPattern.P1010,
                                                output_dtype=pl.UINT32), [0, 0])
    return vals, ids


def test_the_tensor_forms_sort_and_hand_back_two_tensors():
    x = torch.randn(1, 1024, generator=torch.Generator().manual_seed(3))
    idx = torch.arange(1024, dtype=torch.int32).reshape(1, -1).view(torch.uint32)
    want_v, want_i = _oracle_sort(x)
    for platform in PLATFORMS:
        vals, ids = torch.zeros(1, 1024), torch.zeros(1, 1024, dtype=torch.uint32)
        tensor_sort(x, idx, vals, ids, config=RunConfig(platform=platform))
        assert torch.equal(vals, want_v) and torch.equal(ids.view(torch.int32), want_i), platform


@pl.jit
def by_column(x: pl.Tensor, idx: pl.Tensor, src: pl.Tensor, got: pl.Out[pl.Tensor], put: pl.Out[pl.Tensor],
              pairs: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        got = pl.assemble(got, pl.gather(x, dim=-1, index=idx), [0, 0])  # MARK-gather
        put = pl.assemble(put, pl.scatter(x, -1, idx, src), [0, 0])
        pairs = pl.assemble(pairs, pl.sort32(x, pl.tensor.full([pl.dim(x, 0), pl.dim(x, 1)], pl.INT32, 0)), [0, 0])
    return got, put, pairs


@settings(max_examples=settings().max_examples // 5, deadline=None)
@given(rows=st.sampled_from([3, 16, 160]), cols=st.sampled_from([32, 64, 1024]), k=st.sampled_from([8, 32]),
       seed=st.integers(0, 2 ** 16))
def test_property_gather_scatter_by_column_and_sort32_in_row_blocks(rows, cols, k, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(rows, cols, generator=g)
    idx = torch.randint(0, cols, (rows, k), generator=g, dtype=torch.int32)
    src = torch.randn(rows, k, generator=g)
    want_put = x.clone()
    for b in range(rows):
        for j in range(k):  # of two naming one column, the later
            want_put[b, idx[b, j]] = src[b, j]
    blocks = [_oracle_sort(x[:, s:s + 32]) for s in range(0, cols, 32)]  # equal idx: ties by position
    want_pairs = torch.cat([_pairs(v, torch.zeros_like(o)) for v, o in blocks], 1)
    for platform in PLATFORMS:
        got, put, pairs = torch.zeros(rows, k), torch.zeros(rows, cols), torch.zeros(rows, 2 * cols)
        by_column(x, idx, src, got, put, pairs, config=RunConfig(platform=platform))
        assert torch.equal(got, x.gather(1, idx.long())), platform
        assert torch.equal(put, want_put), platform
        assert torch.equal(pairs.view(torch.int32), want_pairs.view(torch.int32)), platform


def _mark(fn, mark: str) -> int:
    lines, start = inspect.getsourcelines(fn)
    return start + next(k for k, line in enumerate(lines) if mark in line)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_column_index_outside_the_row_is_located(platform):
    idx = torch.zeros(4, 8, dtype=torch.int32)
    idx[2, 5] = 32
    with pytest.raises(PyptoError, match=r"index 32 at \[.*5\] is outside") as info:
        by_column(torch.randn(4, 32), idx, torch.randn(4, 8), torch.zeros(4, 8), torch.zeros(4, 32),
                  torch.zeros(4, 64), config=RunConfig(platform=platform))
    assert f"test_sorts.py:{_mark(by_column.fn, 'MARK-gather')}" in str(info.value)


def _refused(body: str, match: str, tmp_path, *args):
    src = tmp_path / "k.py"
    src.write_text("import pypto.language as pl\n\n@pl.jit\ndef k(x: pl.Tensor, y: pl.Tensor, out: pl.Out[pl.Tensor]):\n"
                   "    with pl.at(level=pl.Level.CORE_GROUP):\n" + "".join(f"        {line}\n" for line in body.split("\n"))
                   + "    return out\n")
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"k_{abs(hash(body))}", src)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    with pytest.raises(TypeCheckError, match=match) as info:
        mod.k(*args)
    bad = next(k for k, line in enumerate(src.read_text().splitlines(), 1) if line.strip().startswith(("s =", "out =")))
    assert f"{src}:{bad}:" in str(info.value)  # the refused line
    return info.value


TILES = ("t = pl.load(x, [0, 0], [1, 256])\ni = pl.load(y, [0, 0], [1, 256])\n")


@pytest.mark.parametrize("line, match, dtypes", [
    ("s = pl.tile.sort32(t, i)", "requires an FP32 src.*got FP16", (torch.float16, torch.int32)),
    ("s = pl.tile.sort32(t, i)", "requires a UINT32 idx tile", (torch.float32, torch.float32)),
    ("s = pl.tile.mrgsort(t, block_len=100)", "block_len to be a positive multiple of 64", (torch.float32,) * 2),
    ("s = pl.tile.mrgsort(t, block_len=128)", "whole groups of 4 runs", (torch.float32,) * 2),
    ("s = pl.tile.mrgsort(t, i, tmp=pl.tile.create([1, 256], dtype=pl.FP32))", "a tmp of the lists' columns summed",
     (torch.float32,) * 2),
    ("s = pl.tile.mrgsort(t, i)", "a tmp tile for format 2", (torch.float32,) * 2),
    ("s = pl.tile.mrgsort(t, i, block_len=64)", "either format 1", (torch.float32,) * 2),
    ("s = pl.tile.gather_mask(t, 9)", "mask_pattern one of 1..7", (torch.float32,) * 2),
    ("s = pl.tile.gather_mask(t, 1, output_dtype=pl.INT16)", "output_dtype of src's width", (torch.float32,) * 2),
    ("s = pl.tile.scatter_mask(t, i, 1)", r"a dst of \[1, 512\]", (torch.float32,) * 2),
])
def test_sort_family_refusals_name_the_line(line, match, dtypes, tmp_path):
    x, y = torch.zeros(1, 256, dtype=dtypes[0]), torch.zeros(1, 256, dtype=dtypes[1])
    _refused(TILES + line + "\npl.store(t, [0, 0], out)", match, tmp_path, x, y, torch.zeros(1, 256, dtype=dtypes[0]))


@pytest.mark.parametrize("line, match", [
    ("out = pl.assemble(out, pl.scatter(x, -1, pl.cast(y, target_type=pl.INT16), x), [0, 0])", "index dtype of 4 bytes"),
    ("out = pl.assemble(out, pl.mrgsort(x, block_len=64, exhausted=True), [0, 0])", "either format 1"),
])
def test_tensor_form_refusals_name_the_line(line, match, tmp_path):
    _refused(line, match, tmp_path, torch.zeros(1, 256), torch.zeros(1, 256, dtype=torch.int32), torch.zeros(1, 256))


def test_an_fp16_sort_says_why_and_what_to_do(tmp_path):
    err = _refused(TILES + "s = pl.tile.sort32(t, i)\npl.store(t, [0, 0], out)", "FP16", tmp_path,
                   torch.zeros(1, 256, dtype=torch.float16), torch.zeros(1, 256, dtype=torch.int32).view(torch.uint32),
                   torch.zeros(1, 256, dtype=torch.float16))
    assert "pl.cast" in str(err)


@pl.jit
def shifted(x: pl.Tensor, out: pl.Out[pl.Tensor], k: pl.Scalar[pl.INT32]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(2):
            t = pl.load(x, [0, (1 << (i + k)) >> 1], [1, 32])  # MARK-shift
            pl.store(t, [0, 32 * i], out)
    return out


@pytest.mark.parametrize("platform", PLATFORMS)
def test_shifts_are_index_arithmetic_and_a_negative_count_is_an_error(platform):
    x = torch.arange(256, dtype=torch.float32).reshape(1, 256)
    out = torch.zeros(1, 64)
    shifted(x, out, 5, config=RunConfig(platform=platform))  # offsets 16 and 32
    assert torch.equal(out, torch.cat([x[:, 16:48], x[:, 32:64]], 1))
    with pytest.raises(PyptoError, match="negative shift count") as info:
        shifted(x, out, -3, config=RunConfig(platform=platform))
    assert f"test_sorts.py:{_mark(shifted.fn, 'MARK-shift')}:" in str(info.value)  # the kernel's line, on both


def test_mask_patterns_are_the_reference_s_ints():
    assert [int(p) for p in pl.tile.MaskPattern] == list(range(1, 8))
    assert pl.tile.MaskPattern.P1010.stride == 2 and pl.tile.MaskPattern.P1000.first == 3


def _split(mode):
    @pl.jit
    def halves(x: pl.Tensor, idx: pl.Tensor, pairs: pl.Out[pl.Tensor], got: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(mode)]):
            pairs = pl.assemble(pairs, pl.sort32(x, pl.cast(idx, target_type=pl.UINT32)), [0, 0])  # MARK-split
            got = pl.assemble(got, pl.gather(x, -1, idx), [0, 0])
        return pairs, got
    return halves


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_split_scope_gives_each_vector_core_half_the_rows(platform):
    g = torch.Generator().manual_seed(5)
    x, idx = torch.randn(16, 32, generator=g), torch.randint(0, 32, (16, 32), generator=g, dtype=torch.int32)
    v, o = _oracle_sort(x)
    pairs, got = torch.zeros(16, 64), torch.zeros(16, 32)
    _split(pl.SplitMode.UP_DOWN)(x, idx, pairs, got, config=RunConfig(platform=platform))
    assert torch.equal(pairs.view(torch.int32), _pairs(v, idx.gather(1, o.long())).view(torch.int32))
    assert torch.equal(got, x.gather(1, idx.long()))


def test_halving_the_columns_of_a_sort_is_refused():
    with pytest.raises(PyptoError, match="needs whole rows, which halving the columns would cut") as info:
        _split(pl.SplitMode.LEFT_RIGHT)(torch.zeros(16, 32), torch.zeros(16, 32, dtype=torch.int32),
                                        torch.zeros(16, 64), torch.zeros(16, 32))
    assert "pl.SplitMode.UP_DOWN" in str(info.value)


@pl.jit
def float_shift(x: pl.Tensor, out: pl.Out[pl.Tensor], f: pl.Scalar[pl.FP32]):
    with pl.at(level=pl.Level.CORE_GROUP):
        pl.store(pl.adds(pl.load(x, [0, 0], [1, 64]), f << 1), [0, 0], out)  # MARK-fshift
    return out


def test_a_shift_of_a_float_is_refused_at_its_line():
    with pytest.raises(TypeCheckError, match="'<<' shifts integers, and an operand is FP32") as info:
        float_shift(torch.zeros(1, 64), torch.zeros(1, 64), 1.5)
    assert f"test_sorts.py:{_mark(float_shift.fn, 'MARK-fshift')}:" in str(info.value)


@pl.jit
def rank3(x: pl.Tensor, idx: pl.Tensor, src: pl.Tensor, got: pl.Out[pl.Tensor], put: pl.Out[pl.Tensor],
          pairs: pl.Out[pl.Tensor], evens: pl.Out[pl.Tensor]):
    """Rows along the last axis of a rank-3 tensor: its leading axes count them."""
    with pl.at(level=pl.Level.CORE_GROUP):
        got = pl.assemble(got, pl.gather(x, dim=-1, index=idx), [0, 0, 0])
        put = pl.assemble(put, pl.scatter(x, 2, idx, src), [0, 0, 0])
        pairs = pl.assemble(pairs, pl.sort32(x, pl.cast(idx, target_type=pl.UINT32)), [0, 0, 0])
        evens = pl.assemble(evens, pl.gather(x, mask_pattern=pl.tile.MaskPattern.P0101), [0, 0, 0])
    return got, put, pairs, evens


def test_rank_3_rows_gather_scatter_sort_and_mask():
    g = torch.Generator().manual_seed(11)
    x = torch.randn(3, 4, 32, generator=g)
    idx = torch.randint(0, 32, (3, 4, 32), generator=g, dtype=torch.int32)
    src = torch.randn(3, 4, 32, generator=g)
    want_put = x.clone()
    for a in range(3):
        for b in range(4):
            for k in range(32):
                want_put[a, b, idx[a, b, k]] = src[a, b, k]
    v, o = _oracle_sort(x.reshape(12, 32))
    want_pairs = _pairs(v, idx.reshape(12, 32).gather(1, o.long())).reshape(3, 4, 64)
    for platform in PLATFORMS:
        got, put = torch.zeros(3, 4, 32), torch.zeros(3, 4, 32)
        pairs, evens = torch.zeros(3, 4, 64), torch.zeros(3, 4, 16)
        rank3(x, idx, src, got, put, pairs, evens, config=RunConfig(platform=platform))
        assert torch.equal(got, x.gather(2, idx.long())), platform
        assert torch.equal(put, want_put), platform
        assert torch.equal(pairs.view(torch.int32), want_pairs.view(torch.int32)), platform
        assert torch.equal(evens, x[..., 0::2]), platform
