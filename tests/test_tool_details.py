"""The small things a user meets with the tools: ``pypto trace`` names both files it writes,
reads a folder of several builds, and says how to get a trace when a build has none; every
command's ``--help`` summary is a whole sentence; the swimlane page counts cycles and µs as
everything else does; a fuzz campaign leaves nothing in the directory it was started from;
and no message sends anyone to the package index's other "pypto"."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import pypto.language as pl
from pypto.backend import A2A3
from pypto.cli import COMMANDS
from pypto.cli import main as cli
from pypto.runtime import RunConfig
from pypto.tools import description

ROOT = Path(__file__).resolve().parent.parent


@pl.jit
def twice(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [16, 64])
        pl.store(pl.add(t, t), [0, 0], out)
    return out


def _build(where: Path, **fields) -> Path:
    a, out = torch.randn(16, 64), torch.zeros(16, 64)
    twice.compile(a, out, config=RunConfig(output_dir=where, **fields)).run(a, out)
    return where


def test_trace_names_the_page_it_writes_beside_the_json(tmp_path, capsys):
    build = _build(tmp_path / "b", enable_l0_trace=True)
    capsys.readouterr()
    assert cli(["trace", str(build), "-o", str(tmp_path / "out")]) == 0
    line = capsys.readouterr().out.strip()
    assert "trace.clean.json and " in line and line.split(" and ")[1].split(" (")[0].endswith("trace.clean.html")
    assert Path(line.split(" and ")[1].split(" (")[0]).is_file()


def test_trace_reads_a_folder_of_several_builds(tmp_path, capsys):
    _build(tmp_path / "builds" / "one", enable_l0_trace=True)
    _build(tmp_path / "builds" / "two", enable_l0_trace=True)
    assert cli(["trace", str(tmp_path / "builds"), "-o", str(tmp_path / "out")]) == 0
    written = [line for line in capsys.readouterr().out.splitlines() if line.startswith("wrote ")]
    assert len(written) == 2 and len(list((tmp_path / "out").rglob("trace.clean.html"))) == 2


@pytest.mark.parametrize("layout", ["one build", "a folder of builds"])
def test_a_build_without_a_trace_says_to_turn_it_on(tmp_path, capsys, layout):
    build = _build(tmp_path / "builds" / "plain")
    target = build if layout == "one build" else build.parent
    capsys.readouterr()
    assert cli(["trace", str(target)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "enable_l0_trace=True" in err


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_command_s_help_summary_is_a_whole_sentence(command):
    import importlib

    module = importlib.import_module(COMMANDS[command])
    summary = description(module.__doc__)
    assert summary.rstrip("`").endswith((".", ":", ")")), summary
    done = subprocess.run([sys.executable, "-m", "pypto", command, "--help"], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120)
    assert done.returncode == 0 and summary in " ".join(done.stdout.split())


def test_the_swimlane_page_counts_core_cycles_and_microseconds(tmp_path):
    from pypto.tools.swimlane import _inputs, _names
    from pypto.tools.swimlane_page import page_data

    a, out = torch.randn(16, 64), torch.zeros(16, 64)
    report = twice.compile(a, out, config=RunConfig(output_dir=tmp_path / "b", enable_chip_swimlane=2)).run(a, out)
    records, deps, names = _inputs(tmp_path / "b", None)
    model = page_data(records, _names(deps, names), [], 1e6 / records["hz"])
    assert model["unit"] == "cycles" and "us" in model["axes"] and model["hz"] == A2A3.chip.core_hz
    (block,) = [s for g in model["groups"] for lane in g["lanes"] for s in lane["s"]
                if model["strings"][s[2]] != f"pickup of {records['tasks'][0]['task']}" and s[3] != 1]
    task = report.tasks[0]
    per_tick = A2A3.chip.core_hz // A2A3.chip.swimlane_hz
    assert block[1] == (task.end * 1 // per_tick - task.start // per_tick) * per_tick  # the run, in cycles
    page = (tmp_path / "page")
    assert cli(["swimlane", str(tmp_path / "b"), "-o", str(page)]) == 0
    assert "ticks (50 MHz)" not in (page / "swimlane.html").read_text()


def test_a_fuzz_campaign_leaves_nothing_in_the_directory_it_ran_in(tmp_path):
    cwd, home = tmp_path / "work", tmp_path / "home"
    cwd.mkdir()
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYPTO_")}
    env.update(PYTHONPATH=str(ROOT), HOME=str(home))
    done = subprocess.run([sys.executable, "-m", "pypto", "fuzz", "--examples", "2", "--properties", "tasks,oracle",
                           "--quiet", "--seed", "1"], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert sorted(p.name for p in cwd.iterdir()) == []  # no .hypothesis/, no build_output/
    assert (home / ".cache" / "pypto" / "fuzz-examples").is_dir()


def test_no_message_names_the_other_project_on_the_package_index():
    hits = [str(p.relative_to(ROOT)) for p in (ROOT / "pypto").rglob("*.py")
            if "pip install 'pypto[" in p.read_text() or 'pip install "pypto[' in p.read_text()
            or "pip install pypto[" in p.read_text()]
    assert hits == []


def test_critical_path_and_advise_are_commands(tmp_path, capsys):
    assert cli(["critical-path", str(tmp_path / "missing")]) == 1
    assert cli(["advise", str(tmp_path / "missing")]) == 1
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 2 and all(line.startswith("error: ") for line in err)
    json.dumps(err)
