"""A self-contained timeline of a cleaned trace (``trace.clean.html``), for when Perfetto
is not at hand: one row per lane, one block per instruction, sync arrows between them.
The data arrives as a JSON literal; the script builds the page with DOM calls only."""

from __future__ import annotations

import json

PAGE = r"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>trace</title>
<style>
  body { margin: 0; font: 12px/1.4 system-ui, sans-serif; color: #1d2430; background: #fafafa; }
  header { padding: 10px 16px; background: #fff; border-bottom: 1px solid #e5e7eb; }
  h1 { font-size: 15px; margin: 0; }
  .meta { color: #6b7280; }
  .core { margin: 12px 16px; background: #fff; border: 1px solid #e5e7eb; border-radius: 8px; padding: 8px; }
  .core-name { font-weight: 600; margin-bottom: 4px; }
  .timeline { position: relative; }
  .lane { position: relative; height: 22px; border-bottom: 1px solid #f1f5f9; }
  .lane-name { position: absolute; left: 0; width: 90px; font: 11px/22px ui-monospace, monospace; color: #475569; }
  .track { position: absolute; left: 96px; right: 0; top: 0; bottom: 0; }
  .slice { position: absolute; top: 3px; height: 16px; border-radius: 2px; overflow: hidden; white-space: nowrap;
           font: 10px/16px ui-monospace, monospace; padding: 0 2px; color: #0f172a; }
  .MTE2, .MTE1 { background: #fcd9a8; } .CUBE { background: #c4b5fd; } .VECTOR { background: #a7f3d0; }
  .FIXPIPE { background: #fde68a; } .MTE3 { background: #bfdbfe; } .SCALAR { background: #e5e7eb; }
  svg.flows { position: absolute; left: 96px; top: 0; pointer-events: none; overflow: visible; }
  svg.flows line { stroke: #dc2626; stroke-width: 1; marker-end: url(#head); }
</style>
</head>
<body>
<header><h1 id="title"></h1><div class="meta" id="meta"></div></header>
<main id="cores"></main>
<script>
"use strict";
const TRACE = /*__DATA__*/null;
const TITLE = /*__TITLE__*/"";
const WIDTH = 1100, ROW = 22;
/*__HELPERS__*/
const events = TRACE.traceEvents;
const procs = new Map(), threads = new Map();
for (const e of events) {
  if (e.ph === "M" && e.name === "process_name") procs.set(e.pid, { name: e.args.name, order: 0 });
  if (e.ph === "M" && e.name === "process_sort_index" && procs.has(e.pid)) procs.get(e.pid).order = e.args.sort_index;
  if (e.ph === "M" && e.name === "thread_name") threads.set(e.pid + "/" + e.tid, { pid: e.pid, tid: e.tid, name: e.args.name });
}
const slices = events.filter(e => e.ph === "X");
// A loop, not Math.min(...spread): a spread of a long trace overflows the call stack.
let t0 = Infinity, t1 = -Infinity;
for (const e of slices) { t0 = Math.min(t0, e.ts); t1 = Math.max(t1, e.ts + e.dur); }
if (!slices.length) { t0 = 0; t1 = 0; }
const px = WIDTH / Math.max(1, t1 - t0);
const byTrack = new Map();  // "pid/tid" -> slices, built once rather than filtered per lane
for (const e of slices) {
  const key = e.pid + "/" + e.tid;
  if (!byTrack.has(key)) byTrack.set(key, []);
  byTrack.get(key).push(e);
}
const where = new Map();
document.title = TITLE;
document.getElementById("title").textContent = TITLE;
document.getElementById("meta").textContent = slices.length
  ? `${slices.length} instructions, cycles ${t0}..${t1}`
  : "no instructions in this trace: nothing ran on a pipe lane";
const starts = new Map(events.filter(e => e.ph === "s").map(e => [e.id, e]));
const finishes = events.filter(e => e.ph === "f");
const main = document.getElementById("cores");
for (const [pid, proc] of [...procs].sort((a, b) => a[1].order - b[1].order)) {
  const core = el("section", "core");
  core.dataset.core = proc.name;
  core.append(el("div", "core-name", proc.name));
  const timeline = el("div", "timeline");
  const lanes = [...threads.values()].filter(t => t.pid === pid).sort((a, b) => a.tid - b.tid);
  lanes.forEach((t, row) => {
    const lane = el("div", "lane");
    lane.dataset.lane = t.name;
    lane.append(el("span", "lane-name", t.name));
    const track = el("div", "track");
    for (const e of byTrack.get(pid + "/" + t.tid) || []) {
      const s = el("div", "slice " + t.name.split("#")[0], e.name);
      Object.assign(s.dataset, { ts: e.ts, dur: e.dur, lane: t.name });
      s.style.left = ((e.ts - t0) * px) + "px";
      s.style.width = Math.max(1, e.dur * px) + "px";
      s.title = `${e.name}\n${e.ts} +${e.dur}` + (e.args ? "\n" + JSON.stringify(e.args) : "");
      track.append(s);
    }
    lane.append(track);
    timeline.append(lane);
    where.set(pid + "/" + t.tid, row);
  });
  const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
  svg.setAttribute("class", "flows");
  svg.setAttribute("width", WIDTH);
  svg.setAttribute("height", lanes.length * ROW);
  arrowHead(svg);
  for (const f of finishes.filter(e => e.pid === pid)) {
    const s = starts.get(f.id);
    if (!s || s.pid !== pid) continue;
    const line = document.createElementNS(svg.namespaceURI, "line");
    line.setAttribute("x1", (s.ts - t0) * px); line.setAttribute("y1", where.get(s.pid + "/" + s.tid) * ROW + ROW / 2);
    line.setAttribute("x2", (f.ts - t0) * px); line.setAttribute("y2", where.get(f.pid + "/" + f.tid) * ROW + ROW / 2);
    line.dataset.flow = f.id;
    line.dataset.name = f.name;
    svg.append(line);
  }
  timeline.append(svg);
  core.append(timeline);
  main.append(core);
}
</script>
</body>
</html>
"""


HELPERS = r"""// the pages' shared helpers: elements with text (never markup), and an SVG arrow head
function el(tag, cls, text) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (text !== undefined) node.textContent = String(text);
  return node;
}
function arrowHead(svg) {
  const defs = document.createElementNS(svg.namespaceURI, "defs");
  const marker = document.createElementNS(svg.namespaceURI, "marker");
  marker.setAttribute("id", "head"); marker.setAttribute("markerWidth", "6"); marker.setAttribute("markerHeight", "6");
  marker.setAttribute("refX", "5"); marker.setAttribute("refY", "3"); marker.setAttribute("orient", "auto");
  const tip = document.createElementNS(svg.namespaceURI, "path");
  tip.setAttribute("d", "M0,0 L6,3 L0,6 z"); tip.setAttribute("fill", "#dc2626");
  marker.append(tip); defs.append(marker); svg.append(defs);
}
"""


def embed(page: str, data, title: str) -> str:
    """A page template with its data and title as JSON literals (no ``<`` or ``>`` in
    them, so nothing in the input can close the script) and the shared helpers."""
    payload = json.dumps(data, ensure_ascii=True).replace("<", "\\u003c").replace(">", "\\u003e")
    return (page.replace("/*__HELPERS__*/", HELPERS).replace("/*__DATA__*/null", payload)
            .replace('/*__TITLE__*/""', json.dumps(title).replace("<", "\\u003c").replace(">", "\\u003e")))


def render(cleaned: dict, title: str) -> str:
    return embed(PAGE, cleaned, title)
