"""The number a kernel author tunes: a report's repr leads with the kernel's cycles and
the makespan, each with µs; ``RunConfig(report=True)`` and ``$PYPTO_REPORT=1`` print one
line after a call; ``$PYPTO_BENCH=1`` prints the reference harness's effective-µs line
from simulated time, checked against the run's own cycles; a notebook gets a table."""

import re

import pytest
import torch

import pypto.language as pl
from pypto.backend import A2A3
from pypto.runtime import RunConfig

HZ = A2A3.chip.core_hz


@pl.jit
def two_tasks(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    for i in pl.range(2):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(a, [i * 16, 0], [16, 64])
            pl.store(pl.add(t, t), [i * 16, 0], out)
    return out


def _args():
    return torch.randn(32, 64), torch.zeros(32, 64)


def _us(cycles: int) -> str:
    return f"{cycles * 1e6 / HZ:.3f} µs"


def test_the_repr_leads_with_kernel_cycles_then_the_makespan_with_microseconds():
    a, out = _args()
    report = two_tasks.compile(a, out).run(a, out)
    assert report.kernel_cycles < report.cycles  # the makespan adds dispatch and orchestration
    text = repr(report)
    assert text.startswith(f"RunReport(kernel_cycles={report.kernel_cycles} ({_us(report.kernel_cycles)}), "
                           f"cycles={report.cycles} ({_us(report.cycles)} makespan)")
    assert "\n" not in text and len(text) < 300


def test_report_true_prints_one_line_after_each_call(capfd):
    a, out = _args()
    two_tasks(a, out, config=RunConfig(report=True))
    two_tasks(a, out, config=RunConfig(report=True))
    lines = [x for x in capfd.readouterr().err.splitlines() if x.startswith("[pypto]")]
    assert len(lines) == 2
    report = two_tasks.compile(a, out).run(a, out)
    assert lines[0] == (f"[pypto] two_tasks on a2a3sim: kernel {report.kernel_cycles} cycles "
                        f"({_us(report.kernel_cycles)}), makespan {report.cycles} cycles ({_us(report.cycles)}), "
                        f"{len(report.tasks)} tasks")


@pytest.mark.parametrize("value, shown", [("1", True), ("0", False), ("", False)])
def test_the_environment_switches_the_line_on(monkeypatch, capfd, value, shown):
    monkeypatch.setenv("PYPTO_REPORT", value)
    two_tasks(*_args())
    assert ("[pypto] two_tasks on a2a3sim: kernel " in capfd.readouterr().err) is shown


def test_on_ref_the_line_says_there_is_no_time(capfd):
    two_tasks(*_args(), config=RunConfig(platform="ref", report=True))
    err = capfd.readouterr().err
    assert "[pypto] two_tasks on ref: ran" in err and "a2a3sim" in err
    assert "RunReport(platform=ref, cycles=0 (ref keeps no time)" in repr(
        two_tasks.compile(*_args()).run(*_args(), config=RunConfig(platform="ref")))


BENCH = re.compile(r"^\[RUN\] effective_us \((\d+) rounds\) min=([\d.]+) median=([\d.]+) mean=([\d.]+) "
                   r"max=([\d.]+) \(simulated: a2a3sim", re.M)


def test_pypto_bench_prints_the_effective_us_line_from_the_run_s_own_cycles(monkeypatch, capfd):
    monkeypatch.setenv("PYPTO_BENCH", "1")
    monkeypatch.setenv("PYPTO_BENCH_ROUNDS", "3")
    monkeypatch.setenv("PYPTO_BENCH_WARMUP", "0")
    a, out = _args()
    two_tasks(a, out)
    want = out.clone()
    m = BENCH.search(capfd.readouterr().err)
    assert m is not None and m.group(1) == "3"
    report = two_tasks.compile(a, out).run(a, out)
    effective = f"{report.cycles * 1e6 / HZ:.3f}"  # the makespan: orchestration to the last task's end
    assert m.groups()[1:] == (effective,) * 4
    assert torch.equal(out, want)  # the extra rounds ran on copies


def test_pypto_bench_says_ref_has_no_time_and_a_bad_count_is_refused(monkeypatch, capfd):
    monkeypatch.setenv("PYPTO_BENCH", "1")
    two_tasks(*_args(), config=RunConfig(platform="ref"))
    assert "[RUN] effective_us: unavailable on platform 'ref'" in capfd.readouterr().err
    monkeypatch.setenv("PYPTO_BENCH_ROUNDS", "many")
    from pypto.errors import ConfigError

    with pytest.raises(ConfigError, match="PYPTO_BENCH_ROUNDS='many' is not a count"):
        two_tasks(*_args())


def test_the_notebook_table_escapes_what_it_shows():
    a, out = _args()
    report = two_tasks.compile(a, out).run(a, out)
    page = report._repr_html_()
    assert f"{report.kernel_cycles} ({_us(report.kernel_cycles)})" in page and "makespan" in page
    report.platform = "<script>alert(1)</script>"
    page = report._repr_html_()
    assert "<script>" not in page and "&lt;script&gt;" in page


def test_debug_is_refused_off_ref_at_the_user_s_line():
    from pypto.errors import ConfigError

    with pytest.raises(ConfigError) as info:
        RunConfig(platform="a2a3sim", debug=True)
    assert "platform='ref'" in str(info.value) and "test_run_summary.py" in str(info.value)
