"""Clean an op-simulator trace into a per-pipe timeline you can read.

    python -m pypto.tools.clean_sim_trace <visualize_data.bin | OPPROF_dir | sim_dir | build_dir | builds_dir> ...
        [-o OUTPUT_DIR] [--keep-scalar] [--raw-metrics] [--no-copy-raw] [--clock-hz HZ]

Writes ``trace.clean.json`` (Chrome Trace Event JSON for Perfetto or chrome://tracing):
the pipe lanes MTE2, MTE1, CUBE, VECTOR, FIXPIPE, MTE3 (SCALAR with --keep-scalar) of each
core in dataflow order; complete instruction slices only (no SET_FLAG / WAIT_FLAG / BAR,
nor the scalar unit's ``issue set_flag(...)`` ones); a pipe's partially overlapping
instructions split into sub-lanes (MTE2, MTE2#1, ...) so every lane is disjoint or strictly
nested; each set_flag -> wait_flag pair drawn as a flow arrow from the instruction that
produced to the one that consumed. Timestamps are microseconds, as the Chrome trace format
has them, at the core clock (``otherData.clock_hz``: the one the trace was written at, else
the a2a3 table's 1.8 GHz, or ``--clock-hz``), each end floored to a whole nanosecond; the
cycles stay in each slice's ``args`` (``start_cycle``, ``cycles``; a flow's ``cycle``).
Writes ``instr_metrics.json``: the
per-instruction metrics, one record list per core; and ``trace.clean.html``, the same
timeline as a self-contained page.

One OPPROF_* directory (or its visualize_data.bin) writes into OUTPUT_DIR itself; several
paths, or a sim/ or build output directory (every OPPROF_*/simulator/ inside), or a folder of
builds (build_output/: every build's sim/OPPROF_*/simulator/), write one
subdirectory of OUTPUT_DIR per OPPROF directory, named after it. Without -o, each writes
next to its visualize_data.bin.
Reads any file in that format (ours or the Ascend simulator's); never runs it.
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import sys
from bisect import bisect_left, bisect_right
from collections import deque
from pathlib import Path

from pypto.backend import DEFAULT
from pypto.tools import trace_page
from pypto.sim.reports.insight_format import API_INSTR, TRACE, InsightFormatError, read_blocks
from pypto.ir.collector import collector_paused
from pypto.tools import description

PIPES = ("MTE2", "MTE1", "CUBE", "VECTOR", "FIXPIPE", "MTE3")
ALIASES = {"VEC": "VECTOR", "V": "VECTOR", "M": "CUBE", "FIX": "FIXPIPE", "S": "SCALAR"}
DROPPED_SLICES = ("SET_FLAG", "WAIT_FLAG", "BAR", "PIPE_BARRIER")
COLORS = {"MTE2": "thread_state_iowait", "MTE1": "thread_state_iowait", "CUBE": "rail_response",
          "VECTOR": "good", "FIXPIPE": "yellow", "MTE3": "cq_build_passed", "SCALAR": "grey"}
# What this tool writes. Never copied into raw_simulator/: after a run without -o they sit
# beside the simulator's own files.
DERIVED = ("trace.clean.json", "trace.clean.html", "instr_metrics.json")
# Perfetto and the page hold times as doubles; past 2**53 they are no longer exact.
MAX_TIME = 2 ** 53
USED_PHASES = ("M", "X", "B", "E")
TIMES = {"M": (), "X": ("ts", "dur"), "B": ("ts",), "E": ("ts",)}  # the times each phase must carry


class CleanError(Exception):
    """Input this tool cannot use: one line says why."""


# ----------------------------------------------------------------------------- finding the inputs


def locate(path: Path) -> tuple[list[Path], bool]:
    """(the visualize_data.bin files a path names, whether they were found by searching): the
    file itself, the one in an OPPROF_* directory, or every OPPROF_*/simulator/ one inside a
    sim/ directory or a build output directory."""
    if not path.exists():
        raise CleanError(f"{path}: no such file or directory")
    if path.is_file():
        return [path], False
    for candidate in (path / "simulator" / "visualize_data.bin", path / "visualize_data.bin"):
        if candidate.is_file():
            return [candidate], False
    found = sorted(p for d in (path, path / "sim") for p in d.glob("OPPROF_*/simulator/visualize_data.bin"))
    if not found:  # a folder of builds (build_output/): each build's traces
        found = sorted(path.glob("*/sim/OPPROF_*/simulator/visualize_data.bin"))
    if not found:
        builds = [path] if (path / "compiled_meta.json").is_file() else sorted(
            d for d in path.glob("*/") if (d / "compiled_meta.json").is_file())
        if builds:
            raise CleanError(f"{path}: {'this build has' if builds == [path] else f'its {len(builds)} builds have'} "
                             "no L0 trace: run the kernel with RunConfig(platform='a2a3sim', enable_l0_trace=True) "
                             "and an output_dir (or compile() it first) to write one")
        raise CleanError(f"{path}: no simulator/visualize_data.bin inside, nor any sim/OPPROF_*/simulator/ (is it "
                         "an OPPROF_* directory, a sim/ directory, a build output directory or a folder of them?)")
    return found, True


def name_of(bin_path: Path) -> str:
    """The OPPROF directory's name for a visualize_data.bin (a loose file: its stem)."""
    if bin_path.name != "visualize_data.bin":
        return bin_path.stem
    return (bin_path.parent.parent if bin_path.parent.name == "simulator" else bin_path.parent).name


def _in_build(bin_path: Path) -> bool:
    """Whether a visualize_data.bin lies where a build writes it: <build>/sim/OPPROF_*/simulator/."""
    parts = bin_path.parts
    return len(parts) >= 5 and parts[-2] == "simulator" and parts[-4] == "sim"


def plan(paths: list[Path], output: Path | None) -> list[tuple[Path, Path]]:
    """(visualize_data.bin, output directory) per input: -o itself for one named OPPROF dir
    or file, else -o/<OPPROF name>; next to the input without -o."""
    found, nested = [], len(paths) > 1
    for path in paths:
        bins, searched = locate(path)
        found.extend(bins)
        nested = nested or searched
    unique = list({b.resolve(): b for b in found}.values())
    names = [name_of(b) for b in unique]
    jobs, taken = [], {}
    for bin_path, name in zip(unique, names):
        if names.count(name) > 1 and _in_build(bin_path):  # builds of one kernel in one second: by build
            name = f"{bin_path.parents[3].name}/{name}"
        if output is None:
            out = bin_path.parent
        else:
            out = output / name if nested else output
        other = taken.setdefault(out.resolve(), bin_path)
        if other is not bin_path:
            fix = "clean them one at a time" if output else "give -o DIR to write one subdirectory each"
            raise CleanError(f"{other} and {bin_path} would both write to {out}; {fix}")
        jobs.append((bin_path, out))
    return jobs


# ----------------------------------------------------------------------------- reading


def load(bin_path: Path) -> tuple[list[dict], dict | list | None]:
    """(every TRACE payload, checked; the first API_INSTR payload or None) of a visualize_data.bin."""
    try:
        blocks = read_blocks(bin_path.read_bytes())
        traces = [b.json() for b in blocks if b.type == TRACE]
        instr = next((b.json() for b in blocks if b.type == API_INSTR), None)
    except InsightFormatError as exc:
        raise CleanError(f"{bin_path}: {exc}") from None
    if not traces:
        raise CleanError(f"{bin_path}: no TRACE block (type {TRACE}) in {len(blocks)} block(s)")
    checked = []
    for k, trace in enumerate(traces):
        where = "TRACE block" if len(traces) == 1 else f"TRACE block {k + 1} of {len(traces)}"
        if isinstance(trace, list):
            trace = {"traceEvents": trace}
        if not isinstance(trace, dict) or not isinstance(trace.get("traceEvents"), list):
            raise CleanError(f"{bin_path}: the {where} holds no traceEvents list")
        try:
            check_events(trace["traceEvents"])
        except CleanError as exc:
            raise CleanError(f"{bin_path}: {where}: {exc}") from None
        checked.append(trace)
    return checked, instr


def check_events(events: list) -> None:
    """Refuse, naming the first bad event, what the cleaning could not use: it then needs no
    defensive code, and what it writes is always strict JSON."""
    for k, e in enumerate(events):
        problem = _event_problem(e)
        if problem:
            label = f"event {k}" if not isinstance(e, dict) else f"event {k} ({_show(e.get('name', MISSING))})"
            raise CleanError(f"{label} {problem}")


MISSING = object()


def _event_problem(e) -> str | None:
    """What is wrong with one event, or None. Only the phases the cleaning reads are checked."""
    if not isinstance(e, dict):
        return f"is {_show(e)}, not an object"
    ph = e.get("ph")
    if ph is not None and not isinstance(ph, str):
        return f"has ph {_show(ph)}, not a string"
    if ph not in USED_PHASES:
        return None  # instants, counters, flows ...: not read
    if not isinstance(e.get("name"), str):
        return f"has name {_show(e.get('name', MISSING))}, not a string"
    needs_tid = ph != "M" or e["name"] == "thread_name"
    for key in ("pid", "tid") if needs_tid else ("pid",):
        if not _is_id(e.get(key)):
            return f"has {key} {_show(e.get(key, MISSING))}, not an integer or a string"
    args = e.get("args")
    if args is not None and not isinstance(args, dict):
        return f"has args {_show(args)}, not an object"
    args = args or {}
    if ph == "M" and "name" in args and not _is_id(args["name"]):
        return f"has args.name {_show(args['name'])}, not a string"
    if ph == "B" and "detail" in args and not isinstance(args["detail"], str):
        return f"has args.detail {_show(args['detail'])}, not a string"
    for key in TIMES[ph]:
        value = e.get(key, MISSING)
        if type(value) not in (int, float):  # not isinstance: True is an int
            return f"has {key} {_show(value)}, not a number"
        if not -MAX_TIME <= value <= MAX_TIME:
            return f"has {key} {_show(value)}, beyond 2**53"
    if ph == "X" and e["dur"] < 0:
        return f"has a negative dur {_show(e['dur'])}"
    if ph == "X" and e["ts"] + e["dur"] > MAX_TIME:
        return "ends (ts + dur) beyond 2**53"
    return None


def _is_id(value) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def _show(value) -> str:
    """A value in an error line: its JSON spelling, at most 40 characters."""
    text = "(missing)" if value is MISSING else json.dumps(value)
    return text if len(text) <= 40 else text[:37] + "..."


# ----------------------------------------------------------------------------- cleaning


def _lane(name) -> str:
    name = str(name).split(" ", 1)[0]
    return ALIASES.get(name, name)


def _core_rank(name: str):
    """Dataflow order across cores: the cube core feeds the vector cores."""
    return (0 if "cube" in name.lower() or "aic" in name.lower() else 1, name)


def _detail(text) -> dict:
    out = {}
    for part in str(text or "").split(","):
        if ":" in part:
            key, value = part.split(":", 1)
            out[key.strip().upper()] = value.strip()
    return out


def is_sync(name: str) -> bool:
    """A SET_FLAG / WAIT_FLAG / BAR slice on a pipe, or the scalar unit's ``issue set_flag(...)``
    issuing one: synchronisation, drawn as arrows, not instructions."""
    word = name.removeprefix("issue ").split("(", 1)[0].split(" ", 1)[0]
    return word.strip().upper() in DROPPED_SLICES


def clock_of(traces, given: float | None = None) -> float:
    """The core clock a trace's cycles count: ``given``, else what the trace says it was
    written at (``otherData.clock_hz``, ours), else the SoC table's a2a3 core clock."""
    if given is not None:
        return given
    for trace in ([traces] if isinstance(traces, dict) else traces):
        hz = (trace.get("otherData") or {}).get("clock_hz") if isinstance(trace.get("otherData"), dict) else None
        if isinstance(hz, (int, float)) and not isinstance(hz, bool) and 0 < hz < 1e15:
            return hz
    return DEFAULT.chip.core_hz


def _us(start, end, hz: float) -> tuple[float, float]:
    """(ts, dur) in microseconds of cycles [start, end): each end floored to a whole
    nanosecond, so that slices nested in cycles stay nested (and Perfetto, which counts
    nanoseconds, reads them exactly)."""
    a, b = math.floor(start * 1e9 / hz), math.floor(end * 1e9 / hz)
    return a / 1000, (b - a) / 1000


def clean(traces, keep_scalar: bool = False, hz: float | None = None) -> tuple[dict, dict]:
    """(cleaned trace, statistics) per the module's rules, from checked TRACE payloads (one
    dict, or a list of them: each block's cores kept apart, as its pids may repeat);
    ``hz``: the clock the cycles count (``clock_of``)."""
    traces = [traces] if isinstance(traces, dict) else traces
    hz = clock_of(traces, hz)
    cores, lanes = {}, {}  # (block, pid) -> name; (block, pid, tid) -> lane
    for block, trace in enumerate(traces):
        for e in trace["traceEvents"]:
            if e.get("ph") == "M":
                args = e.get("args") or {}
                if e["name"] == "process_name":
                    cores[(block, e["pid"])] = str(args.get("name", e["pid"]))
                elif e["name"] == "thread_name":
                    lanes[(block, e["pid"], e["tid"])] = _lane(args.get("name", e["tid"]))
    keep = PIPES + (("SCALAR",) if keep_scalar else ())

    slices: dict[tuple, list] = {}  # (core, lane) -> slices
    flags: dict[str, list] = {"SET_FLAG": [], "WAIT_FLAG": []}
    open_flags: dict[tuple, list] = {}
    for block, trace in enumerate(traces):
        for e in trace["traceEvents"]:
            ph, name = e.get("ph"), e.get("name")
            if ph not in ("X", "B", "E"):
                continue
            core, lane = (block, e["pid"]), lanes.get((block, e["pid"], e["tid"]))
            if lane is None:  # no thread_name: the tid names the pipe
                lane = _lane(e["tid"])
            if name in ("SET_FLAG", "WAIT_FLAG") and ph in ("B", "E"):
                key = (core, e["tid"], name)
                if ph == "B":
                    open_flags.setdefault(key, []).append(e)
                elif open_flags.get(key):
                    begin = open_flags[key].pop()
                    flags[name].append({"core": core, "lane": lane, "begin": begin["ts"], "end": e["ts"],
                                        "detail": _detail((begin.get("args") or {}).get("detail"))})
                continue
            if ph == "X" and lane in keep and not is_sync(name):
                slices.setdefault((core, lane), []).append(e)

    out, placed = [], {}  # placed: (core, lane) -> [(slice, pid, tid)]
    order = sorted({core for core, _ in slices}, key=lambda c: (_core_rank(cores.get(c, str(c[1]))), c[0], str(c[1])))
    for pid, core in enumerate(order):  # pids renumbered: two blocks, or 0 and "0", never merge
        out.append({"name": "process_name", "ph": "M", "pid": pid, "args": {"name": cores.get(core, str(core[1]))}})
        out.append({"name": "process_sort_index", "ph": "M", "pid": pid, "args": {"sort_index": pid}})
        tid = 0  # one counter per core: any number of sub-lanes, never two lanes on one track
        for lane in keep:
            for sub, members in enumerate(_sub_lanes(slices.get((core, lane), []))):
                label = lane if sub == 0 else f"{lane}#{sub}"
                out.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": tid, "args": {"name": label}})
                out.append({"name": "thread_sort_index", "ph": "M", "pid": pid, "tid": tid,
                            "args": {"sort_index": tid}})
                for e in members:
                    ts, dur = _us(e["ts"], e["ts"] + e["dur"], hz)
                    args = {**(e.get("args") or {}), "start_cycle": e["ts"], "cycles": e["dur"]}
                    out.append({"name": e["name"], "ph": "X", "ts": ts, "dur": dur, "args": args, "pid": pid,
                                "tid": tid, "cname": COLORS.get(lane, "generic_work")})
                    placed.setdefault((core, lane), []).append((e, pid, tid))
                tid += 1
    arrows, unanchored = _flows(flags, placed, cores)
    for a in arrows:
        a["ts"], a["args"] = _us(a["ts"], a["ts"], hz)[0], {"cycle": a["ts"]}
    out.extend(arrows)
    first = traces[0] if traces else {}
    cleaned = {"displayTimeUnit": "ns", "profilingType": first.get("profilingType", "op"),
               "schemaVersion": first.get("schemaVersion", 1),
               "otherData": {"clock_hz": hz, "time_unit": "us (ts, dur); cycles in args: start_cycle, cycles, cycle"},
               "traceEvents": out}
    stats = {"slices": sum(len(v) for v in slices.values()), "flows": len(arrows) // 2, "unanchored": unanchored}
    return cleaned, stats


def _sub_lanes(group: list) -> list[list]:
    """Split overlapping slices into lanes where any two are disjoint or strictly nested."""
    lanes: list[tuple[list, list]] = []  # (members, stack of open (start, end))
    for e in sorted(group, key=lambda x: (x.get("ts", 0), -x.get("dur", 0))):
        start, end = e.get("ts", 0), e.get("ts", 0) + e.get("dur", 0)
        for members, stack in lanes:
            while stack and stack[-1][1] <= start:
                stack.pop()
            if not stack or (stack[-1][0] <= start and end <= stack[-1][1]):
                members.append(e)
                stack.append((start, end))
                break
        else:
            lanes.append(([e], [(start, end)]))
    return [members for members, _ in lanes]


class _Starts:
    """One lane's placed slices sorted by start, for the last started by a time and the first
    started from a time in O(log n). Among equal starts the earliest placed wins."""

    def __init__(self, placed: list):
        self.items = sorted(placed, key=lambda x: x[0]["ts"])  # stable: ties keep placement order
        self.ts = [x[0]["ts"] for x in self.items]

    def last_by(self, t):
        i = bisect_right(self.ts, t)
        return self.items[bisect_left(self.ts, self.ts[i - 1])] if i else None

    def first_from(self, t):
        i = bisect_left(self.ts, t)
        return self.items[i] if i < len(self.items) else None


def _flows(flags: dict, placed: dict, cores: dict) -> tuple[list, int]:
    """set_flag -> wait_flag pairs (first in, first out per flag) as flow arrows between the
    last instruction the producer pipe started by the set and the first the consumer pipe
    started after the wait. Queues and sorted start lists keep it O(n log n)."""
    by_name = {}
    for (block, pid), name in cores.items():
        by_name.setdefault((block, name), (block, pid))
    starts = {key: _Starts(items) for key, items in placed.items()}
    waits: dict[tuple, deque] = {}
    for w in sorted(flags["WAIT_FLAG"], key=lambda f: f["begin"]):
        d = w["detail"]
        waits.setdefault((w["core"], d.get("PIPE"), d.get("TRIGGERPIPE"), d.get("FLAGID")), deque()).append(w)
    arrows, unanchored, ident = [], 0, 0
    for s in sorted(flags["SET_FLAG"], key=lambda f: f["begin"]):
        d = s["detail"]
        target = by_name.get((s["core"][0], d.get("TRIGGERCORE")), s["core"])
        queue = waits.get((target, d.get("PIPE"), d.get("TRIGGERPIPE"), d.get("FLAGID")))
        if not queue:
            unanchored += 1
            continue
        w = queue.popleft()
        src_lane, dst_lane = _lane(d.get("PIPE")), _lane(d.get("TRIGGERPIPE"))
        src, dst = starts.get((s["core"], src_lane)), starts.get((target, dst_lane))
        before = src.last_by(s["begin"]) if src else None
        after = dst.first_from(w["end"]) if dst else None
        if before is None or after is None:
            unanchored += 1
            continue
        (producer, ppid, ptid), (consumer, cpid, ctid) = before, after
        ident += 1
        name = f"{src_lane}->{dst_lane} flag{d.get('FLAGID')}"
        arrows.append({"ph": "s", "id": ident, "cat": "sync", "name": name, "pid": ppid, "tid": ptid,
                       "ts": producer["ts"]})
        arrows.append({"ph": "f", "bp": "e", "id": ident, "cat": "sync", "name": name, "pid": cpid, "tid": ctid,
                       "ts": consumer["ts"]})
    return arrows, unanchored


def _column(key) -> str:
    return str(key).strip().lower().replace(" ", "_")


def metrics(instr) -> dict:
    """API_INSTR's per-core arrays as one list of instruction records per core; column_types
    keyed like the records."""
    if not isinstance(instr, dict):
        raise CleanError(f"the API_INSTR block holds {_show(instr)}, not an object")
    cores = instr.get("Cores", instr.get("cores", []))
    records = instr.get("Instructions", instr.get("instructions", []))
    types = instr.get("Instructions Dtype", instr.get("column_types", {}))
    if not isinstance(cores, list) or not all(_is_id(c) for c in cores):
        raise CleanError(f"API_INSTR Cores is {_show(cores)}, not a list of core names")
    if not isinstance(records, list):
        raise CleanError(f"API_INSTR Instructions is {_show(records)}, not a list")
    if not isinstance(types, dict):
        raise CleanError(f"API_INSTR Instructions Dtype is {_show(types)}, not an object")
    out = {str(core): [] for core in cores}
    for n, record in enumerate(records):
        if not isinstance(record, dict):
            raise CleanError(f"API_INSTR instruction {n} is {_show(record)}, not an object")
        for key, values in record.items():
            if not isinstance(values, list):
                raise CleanError(f"API_INSTR instruction {n}: {key!r} is {_show(values)}, not a list (one per core)")
        for k, core in enumerate(cores):
            row = {_column(key): values[k] if k < len(values) else None for key, values in record.items()}
            if any(v not in (None, "") for v in row.values()):
                out[str(core)].append(row)
    return {"cores": [str(c) for c in cores], "instructions": out,
            "column_types": {_column(key): value for key, value in types.items()}}


# ----------------------------------------------------------------------------- command line


def _clock(text: str) -> float:
    try:
        hz = float(text)
    except ValueError:
        raise CleanError(f"--clock-hz {text!r} is not a number of cycles per second (e.g. 1.8e9)") from None
    if not 0 < hz < 1e15:
        raise CleanError(f"--clock-hz {text} is not a clock rate (e.g. 1.8e9)")
    return hz


def prepare(bin_path: Path, keep_scalar: bool, raw_metrics: bool, hz: float | None = None) -> tuple:
    """(cleaned trace, statistics, metrics to write or None) for one visualize_data.bin."""
    traces, instr = load(bin_path)
    cleaned, stats = clean(traces, keep_scalar=keep_scalar, hz=hz)
    try:
        table = None if instr is None else instr if raw_metrics else metrics(instr)
    except CleanError as exc:
        raise CleanError(f"{bin_path}: {exc}") from None
    return cleaned, stats, table


def dumps(value, depth: int = 0) -> str:
    """Strict JSON, one record per line: lists (to depth 2), the top object and objects of
    lists broken into lines, the rest compact. Not ``indent=``: that makes json use its pure
    Python encoder, 10x slower on a long trace. allow_nan=False only guards a promise: the
    reader already refused NaN and Infinity."""
    pad, inner = " " * depth, " " * (depth + 1)
    if isinstance(value, list) and value and depth <= 2:
        return "[\n" + ",\n".join(inner + dumps(v, depth + 1) for v in value) + "\n" + pad + "]"
    if isinstance(value, dict) and value and (depth == 0 or all(isinstance(v, list) for v in value.values())):
        items = (f"{inner}{json.dumps(str(k))}: {dumps(v, depth + 1)}" for k, v in value.items())
        return "{\n" + ",\n".join(items) + "\n" + pad + "}"
    return _ENCODE(value)


_ENCODE = json.JSONEncoder(allow_nan=False).encode


def write(bin_path: Path, out_dir: Path, prepared: tuple, copy_raw: bool) -> None:
    cleaned, stats, table = prepared
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "trace.clean.json").write_text(dumps(cleaned))
    (out_dir / "trace.clean.html").write_text(trace_page.render(cleaned, f"trace: {name_of(bin_path)}"))
    if table is not None:
        (out_dir / "instr_metrics.json").write_text(dumps(table))
    else:
        print(f"warning: {bin_path}: no API_INSTR block; instr_metrics.json not written", file=sys.stderr)
    if copy_raw and out_dir.resolve() != bin_path.parent.resolve():
        raw = out_dir / "raw_simulator"
        raw.mkdir(exist_ok=True)
        for item in bin_path.parent.iterdir():
            if item.is_file() and item.name not in DERIVED:
                shutil.copy2(item, raw / item.name)
    if not stats["slices"]:
        print(f"warning: {bin_path}: the trace holds no instruction slices; the timeline is empty", file=sys.stderr)
    # a loop's priming set_flags and draining wait_flags have no instruction on one side: no arrow, nothing lost
    skipped = (f", {stats['unanchored']} flag(s) without an arrow: set before their pipe's first instruction or "
               "waited after its last (a loop's priming and draining flags)") if stats["unanchored"] else ""
    print(f"wrote {out_dir / 'trace.clean.json'} and {out_dir / 'trace.clean.html'} "
          f"({stats['slices']} slices, {stats['flows']} flows{skipped})")


def run(argv=None) -> list[Path]:
    parser = argparse.ArgumentParser(prog="python -m pypto.tools.clean_sim_trace",
                                     description=description(__doc__))
    parser.add_argument("paths", nargs="+", metavar="path",
                        help="a visualize_data.bin, an OPPROF_* directory, a sim/ directory or a build output directory")
    parser.add_argument("-o", "--output", help="write here (default: next to each input)")
    parser.add_argument("--keep-scalar", action="store_true", help="keep the SCALAR lane")
    parser.add_argument("--raw-metrics", action="store_true", help="write API_INSTR as it is")
    parser.add_argument("--no-copy-raw", action="store_true", help="with -o, do not copy the raw simulator files")
    parser.add_argument("--clock-hz", type=_clock, help="the core clock the cycles count (default: the trace's, or "
                                                      "the a2a3 table's 1.8 GHz)")
    parser.error = lambda message: (_ for _ in ()).throw(CleanError(message))
    args = parser.parse_args(argv)
    jobs = plan([Path(p) for p in args.paths], Path(args.output) if args.output else None)
    # Everything is read and checked before anything is written: a bad input among several
    # leaves no half-written output behind.
    prepared = [prepare(bin_path, args.keep_scalar, args.raw_metrics, args.clock_hz) for bin_path, _ in jobs]
    for (bin_path, out_dir), done in zip(jobs, prepared):
        write(bin_path, out_dir, done, copy_raw=bool(args.output) and not args.no_copy_raw)
    return [out_dir for _, out_dir in jobs]


def main(argv=None) -> int:
    # A trace becomes a large tree of dicts with no cycles, read once; the cyclic collector
    # would re-scan it over and over (40 % of the time on a 120k-event trace).
    try:
        with collector_paused():
            run(argv)
    except (CleanError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
