"""A window's negative constant bound counts from the end of its axis, as in Python and
torch (``a[:, :-1]``, ``out[-5:, :] = ...``); past the start, or on an axis whose extent is
known only at run time, it is refused where written."""

import pytest
import torch

import pypto.language as pl
from pypto.errors import TypeCheckError
from pypto.runtime import RunConfig
from helpers import load_kernel

PLATFORMS = ["ref", "a2a3sim"]


@pl.jit
def tail_corner(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.exp(a[-7:, -5:])
    return out


@pl.jit
def into_the_last_rows(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[-5:, :] = pl.exp(a[0:5, :])
    return out


@pl.jit
def all_but_the_last_column(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.exp(a[:, :-1])
    return out


@pl.jit
def between(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.exp(a[-7:-2, 3:-3])
    return out


@pytest.mark.parametrize("platform", PLATFORMS)
def test_negative_bounds_count_from_the_end(platform):
    a = torch.randn(20, 30)
    config = RunConfig(platform=platform)
    cases = [(tail_corner, torch.zeros(7, 5), lambda: torch.exp(a[-7:, -5:])),
             (all_but_the_last_column, torch.zeros(20, 29), lambda: torch.exp(a[:, :-1])),
             (between, torch.zeros(5, 24), lambda: torch.exp(a[-7:-2, 3:-3]))]
    for kernel, out, want in cases:
        kernel(a, out, config=config)
        assert torch.equal(out, want()), kernel
    out = torch.zeros(20, 30)
    into_the_last_rows(a, out, config=config)
    assert torch.equal(out[-5:], torch.exp(a[:5])) and not out[:-5].any()


@pl.jit
def before_the_start(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.exp(a[-21:, :])  # MARK-start
    return out


def test_a_bound_before_the_start_is_refused_where_written():
    with pytest.raises(TypeCheckError, match=r"bound -21 is before the start of axis 0 \(extent 20\)") as info:
        before_the_start(torch.randn(20, 30), torch.zeros(21, 30), config=RunConfig(platform="ref"))
    assert info.value.span.file == __file__
    assert "a[-21:, :]" in open(__file__).read().splitlines()[info.value.span.line - 1]


def test_an_axis_sized_at_run_time_takes_no_negative_bound(tmp_path):
    path = tmp_path / "runtime_sized.py"
    path.write_text(
        "import pypto.language as pl\n\n\n@pl.program\nclass P:\n"
        "    @pl.function(type=pl.FunctionType.Orchestration)\n"
        "    def main(self, cfg: pl.Tensor[[4], pl.INT32], out: pl.Out[pl.Tensor[[4, 64], pl.FP32]]) "
        "-> pl.Tensor[[4, 64], pl.FP32]:\n"
        "        n = pl.tensor.read(cfg, [0])\n"
        "        t = pl.create_tensor([n, 64], dtype=pl.FP32)\n"
        "        tail = t[-4:, :]\n"
        "        return out\n")
    with pytest.raises(TypeCheckError, match="a negative bound counts from the end of axis 0, whose extent is known "
                                             "only at run time") as info:
        load_kernel(path, "P")
    assert info.value.span.file == str(path) and info.value.span.line == 10
    assert "pl.tensor.dim(t, 0) - 4" in info.value.hint
