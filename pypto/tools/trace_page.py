"""A self-contained timeline of a cleaned trace (``trace.clean.html``), for when Perfetto
is not at hand: a section per core, a lane per pipe (and sub-lane), a block per
instruction, sync arrows between them — drawn by the shared viewer
(``pypto.tools.timeline_view``: a time axis in cycles and microseconds at the trace's
clock, zoom, pan, labels only where they fit, dense stretches aggregated)."""

from __future__ import annotations

from pypto.tools.timeline_view import PAGE, Strings, embed


def model(cleaned: dict) -> dict:
    """The viewer's model of a cleaned trace: its cycles (``args``; the timestamps where a
    trace has none there), one group per core, one lane per thread, the flows' arrows."""
    events = cleaned["traceEvents"]
    hz = (cleaned.get("otherData") or {}).get("clock_hz") or 1e6  # none: the times are shown as they are
    procs, threads = {}, {}
    for e in events:
        if e.get("ph") != "M":
            continue
        args = e.get("args") or {}
        if e["name"] == "process_name":
            procs.setdefault(e["pid"], [str(args.get("name", e["pid"])), 0])[0] = str(args.get("name", e["pid"]))
        elif e["name"] == "process_sort_index":
            procs.setdefault(e["pid"], [str(e["pid"]), 0])[1] = args.get("sort_index", 0)
        elif e["name"] == "thread_name":
            threads[(e["pid"], e["tid"])] = str(args.get("name", e["tid"]))
    strings, kinds = Strings(), ["other"]
    lanes: dict[tuple, list] = {key: [] for key in threads}
    for e in events:
        if e.get("ph") == "X" and (e["pid"], e["tid"]) in lanes:
            args = dict(e.get("args") or {})
            start, dur = args.pop("start_cycle", e["ts"]), args.pop("cycles", e["dur"])
            kind = threads[(e["pid"], e["tid"])].split("#")[0]
            if kind not in kinds:
                kinds.append(kind)
            detail = ", ".join(f"{k}: {v}" for k, v in args.items())
            lanes[(e["pid"], e["tid"])].append([start, dur, strings(e["name"]), kinds.index(kind), strings(detail)])
    groups, number = [], {}
    for pid, (name, _) in sorted(procs.items(), key=lambda p: (p[1][1], str(p[0]))):
        mine = sorted((tid for (p, tid) in threads if p == pid), key=str)
        for tid in mine:
            number[(pid, tid)] = len(number)
        groups.append({"name": name, "lanes": [{"name": threads[(pid, tid)], "s": sorted(lanes[(pid, tid)])}
                                              for tid in mine]})
    starts = {e["id"]: e for e in events if e.get("ph") == "s"}
    flows = []
    for f in (e for e in events if e.get("ph") == "f"):
        s = starts.get(f["id"])
        if s is None or (s["pid"], s["tid"]) not in number or (f["pid"], f["tid"]) not in number:
            continue
        cycle = (lambda e: (e.get("args") or {}).get("cycle", e["ts"]))
        flows.append([number[(s["pid"], s["tid"])], cycle(s), number[(f["pid"], f["tid"])], cycle(f),
                      strings(f.get("name", "flow")), f["id"]])
    count = sum(len(v) for v in lanes.values())
    cycles = [x[0] + x[1] for v in lanes.values() for x in v]
    meta = (f"{count} instructions on {len(groups)} core(s), {max(cycles)} cycles "
            f"({max(cycles) / hz * 1e6:.3f} \u00b5s at {hz / 1e9:g} GHz)" if count
            else "no instructions in this trace: nothing ran on a pipe lane")
    legend = [[k, k] for k in kinds if k != "other"]  # one pipe per lane: nothing aggregates kinds
    return {"hz": hz, "unit": "cycles", "axes": ["ticks", "us"], "groups": groups, "flows": flows,
            "strings": strings.items, "kinds": kinds, "legend": legend, "meta": meta}


def render(cleaned: dict, title: str) -> str:
    return embed(PAGE, model(cleaned), title)
