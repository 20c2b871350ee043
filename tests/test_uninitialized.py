"""On-chip bytes nothing has written: ``RunConfig(uninitialized_memory=...)`` makes them
zero, NaN or a byte pattern on both platforms (the same bits on each), and
``check_uninitialized_reads`` makes a2a3sim refuse an instruction that reads them, at its
source line. A correct kernel computes the same bits whatever they hold."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import pypto.language as pl
from pypto.errors import ConfigError, ExecutionError
from pypto.fuzz import strategies as ps
from pypto.runtime import RunConfig

from helpers import assert_matches_oracle, run_on

PLATFORMS = ("ref", "a2a3sim")


@pl.jit
def widened(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    """Loads 4 rows, then claims 8: the last 4 are bytes the load never wrote."""
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(x, [0, 0], [8, 16], valid_shapes=[4, 16])
        wide = pl.tile.set_validshape(t, 8, 16)
        pl.store(pl.muls(wide, 1.0), [0, 0], out)  # MARK-read
    return out


@pytest.mark.parametrize("fill, bits", [("zero", 0), ("nan", 0xFF), (0xA5, 0xA5)])
def test_the_fill_is_what_unwritten_bytes_hold_on_both_platforms(fill, bits):
    x = torch.randn(8, 16)
    outs = []
    for platform in PLATFORMS:
        out = torch.zeros(8, 16)
        widened(x, out, config=RunConfig(platform=platform, uninitialized_memory=fill))
        assert torch.equal(out[:4], x[:4])
        outs.append(out)
    assert torch.equal(outs[0].view(torch.int32), outs[1].view(torch.int32))  # NaN bits too
    if fill == "nan":
        assert bool(outs[0][4:].isnan().all())
    else:  # x * 1.0 keeps a number's bits
        word = torch.tensor([bits] * 4, dtype=torch.uint8).view(torch.int32)
        assert bool((outs[0][4:].contiguous().view(torch.int32) == word).all())


def test_a2a3sim_names_the_line_that_reads_unwritten_bytes():
    x = torch.randn(8, 16)
    with pytest.raises(ExecutionError, match=r"tile.muls reads 'wide' \(Vec at 0x[0-9a-f]+, valid shape \[8, 16\]\), "
                                             r"whose element \[4, 0\] nothing has written") as info:
        widened(x, torch.zeros(8, 16), config=RunConfig(platform="a2a3sim", check_uninitialized_reads=True))
    import inspect

    lines, start = inspect.getsourcelines(widened.fn)
    assert f":{start + next(k for k, line in enumerate(lines) if 'MARK-read' in line)}:" in str(info.value)
    assert "pl.fillpad" in str(info.value)


@pl.jit
def padded(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    """The same, with the padding filled first: nothing unwritten is read."""
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(x, [0, 0], [8, 16], valid_shapes=[4, 16])
        wide = pl.tile.set_validshape(pl.fillpad(t, pad_value=pl.PadValue.zero), 8, 16)
        pl.store(pl.muls(wide, 1.0), [0, 0], out)
    return out


def test_filling_the_padding_first_satisfies_the_check():
    x = torch.randn(8, 16)
    out = torch.zeros(8, 16)
    padded(x, out, config=RunConfig(platform="a2a3sim", check_uninitialized_reads=True, uninitialized_memory="nan"))
    assert torch.equal(out, torch.cat([x[:4], torch.zeros(4, 16)]))


@pl.jit
def partial_m(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        left = pl.move(pl.load(a, [0, 0], [16, 32], valid_shape=[10, 32], target_memory=pl.Mem.Mat),
                       target_memory=pl.Mem.Left)
        right = pl.move(pl.load(b, [0, 0], [32, 16], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
        pl.store(pl.matmul(left, right), [0, 0], out)
    return out


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_matmul_of_partial_rows_stores_only_the_rows_it_computed_from_data(platform):
    a, b = torch.randn(16, 32).half(), torch.randn(32, 16).half()
    out = torch.full((16, 16), 7.0)
    partial_m(a, b, out, config=RunConfig(platform=platform, uninitialized_memory="nan",
                                          check_uninitialized_reads=platform == "a2a3sim"))
    torch.testing.assert_close(out[:10].double(), a[:10].double() @ b.double(), rtol=1e-3, atol=1e-3)
    assert torch.equal(out[10:], torch.full((6, 16), 7.0))  # the padding's products are not stored


@settings(max_examples=max(4, settings().max_examples // 4), deadline=None)
@given(ps.tile_programs(), st.sampled_from(["nan", 0xA5, 0x00]))
def test_property_a_correct_kernel_reads_no_unwritten_byte_and_ignores_the_fill(case, fill):
    outs, _ = run_on(case, uninitialized_memory=fill, check_uninitialized_reads=True)
    assert_matches_oracle(case, outs)


@pytest.mark.parametrize("value", ["nans", -1, 256, True, 1.5])
def test_a_bad_fill_is_refused_at_the_line(value):
    with pytest.raises(ConfigError, match="is not 'zero', 'nan' or a byte 0-255") as info:
        RunConfig(uninitialized_memory=value)
    assert "test_uninitialized.py" in str(info.value)


def test_ref_says_it_checks_nothing(capfd):
    widened(torch.randn(8, 16), torch.zeros(8, 16), config=RunConfig(platform="ref", check_uninitialized_reads=True))
    err = capfd.readouterr().err
    assert "holds tiles as values, not bytes" in err and "a2a3sim" in err
