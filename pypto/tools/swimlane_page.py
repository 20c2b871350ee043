"""The swimlane as a self-contained page (``swimlane.html``): one row per core that ran a
task, the cube cores and the vector cores grouped, each task a bar with its pickup gap
before it, an arrow per dependency edge, a time axis in microseconds, and zoom (the
buttons, or the mouse wheel over the lanes; drag to pan). The data arrives as a JSON
literal; the script builds the page with DOM calls only, so nothing from the input is
ever parsed as markup."""

from __future__ import annotations

from pypto.tools.trace_page import embed

PAGE = r"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>swimlane</title>
<style>
  body { margin: 0; font: 12px/1.4 system-ui, sans-serif; color: #1d2430; background: #fafafa; }
  header { padding: 10px 16px; background: #fff; border-bottom: 1px solid #e5e7eb; display: flex; gap: 16px;
           align-items: center; }
  h1 { font-size: 15px; margin: 0; }
  .meta { color: #6b7280; }
  button { font: inherit; padding: 2px 10px; }
  #view { position: relative; overflow: hidden; margin: 12px 16px; background: #fff; border: 1px solid #e5e7eb;
          border-radius: 8px; cursor: grab; }
  .group { font-weight: 600; padding: 4px 8px; background: #f8fafc; border-bottom: 1px solid #e5e7eb; }
  .lane { position: relative; height: 22px; border-bottom: 1px solid #f1f5f9; }
  .lane-name { position: absolute; left: 0; width: 110px; padding-left: 8px; font: 11px/22px ui-monospace, monospace;
               color: #475569; background: #fff; z-index: 2; }
  .track { position: absolute; left: 120px; right: 0; top: 0; bottom: 0; }
  .bar { position: absolute; top: 3px; height: 16px; border-radius: 2px; overflow: hidden; white-space: nowrap;
         font: 10px/16px ui-monospace, monospace; padding: 0 2px; color: #0f172a; box-sizing: border-box; }
  .aic { background: #c4b5fd; } .aiv { background: #a7f3d0; }
  .pickup { background: repeating-linear-gradient(45deg, #e5e7eb, #e5e7eb 3px, #f8fafc 3px, #f8fafc 6px); }
  .axis { position: relative; height: 24px; border-bottom: 1px solid #e5e7eb; }
  .tick { position: absolute; top: 0; height: 24px; border-left: 1px solid #cbd5e1; padding-left: 3px;
          font: 10px/24px ui-monospace, monospace; color: #64748b; }
  svg.edges { position: absolute; left: 120px; top: 0; pointer-events: none; overflow: visible; }
  svg.edges line { stroke: #dc2626; stroke-width: 1; opacity: 0.7; marker-end: url(#head); }
</style>
</head>
<body>
<header><h1 id="title"></h1><span class="meta" id="meta"></span>
  <button id="in">zoom in</button><button id="out">zoom out</button><button id="reset">reset</button></header>
<div id="view"></div>
<script>
"use strict";
const DATA = /*__DATA__*/null;
const TITLE = /*__TITLE__*/"";
const ROW = 22, AXIS = 24;
/*__HELPERS__*/
document.title = TITLE;
document.getElementById("title").textContent = TITLE;
const tasks = DATA.tasks, edges = DATA.edges;
let t0 = Infinity, t1 = -Infinity;
for (const t of tasks) { t0 = Math.min(t0, t.dispatch); t1 = Math.max(t1, t.end); }
if (!tasks.length) { t0 = 0; t1 = 1; }
document.getElementById("meta").textContent =
  `${tasks.length} tasks on ${new Set(tasks.map(t => t.core)).size} cores, ${(t1 - t0).toFixed(2)} us`;
const view = document.getElementById("view");
let lo = t0, hi = t1;  // the time window shown
function width() { return Math.max(100, view.clientWidth - 130); }
function x(t) { return (t - lo) / Math.max(1e-9, hi - lo) * width(); }
function draw() {
  view.replaceChildren();
  const axis = el("div", "axis");
  const step = niceStep((hi - lo) / 8);
  for (let v = Math.ceil(lo / step) * step; v <= hi; v += step) {
    const tick = el("span", "tick", `${+v.toFixed(3)} us`);
    tick.style.left = (120 + x(v)) + "px";
    axis.append(tick);
  }
  view.append(axis);
  const rows = new Map();  // core -> row index among the lanes
  let row = 0, top = AXIS;
  const where = new Map();
  for (const group of DATA.groups) {
    const cores = [...new Set(tasks.filter(t => t.type === group.type).map(t => t.core))].sort((a, b) => a - b);
    if (!cores.length) continue;
    view.append(el("div", "group", group.label));
    top += ROW;
    for (const core of cores) {
      const lane = el("div", "lane");
      lane.dataset.core = core;
      lane.append(el("span", "lane-name", DATA.names[core] || `core ${core}`));
      const track = el("div", "track");
      for (const t of tasks.filter(t => t.core === core)) {
        if (t.start > t.dispatch) {
          const p = el("div", "bar pickup");
          p.style.left = x(t.dispatch) + "px";
          p.style.width = Math.max(1, x(t.start) - x(t.dispatch)) + "px";
          p.title = `pickup of ${t.id}: ${(t.start - t.dispatch).toFixed(3)} us`;
          track.append(p);
        }
        const b = el("div", "bar " + group.type, t.name);
        b.dataset.task = t.id;
        b.style.left = x(t.start) + "px";
        b.style.width = Math.max(1, x(t.end) - x(t.start)) + "px";
        b.title = `${t.name} (${t.id}) on ${DATA.names[core] || core}\ndispatch ${t.dispatch} us, start ${t.start}` +
                  ` us, end ${t.end} us, finish ${t.finish} us`;
        track.append(b);
        where.set(t.id, { row: top, start: t.start, end: t.end });
      }
      lane.append(track);
      view.append(lane);
      rows.set(core, row++);
      top += ROW;
    }
  }
  const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
  svg.setAttribute("class", "edges");
  svg.setAttribute("width", width());
  svg.setAttribute("height", top);
  arrowHead(svg);
  for (const e of edges) {
    const a = where.get(e.pred), b = where.get(e.succ);
    if (!a || !b) continue;
    const line = document.createElementNS(svg.namespaceURI, "line");
    line.setAttribute("x1", x(a.end)); line.setAttribute("y1", a.row + ROW / 2);
    line.setAttribute("x2", x(b.start)); line.setAttribute("y2", b.row + ROW / 2);
    line.dataset.edge = `${e.pred}->${e.succ}`;
    svg.append(line);
  }
  view.append(svg);
}
function niceStep(raw) {
  const p = Math.pow(10, Math.floor(Math.log10(Math.max(raw, 1e-9))));
  for (const m of [1, 2, 5, 10]) if (raw <= m * p) return m * p;
  return 10 * p;
}
function zoom(factor, at) {
  const centre = at === undefined ? (lo + hi) / 2 : at;
  const span = Math.max((hi - lo) * factor, 1e-6);
  lo = centre - (centre - lo) * (span / (hi - lo));
  hi = lo + span;
  draw();
}
document.getElementById("in").onclick = () => zoom(0.5);
document.getElementById("out").onclick = () => zoom(2);
document.getElementById("reset").onclick = () => { lo = t0; hi = t1; draw(); };
view.addEventListener("wheel", ev => {
  ev.preventDefault();
  const at = lo + (ev.clientX - view.getBoundingClientRect().left - 120) / width() * (hi - lo);
  zoom(ev.deltaY < 0 ? 0.8 : 1.25, at);
}, { passive: false });
let drag = null;
view.addEventListener("mousedown", ev => { drag = { x: ev.clientX, lo, hi }; });
window.addEventListener("mouseup", () => { drag = null; });
window.addEventListener("mousemove", ev => {
  if (!drag) return;
  const shift = (ev.clientX - drag.x) / width() * (drag.hi - drag.lo);
  lo = drag.lo - shift; hi = drag.hi - shift;
  draw();
});
window.addEventListener("resize", draw);
draw();
</script>
</body>
</html>
"""


def page_data(records: dict, names: dict, edges: list, us: float) -> dict:
    """What the page draws: tasks in microseconds with their kernel names, the core names
    and groups, the edges between task ids."""
    from pypto.tools.swimlane import GROUPS, task_name

    counts = {"aic": 0, "aiv": 0}
    core_names = {}
    for core, kind in enumerate(records["types"]):
        if kind in GROUPS:
            core_names[core] = f"{kind}{counts[kind]} (core {core})"
            counts[kind] += 1
    tasks = [{"id": task_name(t["task"]), "name": names.get(t["task"], task_name(t["task"])), "core": t["core"],
              "type": t["type"], "dispatch": t["dispatch"] * us, "start": t["start"] * us, "end": t["end"] * us,
              "finish": t["finish"] * us} for t in records["tasks"]]
    return {"tasks": tasks, "edges": [{"pred": task_name(p), "succ": task_name(s)} for p, s in edges],
            "names": core_names, "groups": [{"type": k, "label": label} for k, (_, label) in GROUPS.items()]}


def render(data: dict, title: str) -> str:
    return embed(PAGE, data, title)
