"""A multi-rank swimlane: the cluster's acts as one Chrome / Perfetto trace (JSON), a process
per rank with a lane per kind of act, and an arrow from each notify to the wait it ended."""

from __future__ import annotations

import json
from pathlib import Path

from pypto.cluster.links import Event

_LANES = {"remote_store": 1, "remote_load": 1, "notify": 2, "wait": 3}
_LANE_NAMES = {1: "transfers", 2: "notifies", 3: "waits"}


def trace(events: list[Event], nranks: int, core_hz: int) -> dict:
    us = 1e6 / core_hz
    out = []
    for r in range(nranks):
        out.append({"ph": "M", "name": "process_name", "pid": r, "args": {"name": f"rank {r}"}})
        for tid, name in _LANE_NAMES.items():
            out.append({"ph": "M", "name": "thread_name", "pid": r, "tid": tid, "args": {"name": name}})
    for e in events:
        label = f"{e.kind} {'->' if e.kind != 'wait' else '<-'} rank {e.peer}" if e.peer >= 0 else e.kind
        out.append({"ph": "X", "name": label, "pid": e.rank, "tid": _LANES[e.kind], "ts": e.start * us,
                    "dur": max(e.end - e.start, 1) * us, "args": {"bytes": e.nbytes, "peer": e.peer}})
    by_ident = {e.ident: e for e in events if e.kind == "notify"}
    for k, e in enumerate(events):
        if e.kind == "wait" and e.cause in by_ident:
            n = by_ident[e.cause]
            out.append({"ph": "s", "id": k, "name": "signal", "cat": "signal", "pid": n.rank, "tid": 2,
                        "ts": n.start * us})
            out.append({"ph": "f", "bp": "e", "id": k, "name": "signal", "cat": "signal", "pid": e.rank, "tid": 3,
                        "ts": e.end * us})
    return {"traceEvents": out, "displayTimeUnit": "ns"}


def write(path, events: list[Event], nranks: int, core_hz: int) -> Path:
    path = Path(path)
    path.write_text(json.dumps(trace(events, nranks, core_hz)))
    return path
