"""What bounds a run, from its PMU counters (``dfx_outputs/pmu.csv``, written with
``RunConfig(enable_pmu=2)``) and, when present, its swimlane: per kernel, the pipe that is
busy the largest share of the kernel's cycles, the lever that moves it and the gain the
counters predict; for the chip, the time no task runs.

- a transfer pipe (MTE1/MTE2/MTE3/FIXPIPE) busy over half the kernel: transfer-bound —
  double buffer it (``pl.pipeline(n, stage=2)``) so the other pipes work under it; the
  kernel can shrink to that pipe's busy cycles;
- the vector unit over half while its 256 B repeats run mostly empty (the simulator's
  ``vec_utilization_percentage``): shaped wrong for the vector unit — a last axis that fills
  whole repeats; the kernel can shrink by the empty share of the vector's cycles;
- a compute pipe (VECTOR/CUBE) over half: compute-bound — fewer, wider instructions; the
  rest already hides under it;
- no pipe over half: latency-bound — the pipes wait on one another; pipeline the loop;
  the kernel can shrink to its busiest pipe's cycles;
- the chip: time inside the makespan when no task runs (gaps between bars) — task
  granularity: fewer, larger tasks, or consumers staged early (``allow_early_resolve``).

    pypto advise <build dir | dfx_outputs/ | pmu.csv>

It reads CSV and JSON only, never runs what it reads.
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

import attrs

from pypto.backend import A2A3
from pypto.tools import description

TRANSFER = ("MTE1", "MTE2", "MTE3", "FIXPIPE")
COMPUTE = ("VECTOR", "CUBE")
# pmu.csv's columns (the reference's names) -> the pipe each counts
COLUMNS = {"vec_busy_cycles": "VECTOR", "cube_busy_cycles": "CUBE", "scalar_busy_cycles": "SCALAR",
           "mte1_busy_cycles": "MTE1", "mte2_busy_cycles": "MTE2", "mte3_busy_cycles": "MTE3",
           "fixpipe_cycles": "FIXPIPE"}
BOUND = 0.5  # a pipe busy over this share of the kernel bounds it
# Under this share of full repeats the lanes, not the op count, are the vector's cost: a tile
# whose rows fill under 3/4 of a repeat (a 48-element FP32 row of 64 lanes) pays a whole one.
LOW_UTILIZATION = 0.75
UTILIZATION = "vec_utilization_percentage"  # ours; a pmu.csv from elsewhere may lack it
MAX_ROWS = 1_000_000


class AdviseError(Exception):
    """Input this tool cannot read: one line."""


@attrs.frozen
class Kernel:
    """A kernel's rows on one kind of core, summed: its cycles and each pipe's busy cycles."""

    name: str
    core_type: str
    tasks: int
    cycles: int
    busy: tuple  # (pipe, cycles), busiest first
    vector_utilization: float | None = None  # share of the vector's repeats that held elements


@attrs.frozen
class Advice:
    kernel: Kernel
    pipe: str | None  # the bottleneck (None: no pipe over BOUND)
    verdict: str
    lever: str
    predicted_cycles: int  # what the lever can take off the kernel's cycles
    floor: str = ""  # what the kernel shrinks to, when not its busiest pipe's cycles


def read_pmu(path: Path) -> list[Kernel]:
    """pmu.csv's rows, summed per kernel and core type."""
    try:
        with path.open(newline="") as f:
            reader = csv.DictReader(f)
            missing = {"task_id", "kernel", "core_type", "pmu_total_cycles", *COLUMNS} - set(reader.fieldnames or ())
            if missing:
                raise AdviseError(f"{path} is not a pmu.csv: no column {sorted(missing)[0]!r}")
            sums: dict[tuple, dict] = {}
            for k, row in enumerate(reader):
                if k >= MAX_ROWS:
                    raise AdviseError(f"{path}: more than {MAX_ROWS} rows")
                key = (row["kernel"], row["core_type"])
                entry = sums.setdefault(key, {"tasks": set(), "cycles": 0, "full": 0.0, "weighed": 0,
                                              **{p: 0 for p in COLUMNS.values()}})
                entry["tasks"].add(row["task_id"])
                entry["cycles"] += _count(row["pmu_total_cycles"], path, k)
                for column, pipe in COLUMNS.items():
                    entry[pipe] += _count(row[column], path, k)
                if row.get(UTILIZATION):  # weighed by the row's vector cycles
                    vector = _count(row["vec_busy_cycles"], path, k)
                    entry["full"] += _share(row[UTILIZATION], path, k) * vector
                    entry["weighed"] += vector
    except OSError as exc:
        raise AdviseError(f"cannot read {path}: {exc.strerror or exc}") from None
    except (UnicodeDecodeError, csv.Error) as exc:
        raise AdviseError(f"{path} is not a CSV file: {exc}") from None
    return [Kernel(name, kind, len(e["tasks"]), e["cycles"],
                   tuple(sorted(((p, e[p]) for p in COLUMNS.values()), key=lambda pc: (-pc[1], pc[0]))),
                   e["full"] / e["weighed"] if e["weighed"] else None)
            for (name, kind), e in sorted(sums.items())]


def _share(text: str, path: Path, k: int) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value <= 100:
        raise AdviseError(f"{path}: row {k + 1} holds {str(text)[:20]!r} where a percentage of the vector's lanes goes")
    return value / 100


def _count(text, path: Path, k: int) -> int:
    try:
        value = int(text)
    except (TypeError, ValueError):
        value = -1
    if not 0 <= value < 2 ** 62:
        raise AdviseError(f"{path}: row {k + 1} holds {str(text)[:20]!r} where a cycle count goes")
    return value


def advise(kernel: Kernel) -> Advice:
    if kernel.cycles == 0:
        return Advice(kernel, None, "ran no cycles", "nothing to tune", 0)
    pipe, busy = kernel.busy[0]
    share = busy / kernel.cycles
    if share > BOUND and pipe in TRANSFER:
        return Advice(kernel, pipe, f"{pipe} at {100 * share:.0f} % of the kernel: transfer-bound",
                      "double buffer it — pl.pipeline(n, stage=2) — so the other pipes work under its transfers, "
                      "or move fewer bytes", kernel.cycles - busy)
    lanes = kernel.vector_utilization
    if share > BOUND and pipe == "VECTOR" and lanes is not None and lanes < LOW_UTILIZATION:
        return Advice(kernel, pipe, f"VECTOR busy {100 * share:.0f} % of the kernel with {100 * lanes:.0f} % of its "
                                    "lanes used: shaped wrong for the vector unit",
                      "give each op whole 256 B repeats — a last axis of a multiple of 256 B (64 FP32, 128 FP16 "
                      "elements), whole rows rather than a valid_shape that masks the row's tail, or the short "
                      "axis moved off the last place", round(busy * (1 - lanes)), "the vector's cycles on full repeats")
    if share > BOUND and pipe in COMPUTE:
        rest = sum(c for p, c in kernel.busy[1:] if p != "SCALAR")
        return Advice(kernel, pipe, f"{pipe} busy {100 * share:.0f} % of the kernel: compute-bound",
                      f"fewer, wider {pipe.lower()} instructions (whole rows per op, tiles shaped for the "
                      f"{'vector' if pipe == 'VECTOR' else 'cube'} unit); the other pipes ({rest} cycles) already "
                      "hide under it", kernel.cycles - busy)
    if share > BOUND:  # the scalar unit
        return Advice(kernel, pipe, f"the scalar unit issues {100 * share:.0f} % of the kernel: issue-bound",
                      "fewer, larger instructions (bigger tiles per op, fewer loop trips)", kernel.cycles - busy)
    return Advice(kernel, None, f"no pipe is busy half the kernel (the busiest, {pipe}, {100 * share:.0f} %): "
                                "latency-bound — each step waits for the one before",
                  "pipeline the loop — pl.pipeline(n, stage=2) — so loads, compute and stores overlap",
                  kernel.cycles - busy)


def chip_gaps(records: dict) -> tuple[int, int]:
    """(ticks of the makespan no task runs in, the makespan) of a swimlane's records."""
    spans = sorted((t["start"], t["end"]) for t in records["tasks"])
    makespan = max((t["finish"] for t in records["tasks"]), default=0)
    covered, reach = 0, 0
    for start, end in spans:
        if end > reach:
            covered += end - max(start, reach)
            reach = end
    return makespan - covered, makespan


def report(kernels: list[Kernel], records: dict | None, core_hz: int) -> str:
    def us(cycles: int) -> str:
        return f"{cycles * 1e6 / core_hz:.3f} µs"

    lines = []
    for a in (advise(k) for k in kernels):
        k = a.kernel
        shares = ", ".join(f"{p} {100 * c / k.cycles:.0f} %" for p, c in k.busy if c) if k.cycles else "-"
        lanes = "" if k.vector_utilization is None else f"; vector lanes used {100 * k.vector_utilization:.0f} %"
        lines.append(f"{k.name} ({k.core_type}, {k.tasks} task{'s' * (k.tasks != 1)}, {k.cycles} cycles = "
                     f"{us(k.cycles)}): {shares}{lanes}")
        lines.append(f"  bottleneck: {a.verdict}")
        lines.append(f"  lever: {a.lever}")
        if a.predicted_cycles > 0:
            lines.append(f"  predicted gain: up to {a.predicted_cycles} cycles = {us(a.predicted_cycles)} "
                         f"({100 * a.predicted_cycles / k.cycles:.0f} % of the kernel), "
                         + (a.floor or f"down to the {k.busy[0][0]} pipe's {k.busy[0][1]} cycles"))
    if records is not None:
        idle, makespan = chip_gaps(records)
        tick_us = 1e6 / records["hz"]
        if makespan:
            share = idle / makespan
            lines.append(f"chip: no task runs for {100 * share:.0f} % of the {makespan * tick_us:.3f} µs makespan "
                         f"({idle * tick_us:.3f} µs of gaps between bars)")
            if share > BOUND:
                lines.append("  bottleneck: task granularity — each task pays the orchestrator's submit and the "
                             "scheduler's dispatch and pickup (about 1 µs) around a shorter run")
                lines.append("  lever: fewer, larger tasks (more work per pl.at / kernel call), or consumers staged "
                             "while their producers run (allow_early_resolve=True); pypto critical-path names them")
                lines.append(f"  predicted gain: up to {idle * tick_us:.3f} µs ({100 * share:.0f} % of the makespan)")
    else:
        lines.append("chip: no swimlane beside the PMU counters (RunConfig(enable_chip_swimlane=True) adds the "
                     "time between tasks)")
    return "\n".join(lines)


def _inputs(source: Path):
    if source.is_dir():
        for d in (source / "dfx_outputs", source):
            if (d / "pmu.csv").is_file():
                return d / "pmu.csv", d
        raise AdviseError(f"no pmu.csv in {source}: run with RunConfig(enable_pmu=2) (and an output_dir)")
    if not source.is_file():
        raise AdviseError(f"no such file: {source}")
    return source, source.parent


def analyse(source: Path) -> str:
    from pypto.tools.swimlane import SwimlaneError, _load, records_of

    pmu, directory = _inputs(source)
    kernels = read_pmu(pmu)
    if not kernels:
        raise AdviseError(f"{pmu} holds no rows: no task ran on a core")
    records = None
    lane = directory / "chip_swimlane_records.json"
    if lane.is_file():
        try:
            records = records_of(_load(lane, "records"), lane)
        except SwimlaneError as exc:
            raise AdviseError(str(exc)) from None
    return report(kernels, records, A2A3.chip.core_hz)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="pypto advise", description=description(__doc__))
    parser.add_argument("source", type=Path, help="a build directory, its dfx_outputs/, or a pmu.csv")
    args = parser.parse_args(argv)
    try:
        print(analyse(args.source))
    except AdviseError as exc:
        print(f"error: {str(exc).splitlines()[0]}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
