"""The progress line of a long run, on a clock the test drives (never the wall clock): shown
once the run has taken a few seconds, counting what the simulator did; silent for a short
run and under WARN; overwriting itself on a terminal; a tqdm bar when tqdm is there."""

import io
import itertools
import re
import sys
import types

import pytest
import torch

import pypto
import pypto.language as pl
from pypto.runtime import RunConfig
from pypto.sim.reports import progress

TILES = 32


@pl.jit
def exp_tiles(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(TILES):
            pl.store(pl.exp(pl.load(a, [i * 16, 0], [16, 128])), [i * 16, 0], out)
    return out




@pytest.fixture
def clock(monkeypatch):
    """A clock one second later at each look; a look every 4 records."""
    ticks = itertools.count()
    monkeypatch.setattr(progress, "clock", lambda: float(next(ticks)))
    monkeypatch.setattr(progress, "EVERY", 4)


@pytest.fixture
def seconds(clock, monkeypatch):
    """That clock, and no tqdm (installed or not): the logger's line."""
    monkeypatch.setitem(sys.modules, "tqdm", None)  # import tqdm: ImportError


def run(tmp_path):
    """A run simulated afresh (a build of its own: no timeline remembered from another test),
    every trip of it (checking reads: no fast-forward), so each instruction started is counted."""
    a, out = torch.randn(TILES * 16, 128), torch.zeros(TILES * 16, 128)
    compiled = exp_tiles.compile(a, out, config=RunConfig(check_uninitialized_reads=True, output_dir=tmp_path / "b"))
    report = compiled.run(a, out)
    assert torch.equal(out, torch.exp(a))
    return report


def progress_lines(err: str) -> list[str]:
    return [x for x in re.split(r"[\r\n]", err) if x.startswith("[pypto] exp_tiles on a2a3sim:")]


def test_a_long_run_says_how_far_it_is_then_that_it_is_done(tmp_path, seconds, capsys):
    report = run(tmp_path)
    lines = progress_lines(capsys.readouterr().err)
    assert len(lines) >= 2
    *going, done = lines
    counts = []
    for line in going:  # every LOG_INTERVAL seconds in a log (stderr is not a terminal here)
        m = re.fullmatch(r"\[pypto\] exp_tiles on a2a3sim: ([\d,]+) instructions simulated \(cycle ([\d,]+)\)"
                         r"(, applying the data \([\d,]+ of [\d,]+ steps\))?; (\d+) s", line)
        assert m, line
        counts.append(int(m.group(1).replace(",", "")))
        assert int(m.group(2).replace(",", "")) <= report.cycles and int(m.group(4)) >= progress.AFTER
    assert counts == sorted(counts)
    assert done_figures(done, "exp_tiles") == (report.instructions, report.sync_instructions, report.cycles)


def done_figures(line: str, kernel: str) -> tuple[int, int, int]:
    """(instructions, sync instructions, cycle) a done line says."""
    m = re.fullmatch(rf"\[pypto\] {kernel} on a2a3sim: done in [\d.]+ s: ([\d,]+) instructions"
                     r"(?: and ([\d,]+) sync instructions)? simulated \(cycle ([\d,]+)\)", line)
    assert m, line
    return tuple(int((g or "0").replace(",", "")) for g in m.groups())


@pl.jit
def steady(a: pl.Tensor, out: pl.Out[pl.Tensor], n: pl.Scalar[pl.INT32]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(n):
            t = pl.load(a, [(i % 8) * 8, 0], [8, 64])
            pl.store(pl.exp(t), [(i % 8) * 8, 0], out)
    return out


@pytest.mark.parametrize("trips", [1, 9, 3000])
@pytest.mark.parametrize("every_trip", [False, True], ids=["fast-forward", "every-trip"])
def test_the_done_line_says_the_runs_own_figures(tmp_path, seconds, monkeypatch, capsys, trips, every_trip):
    """However much of a steady loop was fast-forwarded (its trips never started one by
    one), the line that says a run is done has its report's instructions and cycles."""
    a, out = torch.randn(64, 64), torch.zeros(64, 64)
    config = RunConfig(output_dir=tmp_path / "b", check_uninitialized_reads=every_trip)  # (checks: no fast-forward)
    report = steady.compile(a, out, 1, config=config).run(a, out, trips)
    assert torch.equal(out[:8 * min(trips, 8)], torch.exp(a[:8 * min(trips, 8)]))
    *going, done = [x for x in re.split(r"[\r\n]", capsys.readouterr().err) if x.startswith("[pypto] steady on")]
    assert done_figures(done, "steady") == (report.instructions, report.sync_instructions, report.cycles)
    started = [int(m.group(1).replace(",", "")) for x in going if (m := re.search(r": ([\d,]+) instructions", x))]
    if trips == 3000 and not every_trip:  # the case this guards: most trips were never started
        assert max(started, default=0) < (report.instructions + report.sync_instructions) // 10


def test_a_run_shorter_than_a_few_seconds_says_nothing(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(progress, "clock", lambda: 0.0)  # however many records, no time passes
    monkeypatch.setattr(progress, "EVERY", 1)
    run(tmp_path)
    assert not progress_lines(capsys.readouterr().err)


def test_nothing_under_warn(tmp_path, seconds, capsys):
    pypto.set_log_level(pypto.LogLevel.WARN)
    try:
        run(tmp_path)
    finally:
        pypto.set_log_level(pypto.LogLevel.INFO)
    assert capsys.readouterr().err == ""


class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_on_a_terminal_the_line_overwrites_itself(tmp_path, seconds, monkeypatch):
    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    run(tmp_path)
    text = terminal.getvalue()
    going, done = text.rsplit("\r\033[K", 1)  # the done line clears the last progress line
    drawn = going.split("\r")[1:]
    assert len(drawn) >= 3 and all(d.endswith("\033[K") and "\n" not in d for d in drawn)  # one line, redrawn
    assert done.startswith("[pypto] exp_tiles on a2a3sim: done in") and done.endswith("\n")


def test_with_tqdm_installed_the_line_is_a_tqdm_bar(tmp_path, clock, monkeypatch, capsys):
    bars = []

    class Bar:
        def __init__(self, **kwargs):
            self.kwargs, self.postfixes, self.closed = kwargs, [], False
            bars.append(self)

        def set_postfix_str(self, text):
            self.postfixes.append(text)

        def close(self):
            self.closed = True

    monkeypatch.setitem(sys.modules, "tqdm", types.SimpleNamespace(tqdm=Bar))
    run(tmp_path)
    (bar,) = bars
    assert bar.kwargs["desc"] == "[pypto] exp_tiles on a2a3sim" and bar.closed
    assert len(bar.postfixes) >= 2 and bar.postfixes[-1].startswith("done in")
    assert "instructions simulated" in bar.postfixes[0]
    assert not progress_lines(capsys.readouterr().err)  # the bar, not the logger


def test_no_run_in_progress_leaves_the_loops_as_they_are():
    items = [1, 2, 3]
    assert progress.counted(items, "simulated") is items  # a library call of the simulator pays nothing

    def callback(d):
        return d

    assert progress.counting(callback, "simulated") is callback


@pl.jit
def eight_bands(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    for i in pl.parallel(8):
        with pl.at(level=pl.Level.CORE_GROUP):
            pl.store(pl.exp(pl.load(a, [i * 16, 0], [16, 128])), [i * 16, 0], out)
    return out


def test_a_chip_run_counts_its_tasks(tmp_path, seconds, monkeypatch, capsys):
    monkeypatch.setattr(progress, "EVERY", 1)
    a, out = torch.randn(128, 128), torch.zeros(128, 128)
    report = eight_bands.compile(a, out, config=RunConfig(output_dir=tmp_path / "b")).run(a, out)
    assert len(report.tasks) == 8 and torch.equal(out, torch.exp(a))
    lines = [x for x in capsys.readouterr().err.splitlines() if x.startswith("[pypto] eight_bands on a2a3sim:")]
    assert lines and ", 8 tasks" in lines[-1] and "done in" in lines[-1]
