"""The simulated chip: each kernel call of an orchestration is a task; the runtime's rules
derive its edges; the scheduler places tasks on 24 AIC + 48 AIV cores; unordered tasks
over the same bytes are a race. Each rule is checked on its edges and on the results on
both platforms."""

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

import pypto.language as pl
from pypto.backend import A2A3
from pypto.chip.races import TaskRace
from pypto.ir.directions import call_directions
from pypto.ir.types import ArgDirection as D
from pypto.runtime import RunConfig

R, C = 64, 128
CG = pl.Level.CORE_GROUP
REF = RunConfig(platform="ref")


def bands(loop, n=4):
    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        for i in loop(n):
            with pl.at(level=CG):
                pl.store(pl.exp(pl.load(a, [i * R, 0], [R, C])), [i * R, 0], out)
        return out

    return k


def run_both(kernel, *args, **config):
    """(report on a2a3sim, the arguments after ref) — each platform on its own copies."""
    ref_args = [a.clone() for a in args]
    kernel(*ref_args, config=REF)
    sim_args = [a.clone() for a in args]
    report = kernel.compile(*sim_args, config=RunConfig(**config)).run(*sim_args)
    for got, want in zip(sim_args, ref_args):
        assert torch.equal(got, want)
    return report, sim_args


def deps(report) -> dict:
    return {t.task_id: t.deps for t in report.tasks}


def test_parallel_tasks_take_their_own_cores_and_wait_for_nothing():
    a = torch.randn(4 * R, C)
    report, (_, out) = run_both(bands(pl.parallel), a, torch.zeros(4 * R, C))
    assert torch.equal(out, torch.exp(a))
    assert deps(report) == {f"r1t{k}": () for k in range(4)}
    assert sorted(t.core for t in report.tasks) == [24, 25, 26, 27]  # the first vector cores
    assert {t.core_type for t in report.tasks} == {"aiv"}
    starts = sorted(t.start for t in report.tasks)
    assert all(b - a == A2A3.chip.submit for a, b in zip(starts, starts[1:]))  # the orchestrator's pace
    assert report.cycles == max(t.finish for t in report.tasks)


def test_a_sequential_loop_chains_its_writers_r_seq():
    a = torch.randn(4 * R, C)
    report, (_, out) = run_both(bands(pl.range), a, torch.zeros(4 * R, C))
    assert torch.equal(out, torch.exp(a))
    assert deps(report) == {"r1t0": (), "r1t1": ("r1t0",), "r1t2": ("r1t1",), "r1t3": ("r1t2",)}
    by_id = {t.task_id: t for t in report.tasks}
    for k in range(1, 4):
        assert by_id[f"r1t{k}"].dispatch >= by_id[f"r1t{k - 1}"].finish  # after the producer's finish


def test_parallel_is_faster_than_sequential_on_the_same_work():
    a = torch.randn(16 * R, C)
    seq, _ = run_both(bands(pl.range, 16), a, torch.zeros(16 * R, C))
    par, _ = run_both(bands(pl.parallel, 16), a, torch.zeros(16 * R, C))
    assert par.kernel_cycles == seq.kernel_cycles  # the same tasks
    assert par.cycles < seq.cycles / 2


def test_directions_follow_the_reference_rules():
    @pl.jit
    def k(a: pl.Tensor, io: pl.InOut[pl.Tensor], out: pl.Out[pl.Tensor], w: pl.Out[pl.Tensor]):
        with pl.at(level=CG):  # first writer of out: OutputExisting; io is the entry's InOut: InOut
            t = pl.load(a, [0, 0], [R, C])
            pl.store(t, [0, 0], out)
            pl.store(t, [0, 0], io)
        with pl.at(level=CG):  # out written before: R-prior
            pl.store(pl.exp(pl.load(a, [0, 0], [R, C])), [0, 0], out)
        for i in pl.range(2):  # a sequential loop: R-seq
            with pl.at(level=CG):
                pl.store(pl.load(a, [0, 0], [R, C]), [0, 0], w)
        return io, out, w

    args = [torch.randn(R, C) for _ in range(4)]
    compiled = k.compile(*args)
    program = compiled.lowered
    entry = program.function(compiled.entry)
    found = sorted(call_directions(program, entry).values(), key=len)
    assert found == sorted([(D.Input, D.OutputExisting, D.InOut), (D.Input, D.InOut), (D.Input, D.InOut)],
                           key=len)


def test_read_after_write_waits_for_the_producer():
    @pl.jit
    def k(a: pl.Tensor, scratch: pl.Out[pl.Tensor], out: pl.Out[pl.Tensor]):
        with pl.at(level=CG):
            pl.store(pl.exp(pl.load(a, [0, 0], [R, C])), [0, 0], scratch)
        with pl.at(level=CG):
            pl.store(pl.neg(pl.load(scratch, [0, 0], [R, C])), [0, 0], out)
        return scratch, out

    a = torch.randn(R, C)
    report, (_, _, out) = run_both(k, a, torch.zeros(R, C), torch.zeros(R, C))
    assert torch.equal(out, -torch.exp(a))
    assert deps(report) == {"r0t0": (), "r0t1": ("r0t0",)}


def test_disjoint_bands_of_one_tensor_do_not_wait_for_each_other():
    @pl.jit
    def k(a: pl.Tensor, scratch: pl.Out[pl.Tensor], out: pl.Out[pl.Tensor]):
        with pl.at(level=CG):
            pl.store(pl.exp(pl.load(a, [0, 0], [R, C])), [0, 0], scratch)
        with pl.at(level=CG):  # reads scratch's second band, which nobody wrote
            pl.store(pl.neg(pl.load(scratch, [R, 0], [R, C])), [0, 0], out)
        return scratch, out

    a = torch.randn(2 * R, C)
    report, _ = run_both(k, a, torch.zeros(2 * R, C), torch.zeros(R, C))
    # the reader's argument is the whole of scratch: the tracker sees the tensor the task
    # is given, so it waits — narrower views (pl.slice) are what make bands independent
    assert deps(report)["r0t1"] == ("r0t0",)


def war(x: pl.InOut[pl.Tensor], z: pl.Tensor, y: pl.Out[pl.Tensor]):
    with pl.at(level=CG):
        pl.store(pl.exp(pl.load(x, [0, 0], [R, C])), [0, 0], y)
    with pl.at(level=CG):
        pl.store(pl.neg(pl.load(z, [0, 0], [R, C])), [0, 0], x)
    return x, y


def test_write_after_read_is_not_ordered_and_is_reported_as_a_race():
    kernel = pl.jit(war)
    x, z, y = torch.randn(R, C), torch.randn(R, C), torch.zeros(R, C)
    with pytest.raises(TaskRace) as err:
        kernel(x.clone(), z, y.clone())
    message = str(err.value)
    assert "r0t0" in message and "r0t1" in message and "reads x[0, 0]" in message and "writes" in message
    assert "test_chip.py" in message and "does not order a writer after earlier readers" in message
    assert err.value.span is not None and err.value.span.line == war.__code__.co_firstlineno + 3


def test_unsafe_allow_task_races_runs_the_racing_graph():
    kernel = pl.jit(war)
    x, z, y = torch.randn(R, C), torch.randn(R, C), torch.zeros(R, C)
    x0 = x.clone()
    report = kernel.compile(x, z, y, config=RunConfig(unsafe_allow_task_races=True)).run(x, z, y)
    assert deps(report) == {"r0t0": (), "r0t1": ()}
    assert torch.equal(x, -z)
    assert torch.equal(y, torch.exp(x0))  # the reader started first: it read the old x


def test_parallel_writers_of_the_same_bytes_race():
    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        for i in pl.parallel(2):
            with pl.at(level=CG):
                pl.store(pl.exp(pl.load(a, [i * R, 0], [R, C])), [0, 0], out)
        return out

    with pytest.raises(TaskRace, match="r1t0 .* writes out\\[0, 0\\], which task r1t1 .* writes"):
        k(torch.randn(2 * R, C), torch.zeros(R, C))


def test_task_records_and_per_task_figures():
    a = torch.randn(2 * R, C)
    report, _ = run_both(bands(pl.parallel, 2), a, torch.zeros(2 * R, C))
    c = A2A3.chip
    for t in report.tasks:
        assert t.block == 0 and t.kernel.endswith("_incore_0")
        assert t.dispatch < t.start < t.end < t.finish
        assert t.start - t.dispatch == c.pickup and t.finish - t.end == c.completion
        (core, pipes), = t.pipe_cycles.items()
        assert core == f"aiv{t.core - A2A3.aic_cores}" and pipes["VECTOR"] > 0
    assert set(report.pipe_cycles) == {"aiv0", "aiv1"}
    assert {e.core for e in report.events} == {"aiv0", "aiv1"}  # the trace on the cores that ran them
    assert report.kernel_cycles == sum(t.end - t.start for t in report.tasks)


def test_a_cube_task_runs_on_a_cube_core():
    from pypto.examples import b_trans_matmul

    x, w = b_trans_matmul.inputs()
    out = torch.zeros(b_trans_matmul.M, b_trans_matmul.N)
    report = b_trans_matmul.matmul_row_major.compile(x, w, out).run(x, w, out)
    (task,) = report.tasks
    assert (task.core_type, task.core) == ("aic", 0)


# ----------------------------------------------------------------------------- artifacts


def test_ring_and_swimlane_fields_are_validated_with_the_reference_wording():
    assert RunConfig(enable_chip_swimlane=True).enable_chip_swimlane == 4
    assert RunConfig(enable_chip_swimlane=False).enable_chip_swimlane == 0
    assert RunConfig(ring_task_window=8).ring_task_window == (8, 8, 8, 8)
    assert RunConfig(ring_heap=[1024, 0, 2048, 4096]).ring_heap == (1024, 0, 2048, 4096)
    for fields, message in (
            (dict(ring_task_window=6), "ring_task_window must be a power of 2 >= 4, got 6"),
            (dict(ring_heap=512), "ring_heap must be a power of 2 >= 1024 (bytes per ring), got 512"),
            (dict(ring_dep_pool=[4, 4, 4]), "ring_dep_pool must have exactly 4 entries (one per scope-depth ring), "
                                            "got 3"),
            (dict(ring_dep_pool=[4, 4, 4, 3]), "ring_dep_pool entries must be in [4, INT32_MAX] (or 0 to keep "
                                               "default), got 3"),
            (dict(ring_task_window=True), "ring_task_window must be a power of 2 >= 4, got True"),
            (dict(enable_chip_swimlane=5), "enable_chip_swimlane must be a collection level in [0, 4]"),
            (dict(enable_chip_swimlane="on"), "enable_chip_swimlane must be an int collection level (0-4) or a bool, "
                                              "got str")):
        with pytest.raises(ValueError) as err:
            RunConfig(**fields)
        assert message in str(err.value)


def _artifacts(tmp_path, level):
    import json

    a = torch.randn(3 * R, C)
    out = torch.zeros(3 * R, C)
    config = RunConfig(enable_chip_swimlane=level, enable_dep_gen=True, output_dir=tmp_path)
    report = bands(pl.range, 3).compile(a, out, config=config).run(a, out)
    dfx = tmp_path / "dfx_outputs"
    return report, {p.name: json.loads(p.read_text()) for p in dfx.iterdir()}


def test_swimlane_records_and_deps_json_describe_the_run(tmp_path):
    report, files = _artifacts(tmp_path, 2)
    assert set(files) == {"chip_swimlane_records.json", "deps.json", "name_map_k.json"}
    lane = files["chip_swimlane_records.json"]
    meta = lane["metadata"]
    assert lane["chip_swimlane_level"] == 2 and meta["num_cores"] == 72 and meta["clock_freq_hz"] == 50_000_000
    assert meta["core_types"] == ["aic"] * 24 + ["aiv"] * 48
    ticks = lambda c: c * 50_000_000 // 1_800_000_000  # noqa: E731
    by_id = {1 << 32 | k: t for k, t in enumerate(sorted(report.tasks, key=lambda t: t.task_id))}
    assert len(lane["aicore_tasks"]) == 3
    for core, token, task, start, end, pickup, epoch in lane["aicore_tasks"]:
        t = by_id[task]
        assert (core, start, end, epoch) == (t.core, ticks(t.start), ticks(t.end), 0)
        assert pickup == ticks(t.start) - ticks(t.dispatch)
    for core, task, dispatch, finish, epoch in lane["scheduler_tasks"]["records"]:
        assert (dispatch, finish) == (ticks(by_id[task].dispatch), ticks(by_id[task].finish))
    assert "scheduler_records" not in lane  # level 3 and up
    deps_json = files["deps.json"]
    assert [t["name"] for t in deps_json["tasks"]] == ["r1t0", "r1t1", "r1t2"]
    assert [a["type"] for a in deps_json["tasks"][1]["args"]] == ["INPUT", "INOUT"]  # R-seq
    edges = {(e["pred"], e["succ"], e["source"]) for e in deps_json["edges"]}
    assert edges == {(str(1 << 32), str(1 << 32 | 1), "tensormap"), (str(1 << 32 | 1), str(1 << 32 | 2), "tensormap")}
    assert files["name_map_k.json"]["callable_id_to_name"] == {"0": "k_incore_0"}
    assert {t["kernel_ids"][1] for t in deps_json["tasks"]} == {0}  # an AIV kernel: the aiv0 slot


def test_higher_swimlane_levels_add_scheduler_and_orchestrator_phases(tmp_path):
    _, files = _artifacts(tmp_path, 4)
    lane = files["chip_swimlane_records.json"]
    (stream,) = lane["scheduler_records"]["streams"]
    assert sorted(r["kind"] for r in stream["records"]) == ["complete"] * 3 + ["dispatch"] * 3
    (submits,) = lane["aicpu_orchestrator_phases"]
    assert [s["submit_idx"] for s in submits] == [0, 1, 2]


# ----------------------------------------------------------------------------- rings


def test_a_scope_holding_more_tasks_than_its_ring_window_deadlocks():
    from pypto.chip.rings import RingExhausted

    @pl.jit
    def flat(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        for i in pl.unroll(6):  # six tasks in the body's scope: ring 0
            with pl.at(level=CG):
                pl.store(pl.exp(pl.load(a, [i * R, 0], [R, C])), [i * R, 0], out)
        return out

    a = torch.randn(6 * R, C)
    with pytest.raises(RingExhausted) as err:
        flat(a, torch.zeros(6 * R, C), config=RunConfig(ring_task_window=4))
    assert "ring 0's task window (4 slots) is full" in err.value.message
    assert "raise ring_task_window (PTO2_RING_TASK_WINDOW) or split the scope" in err.value.hint
    assert err.value.span.file == __file__
    flat(a, torch.zeros(6 * R, C), config=RunConfig(ring_task_window=8))  # room: it runs


def test_loop_trips_give_their_slots_back_and_the_orchestrator_waits_for_them(tmp_path):
    import json

    a = torch.randn(8 * R, C)
    reports = {}
    for window in (None, (0, 4, 0, 0)):
        out = torch.zeros(8 * R, C)
        config = RunConfig(ring_task_window=window, enable_scope_stats=True, output_dir=tmp_path / str(window))
        reports[window] = bands(pl.parallel, 8).compile(a, out, config=config).run(a, out)
        assert torch.equal(out, torch.exp(a))
    small = sorted(reports[(0, 4, 0, 0)].tasks, key=lambda t: t.task_id)
    assert small[4].dispatch > small[0].finish  # the fifth waits for the first's slot
    assert reports[(0, 4, 0, 0)].cycles > reports[None].cycles
    lines = [json.loads(x) for x in (tmp_path / "(0, 4, 0, 0)" / "dfx_outputs" / "scope_stats" /
                                     "scope_stats.jsonl").read_text().splitlines()]
    head, scopes = lines[0], lines[1:]
    assert head["task_window_max"] == [0, 4, 0, 0] and head["task_window_size"][1] == 4
    assert head["total"] == len(scopes) == 2 + 2 * 8  # the body, and each trip: begin and end
    trips = [s for s in scopes if s["ring"] == 1]
    loop_line = next(n for n, text in enumerate(open(__file__), 1) if "for i in loop(n):" in text)
    assert {s["phase"] for s in trips} == {"begin", "end"} and all(s["site"].endswith(f":{loop_line}") for s in trips)
    ends = [s["task_window_end"] for s in trips if s["phase"] == "end"]
    assert ends == sorted(ends) and ends[-1] == 8  # monotonic: tasks taken by ring 1


def test_the_heap_holds_the_tensors_a_scope_creates():
    from pypto.chip.rings import RingExhausted

    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        big = pl.create_tensor([R, C], pl.FP32)  # 32 KiB
        with pl.at(level=CG):
            pl.store(pl.load(a, [0, 0], [R, C]), [0, 0], big)
        with pl.at(level=CG):
            pl.store(pl.load(big, [0, 0], [R, C]), [0, 0], out)
        return out

    a = torch.randn(R, C)
    with pytest.raises(RingExhausted, match="ring 0's heap \\(16384 bytes\\) cannot hold another 32768-byte tensor"):
        k(a, torch.zeros(R, C), config=RunConfig(ring_heap=16384))
    out = torch.zeros(R, C)
    k(a, out, config=RunConfig(ring_heap=65536))
    assert torch.equal(out, a)


def test_a_graph_run_again_reuses_every_tasks_timeline(monkeypatch):
    import pypto.sim.simulator as sim

    a, out = torch.randn(16 * R, C), torch.zeros(16 * R, C)
    compiled = bands(pl.parallel, 16).compile(a, out)
    calls = []
    real = sim.simulate_together
    monkeypatch.setattr(sim, "simulate_together", lambda *args, **kw: calls.append(1) or real(*args, **kw))
    compiled.run(a, out)
    # the band's scalar only moves the task's windows: one timeline, and one a band on to
    # learn how its effects move (pypto.sim.fastforward.offsets)
    assert len(calls) == 2 and torch.equal(out, torch.exp(a))
    out.zero_()
    compiled.run(a, out)
    assert len(calls) == 2 and torch.equal(out, torch.exp(a))  # kept


graphs = st.lists(st.tuples(st.sampled_from(["aic", "aiv", "mix", "dummy"]), st.integers(1, 4000),
                            st.sets(st.integers(0, 30), max_size=3), st.booleans(),
                            st.sampled_from([None, "placed", "through"])), min_size=1, max_size=30)


@given(graphs, st.integers(0, 2000))
def test_the_scheduler_decided_as_far_as_needed_agrees_with_scheduling_all_at_once(graph, gap):
    """The orchestrator asks the chip, mid-run, when a task finishes (a ring waits for it) or
    what has started by a cycle (an element read); each later submission arrives after what
    it waited for. Deciding only that far must place every task where deciding the whole
    graph at once does."""
    from pypto.chip.scheduler import Chip, schedule
    from pypto.chip.tasks import Task

    def tasks():
        out, clock = [], 0
        for k, (kind, duration, preds, early, _) in enumerate(graph):
            clock += 300 + gap
            out.append(Task(k, 0, k, "k", kind, (), None, clock, 0 if kind == "dummy" else duration,
                            tuple(sorted(p for p in preds if p < k)), early=early))
        return out

    as_needed = tasks()
    chip, clock = Chip(A2A3), 0
    for t, (_, _, _, _, ask) in zip(as_needed, graph):
        t.submitted = max(t.submitted, clock + A2A3.chip.submit)
        clock = t.submitted
        chip.add(t)
        if ask == "placed":  # the orchestrator waits for the task to finish
            clock = max(clock, chip.until_placed(t.number).finish)
        elif ask == "through":
            chip.through(clock)
    chip.drain()
    at_once = tasks()
    for a, b in zip(at_once, as_needed):  # waiting delayed the later submissions
        a.submitted = b.submitted
    schedule(at_once, A2A3)
    assert [(t.core, t.dispatch, t.start, t.end, t.finish) for t in as_needed] == \
           [(t.core, t.dispatch, t.start, t.end, t.finish) for t in at_once]
