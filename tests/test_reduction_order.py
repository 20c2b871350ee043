"""The order a column reduction combines rows in, the vector unit's (the reference's
goldens for TCOLSUM "to match hardware"): ``col_sum`` with a scratch tile is a binary tree
of adjacent rows, each level rounded in the dtype, an odd count's last row added to the
first pair's sum; without one, and ``col_prod`` always, row by row. Row reductions keep the
pairwise halving. On both platforms, for every row count (odd ones too), valid region and
float dtype, and at the tensor level, where a column sum too large for Vec adds block sums."""

import functools

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import pypto.language as pl
from pypto.fuzz import strategies as ps
from pypto.ir.types import DataType as D
from pypto.runtime import RunConfig
from pypto.sim.ops import numerics as num

PLATFORMS = ("ref", "a2a3sim")
FLOATS = (D.FP16, D.BF16, D.FP32)
COMBINE = {"sum": lambda a, b: a + b, "prod": lambda a, b: a * b}


def adjacent_tree(rows: list[torch.Tensor], combine) -> torch.Tensor:
    """Level by level: pair k is rows 2k and 2k+1; an odd level's last row joins pair 0."""
    if len(rows) == 1:
        return rows[0]
    pairs = [combine(rows[2 * k], rows[2 * k + 1]) for k in range(len(rows) // 2)]
    if len(rows) % 2:
        pairs[0] = combine(pairs[0], rows[-1])
    return adjacent_tree(pairs, combine)


def row_by_row(rows: list[torch.Tensor], combine) -> torch.Tensor:
    acc = rows[0]
    for row in rows[1:]:
        acc = combine(acc, row)
    return acc


def oracle(x: torch.Tensor, kind: str, tree: bool) -> torch.Tensor:
    """Each combine is one torch op in the dtype: IEEE, rounded once per element."""
    rows = list(x.unbind(0))
    got = (adjacent_tree if tree else row_by_row)(rows, COMBINE[kind])
    return num.canonical_nan(got.unsqueeze(0))


def values(shape, dtype: D, seed: int) -> torch.Tensor:
    """Magnitudes far apart, so that the order of the adds shows in the last bits."""
    g = torch.Generator().manual_seed(seed)
    scale = torch.pow(2.0, torch.randint(-6, 7, shape, generator=g).to(torch.float64))
    return (torch.randn(shape, generator=g, dtype=torch.float64) * scale).to(num.TORCH[dtype])


# ----------------------------------------------------------------------------- numerics


@given(rows=st.integers(1, 70), cols=st.integers(1, 9), dtype=st.sampled_from(FLOATS),
       kind=st.sampled_from(["sum", "prod"]), tree=st.booleans(), seed=st.integers(0, 2**31 - 1))
def test_property_column_reductions_combine_in_the_hardware_order(rows, cols, dtype, kind, tree, seed):
    x = values((rows, cols), dtype, seed)
    if kind == "prod":
        x = (x.to(torch.float64).abs() + 0.5).to(x.dtype)  # products near 1 stay finite
    assert ps.bits_equal(num.reduce_first(x, kind, tree), oracle(x, kind, tree))


def test_the_two_orders_differ_where_the_golden_says_they_do():
    # h = 2**-11 is half an fp16 ulp of 1. Row by row each h rounds away (a tie, to even);
    # the adjacent tree adds h + h first and keeps it. The old halving (row i + row i + 2)
    # paired each h with a 1 or a 0 and lost both.
    h = 2.0 ** -11
    x = torch.tensor([[1.0], [0.0], [h], [h]], dtype=torch.float16)
    assert num.reduce_first(x, "sum").item() == 1.0
    assert num.reduce_first(x, "sum", tree=True).item() == 1.0 + 2 * h
    # an odd count's last row joins pair 0 at once (1 + h: 1), not carried to the next
    # level (1 + 2h + h would be a tie going up to 1 + 4h)
    odd = torch.tensor([[1.0], [0.0], [h], [h], [h]], dtype=torch.float16)
    assert num.reduce_first(odd, "sum", tree=True).item() == 1.0 + 2 * h


@given(rows=st.integers(1, 40), cols=st.integers(1, 40), dtype=st.sampled_from([D.INT32, D.INT16, *FLOATS]),
       kind=st.sampled_from(["max", "min", "sum", "prod"]), seed=st.integers(0, 2**31 - 1))
def test_property_order_free_reductions_take_any_order(rows, cols, dtype, kind, seed):
    # max/min (with the signed-zero rule) and integer sums/products: one answer whatever the order
    if dtype.is_float and kind in ("sum", "prod"):
        kind = "max"
    x = ps.random_tensor((rows, cols), dtype, seed, specials=True)
    assert ps.bits_equal(num.reduce_first(x, kind), oracle(x, kind, tree=False) if kind in COMBINE else
                         num.reduce_last(x.T.contiguous(), kind).T.contiguous())


# ----------------------------------------------------------------------------- kernels


@functools.lru_cache(maxsize=None)
def column_kernel(op: str, dtype: D, rows: int, cols: int, valid: tuple[int, int], tmp: bool):
    vr, vc = valid
    dt = getattr(pl, dtype.name)

    @pl.jit
    def col_sum(x: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(x, [0, 0], [rows, cols], valid_shape=[vr, vc])
            pl.store(pl.tile.col_sum(t), [0, 0], out)
        return out

    @pl.jit
    def col_sum_tmp(x: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(x, [0, 0], [rows, cols], valid_shape=[vr, vc])
            scratch = pl.tile.create([rows, cols], dtype=dt, target_memory=pl.MemorySpace.Vec)
            pl.store(pl.tile.col_sum(t, scratch), [0, 0], out)
        return out

    @pl.jit
    def col_prod(x: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(x, [0, 0], [rows, cols], valid_shape=[vr, vc])
            pl.store(pl.tile.col_prod(t), [0, 0], out)
        return out

    @pl.jit
    def col_prod_tmp(x: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(x, [0, 0], [rows, cols], valid_shape=[vr, vc])
            scratch = pl.tile.create([rows, cols], dtype=dt, target_memory=pl.MemorySpace.Vec)
            pl.store(pl.tile.col_prod(t, scratch), [0, 0], out)
        return out

    return {"col_sum": (col_sum, col_sum_tmp), "col_prod": (col_prod, col_prod_tmp)}[op][tmp]


@settings(max_examples=max(6, settings().max_examples // 3))
@given(rows=st.sampled_from([1, 2, 3, 5, 8, 15, 16, 31, 32]), cols=st.sampled_from([16, 64]),
       dtype=st.sampled_from(FLOATS), op=st.sampled_from(["col_sum", "col_prod"]), tmp=st.booleans(),
       data=st.data())
def test_property_kernels_reduce_columns_in_the_hardware_order_on_both_platforms(rows, cols, dtype, op, tmp, data):
    vr, vc = data.draw(st.integers(1, rows)), data.draw(st.sampled_from([cols, cols // 2 + 1]))
    seed = data.draw(st.integers(0, 2**31 - 1))
    x = values((vr, vc), dtype, seed)
    kind = op.removeprefix("col_")
    if kind == "prod":
        x = (x.to(torch.float64).abs() + 0.5).to(x.dtype)
    tree = tmp and op == "col_sum"  # TCOLPROD has no tree form: its scratch changes nothing
    want = oracle(x, kind, tree)
    kernel = column_kernel(op, dtype, rows, cols, (vr, vc), tmp)
    for platform in PLATFORMS:
        out = torch.zeros(1, vc, dtype=x.dtype)
        kernel(x, out, config=RunConfig(platform=platform))
        assert ps.bits_equal(out, want), (platform, op, tmp)


@pl.jit
def tensor_col_sum(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.col_sum(x)
    return out


@pytest.mark.parametrize("rows", [24, 4096])  # fits Vec whole / folds over row blocks
def test_a_tensor_column_sum_is_row_by_row_within_a_block_and_alike_on_both_platforms(rows):
    x = values((rows, 64), D.FP16, rows)
    got = {}
    for platform in PLATFORMS:
        got[platform] = torch.zeros(1, 64, dtype=torch.float16)
        tensor_col_sum(x, got[platform], config=RunConfig(platform=platform))
    assert ps.bits_equal(got["ref"], got["a2a3sim"])
    if rows == 24:
        assert ps.bits_equal(got["ref"], oracle(x, "sum", tree=False))
    else:  # block sums added: some block split, each block row by row
        assert any(ps.bits_equal(got["ref"], row_by_row([oracle(x[i:i + b], "sum", False)[0]
                                                          for i in range(0, rows, b)], COMBINE["sum"]).unsqueeze(0))
                   for b in (2 ** k for k in range(4, 12)))
