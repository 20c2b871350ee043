"""The critical path of a run's chip swimlane: the chain of tasks that set its makespan,
walked back from the last to finish through the producer each one waited for last, and
every gap on it over a threshold (1 µs) split by its cause:

- ``dependency``: the producer ended, and the scheduler had not yet seen it (completion);
- ``orchestration``: the task was submitted only after its producers finished;
- ``ready-queue wait``: ready, waiting for a core of its kind and the scheduler;
- ``dispatch``: the scheduler writing its descriptor (known from level 3 records);
- ``pickup``: dispatched, until its core picked it up.

Then the tasks on it that could have been dispatched early: a consumer staged while its
producer runs (``allow_early_resolve=True`` on the producer) starts as the producer ends.

    pypto critical-path <build dir | dfx_outputs/ | chip_swimlane_records.json> [--gap-us 1.0]

It needs the swimlane at level 2 or more (``RunConfig(enable_chip_swimlane=True)``) and the
task graph (``enable_dep_gen=True``). It reads JSON only, never runs what it reads.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import attrs

from pypto.tools.swimlane import SwimlaneError, _edges, _id, _inputs, _int, _load, _names, task_name
from pypto.tools import description

CAUSES = ("dependency", "orchestration", "ready-queue wait", "dispatch", "pickup")


@attrs.frozen
class Task:
    """One task's times, in the swimlane clock's ticks (its blocks together)."""

    id: int
    name: str
    kind: str
    core: int
    start: int
    end: int
    dispatch: int
    finish: int
    dispatch_begin: int  # the scheduler's dispatch phase began (level 3); else ``dispatch``
    submitted: int | None  # the orchestrator's submit ended (level 4)
    early: bool  # allow_early_resolve: its consumers may be staged while it runs


@attrs.frozen
class Step:
    task: Task
    producer: Task | None  # the one it waited for last (None: the path's first)
    segments: tuple  # (cause, ticks) from the producer's end (or 0) to this task's start, in order

    @property
    def gap(self) -> int:
        return sum(t for _, t in self.segments)


def tasks_of(records: dict, raw: dict, deps, names: dict) -> dict[int, Task]:
    """Task id -> its times: the swimlane's rows, SPMD blocks merged, with the scheduler's
    dispatch phases and the orchestrator's submits when the records hold them."""
    begins: dict[int, int] = {}
    streams = (raw.get("scheduler_records") or {}).get("streams", []) if isinstance(raw, dict) else []
    for s in streams if isinstance(streams, list) else []:
        for k, p in enumerate(s.get("records", []) if isinstance(s, dict) else []):
            if isinstance(p, dict) and p.get("kind") == "dispatch":
                tid = _id(p.get("task_id"), f"scheduler_records[{k}].task_id")
                start = _int(p.get("start_cycles"), f"scheduler_records[{k}].start_cycles")
                begins[tid] = min(begins.get(tid, start), start)
    submits: dict[int, int] = {}
    for group in raw.get("aicpu_orchestrator_phases", []) if isinstance(raw, dict) else []:
        for k, p in enumerate(group if isinstance(group, list) else []):
            if isinstance(p, dict):
                submits[_id(p.get("task_id"), f"aicpu_orchestrator_phases[{k}].task_id")] = \
                    _int(p.get("end_cycles"), f"aicpu_orchestrator_phases[{k}].end_cycles")
    early = {_id(t.get("task_id"), "deps.json: task_id"): bool(t.get("early_dispatch"))
             for t in (deps or {}).get("tasks", []) if isinstance(t, dict)}
    rows: dict[int, list] = {}
    for r in records["tasks"]:
        rows.setdefault(r["task"], []).append(r)
    out = {}
    for tid, rs in rows.items():
        first = min(rs, key=lambda r: r["start"])
        dispatch = min(r["dispatch"] for r in rs)
        out[tid] = Task(tid, names.get(tid, "?"), first["type"], first["core"], first["start"],
                        max(r["end"] for r in rs), dispatch, max(r["finish"] for r in rs),
                        min(begins.get(tid, dispatch), dispatch), submits.get(tid), early.get(tid, False))
    return out


def _segments(task: Task, producer: Task | None) -> tuple:
    """(cause, ticks) from the producer's end (the run's start without one) to ``task``'s
    start; each boundary held between the one before and the start (a task staged early
    starts before its producer's completion: those causes are 0)."""
    at = producer.end if producer is not None else 0
    marks = [("dependency", producer.finish if producer is not None else at),
             ("orchestration", task.submitted if task.submitted is not None else at),
             ("ready-queue wait", task.dispatch_begin), ("dispatch", task.dispatch), ("pickup", task.start)]
    out = []
    for cause, mark in marks:
        mark = min(max(mark, at), task.start)
        out.append((cause, mark - at))
        at = mark
    return tuple(out)


def critical_path(tasks: dict[int, Task], edges) -> list[Step]:
    """From the task that finished last back to a task nothing held: each step's producer
    is the one among its producers that finished last."""
    if not tasks:
        return []
    producers: dict[int, list] = {}
    for pred, succ in edges:
        if pred in tasks and succ in tasks and pred != succ:
            producers.setdefault(succ, []).append(tasks[pred])
    task = max(tasks.values(), key=lambda t: (t.finish, t.end, t.id))
    steps, seen = [], set()
    while task is not None and task.id not in seen:
        seen.add(task.id)
        waited = producers.get(task.id)
        producer = max(waited, key=lambda t: (t.finish, t.end, t.id)) if waited else None
        steps.append(Step(task, producer, _segments(task, producer)))
        task = producer
    return steps[::-1]


def early_candidates(steps: list[Step]) -> list[tuple[Step, int]]:
    """Steps whose task waited on its producer's completion, dispatch and pickup, and whose
    producer lets nothing be staged early: (step, ticks it would save)."""
    out = []
    for s in steps:
        if s.producer is None or s.producer.early:
            continue
        save = sum(t for cause, t in s.segments if cause in ("dependency", "ready-queue wait", "dispatch", "pickup"))
        if save > 0:
            out.append((s, save))
    return out


def report(steps: list[Step], hz: int, makespan: int, threshold_us: float, has_dispatch: bool) -> str:
    us = 1e6 / hz
    if not steps:
        return "no tasks ran on a core: there is no critical path"
    lines = [f"critical path: {len(steps)} task{'s' * (len(steps) != 1)}, ending at {steps[-1].task.finish * us:.3f} µs "
             f"(the makespan: {makespan * us:.3f} µs)",
             f"  {'task':<10} {'kernel':<24} {'core':>8} {'start µs':>10} {'run µs':>9} {'wait before µs':>15}"]
    for s in steps:
        t = s.task
        lines.append(f"  {task_name(t.id):<10} {t.name[:24]:<24} {str(t.core) + ' ' + t.kind:>8} {t.start * us:10.3f} "
                     f"{(t.end - t.start) * us:9.3f} {s.gap * us:15.3f}")
    gaps = [s for s in steps if s.gap * us > threshold_us]
    lines.append(f"gaps over {threshold_us:g} µs on it: {len(gaps)}")
    for s in gaps:
        parts = ", ".join(f"{cause} {t * us:.3f}" for cause, t in s.segments if t)
        cause = max(s.segments, key=lambda c: c[1])[0]
        before = f"{task_name(s.producer.id)} -> " if s.producer is not None else "the run's start -> "
        lines.append(f"  {before}{task_name(s.task.id)}: {s.gap * us:.3f} µs, mostly {cause} ({parts})")
    if not has_dispatch:
        lines.append("  (dispatch is inside the ready-queue wait: the records are below level 3; "
                     "RunConfig(enable_chip_swimlane=3) splits it out)")
    early = early_candidates(steps)
    lines.append(f"could have been dispatched early: {len(early)}")
    for s, save in early:
        lines.append(f"  {task_name(s.task.id)} ({s.task.name}) waited {save * us:.3f} µs after "
                     f"{task_name(s.producer.id)} ended: allow_early_resolve=True on {task_name(s.producer.id)}'s "
                     f"pl.at / pl.submit stages it while that runs (up to {save * us:.3f} µs off the path)")
    return "\n".join(lines)


def analyse(source: Path, threshold_us: float = 1.0) -> str:
    records, deps, name_map = _inputs(source, None)
    if deps is None:
        raise SwimlaneError(f"no deps.json beside the swimlane in {source}: the critical path follows the task "
                            "graph (run with RunConfig(enable_dep_gen=True) too)")
    path = source / "dfx_outputs" / "chip_swimlane_records.json" if source.is_dir() else source
    if source.is_dir() and not path.is_file():
        path = source / "chip_swimlane_records.json"
    raw = _load(path, "records")
    level = raw.get("chip_swimlane_level", 0) if isinstance(raw, dict) else 0
    if not isinstance(level, int) or level < 2:
        raise SwimlaneError(f"{path}: swimlane level {level!r} has no dispatch and finish times: run with "
                            "RunConfig(enable_chip_swimlane=True) (level 4) or a level of 2 or more")
    tasks = tasks_of(records, raw, deps, _names(deps, name_map))
    steps = critical_path(tasks, _edges(deps))
    makespan = max((t.finish for t in tasks.values()), default=0)
    return report(steps, records["hz"], makespan, threshold_us, level >= 3)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="pypto critical-path", description=description(__doc__))
    parser.add_argument("source", type=Path, help="a build directory, its dfx_outputs/, or chip_swimlane_records.json")
    parser.add_argument("--gap-us", type=float, default=1.0, help="list the gaps longer than this (µs; default 1)")
    args = parser.parse_args(argv)
    if not args.gap_us >= 0:
        print("error: --gap-us takes a number of µs, 0 or more", file=sys.stderr)
        return 2
    try:
        print(analyse(args.source, args.gap_us))
    except (SwimlaneError, OSError) as exc:
        print(f"error: {str(exc).splitlines()[0]}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
