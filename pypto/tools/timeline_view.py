"""The one timeline viewer of the tools' pages (the L0 trace's ``trace.clean.html``, the
chip's ``swimlane.html``): lanes grouped under headers, a time axis in clock cycles and
microseconds, zoom (wheel, buttons, W/S) and pan (drag, A/D), the view kept in the URL
(``#t=<first>,<last>``), labels only where they fit, and slices closer than a pixel drawn
as one aggregate block, so a lane of 100,000 instructions stays readable and quick. Only
what is in view is in the DOM.

A page is a ``model`` (``render(model, title)``): times are integers of a clock of
``hz`` ticks per second, named ``unit``; ``axes`` are the rows of the time axis ("ticks" in
``unit``, "us"); ``groups`` hold lanes, each lane its slices as ``[start, dur, label, kind,
detail(, id)]`` rows sorted by start (``label`` and ``detail`` index ``strings``, ``kind`` —
the colour class — ``kinds``, whose first is "other": blocks of several kinds); ``flows`` are arrows ``[lane, time, lane, time, label]``
(lanes numbered in order across the groups); ``legend`` maps kinds to what they mean.
Also what every page shares: ``embed`` (the data as a JSON literal, never markup) and the
DOM helpers."""

from __future__ import annotations

import json

PAGE = r"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>timeline</title>
<style>
  body { margin: 0; font: 12px/1.4 system-ui, sans-serif; color: #1d2430; background: #fafafa; }
  header { padding: 8px 16px; background: #fff; border-bottom: 1px solid #e5e7eb; display: flex; gap: 12px;
           align-items: center; flex-wrap: wrap; }
  h1 { font-size: 15px; margin: 0; }
  .meta, .range, .hint { color: #6b7280; }
  button { font: inherit; padding: 1px 9px; }
  #legend { display: flex; gap: 10px; padding: 6px 16px; flex-wrap: wrap; }
  .key { display: inline-flex; align-items: center; gap: 4px; }
  .key[hidden] { display: none; }
  .swatch { width: 12px; height: 12px; border-radius: 2px; display: inline-block; }
  #view { position: relative; margin: 0 16px 16px; background: #fff; border: 1px solid #e5e7eb; border-radius: 8px;
          overflow: hidden; cursor: grab; user-select: none; }
  .axis { position: relative; height: 18px; border-bottom: 1px solid #e5e7eb; background: #fff; }
  .axis-name { position: absolute; left: 0; width: 110px; padding-left: 8px; font: 10px/18px ui-monospace, monospace;
               color: #94a3b8; }
  .tick { position: absolute; top: 0; height: 18px; border-left: 1px solid #cbd5e1; padding-left: 3px;
          font: 10px/18px ui-monospace, monospace; color: #64748b; white-space: nowrap; }
  .group { font-weight: 600; padding: 3px 8px; background: #f8fafc; border-bottom: 1px solid #e5e7eb; height: 16px;
           line-height: 16px; white-space: nowrap; overflow: hidden; }
  .lane { position: relative; height: 22px; border-bottom: 1px solid #f1f5f9; }
  .lane-name { position: absolute; left: 0; width: 110px; padding-left: 8px; font: 11px/22px ui-monospace, monospace;
               color: #475569; overflow: hidden; white-space: nowrap; box-sizing: border-box; }
  .track { position: absolute; left: 120px; right: 0; top: 0; bottom: 0; overflow: hidden; }
  .slice, .agg { position: absolute; top: 3px; height: 16px; border-radius: 2px; overflow: hidden; white-space: nowrap;
                 font: 10px/16px ui-monospace, monospace; padding: 0 2px; color: #0f172a; box-sizing: border-box; }
  .agg { border-radius: 0; padding: 0; }
  svg.flows { position: absolute; left: 120px; top: 0; pointer-events: none; overflow: hidden; }
  svg.flows line { stroke: #dc2626; stroke-width: 1; opacity: 0.8; marker-end: url(#head); }
  .k-MTE2, .k-MTE1 { background: #fcd9a8; } .k-CUBE { background: #c4b5fd; } .k-VECTOR { background: #a7f3d0; }
  .k-FIXPIPE { background: #fde68a; } .k-MTE3 { background: #bfdbfe; } .k-SCALAR { background: #e5e7eb; }
  .k-aic { background: #c4b5fd; } .k-aiv { background: #a7f3d0; }
  .k-pickup { background: repeating-linear-gradient(45deg, #e5e7eb, #e5e7eb 3px, #f8fafc 3px, #f8fafc 6px); }
  .k-other { background: #e2e8f0; }
  .agg-swatch { background: linear-gradient(90deg, #94a3b8 0 25%, #cbd5e1 25% 50%, #94a3b8 50% 75%, #e2e8f0 75%); }
</style>
</head>
<body>
<header><h1 id="title"></h1><span class="meta" id="meta"></span>
  <button id="in" title="zoom in (W, or the wheel)">+</button><button id="out" title="zoom out (S)">&minus;</button>
  <button id="left" title="pan left (A, or drag)">&larr;</button><button id="right" title="pan right (D)">&rarr;</button>
  <button id="fit" title="the whole run (0)">fit</button><span class="range" id="range"></span>
  <span class="hint">wheel: zoom at the pointer, drag: pan, W/S/A/D, 0: fit</span></header>
<div id="legend"></div>
<div id="view"></div>
<script>
"use strict";
const MODEL = /*__DATA__*/null;
const TITLE = /*__TITLE__*/"";
const LABEL = 120, ROW = 22, MIN_PX = 3, BUCKET = 4, MAX_FLOWS = 4000;
/*__HELPERS__*/
const S = MODEL.strings, KINDS = MODEL.kinds, HZ = MODEL.hz, UNIT = MODEL.unit;
document.title = TITLE;
document.getElementById("title").textContent = TITLE;
const lanes = [];  // every lane, numbered as flows number them, with its group
for (const g of MODEL.groups) for (const l of g.lanes) {
  let maxDur = 0;
  for (const s of l.s) maxDur = Math.max(maxDur, s[1]);
  lanes.push(Object.assign({ group: g.name, maxDur }, l));
}
let first = Infinity, last = -Infinity, count = 0;
for (const l of lanes) for (const s of l.s) { first = Math.min(first, s[0]); last = Math.max(last, s[0] + s[1]); count++; }
if (!count) { first = 0; last = 1; }
if (last <= first) last = first + 1;
document.getElementById("meta").textContent = MODEL.meta;
const legend = document.getElementById("legend");
for (const [kind, text] of MODEL.legend) {
  const key = el("span", "key");
  key.append(el("span", "swatch k-" + kind), el("span", "", text));
  legend.append(key);
}
// Shown while the view has aggregate blocks: what a pale bar is, where a slice would be expected.
const aggKey = el("span", "key");
aggKey.id = "agg-key";
aggKey.append(el("span", "swatch agg-swatch"), el("span", "",
  `a shaded block: the slices of a ${BUCKET}-px column (grey: of several kinds), darker where the lane was busier; zoom in to see each`));
legend.append(aggKey);
const view = document.getElementById("view");
const ctx = document.createElement("canvas").getContext("2d");
ctx.font = "10px ui-monospace, monospace";
const charPx = ctx.measureText("0123456789").width / 10;
let lo = first, hi = last;
const fromHash = /^#t=(-?[0-9.e+]+),(-?[0-9.e+]+)$/.exec(location.hash);
if (fromHash && +fromHash[2] > +fromHash[1]) { lo = +fromHash[1]; hi = +fromHash[2]; }
function width() { return Math.max(100, view.clientWidth - LABEL); }
function us(t) { return t / HZ * 1e6; }
function niceStep(raw) {
  const p = Math.pow(10, Math.floor(Math.log10(Math.max(raw, 1e-12))));
  for (const m of [1, 2, 5, 10]) if (raw <= m * p) return m * p;
  return 10 * p;
}
function short(v) {
  const a = Math.abs(v);
  if (a >= 1e9) return +(v / 1e9).toPrecision(4) + "G";
  if (a >= 1e6) return +(v / 1e6).toPrecision(4) + "M";
  if (a >= 1e4) return +(v / 1e3).toPrecision(4) + "k";
  return String(+v.toPrecision(6));
}
function axis(name, scale, unitText) {  // ticks at a nice step of the axis's unit, each label apart from the next
  const row = el("div", "axis");
  row.dataset.axis = name;
  row.append(el("span", "axis-name", unitText));
  const w = width(), span = (hi - lo) * scale;
  const step = niceStep(span / Math.max(1, Math.floor(w / 110)));
  for (let v = Math.ceil(lo * scale / step) * step; v <= hi * scale; v += step) {
    const x = (v / scale - lo) / (hi - lo) * w;
    const text = name === "us" ? (+v.toPrecision(6)) + " \u00b5s" : short(v);
    if (x + text.length * charPx + 6 > w) break;
    const tick = el("span", "tick", text);
    tick.dataset.value = v;
    tick.style.left = (LABEL + x) + "px";
    row.append(tick);
  }
  return row;
}
function firstVisible(l) {  // the first slice that may end after lo: starts are sorted
  let a = 0, b = l.s.length;
  const from = lo - l.maxDur;
  while (a < b) { const m = (a + b) >> 1; if (l.s[m][0] < from) a = m + 1; else b = m; }
  return a;
}
function tip(s, l) {
  const lines = [`${S[s[2]]} on ${l.group} ${l.name}`,
                 `${s[0]} +${s[1]} ${UNIT} (${+us(s[0]).toFixed(4)} +${+us(s[1]).toFixed(4)} \u00b5s)`];
  if (s[4] !== undefined && s[4] !== null && S[s[4]]) lines.push(S[s[4]]);
  return lines.join("\n");
}
function drawLane(l, track, w) {
  // A slice too thin to read alone joins the others of its BUCKET-pixel column: one block
  // whose shade is how busy the lane was there, with what ran in its tooltip.
  const k = w / (hi - lo), cyclesPerBucket = BUCKET / k;
  let run = null, shown = 0;
  const flush = () => {
    if (!run) return;
    const one = run.count === 1;
    const d = el("div", (one ? "slice k-" : "agg k-") + KINDS[run.kind]);
    const x0 = one ? run.x0 : run.bucket * BUCKET, x1 = one ? run.x1 : Math.min(w, x0 + BUCKET);
    d.style.left = x0 + "px";
    d.style.width = Math.max(1, x1 - x0) + "px";
    if (one) {
      Object.assign(d.dataset, { ts: run.one[0], dur: run.one[1], lane: l.name });
      if (run.one[5] !== undefined) d.dataset.id = S[run.one[5]];
      d.title = tip(run.one, l);
    } else {
      const busy = Math.min(1, run.busy / cyclesPerBucket);
      d.style.opacity = (0.25 + 0.75 * busy).toFixed(2);
      Object.assign(d.dataset, { count: run.count, busy: busy.toFixed(2) });
      const names = [...run.names].sort((a, b) => b[1] - a[1]).slice(0, 6).map(([n, c]) => `${S[n]} \u00d7${c}`);
      d.title = `${run.count} slices in ${short(run.t0)}..${short(run.t1)} ${UNIT}, busy ${Math.round(busy * 100)}%: ` +
                names.join(", ") + (run.names.size > 6 ? ", ..." : "") + "\nzoom in to see each";
    }
    track.append(d);
    shown++;
    run = null;
  };
  for (let i = firstVisible(l); i < l.s.length; i++) {
    const s = l.s[i];
    if (s[0] > hi) break;
    if (s[0] + s[1] < lo) continue;
    const x0 = Math.max(0, (s[0] - lo) * k), x1 = Math.min(w, (s[0] + s[1] - lo) * k);
    if (x1 - x0 < MIN_PX) {
      const bucket = Math.floor(x0 / BUCKET);
      if (run && run.bucket === bucket) {
        run.count++; run.busy += Math.min(s[1], cyclesPerBucket); run.t1 = s[0] + s[1];
        run.names.set(s[2], (run.names.get(s[2]) || 0) + 1);
        if (run.kind !== s[3]) run.kind = 0;  // kinds[0]: "other"
        continue;
      }
      flush();
      run = { bucket, x0, x1: Math.max(x1, x0 + 1), count: 1, kind: s[3], one: s, busy: Math.min(s[1], cyclesPerBucket),
              t0: s[0], t1: s[0] + s[1], names: new Map([[s[2], 1]]) };
      continue;
    }
    flush();
    const d = el("div", "slice k-" + KINDS[s[3]]);
    d.style.left = x0 + "px";
    d.style.width = (x1 - x0) + "px";
    Object.assign(d.dataset, { ts: s[0], dur: s[1], lane: l.name });
    if (s[5] !== undefined) d.dataset.id = S[s[5]];
    const text = S[s[2]];
    if (text.length * charPx + 4 <= x1 - x0) d.textContent = text;  // a label only where it fits whole
    d.title = tip(s, l);
    track.append(d);
    shown++;
  }
  flush();
  return shown;
}
function draw() {
  const w = width();
  view.replaceChildren();
  view.dataset.lo = lo; view.dataset.hi = hi;
  for (const a of MODEL.axes) view.append(a === "us" ? axis("us", 1e6 / HZ, "\u00b5s") : axis("ticks", 1, UNIT));
  let top = MODEL.axes.length * 19, elements = 0;
  const rowOf = new Map();
  let g = null;
  lanes.forEach((l, index) => {
    if (l.group !== g) {
      g = l.group;
      const header = el("div", "group", g);
      header.dataset.group = g;
      view.append(header);
      top += 23;
    }
    const lane = el("div", "lane");
    Object.assign(lane.dataset, { lane: l.name, group: l.group, ...(l.data || {}) });
    lane.append(el("span", "lane-name", l.name));
    const track = el("div", "track");
    elements += drawLane(l, track, w);
    lane.append(track);
    view.append(lane);
    rowOf.set(index, top);
    top += ROW + 1;
  });
  const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
  svg.setAttribute("class", "flows");
  svg.setAttribute("width", w);
  svg.setAttribute("height", top);
  arrowHead(svg);
  const k = w / (hi - lo);
  const inView = MODEL.flows.filter(f => Math.max(f[1], f[3]) >= lo && Math.min(f[1], f[3]) <= hi);
  if (inView.length <= MAX_FLOWS) for (const f of inView) {
    const line = document.createElementNS(svg.namespaceURI, "line");
    line.setAttribute("x1", (f[1] - lo) * k); line.setAttribute("y1", rowOf.get(f[0]) + ROW / 2);
    line.setAttribute("x2", (f[3] - lo) * k); line.setAttribute("y2", rowOf.get(f[2]) + ROW / 2);
    line.dataset.name = S[f[4]];
    if (f[5] !== undefined) line.dataset.flow = f[5];
    svg.append(line);
  }
  view.append(svg);
  view.style.height = top + "px";
  view.dataset.elements = elements;
  view.dataset.flowsHidden = inView.length > MAX_FLOWS ? inView.length : 0;
  let overflows = 0;  // measured: a label wider than its block would be cut
  for (const s of view.querySelectorAll(".slice")) if (s.textContent && s.scrollWidth > s.clientWidth + 1) overflows++;
  view.dataset.overflows = overflows;
  aggKey.hidden = !view.querySelector(".agg");
  document.getElementById("range").textContent =
    `${short(lo)}..${short(hi)} ${UNIT} (${+us(lo).toFixed(3)}..${+us(hi).toFixed(3)} \u00b5s)` +
    (inView.length > MAX_FLOWS ? `, ${inView.length} arrows hidden: zoom in` : "");
  const hash = `#t=${lo},${hi}`;
  if (location.hash !== hash && (lo !== first || hi !== last)) history.replaceState(null, "", hash);
}
function zoom(factor, at) {
  const centre = at === undefined ? (lo + hi) / 2 : at;
  const span = Math.min(Math.max((hi - lo) * factor, 1e-3), (last - first) * 4);
  lo = centre - (centre - lo) * (span / (hi - lo));
  hi = lo + span;
  draw();
}
function pan(fraction) { const d = (hi - lo) * fraction; lo += d; hi += d; draw(); }
document.getElementById("in").onclick = () => zoom(0.5);
document.getElementById("out").onclick = () => zoom(2);
document.getElementById("left").onclick = () => pan(-0.25);
document.getElementById("right").onclick = () => pan(0.25);
document.getElementById("fit").onclick = () => { lo = first; hi = last; history.replaceState(null, "", "#"); draw(); };
window.addEventListener("keydown", ev => {
  const act = { w: () => zoom(0.8), s: () => zoom(1.25), a: () => pan(-0.2), d: () => pan(0.2),
                "0": () => document.getElementById("fit").onclick() }[ev.key.toLowerCase()];
  if (act) { ev.preventDefault(); act(); }
});
view.addEventListener("wheel", ev => {
  ev.preventDefault();
  const at = lo + (ev.clientX - view.getBoundingClientRect().left - LABEL) / width() * (hi - lo);
  zoom(ev.deltaY < 0 ? 0.8 : 1.25, at);
}, { passive: false });
let drag = null;
view.addEventListener("mousedown", ev => { drag = { x: ev.clientX, lo, hi }; view.style.cursor = "grabbing"; });
window.addEventListener("mouseup", () => { drag = null; view.style.cursor = ""; });
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


class Strings:
    """Interned page strings: each label or detail once, slices holding its index."""

    def __init__(self):
        self.items: list[str] = []
        self.index: dict[str, int] = {}

    def __call__(self, text) -> int:
        text = str(text)
        got = self.index.get(text)
        if got is None:
            got = self.index[text] = len(self.items)
            self.items.append(text)
        return got


def render(model: dict, title: str) -> str:
    return embed(PAGE, model, title)
