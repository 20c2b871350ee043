"""The L0 instruction trace of one simulated launch, in the shapes the Ascend op simulator
writes them: a Chrome trace (one process per core, one thread per pipe, the scalar unit's
issuing, SET_FLAG / WAIT_FLAG as begin/end pairs with their detail string, a closing BAR)
and per-instruction metrics (arrays indexed by core). Timestamps are simulated cycles.
"""

from __future__ import annotations

from pypto.backend import DEFAULT, Pipe



def insight_name(core: str) -> str:
    """Insight's name of a core: ``aic<c>`` is cluster c's cube core, ``aiv<2c + l>`` its
    vector core l (``CoreId.name``'s numbering): core<c>.cubecore0, core<c>.veccore<l>."""
    kind, number = core[:3], int(core[3:])
    return f"core{number}.cubecore0" if kind == "aic" else f"core{number // 2}.veccore{number % 2}"
LANES = [p.value for p in Pipe] + ["ALL"]  # lane (thread) ids in this order
FLAG_PIPE = {"VECTOR": "VEC"}  # how flag details spell pipes
METRIC_TYPES = {
    "Address": "string", "Source": "string", "Pipe": "string", "Instruction": "string", "Cycles": "int",
    "Instructions Executed": "int", "Process Bytes": "int", "Vector Utilization Percentage": "float",
}


def chrome_trace(report, soc=DEFAULT) -> dict:
    """The uncleaned trace.json of one launch."""
    cores = sorted({e.core for e in report.events})
    pid = {core: k for k, core in enumerate(cores)}
    events = []
    for core in cores:
        events.append({"name": "process_name", "ph": "M", "pid": pid[core], "args": {"name": insight_name(core)}})
        for tid, lane in enumerate(LANES):
            events.append({"name": "thread_name", "ph": "M", "pid": pid[core], "tid": tid, "args": {"name": lane}})
    end = 0
    for e in sorted(report.events, key=lambda e: (e.start, e.core, e.pipe)):
        where = {"pid": pid[e.core], "tid": LANES.index(e.pipe)}
        end = max(end, e.end)
        if e.kind in ("set_flag", "wait_flag"):
            src_core, src, dst_core, dst, event = e.flag
            detail = f"PIPE:{FLAG_PIPE.get(src, src)},TRIGGERPIPE:{FLAG_PIPE.get(dst, dst)},FLAGID:{event},"
            if src_core != dst_core:
                detail += f"TRIGGERCORE:{insight_name(dst_core)},"
            name = "SET_FLAG" if e.kind == "set_flag" else "WAIT_FLAG"
            events.append({"name": name, "ph": "B", "ts": e.start, **where, "args": {"detail": detail}})
            events.append({"name": name, "ph": "E", "ts": e.end, **where})
            continue
        args = {k: v for k, v in e.detail}
        if e.span is not None:
            args["source"] = f"{e.span.file}:{e.span.line}"
        events.append({"name": e.name, "ph": "X", "ts": e.start, "dur": e.end - e.start, **where, "args": args})
    for core in cores:  # a kernel ends with pipe_barrier(PIPE_ALL)
        events.append({"name": "BAR", "ph": "X", "ts": end, "dur": 1, "pid": pid[core], "tid": LANES.index("ALL"),
                       "args": {"detail": "PIPE:ALL,"}})
    # times in core cycles, as the Ascend simulator writes them; the clock they count, for the cleaner
    return {"traceEvents": events, "displayTimeUnit": "ns", "profilingType": "op", "schemaVersion": 1,
            "otherData": {"clock_hz": soc.chip.core_hz, "time_unit": "cycles"}}


def instruction_metrics(report) -> dict:
    """The API_INSTR block: one record per static instruction, each column an array over cores."""
    cores = sorted({e.core for e in report.events})
    per: dict[tuple, dict] = {}
    for e in report.events:
        if e.kind != "instr":
            continue
        row = per.setdefault((e.pos, e.core), {"pipe": e.pipe, "name": e.name, "span": e.span, "cycles": 0,
                                               "count": 0, "bytes": 0, "util": []})
        row["cycles"] += e.end - e.start
        row["count"] += 1
        detail = dict(e.detail)
        row["bytes"] += detail.get("bytes", 0)
        if "vector_utilization_percentage" in detail:
            row["util"].append(detail["vector_utilization_percentage"])
    records = []
    for pos in sorted({p for p, _ in per}):
        record = {key: [None] * len(cores) for key in METRIC_TYPES}
        for k, core in enumerate(cores):
            row = per.get((pos, core))
            if row is None:
                continue
            span = row["span"]
            record["Address"][k] = f"0x{pos * 4:08x}"
            record["Source"][k] = f"{span.file}:{span.line}" if span is not None else ""
            record["Pipe"][k] = row["pipe"]
            record["Instruction"][k] = row["name"]
            record["Cycles"][k] = row["cycles"]
            record["Instructions Executed"][k] = row["count"]
            record["Process Bytes"][k] = row["bytes"]
            record["Vector Utilization Percentage"][k] = (round(sum(row["util"]) / len(row["util"]), 2)
                                                         if row["util"] else 0.0)
        records.append(record)
    return {"Cores": [insight_name(c) for c in cores], "Instructions": records,
            "Instructions Dtype": dict(METRIC_TYPES)}
