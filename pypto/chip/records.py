"""The chip's artifacts, as the reference runtime writes them under ``dfx_outputs/``:

- ``chip_swimlane_records.json``: per task, the core's start and end and the pickup gap
  (``aicore_tasks``, 7 columns with the run epoch), the scheduler's dispatch and finish
  (``scheduler_tasks``, 5 columns: level >= 2), the scheduler's dispatch / complete phases
  (level >= 3) and the orchestrator's submits (level 4); in the swimlane clock's cycles.
- ``deps.json``: the tasks with their arguments, the tensors, and every edge as the
  tracker made it (before any reduction), ids as strings.
- ``name_map_<name>.json``: kernel ids -> kernel names.
- ``scope_stats/scope_stats.jsonl``: the rings' peaks, then each runtime scope's boundaries.
- ``pmu.csv``: per task and core, its cycles and each pipe's busy cycles (``enable_pmu``).

Pure: ``swimlane``, ``deps`` and ``name_map`` build the dicts; ``write`` is the edge.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

from pypto.backend import SoC

RUNTIME = "tensormap_and_ringbuffer"
_DIRECTION = {"Input": "INPUT", "Output": "OUTPUT", "InOut": "INOUT", "OutputExisting": "OUTPUT_EXISTING",
              "NoDep": "NO_DEP", "Scalar": "SCALAR"}
_DTYPE = {"float32": "FLOAT32", "float16": "FLOAT16", "bfloat16": "BFLOAT16", "int8": "INT8", "int16": "INT16",
          "int32": "INT32", "int64": "INT64", "uint8": "UINT8", "uint16": "UINT16",
          "uint32": "UINT32", "bool": "BOOL"}


def ticks(cycles: int, soc: SoC) -> int:
    """Core cycles in the swimlane clock's."""
    return cycles * soc.chip.swimlane_hz // soc.chip.core_hz


def kernel_ids(tasks) -> dict[str, int]:
    """Kernel name -> its id, in order of first submission."""
    ids: dict[str, int] = {}
    for t in tasks:
        if t.core_type != "dummy":
            ids.setdefault(t.kernel, len(ids))
    return ids


def swimlane(tasks, soc: SoC, level: int) -> dict:
    cores = soc.cores()
    types = [""] * len(cores)
    for c in cores:
        types[soc.core_number(c)] = c.kind.value
    metadata = {"runtime": RUNTIME, "clock_freq_hz": soc.chip.swimlane_hz, "num_cores": len(cores),
                "core_types": types}
    if level >= 3:
        metadata["core_to_thread"] = [0] * len(cores)  # one scheduler thread
    out = {"chip_swimlane_level": level, "metadata": metadata}
    # one row per block (a task that is not SPMD has one); dummies run on no core
    ordered = sorted(((t, p) for t in tasks if t.core is not None for p in t.placements),
                     key=lambda tp: (tp[1].start, tp[0].number, tp[1].block))
    # a row per core a block held: a mix task's whole cluster
    held = [(t, p, c) for t, p in ordered for c in (soc.cluster_cores(p.core.cluster) if t.core_type == "mix"
                                                    else (p.core,))]
    out["aicore_tasks"] = [[soc.core_number(c), t.number, t.id, ticks(p.start, soc), ticks(p.end, soc),
                            ticks(p.start, soc) - ticks(p.dispatch, soc), 0] for t, p, c in held]
    if level >= 2:
        out["scheduler_tasks"] = {"producer": "aicpu", "records": [
            [soc.core_number(c), t.id, ticks(p.dispatch, soc), ticks(p.finish, soc), 0] for t, p, c in held]}
    if level >= 3:
        phases = []
        for t, p in ordered:
            cost = soc.chip.block_dispatch if p.block else soc.chip.dispatch
            phases.append({"start_cycles": ticks(p.dispatch - cost, soc),
                           "end_cycles": ticks(p.dispatch, soc), "loop_iter": len(phases), "kind": "dispatch",
                           "tasks_processed": 1, "task_id": t.id})
        for t, p in sorted(ordered, key=lambda tp: (tp[1].finish, tp[0].number, tp[1].block)):
            phases.append({"start_cycles": ticks(p.end, soc), "end_cycles": ticks(p.finish, soc),
                           "loop_iter": len(phases), "kind": "complete", "tasks_processed": 1, "task_id": t.id})
        phases.sort(key=lambda p: (p["start_cycles"], p["loop_iter"]))
        out["scheduler_records"] = {"streams": [{"scheduler_id": 0, "core_type": "aicpu", "records": phases}]}
    if level >= 4:
        out["aicpu_orchestrator_phases"] = [[
            {"submit_idx": t.number, "task_id": t.id, "start_cycles": ticks(t.submitted - soc.chip.submit, soc),
             "end_cycles": ticks(t.submitted, soc)} for t in tasks]]
    return out


def _tensor_ids(tasks) -> dict[int, dict]:
    """Storage address -> the tensor entry of every buffer the tasks' arguments view."""
    out: dict[int, dict] = {}
    for t in tasks:
        for a in t.args:
            storage = a.tensor.untyped_storage()
            addr = storage.data_ptr()
            if addr not in out:
                out[addr] = {"tensor_id": str(len(out)), "buffer_addr": str(addr), "version": 0,
                             "dtype": _dtype(a.tensor), "buffer_numel": storage.nbytes() // a.tensor.element_size()}
    return out


def _dtype(t) -> str:
    return _DTYPE.get(str(t.dtype).removeprefix("torch."), str(t.dtype))


def _view(a, tensors) -> dict:
    t = a.tensor
    return {"tensor_id": tensors[t.untyped_storage().data_ptr()]["tensor_id"], "dtype": _dtype(t),
            "shape": list(t.shape), "start_offset": t.storage_offset(), "strides": list(t.stride())}


def deps(tasks, edges) -> dict:
    tensors = _tensor_ids(tasks)
    ids = kernel_ids(tasks)
    out_tasks = []
    for t in tasks:
        kernel = ids.get(t.kernel, -1)
        slots = {"aic": [kernel, -1, -1], "aiv": [-1, kernel, -1], "mix": [kernel, kernel, -1],
                 "dummy": [-1, -1, -1]}[t.core_type]
        if t.slots:  # the cores of its cluster a mix task runs on
            slots = [kernel if used else -1 for used in t.slots]
        out_tasks.append({"task_id": str(t.id), "name": t.name, "scope": "manual" if t.manual else "auto",
                          "early_dispatch": t.early,
                          "kernel_ids": slots, "block_num": len(t.blocks),
                          "args": [{"idx": a.index, "type": _DIRECTION[a.direction.value], **_view(a, tensors)}
                                   for a in t.args]})
    out_edges = []
    for e in edges:
        succ, pred = tasks[e.succ], tasks[e.pred]
        edge = {"pred": str(pred.id), "succ": str(succ.id), "arg": e.arg, "source": e.source, "flags": ["wait"]}
        consumer = next((a for a in succ.args if a.index == e.arg), None)
        if consumer is not None:
            view = _view(consumer, tensors)
            edge["tensor_id"] = view.pop("tensor_id")
            edge.update({f"consumer_{k}": v for k, v in view.items()})
        out_edges.append(edge)
    return {"runtime": RUNTIME, "tasks": out_tasks, "tensors": list(tensors.values()), "edges": out_edges}


def name_map(tasks, level: int) -> dict:
    return {"level": level, "orchestrator_name": None,
            "callable_id_to_name": {str(k): name for name, k in kernel_ids(tasks).items()}}


# pmu.csv's counters (the reference's column names) -> the pipe each one counts
PMU_PIPES = (("vec_busy_cycles", "VECTOR"), ("cube_busy_cycles", "CUBE"), ("scalar_busy_cycles", "SCALAR"),
             ("mte1_busy_cycles", "MTE1"), ("mte2_busy_cycles", "MTE2"), ("mte3_busy_cycles", "MTE3"),
             ("fixpipe_cycles", "FIXPIPE"))
# the simulator's own last column (no counter of the reference's): the share of the vector
# unit's 256 B repeats that held an element — low means tiles shaped wrong for the unit
PMU_COLUMNS = ("task_id", "block", "kernel", "core_id", "core_type", "pmu_total_cycles", *(c for c, _ in PMU_PIPES),
               "vec_utilization_percentage")


def pmu_rows(records, soc: SoC) -> list[tuple]:
    """One row per task (block) and core it ran on: the core's cycles in the task, start to
    end (a mix task holds its whole cluster), and each pipe's busy cycles there (the scalar
    unit's: its issuing). Core cycles, as the simulator counts them."""
    numbers = {c.name: soc.core_number(c) for c in soc.cores()}
    kinds = {c.name: c.kind.value for c in soc.cores()}
    rows = []
    for r in records:
        if r.retired or r.core < 0:
            continue
        items, names = r.issued if r.issued else (None, {})
        scalar = {names.get(c.name, c.name): v for c, v in items.scalar_busy().items()} if items is not None else {}
        lanes = {names.get(c.name, c.name): v for c, v in items.vector_lanes().items()} if items is not None else {}
        for core in sorted(set(r.pipe_cycles) | set(scalar), key=lambda c: numbers.get(c, -1)):
            pipes = {**r.pipe_cycles.get(core, {}), "SCALAR": scalar.get(core, 0)}
            full, repeats = lanes.get(core, (0.0, 0))
            rows.append((r.task_id, r.block, r.kernel, numbers.get(core, -1), kinds.get(core, r.core_type),
                         r.end - r.start, *(pipes.get(p, 0) for _, p in PMU_PIPES),
                         f"{100 * full / repeats:.2f}" if repeats else ""))
    return rows


def write(directory: Path, name: str, tasks, edges, soc: SoC, *, swimlane_level: int, dep_gen: bool,
          scope_stats: list | None = None, pmu: list | None = None) -> list[Path]:
    """The asked-for files under ``directory`` (dfx_outputs/); their paths."""
    directory.mkdir(parents=True, exist_ok=True)
    written = []

    def dump(filename: str, data: dict) -> None:
        path = directory / filename
        path.write_text(json.dumps(data, indent=1))
        written.append(path)

    if swimlane_level:
        dump("chip_swimlane_records.json", swimlane(tasks, soc, swimlane_level))
    if dep_gen:
        dump("deps.json", deps(tasks, edges))
    if swimlane_level or dep_gen:
        dump(f"name_map_{name}.json", name_map(tasks, 2))
    if pmu is not None:
        path = directory / "pmu.csv"
        with path.open("w", newline="") as f:
            out = csv.writer(f)
            out.writerow(PMU_COLUMNS)
            out.writerows(pmu_rows(pmu, soc))
        written.append(path)
    if scope_stats is not None:
        path = directory / "scope_stats" / "scope_stats.jsonl"
        path.parent.mkdir(exist_ok=True)
        path.write_text("".join(json.dumps(line) + "\n" for line in scope_stats))
        written.append(path)
    return written

