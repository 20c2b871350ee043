"""``pl.debug_print(tile, label)``: what a tile holds where the statement runs, on both
platforms — on ``a2a3sim`` read by the scalar unit once the pipes have written it, with its
simulated cycle and core — kept on ``RunReport.prints`` and printed when the run ends, with
the source line; the refusals at the user's line."""

import inspect

import pytest
import torch

import pypto.language as pl
from pypto.errors import PyptoError
from pypto.runtime import RunConfig

from helpers import scope_kernel

PLATFORMS = ("ref", "a2a3sim")


@pl.jit
def steps(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(pl.dim(x, 0) // 8):
            t = pl.load(x, [i * 8, 0], [8, pl.dim(x, 1)])
            e = pl.exp(t)
            pl.debug_print(e, "after exp")  # MARK-print
            s = pl.add(e, t)
            pl.store(s, [i * 8, 0], out)
    return out


def _line(fn, mark: str) -> int:
    lines, start = inspect.getsourcelines(fn)
    return start + next(k for k, line in enumerate(lines) if mark in line)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_each_run_of_the_statement_shows_the_tile_it_saw(platform, capsys):
    x = torch.randn(24, 16)
    out = torch.zeros(24, 16)
    report = steps.compile(x, out, config=RunConfig(platform=platform)).run(x, out)
    assert torch.equal(out, x.exp() + x)  # the print changes nothing
    assert [p.label for p in report.prints] == ["after exp"] * 3
    for i, p in enumerate(report.prints):
        assert torch.equal(p.value, x[i * 8:(i + 1) * 8].exp())
        assert p.span.line == _line(steps.fn, "MARK-print")
    shown = capsys.readouterr().out
    assert shown.count("[debug_print] ") == 3 and f"test_debug_print.py:{_line(steps.fn, 'MARK-print')}:" in shown
    assert "after exp (8x16 float32):" in shown
    if platform == "ref":
        assert all(p.cycle is None and p.core is None for p in report.prints)
        assert "cycle" not in shown
    else:  # in simulated time, on the vector core that ran it, each after the exp it shows
        cycles = [p.cycle for p in report.prints]
        assert cycles == sorted(cycles) and cycles[0] > 0 and len(set(cycles)) == 3
        assert {p.core for p in report.prints} == {"aiv0"}
        assert "[aiv0 @ cycle " in shown
        assert all(p.cycle <= report.cycles for p in report.prints)


@pl.jit
def tasks(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    for b in pl.range(pl.dim(x, 0) // 8):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(x, [b * 8, 0], [8, 32])
            pl.debug_print(pl.muls(t, 2.0), "doubled")
            pl.store(pl.muls(t, 2.0), [b * 8, 0], out)
    return out


def test_prints_of_tasks_on_the_chip_are_in_the_chip_s_time_on_the_cores_that_ran_them():
    x = torch.randn(32, 32)
    out = torch.zeros(32, 32)
    report = tasks.compile(x, out, config=RunConfig(platform="a2a3sim")).run(x, out)
    assert len(report.prints) == 4
    assert sorted(torch.equal(p.value, x[k * 8:(k + 1) * 8] * 2) for p in report.prints
                  for k in range(4)).count(True) == 4
    cycles = [p.cycle for p in report.prints]
    assert cycles == sorted(cycles)
    assert {p.core for p in report.prints} <= set(report.pipe_cycles)  # the cores that ran them
    for p, t in zip(report.prints, report.tasks):  # each inside its task, in the chip's time
        assert t.start < p.cycle < t.end
    ref = tasks.compile(x, out, config=RunConfig(platform="ref")).run(x, torch.zeros(32, 32))
    assert [p.value.tolist() for p in ref.prints] == [(x[k * 8:(k + 1) * 8] * 2).tolist() for k in range(4)]


def test_a_tile_with_a_valid_shape_prints_its_valid_region(tmp_path):
    k = scope_kernel(tmp_path, "t = pl.load(x, [0, 0], [8, 16], valid_shapes=[3, 5])\npl.debug_print(t)\n"
                               "pl.store(t, [0, 0], out)")
    x = torch.randn(8, 16)
    for platform in PLATFORMS:
        report = k.compile(x, torch.zeros(8, 16), config=RunConfig(platform=platform)).run(x, torch.zeros(8, 16))
        (p,) = report.prints
        assert torch.equal(p.value, x[:3, :5]) and p.label == ""


@pytest.mark.parametrize("body, match", [
    ("a = pl.load(x, [0, 0], [16, 16], target_memory=pl.Mem.Mat)\n"
     "c = pl.matmul(pl.move(a, target_memory=pl.Mem.Left), pl.move(a, target_memory=pl.Mem.Right))\n"
     "pl.debug_print(c, 'acc')\npl.store(c, [0, 0], out)", "requires its 'tile' operand in Vec, but got a tile in Acc"),
    ("t = pl.load(x, [0, 0], [16, 16])\npl.debug_print(t, 3)\npl.store(t, [0, 0], out)", "'label' must be a string"),
])
def test_refusals_name_the_line(body, match, tmp_path):
    k = scope_kernel(tmp_path, body)
    with pytest.raises(PyptoError, match=match) as info:
        k(torch.zeros(16, 16).half(), torch.zeros(16, 16), config=RunConfig(platform="a2a3sim"))
    assert "k.py:" in str(info.value)


def test_help_says_what_it_shows():
    assert "label" in str(inspect.signature(pl.debug_print))
    assert "simulated cycle" in pl.debug_print.__doc__
