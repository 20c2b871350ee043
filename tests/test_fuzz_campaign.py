"""Fuzz campaigns (``python -m pypto.fuzz``): every property holds on generated kernels; a
planted bug is found, shrunk to a small kernel, saved as a reproducer and bisected to its
layer; failures saved in a directory or a Redis database are replayed by another campaign."""

import ast
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from hypothesis import find

from pypto.fuzz import reproducer
from pypto.fuzz.campaign import Plan, run, units
from pypto.fuzz.checks import Failure
from pypto.fuzz.mutants import MUTANTS, MutantError, plant
from pypto.fuzz.properties import PROPERTIES, Example
from pypto.fuzz.unit import signature
from pypto.fuzz.strategies import elementwise_programs

ENV = {**os.environ, "PYPTO_LOG_LEVEL": "WARN"}


def fuzz(*args, cwd) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pypto.fuzz", *args], capture_output=True, text=True, cwd=cwd,
                          env=ENV, timeout=600)


def test_a_small_campaign_over_every_property_holds(tmp_path):
    result = run(Plan(examples=4 * len(PROPERTIES), seed=3, out=tmp_path / "out"))
    assert result.failures == {}, list(result.failures)
    assert set(result.examples) == set(PROPERTIES) and all(n == 4 for n in result.examples.values()), result.examples
    assert all(result.runs[p] >= 4 for p in PROPERTIES), result.runs
    assert not (tmp_path / "out").exists()  # nothing failed: no reproducers


def test_units_share_the_examples_round_robin_and_stop():
    plan = Plan(properties=("oracle", "passes", "tasks"), examples=161, seed=1)
    got = list(units(plan))
    assert [(u.prop, u.examples, u.reuse) for u in got] == [
        ("oracle", 50, True), ("passes", 50, True), ("tasks", 50, True), ("oracle", 4, False),
        ("passes", 4, False), ("tasks", 3, False)]  # 54 + 54 + 53, and only the first round replays
    assert len({u.seed for u in got}) == len(got)  # a fresh seed per unit


def test_signatures_blur_sizes_names_and_paths_but_keep_the_kind_and_place_of_failure():
    a = signature("simulator", AssertionError("tile 'x_3' at 128 differs by 0.5"))
    b = signature("simulator", AssertionError("tile 'acc' at 64 differs by 2"))
    c = signature("simulator", AssertionError("a hazard at 64"))
    assert a == b != c
    assert a.startswith("simulator: AssertionError:")
    races = [signature("tasks", Failure(f"a race at /tmp/tmp{k}/graph.py:5:9")) for k in ("ab_1", "x9")]
    assert races[0] == races[1] == "tasks: Failure: a race at <path>:N:N"

    def internal(where):
        try:
            where()
        except Exception as exc:
            try:
                raise Failure("internal KeyError: 'k'") from exc
            except Failure as f:
                return signature("errors", f)

    from pypto.ir import nodes
    from pypto.sim.ops import numerics

    one = internal(lambda: nodes.Program("p", ()).function("k"))
    two = internal(lambda: numerics.reduce_last(torch.ones(2, 2), "k"))
    assert one != two and two.endswith("@ sim.ops.numerics:reduce_last"), (one, two)


# ----------------------------------------------------------------------------- planted bugs


@pytest.mark.parametrize("mutant", sorted(MUTANTS))
def test_a_planted_bug_is_found_shrunk_saved_and_bisected_to_its_layer(mutant, tmp_path):
    m = MUTANTS[mutant]
    knobs = ["--families", ",".join(m.knobs.families), "--max-steps", str(m.knobs.max_steps),
             "--max-trips", str(m.knobs.max_trips)]
    done = fuzz("--mutant", mutant, "--properties", ",".join(m.properties), "--examples", "200", "--seed", "1",
                "--database", "none", "--out", "found", "--quiet", *knobs, cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    found = sorted((tmp_path / "found").glob("*.py"))
    assert sorted(p.name.split("-")[0] for p in found) == sorted(m.properties), done.stdout  # each property saw it
    for path in found:
        _shrunk_and_bisected(path, m.layer, tmp_path)


def _shrunk_and_bisected(path: Path, layer: str, tmp_path) -> None:
    text = path.read_text()
    assert f"culprit: {layer}" in text, text[:3000]
    program = ast.literal_eval(text.split("PROGRAM = ", 1)[1].split("\nSOURCE = ", 1)[0])
    kernel = program.split("def kernel", 1)[1]
    statements = [line for line in kernel.splitlines()[1:] if line.strip() and not line.strip().startswith("return")]
    assert len(statements) <= 7, program  # shrunk: a few statements (a chain drawn whole can take 9)
    # without the planted bug (a fresh process), the reproducer passes and the bisect finds nothing
    again = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, cwd=tmp_path, env=ENV)
    assert again.returncode == 0 and "holds now" in again.stdout, again.stdout + again.stderr
    bisected = subprocess.run([sys.executable, "-m", "pypto.tools.bisect", str(path)], capture_output=True,
                              text=True, env=ENV)
    assert bisected.returncode == 0 and bisected.stdout.startswith("no step changes the result"), bisected.stdout


def test_a_planted_bug_is_taken_out_again():
    undo = plant("swapped-select")
    try:
        from pypto.sim.ops import semantics

        x = semantics.TileVal(torch.ones(1, 8), (1, 8))
        mask = semantics.IMPLS["tile.cmp"](x, x, 0)  # everything equal: the mask selects lhs
        assert torch.equal(semantics.IMPLS["tile.sel"](mask, x, semantics.TileVal(torch.zeros(1, 8), (1, 8))),
                           torch.zeros(1, 8))
    finally:
        undo()
    assert torch.equal(semantics.IMPLS["tile.sel"](mask, x, semantics.TileVal(torch.zeros(1, 8), (1, 8))),
                       torch.ones(1, 8))
    with pytest.raises(MutantError, match="no mutant 'nope'"):
        plant("nope")


# ----------------------------------------------------------------------------- shared databases


def _replay(database: str, tmp_path) -> None:
    """One campaign finds a planted bug and saves it in ``database``; another, drawing
    nothing new (replay only, another seed), meets the same failure; a third with an
    empty database meets none."""
    m = MUTANTS["swapped-select"]
    base = ["--mutant", m.name, "--properties", "oracle", "--families", "elementwise", "--quiet"]
    first = fuzz(*base, "--examples", "200", "--seed", "1", "--database", database, "--out", "a", cwd=tmp_path)
    assert first.returncode == 1, first.stdout + first.stderr
    found = next(line.strip() for line in first.stdout.splitlines() if line.startswith("  oracle: "))
    second = fuzz(*base, "--replay-only", "--seed", "99", "--database", database, "--out", "b", cwd=tmp_path)
    assert second.returncode == 1 and found in second.stdout, second.stdout + second.stderr
    assert list((tmp_path / "b").glob("oracle-*.py"))
    (tmp_path / "empty").mkdir()
    empty = fuzz(*base, "--replay-only", "--seed", "99", "--database", str(tmp_path / "empty"), "--out", "c",
                 cwd=tmp_path)
    assert empty.returncode == 0, empty.stdout + empty.stderr


def test_a_failure_saved_in_a_directory_database_is_replayed_by_another_campaign(tmp_path):
    _replay(str(tmp_path / "db"), tmp_path)


@pytest.fixture
def redis_server(tmp_path):
    exe = shutil.which("redis-server")
    if exe is None:
        pytest.skip("redis-server is not installed (.ci/run installs Debian's redis-server)")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([exe, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                             "--dir", str(tmp_path)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        import redis

        client = redis.Redis(host="127.0.0.1", port=port)
        for _ in range(100):
            try:
                client.ping()
                break
            except redis.exceptions.ConnectionError:
                time.sleep(0.05)
        else:
            pytest.fail("redis-server did not start")
        yield f"redis://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(10)


def test_a_failure_saved_in_redis_is_replayed_by_another_campaign(redis_server, tmp_path):
    _replay(redis_server, tmp_path)


# ----------------------------------------------------------------------------- the command


def test_the_command_lists_its_properties_and_refuses_bad_options_in_one_line(tmp_path, capsys, monkeypatch):
    from pypto.fuzz.__main__ import main

    monkeypatch.chdir(tmp_path)
    assert main(["--list"]) == 0
    listed = capsys.readouterr().out
    assert all(name in listed for name in PROPERTIES)
    for args, message in [(["--properties", "nope"], "no property 'nope'"),
                          (["--families", "nope"], "no family 'nope'"),
                          (["--dtypes", "FP128"], "--dtypes FP128"),
                          (["--jobs", "0"], "--jobs must be at least 1"),
                          (["--max-trips", "0"], "--max-trips must be at least 1"),
                          (["--database", "redis://127.0.0.1:1"], "cannot reach it"),
                          (["--database", "redis://127.0.0.1:1/abc"], "the database after the port is a number"),
                          (["--database", "ftp://x/y"], "a directory, or redis://HOST:PORT"),
                          (["--database", str(Path(__file__))], "not a directory"),
                          (["--database", str(Path(__file__) / "sub")], "cannot make it"),
                          (["--replay-only", "--database", "none"], "--replay-only replays a database's examples"),
                          (["--replay-only", "--database", "nowhere"], "--replay-only replays a database's examples"),
                          (["--time", "0"], "--time must be more than 0"),
                          (["--out", str(Path(__file__))], "cannot write reproducers there"),
                          (["--properties", "syncs", "--families", "cube"], "property 'syncs' draws none of them")]:
        assert main([*args, "--examples", "1"]) == 2, args
        err = capsys.readouterr().err
        assert err.strip().count("\n") == 0 and message in err, (args, err)
    with pytest.raises(SystemExit) as info:
        main(["--time", "soon"])
    assert info.value.code == 2 and "is not a duration" in capsys.readouterr().err
    done = fuzz("--properties", "nope", cwd=tmp_path)  # as a command, too
    assert done.returncode == 2 and done.stderr == "error: no property 'nope'; there are " + \
        ", ".join(PROPERTIES) + "\n"


def test_families_leave_out_the_properties_that_draw_none_of_them_and_every_property_is_accounted(tmp_path, capsys,
                                                                                                    monkeypatch):
    from pypto.fuzz.__main__ import main

    monkeypatch.chdir(tmp_path)
    assert main(["--families", "cube", "--examples", "4", "--database", "none", "--seed", "5", "--quiet"]) == 0
    out = capsys.readouterr().out
    shown = [line.split()[0] for line in out.splitlines()[1:] if line.startswith("  ")]
    assert shown == ["oracle", "simulator", "passes", "roundtrip", "planners"], out  # not syncs, tasks, ...
    assert "--seed 5" in out.splitlines()[0]
    assert main(["--properties", "oracle,passes,roundtrip", "--examples", "2", "--database", "none", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "roundtrip        0  not run" in out and "oracle           1  held" in out, out
    assert "--seed " in out.splitlines()[0]  # a fresh seed, said so it can be drawn again


def test_an_interrupted_campaign_keeps_what_it_found(tmp_path):
    def stop(result):
        if result.failures:
            raise KeyboardInterrupt

    m = MUTANTS["swapped-select"]
    result = run(Plan(properties=("oracle", "passes"), knobs=m.knobs, examples=400, seed=1, mutant=m.name,
                      out=tmp_path / "out"), progress=stop)
    assert result.interrupted and result.failures and list((tmp_path / "out").glob("oracle-*.py"))
    assert result.examples["oracle"] < 200


def test_a_campaign_stopped_early_keeps_what_it_found(tmp_path, monkeypatch):
    """A unit that cannot run (the database went away, a worker died) stops the campaign;
    what the units before it found is still written."""
    from pypto.fuzz import campaign
    from pypto.fuzz.unit import CampaignError, run_unit

    calls = []

    def flaky(*args):
        calls.append(args)
        if len(calls) > 1:
            raise CampaignError("--database redis://db:6379: cannot reach it")
        return run_unit(*args)

    monkeypatch.setattr(campaign, "run_unit", flaky)
    m = MUTANTS["swapped-select"]
    result = run(Plan(properties=("oracle", "passes"), knobs=m.knobs, examples=400, seed=1, mutant=m.name,
                      out=tmp_path / "out"))
    assert result.stopped == "--database redis://db:6379: cannot reach it" and len(calls) == 2
    assert result.failures and list((tmp_path / "out").glob("oracle-*.py"))


def test_a_reproducer_whose_fields_do_not_fit_together_is_refused(tmp_path, capsys):
    from pypto.fuzz.reproducer import main

    case = find(elementwise_programs(), lambda c: True)
    good = reproducer.write(tmp_path / "r.py", "oracle", Example(case=case), "sig").read_text()
    for name, change in [("entry", ("ENTRY = 'kernel'", "ENTRY = 'nope'")),
                         ("detail", ("PROPERTY = 'oracle'", "PROPERTY = 'tasks'")),
                         ("planner", ("PLANNER = 'PYPTO'", "PLANNER = 'ASAP'"))]:
        bad = tmp_path / f"{name}.py"
        bad.write_text(good.replace(*change))
        assert main(bad) == 2, name
        err = capsys.readouterr().err
        assert err.startswith("error: ") and err.count("\n") == 1, (name, err)


def test_a_time_budget_ends_the_campaign(tmp_path):
    done = fuzz("--time", "3s", "--properties", "oracle", "--database", "none", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "oracle" in done.stdout and "held" in done.stdout


def test_two_jobs_run_the_units_in_worker_processes(tmp_path):
    done = fuzz("--examples", "40", "--jobs", "2", "--properties", "oracle,roundtrip", "--database", "none",
                cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "40 examples" in done.stdout and "2 jobs" in done.stdout


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_campaign_leaves_nothing_in_the_directory_it_runs_in(tmp_path, jobs):
    """hypothesis's own caches go under ~/.cache/pypto/hypothesis, in the workers too."""
    (tmp_path / "home").mkdir()
    (tmp_path / "here").mkdir()
    env = {k: v for k, v in ENV.items() if k != "HYPOTHESIS_STORAGE_DIRECTORY"}
    done = subprocess.run([sys.executable, "-m", "pypto.fuzz", "--examples", "6", "--jobs", jobs, "--properties",
                           "oracle", "--database", "none", "--quiet"], capture_output=True, text=True,
                          cwd=tmp_path / "here", env={**env, "HOME": str(tmp_path / "home")}, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert list((tmp_path / "here").iterdir()) == []
    # what hypothesis wrote, if anything this run (it caches per source), is under the cache
    cache = tmp_path / "home" / ".cache" / "pypto" / "hypothesis"
    assert all(p.is_relative_to(cache) for p in (tmp_path / "home").rglob("*") if p.is_file())


# ----------------------------------------------------------------------------- reproducers


def test_a_reproducer_reads_back_what_was_written_without_running_anything(tmp_path):
    case = find(elementwise_programs(), lambda c: " valid " in c.recipe and "specials" in c.recipe)  # a tail, NaNs
    path = reproducer.write(tmp_path / "r.py", "simulator", Example(case=case, planner="PTOAS"), "sig", "why")
    name, example, sig = reproducer.read(path)
    assert (name, sig, example.planner) == ("simulator", "sig", "PTOAS")
    assert example.case.program == case.program
    for got, want in zip(example.case.args(), case.args()):
        assert got.dtype == want.dtype and torch.equal(got.view(torch.uint8) if got.dtype.is_floating_point
                                                       else got, want.view(torch.uint8)
                                                       if want.dtype.is_floating_point else want)
    assert example.case.recipe == case.recipe
    ran = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, env=ENV)
    assert ran.returncode == 0 and "holds now" in ran.stdout


def test_a_file_that_is_not_a_reproducer_is_refused_and_never_run(tmp_path):
    trap = tmp_path / "ran"
    fake = tmp_path / "x.py"
    fake.write_text(f"open({str(trap)!r}, 'w').write('!')\nPROPERTY = 'oracle'\n")
    for path in (fake, tmp_path / "missing.py"):
        done = subprocess.run([sys.executable, "-m", "pypto.tools.bisect", str(path)], capture_output=True,
                              text=True, env=ENV)
        assert done.returncode == 2 and done.stderr.startswith("error: ") and done.stderr.count("\n") == 1, \
            done.stderr
    assert not trap.exists()
    assert reproducer.main(fake) == 2 and not trap.exists()


# ----------------------------------------------------------------------------- the bisect on dumps

PIPELINED = '''import pypto.language as pl


@pl.jit
def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.pipeline(3, stage=2):
            t = pl.load(a, [i * 16, 0], [16, 64])
            pl.store(pl.exp(t), [i * 16, 0], out)
    return out
'''


def _build(tmp_path) -> Path:
    import runpy

    from pypto.ir import PassDumpLevel
    from pypto.runtime import RunConfig

    (tmp_path / "k.py").write_text(PIPELINED)
    kernel = runpy.run_path(str(tmp_path / "k.py"))["k"]
    a = torch.randn(48, 64)
    kernel.compile(a, torch.zeros(48, 64), config=RunConfig(output_dir=tmp_path / "build",
                                                             dump_passes=PassDumpLevel.CONCISE))
    return tmp_path / "build"


def bisect(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pypto.tools.bisect", *map(str, args)], capture_output=True,
                          text=True, env=ENV)


def test_the_bisect_of_a_build_whose_passes_agree_names_nothing(tmp_path):
    build = _build(tmp_path)
    for path in (build, build / "passes_dump"):
        done = bisect(path)
        assert done.returncode == 0 and done.stdout.startswith("no step changes the result: all 11 passes"), done


def test_the_bisect_names_the_pass_whose_dump_computes_otherwise_with_its_diff(tmp_path):
    build = _build(tmp_path)
    dump = build / "passes_dump" / "07_after_LowerPipelineLoops.py"
    text = dump.read_text()
    assert "pl.tile.exp" in text
    dump.write_text(text.replace("pl.tile.exp", "pl.tile.neg", 1))  # a pass that computed the wrong thing
    done = bisect(build)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "culprit: LowerPipelineLoops"
    assert lines[1] == "'out' after LowerPipelineLoops differs from after CanonicalizeTileSlice"
    diff = done.stdout.split("+++ after LowerPipelineLoops\n", 1)[1]
    assert "--- before LowerPipelineLoops" in done.stdout
    assert any(line.startswith("+") and "pl.tile.neg" in line for line in diff.splitlines())


def test_the_bisect_refuses_what_it_cannot_read_in_one_line(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    build = _build(tmp_path)
    (build / "passes_dump" / "05_after_InferTileMemorySpace.py").write_text("import os\nos.system('touch pwned')\n")
    for path, message in [(empty, "no pass dumps here"), (build, "a program text holds imports and one"),
                          (tmp_path / "nope", "no such file or directory")]:
        done = bisect(path)
        assert done.returncode == 2 and done.stderr.count("\n") == 1 and message in done.stderr, (path, done.stderr)
    assert not (tmp_path / "pwned").exists() and not Path("pwned").exists()


def test_a_small_campaign_on_a5sim_holds_and_a_planted_bug_is_found_there(tmp_path):
    """``--platform a5sim``: every property holds ref against the A5 simulator (its table
    planning and costing the programs), and a dropped sync is found there and saved with its
    platform, so the reproducer replays it on a5sim."""
    import attrs

    from pypto.fuzz.example import Knobs

    result = run(Plan(examples=2 * len(PROPERTIES), seed=5, out=tmp_path / "out", knobs=Knobs(platform="a5sim")))
    assert result.failures == {}, list(result.failures)
    m = MUTANTS["dropped-sync"]
    done = fuzz("--mutant", "dropped-sync", "--properties", "simulator", "--examples", "100", "--seed", "1",
                "--database", "none", "--out", "found", "--quiet", "--platform", "a5sim",
                "--families", ",".join(m.knobs.families), "--max-steps", str(m.knobs.max_steps), cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    found = sorted((tmp_path / "found").glob("*.py"))
    assert found and all("PLATFORM = 'a5sim'" in p.read_text() for p in found)
    _, example, _ = reproducer.read(found[0])
    assert example.platform == "a5sim" and attrs.evolve(example, platform="a2a3sim").soc.name == "a2a3"
