"""The L2 swimlane: a run's ``chip_swimlane_records.json`` (and its ``deps.json``) as a
Perfetto / chrome://tracing trace — one track per core, the cube cores and the vector
cores grouped, each task a slice with its pickup gap before it, an arrow per dependency
edge — and the same as a self-contained HTML page with a time axis and zoom.

    python -m pypto.tools.swimlane <output_dir | records.json> [--deps deps.json] -o OUT

OUT is the trace's path (``.json``; the page beside it as ``.html``) or a directory that
gets ``swimlane.json`` and ``swimlane.html``. It reads JSON only, never runs what it reads.
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
from pathlib import Path

from pypto.tools.swimlane_page import page_data, render
from pypto.tools import description

GROUPS = {"aic": (0, "AIC (cube cores)"), "aiv": (1, "AIV (vector cores)")}


class SwimlaneError(Exception):
    """Input this tool cannot read."""


def task_name(task_id: int) -> str:
    return f"r{task_id >> 32}t{task_id & 0xFFFFFFFF}"


def _load(path: Path, what: str):
    try:
        return json.loads(path.read_text())
    except OSError as exc:
        raise SwimlaneError(f"cannot read {what} {path}: {exc.strerror or exc}") from None
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise SwimlaneError(f"{path} is not JSON: {exc or 'nested too deeply'}") from None


_LIMIT = 2 ** 62  # cycles and ids beyond this are not a run's


def _int(value, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not -_LIMIT < value < _LIMIT:
        shown = repr(value)
        raise SwimlaneError(f"{where}: expected an integer, got {shown[:40]}{'...' if len(shown) > 40 else ''}")
    return value


def _id(value, where: str) -> int:
    """A task id as deps.json writes it: a string (or number) of an integer."""
    try:
        number = int(value)
    except (TypeError, ValueError, OverflowError):
        raise SwimlaneError(f"{where}: {str(value)[:40]!r} is not a task id") from None
    return _int(number, where)


def records_of(data, path: Path) -> dict:
    """The parts of a records file the trace needs, checked."""
    if not isinstance(data, dict) or not isinstance(data.get("aicore_tasks"), list):
        raise SwimlaneError(f"{path} is not a chip swimlane records file (no 'aicore_tasks' list)")
    meta = data.get("metadata")
    if not isinstance(meta, dict) or not isinstance(meta.get("core_types"), list):
        raise SwimlaneError(f"{path}: 'metadata.core_types' is missing")
    hz = _int(meta.get("clock_freq_hz"), f"{path}: metadata.clock_freq_hz")
    if hz <= 0:
        raise SwimlaneError(f"{path}: metadata.clock_freq_hz must be positive, got {hz}")
    types = meta["core_types"]
    if not all(isinstance(t, str) for t in types):
        raise SwimlaneError(f"{path}: metadata.core_types holds core type names (\"aic\", \"aiv\")")
    tasks = []
    for k, row in enumerate(data["aicore_tasks"]):
        where = f"{path}: aicore_tasks[{k}]"
        if not isinstance(row, list) or len(row) not in (6, 7):
            raise SwimlaneError(f"{where}: expected a row of 6 or 7 numbers "
                                "[core_id, task_token, task_id, start, end, receive_to_start(, run_epoch)]")
        core, _, task, start, end, pickup = (_int(v, where) for v in row[:6])
        if not 0 <= core < len(types) or types[core] not in GROUPS:
            raise SwimlaneError(f"{where}: core {core} is not one of the {len(types)} cores the metadata lists")
        tasks.append({"core": core, "type": types[core], "task": task, "start": start, "end": end,
                      "dispatch": start - pickup, "finish": end})
    scheduler = data.get("scheduler_tasks", {})
    rows = scheduler.get("records", []) if isinstance(scheduler, dict) else []
    if not isinstance(rows, list):
        raise SwimlaneError(f"{path}: scheduler_tasks.records is not a list")
    by_run = {(t["core"], t["task"]): t for t in tasks}  # an SPMD task has a row per block, each on its core
    for k, row in enumerate(rows):
        where = f"{path}: scheduler_tasks.records[{k}]"
        if not isinstance(row, list) or len(row) not in (4, 5):
            raise SwimlaneError(f"{where}: expected [core_id, task_id, dispatch, finish(, run_epoch)]")
        core, task, dispatch, finish = (_int(v, where) for v in row[:4])
        if (core, task) in by_run:
            by_run[(core, task)]["dispatch"], by_run[(core, task)]["finish"] = dispatch, finish
    return {"hz": hz, "types": types, "tasks": tasks}


def _names(deps, name_map) -> dict[int, str]:
    """task id -> kernel name, from deps.json's kernel ids and the name map."""
    if not isinstance(deps, dict):
        return {}
    names = name_map.get("callable_id_to_name", {}) if isinstance(name_map, dict) else {}
    if not isinstance(names, dict):
        raise SwimlaneError("name map: 'callable_id_to_name' is not an object")
    tasks = deps.get("tasks", [])
    if not isinstance(tasks, list):
        raise SwimlaneError("deps.json: 'tasks' is not a list")
    out = {}
    for k, t in enumerate(tasks):
        if not isinstance(t, dict):
            continue
        kernels = t.get("kernel_ids", [])
        ids = [x for x in kernels if isinstance(x, int) and not isinstance(x, bool) and x >= 0] \
            if isinstance(kernels, list) else []
        if ids:
            out[_id(t.get("task_id"), f"deps.json: tasks[{k}].task_id")] = str(names.get(str(ids[0]),
                                                                                         f"kernel {ids[0]}"))
    return out


def _edges(deps) -> list[tuple[int, int]]:
    """(pred, succ) task ids of deps.json's edges."""
    edges = deps.get("edges", []) if isinstance(deps, dict) else []
    if not isinstance(edges, list):
        raise SwimlaneError("deps.json: 'edges' is not a list")
    out = []
    for k, e in enumerate(edges):
        if not isinstance(e, dict):
            raise SwimlaneError(f"deps.json: edges[{k}] is not an object")
        out.append((_id(e.get("pred"), f"deps.json: edges[{k}].pred"), _id(e.get("succ"), f"deps.json: edges[{k}].succ")))
    return out


def trace(records: dict, deps=None, name_map=None) -> dict:
    """The chrome-trace JSON (microseconds)."""
    us = 1e6 / records["hz"]
    names = _names(deps, name_map)
    events = []
    for kind, (pid, label) in GROUPS.items():
        events.append({"name": "process_name", "ph": "M", "pid": pid, "args": {"name": label}})
        events.append({"name": "process_sort_index", "ph": "M", "pid": pid, "args": {"sort_index": pid}})
    counts = {"aic": 0, "aiv": 0}
    for core, kind in enumerate(records["types"]):
        if kind in GROUPS:
            events.append({"name": "thread_name", "ph": "M", "pid": GROUPS[kind][0], "tid": core,
                           "args": {"name": f"{kind}{counts[kind]} (core {core})"}})
            counts[kind] += 1
    where: dict[int, list] = {}  # task id -> (pid, core, start, end) of each of its blocks
    blocks = collections.Counter(t["task"] for t in records["tasks"])
    for t in records["tasks"]:
        pid = GROUPS[t["type"]][0]
        where.setdefault(t["task"], []).append((pid, t["core"], t["start"] * us, t["end"] * us))
        label = names.get(t["task"], task_name(t["task"]))
        args = {"task_id": task_name(t["task"]), "core": t["core"], "dispatch": t["dispatch"], "start": t["start"],
                "end": t["end"], "finish": t["finish"]}
        if blocks[t["task"]] > 1:  # an SPMD task: its blocks share the name, and say which they are
            args["blocks"] = blocks[t["task"]]
        if t["start"] > t["dispatch"]:
            events.append({"name": "pickup", "ph": "X", "pid": pid, "tid": t["core"], "ts": t["dispatch"] * us,
                           "dur": (t["start"] - t["dispatch"]) * us, "args": {"task_id": task_name(t["task"])}})
        events.append({"name": label, "ph": "X", "pid": pid, "tid": t["core"], "ts": t["start"] * us,
                       "dur": (t["end"] - t["start"]) * us, "args": args})
    for k, (pred, succ) in enumerate(_edges(deps)):
        if pred in where and succ in where:  # from the producer's last block to end to the consumer's first
            (ppid, pcore, _, pend) = max(where[pred], key=lambda w: w[3])
            (spid, score, sstart, _) = min(where[succ], key=lambda w: w[2])
            name = f"{task_name(pred)} -> {task_name(succ)}"
            events.append({"name": name, "ph": "s", "id": k, "pid": ppid, "tid": pcore, "ts": pend, "cat": "dep"})
            events.append({"name": name, "ph": "f", "bp": "e", "id": k, "pid": spid, "tid": score, "ts": sstart,
                           "cat": "dep"})
    return {"traceEvents": events, "displayTimeUnit": "ns"}


def _inputs(source: Path, deps_path: Path | None):
    records_path = source / "dfx_outputs" / "chip_swimlane_records.json" if source.is_dir() else source
    if source.is_dir() and not records_path.is_file():
        records_path = source / "chip_swimlane_records.json"
    if not records_path.is_file():
        raise SwimlaneError(f"no chip_swimlane_records.json in {source} (run with "
                            "RunConfig(enable_chip_swimlane=True))" if source.is_dir() else f"no such file: {source}")
    records = records_of(_load(records_path, "records"), records_path)
    if deps_path is None and (records_path.parent / "deps.json").is_file():
        deps_path = records_path.parent / "deps.json"
    deps = _load(deps_path, "deps") if deps_path is not None else None
    maps = sorted(records_path.parent.glob("name_map_*.json"))
    name_map = _load(maps[0], "name map") if maps else None
    return records, deps, name_map


def run(argv=None) -> list[Path]:
    parser = argparse.ArgumentParser(prog="pypto swimlane", description=description(__doc__))
    parser.add_argument("source", type=Path, help="an output directory, or a chip_swimlane_records.json")
    parser.add_argument("--deps", type=Path, help="deps.json (default: the one beside the records)")
    parser.add_argument("-o", "--output", type=Path, required=True, help="the trace's .json or the page's .html (the other is written beside it), "
                        "or a directory for both")
    args = parser.parse_args(argv)
    records, deps, name_map = _inputs(args.source, args.deps)
    data = trace(records, deps, name_map)
    view = page_data(records, _names(deps, name_map), _edges(deps), 1e6 / records["hz"])
    out = args.output
    if out.suffix not in (".json", ".html"):
        out.mkdir(parents=True, exist_ok=True)
        out = out / "swimlane.json"
    else:
        out.parent.mkdir(parents=True, exist_ok=True)
    out, page = out.with_suffix(".json"), out.with_suffix(".html")
    out.write_text(json.dumps(data))
    page.write_text(render(view, f"swimlane: {args.source.name}"))
    print(f"wrote {out} and {page}")
    return [out, page]


def main(argv=None) -> int:
    try:
        run(argv)
    except (SwimlaneError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
