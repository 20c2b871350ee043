"""Builds that race: a build is written aside and moved into place whole, so builds into one
named output_dir (threads or processes) never mix or break each other and the newest
complete one wins; a build a live program of ANY process holds is never pruned or cleaned;
a run writes its L0 trace and dfx outputs into its build whatever happened to the directory.
Each interleaving is forced with events and pipes, not left to timing."""

import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest
import torch

import pypto.language as pl
from pypto import cli, ir
from pypto.errors import ConfigError
from pypto.ir import PassDumpLevel
from pypto.runtime import RunConfig, build_dirs, publish
from pypto.runtime import compiled as compiled_module
from pypto.runtime.build_dirs import BUILD_MARK, LEASE

KERNEL = '''
import pypto.language as pl


@pl.jit
def exp_rows(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        pl.store(pl.exp(pl.load(a, [0, 0], [16, 128])), [0, 0], out)
    return out
'''


@pl.jit
def exp_rows(a: pl.Tensor, out: pl.Out[pl.Tensor]):  # as KERNEL's, which the other processes import
    with pl.at(level=pl.Level.CORE_GROUP):
        pl.store(pl.exp(pl.load(a, [0, 0], [16, 128])), [0, 0], out)
    return out


def program(rows: int):
    return exp_rows.specialize(torch.randn(rows, 128), torch.zeros(rows, 128))


def files(build: Path) -> dict[str, str]:
    """A build's files and their text (its lease, the live program's hold on it, aside)."""
    return {str(p.relative_to(build)): p.read_text(errors="replace") for p in sorted(build.rglob("*"))
            if p.is_file() and p.name != LEASE}


def in_thread(name: str, fn) -> tuple[threading.Thread, list]:
    """``fn()`` started in a thread named ``name``; the list gets what it raised."""
    raised: list = []

    def work():
        try:
            fn()
        except Exception as exc:  # noqa: BLE001 (asserted empty by the test)
            raised.append(exc)

    thread = threading.Thread(target=work, name=name)
    thread.start()
    return thread, raised


def paused_in(monkeypatch, module, name: str, thread: str):
    """``module.name`` made to stop, when thread ``thread`` calls it, until ``resume`` is set:
    (paused, resume) events."""
    paused, resume = threading.Event(), threading.Event()
    real = getattr(module, name)

    def stopping(*args, **kwargs):
        if threading.current_thread().name == thread:
            paused.set()
            assert resume.wait(120)
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, stopping)
    return paused, resume


@pytest.mark.parametrize("exchange", [True, False], ids=["renameat2", "moved-aside"])
def test_builds_racing_into_one_output_dir_leave_the_newest_whole(tmp_path, monkeypatch, exchange):
    if not exchange:  # a kernel or file system without RENAME_EXCHANGE: the old build moved aside first
        monkeypatch.setattr(publish, "_exchange", lambda a, b: False)
    out = tmp_path / "out"
    alone = {rows: files(ir.compile(program(rows), output_dir=tmp_path / f"alone{rows}",
                                    dump_passes=PassDumpLevel.EXPLICIT).output_dir) for rows in (16, 32, 48)}
    assert len({tuple(sorted(f.items())) for f in alone.values()}) == 3  # three builds told apart
    paused, resume = paused_in(monkeypatch, compiled_module, "write_meta", "first")
    first, raised = in_thread("first", lambda: ir.compile(program(16), output_dir=out,
                                                          dump_passes=PassDumpLevel.EXPLICIT))
    assert paused.wait(120)  # the first build is half written ...
    for rows in (32, 48):  # ... while two more start and finish
        ir.compile(program(rows), output_dir=out, dump_passes=PassDumpLevel.EXPLICIT)
        assert files(out) == alone[rows]
    resume.set()
    first.join()
    assert not raised, raised
    assert files(out) == alone[16]  # the newest complete build, whole: nothing of the others'
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # nothing left aside


def test_threads_building_into_one_output_dir_all_succeed(tmp_path):
    out, n = tmp_path / "out", 6
    barrier = threading.Barrier(n)

    def build(rows):
        barrier.wait()
        return ir.compile(program(rows), output_dir=out, dump_passes=PassDumpLevel.EXPLICIT)

    threads = [in_thread(f"t{k}", lambda k=k: build(16 * (1 + k % 3))) for k in range(n)]
    for thread, _ in threads:
        thread.join()
    assert [exc for _, raised in threads for exc in raised] == []
    meta = (out / BUILD_MARK).read_text()
    rows = next(r for r in (16, 32, 48) if f'"shape": [\n    {r},' in meta)
    assert files(out) == files(ir.compile(program(rows), output_dir=tmp_path / "alone",
                                          dump_passes=PassDumpLevel.EXPLICIT).output_dir)


def test_a_replaced_build_keeps_your_files_and_the_traces_runs_are_writing(tmp_path, monkeypatch):
    out = tmp_path / "out"
    a = torch.randn(16, 128)
    older = ir.compile(program(16), output_dir=out)
    (out / "notes.txt").write_text("mine")
    (out / "kernels" / "aiv" / "hand.txt").write_text("mine too")
    config = RunConfig(enable_l0_trace=True, enable_chip_swimlane=1)
    paused, resume = paused_in(monkeypatch, build_dirs, "fresh_dir", "runner")  # mid-way through writing a trace
    reports = []
    runner, run_raised = in_thread("runner", lambda: reports.append(older.run(a, torch.zeros(16, 128),
                                                                             config=config)))
    assert paused.wait(120)
    built, build_raised = in_thread("builder", lambda: ir.compile(program(32), output_dir=out))
    resume.set()
    for thread in (runner, built):
        thread.join()
    assert not run_raised and not build_raised, (run_raised, build_raised)
    expected = files(ir.compile(program(32), output_dir=tmp_path / "alone").output_dir)
    got = files(out)
    assert {k: v for k, v in got.items() if k in expected} == expected  # the newer build, whole
    assert got["notes.txt"] == "mine" and got["kernels/aiv/hand.txt"] == "mine too"
    (report,) = reports
    assert report.trace_dir.parent == out / "sim" and (report.trace_dir / "simulator" / "trace.json").is_file()
    assert report.dfx_files and all(p.is_file() and out in p.parents for p in report.dfx_files)


def test_a_run_whose_build_was_removed_writes_its_outputs_elsewhere(tmp_path, capfd):
    import shutil

    built = ir.compile(program(16), output_dir=tmp_path / "out")
    shutil.rmtree(built.output_dir)  # by hand
    a, out = torch.randn(16, 128), torch.zeros(16, 128)
    report = built.run(a, out, config=RunConfig(enable_l0_trace=True, enable_dep_gen=True))
    assert torch.equal(out, torch.exp(a))  # the run is not lost for its artifacts
    assert (report.trace_dir / "simulator" / "visualize_data.bin").is_file()
    assert all(p.is_file() for p in report.dfx_files) and report.dfx_files
    err = capfd.readouterr().err
    assert f"cannot write sim/ into {built.output_dir}" in err and str(report.trace_dir.parent) in err
    assert not built.output_dir.exists()  # not made again, half a build


def test_an_output_dir_a_process_is_in_is_refused(tmp_path, monkeypatch):
    (tmp_path / "keep.txt").write_text("x")
    monkeypatch.chdir(tmp_path / ".")
    for chosen in (".", str(tmp_path), str(tmp_path.parent)):
        with pytest.raises(ConfigError, match="replaces its output directory as a whole") as info:
            exp_rows.compile(torch.randn(16, 128), torch.zeros(16, 128),
                             config=RunConfig(output_dir=chosen))
        assert info.value.span.file == __file__ and "output_dir=" in info.value.hint
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.txt"]


HOLDER = '''
import sys
import pypto.runtime.compiled as compiled
import torch
from pypto.runtime import RunConfig
compiled._stamp = lambda: "20200101_000000"  # older than any build of the test's: the first to prune
from kern import exp_rows
a = torch.randn(16, 128)
built = exp_rows.compile(a, torch.zeros(16, 128))
print(built.output_dir, flush=True)
sys.stdin.readline()  # the test builds and cleans meanwhile
out = torch.zeros(16, 128)
report = built.run(a, out, config=RunConfig(enable_l0_trace=True))
print(report.trace_dir, torch.equal(out, torch.exp(a)), flush=True)
sys.stdin.readline()
'''


def test_a_build_another_process_holds_is_neither_pruned_nor_cleaned(tmp_path, monkeypatch, capsys):
    root = tmp_path / "builds"
    monkeypatch.setenv("PYPTO_PROG_BUILD_DIR", str(root))
    monkeypatch.setenv("PYPTO_KEEP_BUILDS", "1")
    monkeypatch.setenv("PYPTO_LOG_LEVEL", "warn")
    stamps = iter(range(100))
    monkeypatch.setattr(compiled_module, "_stamp", lambda: f"20260101_{next(stamps):06d}")
    (tmp_path / "kern.py").write_text(KERNEL)
    (tmp_path / "holder.py").write_text(HOLDER)
    holder = subprocess.Popen([sys.executable, str(tmp_path / "holder.py")], cwd=tmp_path, text=True,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        held = Path(holder.stdout.readline().strip())
        assert held.parent == root.resolve() and (held / BUILD_MARK).is_file(), holder.stderr.read()
        for _ in range(3):  # each keeps the newest one build of exp_rows: the held one is older
            ir.compile(program(16))
        assert held.is_dir() and len(build_dirs.builds(root)) == 2
        assert cli.main(["clean", str(root)]) == 0
        assert f"kept {held}: a running program holds it" in capsys.readouterr().out
        assert [d.name for d in build_dirs.builds(root)] == [held.name]
        holder.stdin.write("\n")
        holder.stdin.flush()
        trace, right = holder.stdout.readline().split()
        assert right == "True" and Path(trace).parent == held / "sim"  # its trace, into its own build
        holder.stdin.write("\n")
        holder.stdin.flush()
        assert holder.wait(120) == 0, holder.stderr.read()
    finally:
        holder.kill()
        holder.wait()
    newest = ir.compile(program(16)).output_dir  # the holder has ended: its lease with it
    assert [d.name for d in build_dirs.builds(root)] == [newest.name]


PROCESS_BUILDER = '''
import sys
import torch
from pypto import ir
from pypto.ir import PassDumpLevel
from kern import exp_rows
rows = int(sys.argv[1])
program = exp_rows.specialize(torch.randn(rows, 128), torch.zeros(rows, 128))
sys.stdin.readline()  # all start together
for _ in range(3):
    ir.compile(program, output_dir=sys.argv[2], dump_passes=PassDumpLevel.EXPLICIT)
print("ok", flush=True)
'''


def test_processes_building_into_one_output_dir_leave_one_whole_build(tmp_path):
    (tmp_path / "kern.py").write_text(KERNEL)
    (tmp_path / "builder.py").write_text(PROCESS_BUILDER)
    out = tmp_path / "out"
    procs = [subprocess.Popen([sys.executable, str(tmp_path / "builder.py"), str(rows), str(out)], cwd=tmp_path,
                              text=True, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
             for rows in (16, 32, 48)]
    for p in procs:
        p.stdin.write("\n")
        p.stdin.flush()
    for p in procs:
        stdout, stderr = p.communicate(timeout=600)
        assert p.returncode == 0 and stdout.strip() == "ok", stderr
    meta = (out / BUILD_MARK).read_text()
    rows = next(r for r in (16, 32, 48) if f'"shape": [\n    {r},' in meta)
    alone = subprocess.run([sys.executable, str(tmp_path / "builder.py"), str(rows), str(tmp_path / "alone")],
                           cwd=tmp_path, input="\n", capture_output=True, text=True, timeout=600)
    assert alone.returncode == 0, alone.stderr
    assert files(out) == files(tmp_path / "alone")  # one build, whole
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_clean_removes_what_a_process_cut_short_and_nothing_still_being_written(tmp_path, capsys):
    root = tmp_path / "builds"
    cut_short = publish.Staged(root / "exp_rows_20260101_000000")  # its process "ended": lease dropped
    (cut_short.path / "passes_dump").mkdir()
    path, cut_short = cut_short.path, None
    writing = publish.Staged(root / "exp_rows_20260101_000001")  # still held: being written
    assert cli.main(["clean", str(root)]) == 0
    assert f"removed {path} (left unfinished)" in capsys.readouterr().out
    assert not path.exists() and writing.path.is_dir()
    assert writing.publish(replace=False) == root / "exp_rows_20260101_000001"
