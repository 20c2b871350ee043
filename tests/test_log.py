"""``pypto.set_log_level`` / ``get_log_level`` / ``LogLevel`` and ``PYPTO_LOG_LEVEL``, through
the standard ``logging`` module: INFO shows a build's one-line notes, WARN keeps them
quiet, DEBUG adds each pass and its time."""

import os
import subprocess
import sys

import pytest
import torch

import pypto
import pypto.language as pl
from pypto.backend import DEFAULT
from pypto.errors import ConfigError
from pypto.runtime import RunConfig


@pl.jit
def narrow(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.add(x, 1.0)  # a 256-byte row: a perf hint
    return out


@pytest.fixture
def level():
    before = pypto.get_log_level()
    yield
    pypto.set_log_level(before)


def test_levels_decide_what_a_build_says(level, capsys):
    pypto.set_log_level(pypto.LogLevel.WARN)
    narrow(torch.zeros(64), torch.zeros(64), config=RunConfig(platform="ref"))
    assert capsys.readouterr().err == "" and pypto.get_log_level() is pypto.LogLevel.WARN
    pypto.set_log_level("info")
    narrow(torch.zeros(32), torch.zeros(32), config=RunConfig(platform="ref"))
    err = capsys.readouterr().err  # one line, as compile() says it, the hint itself at DEBUG
    assert err.count("\n") == 1 and "[perf_hint] 2 hints across 1 site" in err and "PYPTO_LOG_LEVEL=DEBUG" in err
    assert "TileInnermostDimGranularity" not in err and "[pass]" not in err
    pypto.set_log_level("debug")
    narrow(torch.zeros(16), torch.zeros(16), config=RunConfig(platform="ref"))
    err = capsys.readouterr().err
    assert "[pass] ConvertTensorToTileOps:" in err and "TileInnermostDimGranularity" in err


def test_a_bad_level_is_refused(level):
    with pytest.raises(ConfigError, match="log level 'loud' is not one of NONE, FATAL, ERROR, WARN, INFO, EVENT, DEBUG"):
        pypto.set_log_level("loud")


def test_the_environment_sets_the_level_at_import():
    env = dict(os.environ, PYPTO_LOG_LEVEL="error")
    out = subprocess.run([sys.executable, "-c", "import pypto; print(pypto.get_log_level().name)"], env=env,
                         capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "ERROR"
    env["PYPTO_LOG_LEVEL"] = "chatty"
    out = subprocess.run([sys.executable, "-c", "import pypto; print(pypto.get_log_level().name)"], env=env,
                         capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "INFO" and "PYPTO_LOG_LEVEL='chatty' is not a level" in out.stderr


def test_debug_shows_each_kernels_passes_with_their_times(level, capsys, tmp_path):
    """What ``PYPTO_LOG_LEVEL=DEBUG python -m pypto.demo`` shows: per kernel, which program
    the pipeline runs on, each pass and its time, and the compile's totals."""
    import re

    from pypto import demo
    from pypto.passes.pipeline import passes_for

    pypto.set_log_level("debug")
    assert demo.main(["--platform", "ref", "-o", str(tmp_path / "b")]) == 0
    err = capsys.readouterr().err.splitlines()
    names = [spec.name for spec in passes_for(RunConfig().memory_planner, DEFAULT)]  # the demo's chip
    for kernel in ("single_buffer", "pipelined", "explicit_slots"):
        k = err.index(f"[compile] {kernel}: the pass pipeline (PYPTO planner)")
        timed = [re.fullmatch(r"\[pass\] (\w+): (\d+\.\d\d) ms", line) for line in err[k + 1:k + 1 + len(names)]]
        assert [m.group(1) for m in timed] == names
        total = re.fullmatch(rf"\[compile\] {kernel}: {len(names)} passes in (\d+\.\d\d) ms, codegen \d+\.\d\d ms; "
                             rf"the build: .*/b/{kernel}", err[k + 1 + len(names)])
        assert total and abs(float(total.group(1)) - sum(float(m.group(2)) for m in timed)) < 0.01 * len(names) + 0.01
