"""The swimlane as a self-contained page (``swimlane.html``), drawn by the shared viewer
(``pypto.tools.timeline_view``): one lane per core that ran a task, the cube cores and the
vector cores grouped, each task a block with its pickup gap before it, an arrow per
dependency edge, a time axis in microseconds, zoom and pan. The data arrives as a JSON
literal; nothing from the input is ever parsed as markup."""

from __future__ import annotations

from pypto.backend import DEFAULT
from pypto.tools.timeline_view import PAGE, Strings, embed

def page_data(records: dict, names: dict, edges: list, us: float, core_hz: int = DEFAULT.chip.core_hz) -> dict:
    """The viewer's model: each core's tasks (and the pickup gap before each), the cores
    grouped by kind, an arrow per edge from a task's end to its successor's start. ``us``:
    microseconds per tick of the records' clock; the page counts core cycles (``core_hz``)
    and µs, as every other page and report does, not the system counter's ticks."""
    from pypto.tools.swimlane import GROUPS, task_name

    hz = 1e6 / us
    per_tick = core_hz / hz

    def cycles(ticks):
        return round(ticks * per_tick)

    strings, kinds = Strings(), ["other", "pickup", *GROUPS]
    counts = {k: 0 for k in GROUPS}
    core_names = {}
    for core, kind in enumerate(records["types"]):
        if kind in GROUPS:
            core_names[core] = f"{kind}{counts[kind]} (core {core})"
            counts[kind] += 1
    by_core: dict[int, list] = {}
    where = {}
    for t in records["tasks"]:
        tid = task_name(t["task"])
        label = names.get(t["task"], tid)
        rows = by_core.setdefault(t["core"], [])
        start, end, dispatch = cycles(t["start"]), cycles(t["end"]), cycles(t["dispatch"])
        if start > dispatch:
            rows.append([dispatch, start - dispatch, strings(f"pickup of {tid}"), kinds.index("pickup"),
                         strings("dispatched, waiting for the core")])
        rows.append([start, end - start, strings(label), kinds.index(t["type"]),
                     strings(f"{tid}: dispatch at cycle {dispatch}, finish at cycle {cycles(t['finish'])}"), strings(tid)])
        where[tid] = (t["core"], start, end)
    groups, number = [], {}
    for kind, (_, label) in sorted(GROUPS.items(), key=lambda g: g[1][0]):
        cores = sorted(c for c in by_core if records["types"][c] == kind)
        if not cores:
            continue
        for c in cores:
            number[c] = len(number)
        groups.append({"name": label, "lanes": [{"name": core_names.get(c, f"core {c}"), "s": sorted(by_core[c]),
                                                 "data": {"core": c}} for c in cores]})
    flows = []
    for p, s in edges:
        a, b = where.get(task_name(p)), where.get(task_name(s))
        if a is not None and b is not None:
            flows.append([number[a[0]], a[2], number[b[0]], b[1], strings(f"{task_name(p)}->{task_name(s)}")])
    tasks = len(records["tasks"])
    span = max((t["end"] for t in records["tasks"]), default=0) - min((t["dispatch"] for t in records["tasks"]),
                                                                       default=0)
    return {"hz": core_hz, "unit": "cycles", "axes": ["ticks", "us"], "groups": groups, "flows": flows,
            "strings": strings.items, "kinds": kinds,
            "legend": [[k, label] for k, (_, label) in GROUPS.items()] + [["pickup", "dispatched, not yet started"]],
            "meta": f"{tasks} tasks on {len(by_core)} cores, {span * us:.2f} \u00b5s"}


def render(data: dict, title: str) -> str:
    return embed(PAGE, data, title)
