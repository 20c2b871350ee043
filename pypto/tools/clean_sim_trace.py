"""Clean an op-simulator trace into a per-pipe timeline you can read.

    python -m pypto.tools.clean_sim_trace <visualize_data.bin | OPPROF_dir>
        [-o OUTPUT_DIR] [--keep-scalar] [--raw-metrics] [--no-copy-raw]

Writes ``trace.clean.json`` (Chrome Trace Event JSON for Perfetto or chrome://tracing):
the pipe lanes MTE2, MTE1, CUBE, VECTOR, FIXPIPE, MTE3 (SCALAR with --keep-scalar) of each
core in dataflow order; complete instruction slices only (no SET_FLAG / WAIT_FLAG / BAR);
a pipe's partially overlapping instructions split into sub-lanes (MTE2, MTE2#1, ...) so
every lane is disjoint or strictly nested; each set_flag -> wait_flag pair drawn as a flow
arrow from the instruction that produced to the one that consumed; timestamps verbatim.
Writes ``instr_metrics.json``: the per-instruction metrics, one record list per core; and
``trace.clean.html``, the same timeline as a self-contained page.
Reads any file in that format (ours or the Ascend simulator's); never runs it.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

from pypto.tools import trace_page
from pypto.tools.insight import API_INSTR, TRACE, InsightFormatError, read_blocks

PIPES = ("MTE2", "MTE1", "CUBE", "VECTOR", "FIXPIPE", "MTE3")
ALIASES = {"VEC": "VECTOR", "V": "VECTOR", "M": "CUBE", "FIX": "FIXPIPE", "S": "SCALAR"}
DROPPED_SLICES = ("SET_FLAG", "WAIT_FLAG", "BAR")
COLORS = {"MTE2": "thread_state_iowait", "MTE1": "thread_state_iowait", "CUBE": "rail_response",
          "VECTOR": "good", "FIXPIPE": "yellow", "MTE3": "cq_build_passed", "SCALAR": "grey"}


class CleanError(Exception):
    """Input this tool cannot use: one line says why."""


# ----------------------------------------------------------------------------- reading


def locate(path: Path) -> Path:
    """The visualize_data.bin a path names: the file itself, or the one in an OPPROF_* dir."""
    if not path.exists():
        raise CleanError(f"{path}: no such file or directory")
    if path.is_file():
        return path
    for candidate in (path / "simulator" / "visualize_data.bin", path / "visualize_data.bin"):
        if candidate.is_file():
            return candidate
    raise CleanError(f"{path}: no simulator/visualize_data.bin inside (is it an OPPROF_* directory?)")


def load(bin_path: Path) -> tuple[dict, dict | None]:
    """(TRACE payload, API_INSTR payload or None) of a visualize_data.bin."""
    try:
        blocks = read_blocks(bin_path.read_bytes())
    except InsightFormatError as exc:
        raise CleanError(f"{bin_path}: {exc}") from None
    traces = [b for b in blocks if b.type == TRACE]
    if not traces:
        raise CleanError(f"{bin_path}: no TRACE block (type {TRACE}) in {len(blocks)} block(s)")
    try:
        trace = traces[0].json()
        instr = next((b.json() for b in blocks if b.type == API_INSTR), None)
    except InsightFormatError as exc:
        raise CleanError(f"{bin_path}: {exc}") from None
    if isinstance(trace, list):
        trace = {"traceEvents": trace}
    if not isinstance(trace, dict) or not isinstance(trace.get("traceEvents"), list):
        raise CleanError(f"{bin_path}: the TRACE block holds no traceEvents list")
    return trace, instr


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


def clean(trace: dict, keep_scalar: bool = False) -> tuple[dict, dict]:
    """(cleaned trace, statistics) per the module's rules."""
    events = [e for e in trace["traceEvents"] if isinstance(e, dict)]
    cores, lanes = {}, {}
    for e in events:
        if e.get("ph") == "M" and e.get("name") == "process_name":
            cores[e.get("pid")] = str((e.get("args") or {}).get("name", e.get("pid")))
        elif e.get("ph") == "M" and e.get("name") == "thread_name":
            lanes[(e.get("pid"), e.get("tid"))] = _lane((e.get("args") or {}).get("name", e.get("tid")))
    keep = PIPES + (("SCALAR",) if keep_scalar else ())

    def lane_of(e):
        return lanes.get((e.get("pid"), e.get("tid")), _lane(e.get("tid")))

    slices: dict[tuple, list] = {}
    flags: dict[str, list] = {"SET_FLAG": [], "WAIT_FLAG": []}
    open_flags: dict[tuple, list] = {}
    for e in events:
        ph, name = e.get("ph"), e.get("name")
        if name in ("SET_FLAG", "WAIT_FLAG") and ph in ("B", "E"):
            key = (e.get("pid"), e.get("tid"), name)
            if ph == "B":
                open_flags.setdefault(key, []).append(e)
            elif open_flags.get(key):
                begin = open_flags[key].pop()
                flags[name].append({"pid": e.get("pid"), "lane": lane_of(e), "begin": begin.get("ts", 0),
                                    "end": e.get("ts", 0), "detail": _detail((begin.get("args") or {}).get("detail"))})
            continue
        if ph != "X" or name in DROPPED_SLICES:
            continue
        lane = lane_of(e)
        if lane not in keep:
            continue
        slices.setdefault((e.get("pid"), lane), []).append(e)

    out, placed = [], {}  # placed: (pid, lane) -> [(slice, tid)]
    pids = sorted({pid for pid, _ in slices}, key=lambda p: _core_rank(cores.get(p, str(p))))
    for rank, pid in enumerate(pids):
        out.append({"name": "process_name", "ph": "M", "pid": pid, "args": {"name": cores.get(pid, str(pid))}})
        out.append({"name": "process_sort_index", "ph": "M", "pid": pid, "args": {"sort_index": rank}})
        for lane_rank, lane in enumerate(keep):
            group = slices.get((pid, lane))
            if not group:
                continue
            for sub, members in enumerate(_sub_lanes(group)):
                tid = lane_rank * 100 + sub
                label = lane if sub == 0 else f"{lane}#{sub}"
                out.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": tid, "args": {"name": label}})
                out.append({"name": "thread_sort_index", "ph": "M", "pid": pid, "tid": tid,
                            "args": {"sort_index": tid}})
                for e in members:
                    kept = {k: e[k] for k in ("name", "ph", "ts", "dur", "args") if k in e}
                    out.append({**kept, "pid": pid, "tid": tid, "cname": COLORS.get(lane, "generic_work")})
                    placed.setdefault((pid, lane), []).append((e, tid))
    arrows, unanchored = _flows(flags, placed, cores)
    out.extend(arrows)
    cleaned = {"displayTimeUnit": trace.get("displayTimeUnit", "ns"), "profilingType": trace.get("profilingType", "op"),
               "schemaVersion": trace.get("schemaVersion", 1), "traceEvents": out}
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


def _flows(flags: dict, placed: dict, cores: dict) -> tuple[list, int]:
    """set_flag -> wait_flag pairs (first in, first out per flag) as flow arrows between the
    last instruction the producer pipe started by the set and the first the consumer pipe
    started after the wait."""
    by_name = {name: pid for pid, name in cores.items()}
    waits: dict[tuple, list] = {}
    for w in sorted(flags["WAIT_FLAG"], key=lambda f: f["begin"]):
        d = w["detail"]
        waits.setdefault((w["pid"], d.get("PIPE"), d.get("TRIGGERPIPE"), d.get("FLAGID")), []).append(w)
    arrows, unanchored, ident = [], 0, 0
    for s in sorted(flags["SET_FLAG"], key=lambda f: f["begin"]):
        d = s["detail"]
        target = by_name.get(d.get("TRIGGERCORE"), s["pid"])
        queue = waits.get((target, d.get("PIPE"), d.get("TRIGGERPIPE"), d.get("FLAGID")))
        if not queue:
            unanchored += 1
            continue
        w = queue.pop(0)
        src_lane, dst_lane = _lane(d.get("PIPE")), _lane(d.get("TRIGGERPIPE"))
        before = [(e, tid) for e, tid in placed.get((s["pid"], src_lane), []) if e.get("ts", 0) <= s["begin"]]
        after = [(e, tid) for e, tid in placed.get((target, dst_lane), []) if e.get("ts", 0) >= w["end"]]
        if not before or not after:
            unanchored += 1
            continue
        (producer, ptid) = max(before, key=lambda x: x[0].get("ts", 0))
        (consumer, ctid) = min(after, key=lambda x: x[0].get("ts", 0))
        ident += 1
        name = f"{src_lane}->{dst_lane} flag{d.get('FLAGID')}"
        arrows.append({"ph": "s", "id": ident, "cat": "sync", "name": name, "pid": s["pid"], "tid": ptid,
                       "ts": producer.get("ts", 0)})
        arrows.append({"ph": "f", "bp": "e", "id": ident, "cat": "sync", "name": name, "pid": target, "tid": ctid,
                       "ts": consumer.get("ts", 0)})
    return arrows, unanchored


def metrics(instr: dict) -> dict:
    """API_INSTR's per-core arrays as one list of instruction records per core."""
    cores = instr.get("Cores") or instr.get("cores") or []
    records = instr.get("Instructions") or instr.get("instructions") or []
    out = {str(core): [] for core in cores}
    for record in records:
        if not isinstance(record, dict):
            continue
        for k, core in enumerate(cores):
            row = {}
            for key, values in record.items():
                value = values[k] if isinstance(values, list) and k < len(values) else None
                row[str(key).strip().lower().replace(" ", "_")] = value
            if any(v not in (None, "") for v in row.values()):
                out[str(core)].append(row)
    return {"cores": [str(c) for c in cores], "instructions": out,
            "column_types": instr.get("Instructions Dtype", instr.get("column_types", {}))}


# ----------------------------------------------------------------------------- command line


def run(argv=None) -> Path:
    parser = argparse.ArgumentParser(prog="python -m pypto.tools.clean_sim_trace",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("path", help="a visualize_data.bin, or an OPPROF_* directory")
    parser.add_argument("-o", "--output", help="write here (default: next to the input)")
    parser.add_argument("--keep-scalar", action="store_true", help="keep the SCALAR lane")
    parser.add_argument("--raw-metrics", action="store_true", help="write API_INSTR as it is")
    parser.add_argument("--no-copy-raw", action="store_true", help="with -o, do not copy the raw simulator files")
    parser.error = lambda message: (_ for _ in ()).throw(CleanError(message))
    args = parser.parse_args(argv)
    bin_path = locate(Path(args.path))
    trace, instr = load(bin_path)
    cleaned, stats = clean(trace, keep_scalar=args.keep_scalar)
    out_dir = Path(args.output) if args.output else bin_path.parent
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "trace.clean.json").write_text(json.dumps(cleaned, indent=1))
    (out_dir / "trace.clean.html").write_text(trace_page.render(cleaned, f"trace: {bin_path.parent.parent.name}"))
    if instr is not None:
        (out_dir / "instr_metrics.json").write_text(json.dumps(instr if args.raw_metrics else metrics(instr), indent=1))
    else:
        print(f"warning: {bin_path}: no API_INSTR block; instr_metrics.json not written", file=sys.stderr)
    if args.output and not args.no_copy_raw:
        raw = out_dir / "raw_simulator"
        raw.mkdir(exist_ok=True)
        for item in bin_path.parent.iterdir():
            if item.is_file():
                shutil.copy2(item, raw / item.name)
    skipped = f", {stats['unanchored']} flag(s) with no instruction to anchor" if stats["unanchored"] else ""
    print(f"wrote {out_dir / 'trace.clean.json'} ({stats['slices']} slices, {stats['flows']} flows{skipped})")
    return out_dir


def main(argv=None) -> int:
    try:
        run(argv)
    except CleanError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
