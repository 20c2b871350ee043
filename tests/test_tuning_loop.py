"""The tuning loop of the field's guides, simulated: ``enable_pmu`` writes
``dfx_outputs/pmu.csv`` with the reference's columns per task and core, checked against
the run's own cycles; ``pypto critical-path`` walks a swimlane's critical path and splits
each gap by cause, checked on graphs whose path and gaps are known; ``pypto advise`` names
the bottleneck pipe, the lever and the gain the counters predict."""

import csv
import json

import pytest
import torch

import pypto.language as pl
from pypto.backend import A2A3
from pypto.chip.records import ticks
from pypto.cli import main as cli
from pypto.runtime import RunConfig
from pypto.tools import advise, critical_path

REFERENCE_COLUMNS = ["pmu_total_cycles", "vec_busy_cycles", "cube_busy_cycles", "scalar_busy_cycles",
                     "mte1_busy_cycles", "mte2_busy_cycles", "mte3_busy_cycles", "fixpipe_cycles"]
PIPES = dict(zip(REFERENCE_COLUMNS[1:], ["VECTOR", "CUBE", "SCALAR", "MTE1", "MTE2", "MTE3", "FIXPIPE"]))


@pl.jit
def chain(a: pl.Tensor, x: pl.Out[pl.Tensor], y: pl.Out[pl.Tensor], z: pl.Out[pl.Tensor], w: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):  # A
        for i in pl.range(8):
            pl.store(pl.exp(pl.load(a, [i * 16, 0], [16, 64])), [i * 16, 0], x)
    with pl.at(level=pl.Level.CORE_GROUP):  # D: independent of the chain, short
        pl.store(pl.neg(pl.load(a, [0, 0], [16, 64])), [0, 0], w)
    with pl.at(level=pl.Level.CORE_GROUP):  # B: reads A's x
        for i in pl.range(8):
            t = pl.load(x, [i * 16, 0], [16, 64])
            pl.store(pl.mul(t, t), [i * 16, 0], y)
    with pl.at(level=pl.Level.CORE_GROUP):  # C: reads B's y
        for i in pl.range(8):
            t = pl.load(y, [i * 16, 0], [16, 64])
            pl.store(pl.add(t, t), [i * 16, 0], z)
    return x, y, z, w


def _run(tmp_path, **fields):
    a = torch.randn(128, 64)
    outs = [torch.zeros(128, 64) for _ in range(3)] + [torch.zeros(16, 64)]
    compiled = chain.compile(a, *outs, config=RunConfig(output_dir=tmp_path / "build", **fields))
    return compiled.run(a, *outs), tmp_path / "build"


def _pmu(build):
    with (build / "dfx_outputs" / "pmu.csv").open(newline="") as f:
        return list(csv.DictReader(f))


@pytest.mark.parametrize("event", [2, 4])
def test_pmu_csv_has_the_reference_s_columns_and_the_run_s_own_cycles(tmp_path, event):
    report, build = _run(tmp_path, enable_pmu=event)
    rows = _pmu(build)
    assert all(c in rows[0] for c in REFERENCE_COLUMNS)
    ran = [t for t in report.tasks if not t.retired and t.core >= 0]
    assert sorted(r["task_id"] for r in rows) == sorted(t.task_id for t in ran)  # one core per vector task
    for t in ran:
        row = next(r for r in rows if r["task_id"] == t.task_id)
        assert int(row["pmu_total_cycles"]) == t.end - t.start
        for column, pipe in PIPES.items():
            if pipe != "SCALAR":
                assert int(row[column]) == sum(p.get(pipe, 0) for p in t.pipe_cycles.values())
        assert int(row["scalar_busy_cycles"]) > 0
    assert sum(int(r["pmu_total_cycles"]) for r in rows) == report.kernel_cycles
    for pipe in ("VECTOR", "MTE2", "MTE3"):
        column = next(c for c, p in PIPES.items() if p == pipe)
        assert sum(int(r[column]) for r in rows) == sum(p.get(pipe, 0) for p in report.pipe_cycles.values())


def test_scalar_busy_counts_the_issue_of_every_instruction_the_trace_shows(tmp_path):
    report, build = _run(tmp_path, enable_pmu=2)
    issued = sum(e.end - e.start for e in report.events if e.kind == "issue")
    assert sum(int(r["scalar_busy_cycles"]) for r in _pmu(build)) == issued


def test_no_pmu_csv_without_enable_pmu(tmp_path):
    _, build = _run(tmp_path, enable_chip_swimlane=2)
    assert not (build / "dfx_outputs" / "pmu.csv").exists()


# ----------------------------------------------------------------------------- critical path


def test_the_critical_path_of_a_chain_is_the_chain_and_its_gaps_are_the_run_s(tmp_path):
    report, build = _run(tmp_path, enable_chip_swimlane=4, enable_dep_gen=True)
    records, deps, names = critical_path._inputs(build, None)
    raw = json.loads((build / "dfx_outputs" / "chip_swimlane_records.json").read_text())
    tasks = critical_path.tasks_of(records, raw, deps, critical_path._names(deps, names))
    steps = critical_path.critical_path(tasks, critical_path._edges(deps))
    by_name = {t.task_id: t for t in report.tasks}
    needed = {d for t in report.tasks for d in t.deps}
    alone = [t.task_id for t in report.tasks if not t.deps and t.task_id not in needed]  # D
    chain_ids = [t.task_id for t in sorted(report.tasks, key=lambda t: t.start) if t.task_id not in alone]
    assert len(alone) == 1 and len(chain_ids) == 3
    assert [critical_path.task_name(s.task.id) for s in steps] == chain_ids  # A, B, C; not D
    for s in steps:
        mine = by_name[critical_path.task_name(s.task.id)]
        before = by_name[critical_path.task_name(s.producer.id)].end if s.producer is not None else 0
        assert s.gap == ticks(mine.start, A2A3) - ticks(before, A2A3)
        assert dict(s.segments)["pickup"] == ticks(mine.start, A2A3) - ticks(mine.dispatch, A2A3)
    assert cli(["critical-path", str(build)]) == 0


def _synthetic(tmp_path, planted: int):
    """A records file at level 3 and its deps: A -> B -> C, and D on its own; C waits
    ``planted`` ticks in the ready queue after B's completion (50 ticks: 1 µs)."""
    rows = {  # task: (core, dispatch_begin, dispatch, start, end, finish)
        0: (24, 0, 5, 45, 545, 555),          # A
        1: (25, 0, 5, 45, 145, 155),          # D
        2: (24, 560, 565, 605, 1105, 1115),   # B, after A
        3: (26, 1120 + planted, 1125 + planted, 1165 + planted, 1665 + planted, 1675 + planted),  # C
    }
    types = ["aic"] * 24 + ["aiv"] * 48
    records = {"chip_swimlane_level": 3,
               "metadata": {"runtime": "tensormap_and_ringbuffer", "clock_freq_hz": 50_000_000,
                            "num_cores": len(types), "core_types": types},
               "aicore_tasks": [[c, k, k, s, e, s - d, 0] for k, (c, _, d, s, e, _) in rows.items()],
               "scheduler_tasks": {"producer": "aicpu", "records": [[c, k, d, f, 0] for k, (c, _, d, _, _, f)
                                                                    in rows.items()]},
               "scheduler_records": {"streams": [{"scheduler_id": 0, "core_type": "aicpu", "records": [
                   {"start_cycles": b, "end_cycles": d, "loop_iter": k, "kind": "dispatch", "tasks_processed": 1,
                    "task_id": k} for k, (_, b, d, _, _, _) in rows.items()]}]}}
    deps = {"runtime": "tensormap_and_ringbuffer", "tensors": [],
            "tasks": [{"task_id": str(k), "kernel_ids": [-1, k, -1], "early_dispatch": False} for k in rows],
            "edges": [{"pred": "0", "succ": "2"}, {"pred": "2", "succ": "3"}]}
    out = tmp_path / "dfx_outputs"
    out.mkdir(parents=True)
    (out / "chip_swimlane_records.json").write_text(json.dumps(records))
    (out / "deps.json").write_text(json.dumps(deps))
    (out / "name_map_g.json").write_text(json.dumps({"callable_id_to_name": {str(k): n for k, n in
                                                                                enumerate("ADBC")}}))
    return tmp_path


def test_a_planted_gap_is_found_with_its_cause_and_the_early_dispatch_it_allows(tmp_path, capsys):
    build = _synthetic(tmp_path, planted=250)  # 5 µs
    assert cli(["critical-path", str(build)]) == 0
    out = capsys.readouterr().out
    path = [line.split()[0] for line in out.splitlines()[2:5]]
    assert path == ["r0t0", "r0t2", "r0t3"]  # A -> B -> C; not D
    assert "ending at 38.500 µs" in out  # C's finish, 1925 ticks
    gap = next(line for line in out.splitlines() if "r0t2 -> r0t3" in line)
    # B ends 1105; its completion 1115 (dependency 0.2 µs), C's dispatch begins 1370 (ready-queue wait
    # 5.1 µs), is written by 1375 (dispatch 0.1 µs), runs at 1415 (pickup 0.8 µs)
    assert gap.strip() == ("r0t2 -> r0t3: 6.200 µs, mostly ready-queue wait (dependency 0.200, "
                           "ready-queue wait 5.100, dispatch 0.100, pickup 0.800)")
    assert "r0t3 (C) waited 6.200 µs after r0t2 ended: allow_early_resolve=True on r0t2" in out


def test_without_the_planted_gap_only_the_dispatch_chain_is_left(tmp_path, capsys):
    build = _synthetic(tmp_path, planted=0)
    assert cli(["critical-path", str(build), "--gap-us", "1.5"]) == 0
    assert "gaps over 1.5 µs on it: 0" in capsys.readouterr().out


@pytest.mark.parametrize("damage, message", [
    (lambda b: (b / "dfx_outputs" / "deps.json").unlink(), "enable_dep_gen=True"),
    (lambda b: (b / "dfx_outputs" / "chip_swimlane_records.json").write_text("{"), "is not JSON"),
    (lambda b: (b / "dfx_outputs" / "chip_swimlane_records.json").write_text(
        json.dumps({**json.loads((b / "dfx_outputs" / "chip_swimlane_records.json").read_text()),
                    "chip_swimlane_level": 1})), "level 1 has no dispatch"),
    (lambda b: (b / "dfx_outputs" / "deps.json").write_text('{"edges": [{"pred": "x"}]}'), "is not a task id"),
])
def test_bad_input_to_critical_path_is_one_line_and_a_failing_exit(tmp_path, capsys, damage, message):
    build = _synthetic(tmp_path, planted=0)
    damage(build)
    assert cli(["critical-path", str(build)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: ") and message in err


# ----------------------------------------------------------------------------- advise


def _pmu_file(tmp_path, **busy):
    path = tmp_path / "pmu.csv"
    row = {"task_id": "r0t0", "block": 0, "kernel": "k", "core_id": 24, "core_type": "aiv",
           "pmu_total_cycles": 1000, **{c: 0 for c in REFERENCE_COLUMNS[1:]}, **busy}
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, list(row))
        w.writeheader()
        w.writerow(row)
    return path


@pytest.mark.parametrize("busy, verdict, gain", [
    ({"mte2_busy_cycles": 970, "vec_busy_cycles": 300}, "MTE2 at 97 % of the kernel: transfer-bound", 30),
    ({"vec_busy_cycles": 800, "mte2_busy_cycles": 300}, "VECTOR busy 80 % of the kernel: compute-bound", 200),
    ({"vec_busy_cycles": 200, "mte2_busy_cycles": 300, "mte3_busy_cycles": 100},
     "no pipe is busy half the kernel (the busiest, MTE2, 30 %): latency-bound", 700),
])
def test_advise_names_the_bottleneck_pipe_the_lever_and_the_predicted_gain(tmp_path, capsys, busy, verdict, gain):
    assert cli(["advise", str(_pmu_file(tmp_path, **busy))]) == 0
    out = capsys.readouterr().out
    assert f"bottleneck: {verdict}" in out and "lever: " in out
    assert f"predicted gain: up to {gain} cycles = {gain * 1e6 / A2A3.chip.core_hz:.3f} µs" in out


def test_advise_on_a_run_reads_its_counters_and_its_swimlane(tmp_path, capsys):
    report, build = _run(tmp_path, enable_pmu=2, enable_chip_swimlane=2)
    assert cli(["advise", str(build)]) == 0
    out = capsys.readouterr().out
    kernels = advise.read_pmu(build / "dfx_outputs" / "pmu.csv")
    assert sum(k.cycles for k in kernels) == report.kernel_cycles
    for k in kernels:
        assert f"{k.name} (aiv, 1 task, {k.cycles} cycles" in out
    assert "chip: no task runs for" in out and "makespan" in out


@pl.jit
def masked(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [64, 64], valid_shape=[64, VALID])
        for i in pl.range(16):
            t = pl.mul(t, t)
        pl.store(t, [0, 0], out)
    return out


VALID = 16


@pytest.mark.parametrize("valid, lanes, verdict", [
    (16, "25.00", "VECTOR busy {} % of the kernel with 25 % of its lanes used: shaped wrong for the vector unit"),
    (64, "100.00", "VECTOR busy {} % of the kernel: compute-bound")])
def test_advise_tells_a_vector_unit_run_on_empty_lanes_from_one_run_on_full_ones(tmp_path, capsys, monkeypatch, valid,
                                                                                lanes, verdict):
    """FP32 rows of 16 valid elements fill a quarter of each 256 B repeat (64 lanes): the
    column says 25 %, and the advice is the shape, with the empty share of the vector's
    cycles as the gain; whole rows of 64 are plainly compute-bound."""
    monkeypatch.setitem(globals(), "VALID", valid)
    a = torch.rand(64, 64)
    masked(a, torch.zeros(64, 64), config=RunConfig(output_dir=tmp_path / "b", enable_pmu=2))
    rows = _pmu(tmp_path / "b")
    assert [r["vec_utilization_percentage"] for r in rows] == [lanes]
    assert cli(["advise", str(tmp_path / "b")]) == 0
    out = capsys.readouterr().out
    vector = int(rows[0]["vec_busy_cycles"])
    share = round(100 * vector / int(rows[0]["pmu_total_cycles"]))
    assert f"bottleneck: {verdict.format(share)}" in out and f"vector lanes used {float(lanes):.0f} %" in out
    if valid < 64:
        assert f"predicted gain: up to {round(vector * 0.75)} cycles" in out and "full repeats" in out


def test_a_pmu_csv_without_the_lanes_column_is_read_as_the_reference_writes_it(tmp_path, capsys):
    path = _pmu_file(tmp_path, vec_busy_cycles=800)
    assert "vec_utilization_percentage" not in path.read_text()
    assert advise.read_pmu(path)[0].vector_utilization is None
    assert cli(["advise", str(path)]) == 0
    assert "compute-bound" in capsys.readouterr().out


@pytest.mark.parametrize("text, message", [("a,b\n1,2\n", "no column"), (None, "no such file"),
                                           ("task_id,block,kernel,core_id,core_type,pmu_total_cycles,"
                                            + ",".join(REFERENCE_COLUMNS[1:]) + "\nr,0,k,0,aiv,x,0,0,0,0,0,0,0\n",
                                            "where a cycle count goes"),
                                           ("task_id,block,kernel,core_id,core_type,pmu_total_cycles,"
                                            + ",".join(REFERENCE_COLUMNS[1:]) + ",vec_utilization_percentage"
                                            + "\nr,0,k,0,aiv,9,0,0,0,0,0,0,0,250\n",
                                            "where a percentage of the vector's lanes goes")])
def test_bad_input_to_advise_is_one_line_and_a_failing_exit(tmp_path, capsys, text, message):
    path = tmp_path / "pmu.csv"
    if text is not None:
        path.write_text(text)
    assert cli(["advise", str(path)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err
