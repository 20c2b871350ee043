"""The memory map's page: self-contained HTML, CSS and script. The data arrives as a JSON
literal; the script builds the page with DOM calls and ``textContent`` only."""

PAGE = r"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>memory map</title>
<style>
  :root { --line: 18px; --bg: #fafafa; --ink: #1d2430; --muted: #6b7280; --accent: #2563eb; }
  * { box-sizing: border-box; }
  body { margin: 0; font: 13px/1.4 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--ink); background: var(--bg); }
  header { position: sticky; top: 0; z-index: 5; background: #fff; border-bottom: 1px solid #e5e7eb; padding: 10px 16px; }
  h1 { font-size: 16px; margin: 0 0 4px; }
  .meta { color: var(--muted); font-size: 12px; }
  .controls { display: flex; flex-wrap: wrap; gap: 14px; align-items: center; margin-top: 8px; }
  .controls button { width: 26px; height: 24px; border: 1px solid #cbd5e1; background: #fff; border-radius: 4px; cursor: pointer; }
  .chip { background: #eef2ff; color: #3730a3; border-radius: 10px; padding: 2px 8px; cursor: pointer; }
  main { padding: 12px 16px; }
  details.card { background: #fff; border: 1px solid #e5e7eb; border-radius: 8px; margin-bottom: 14px; }
  details.card > summary { cursor: pointer; padding: 10px 12px; display: flex; flex-wrap: wrap; gap: 8px; align-items: center; }
  .fname { font-weight: 600; font-family: ui-monospace, Menlo, Consolas, monospace; }
  .ftype { color: var(--muted); }
  .pill { border-radius: 12px; padding: 2px 10px; font-size: 12px; background: #ecfdf5; color: #065f46; border: 1px solid #a7f3d0; }
  .pill.full { background: #fef2f2; color: #991b1b; border-color: #fecaca; }
  .legend { color: var(--muted); font-size: 12px; margin-top: 6px; }
  .legend b { font-family: ui-monospace, Menlo, Consolas, monospace; font-weight: 600; color: var(--ink); }
  /* the spaces take what the source leaves, so every space is in view at zoom 1 */
  .body { display: flex; gap: 12px; padding: 0 12px 12px; }
  .source { margin: 0; padding-top: 22px; font: 12px/var(--line) ui-monospace, Menlo, Consolas, monospace; white-space: pre; min-width: 240px; max-width: 32vw; overflow-x: auto; overflow-y: hidden; flex: none; }
  .src-line { height: var(--line); padding-right: 8px; }
  .src-line .ln { display: inline-block; width: 3.5em; color: #9ca3af; text-align: right; margin-right: 10px; user-select: none; }
  .src-line.hit { background: #fef9c3; }
  .spaces { flex: 1 1 0; min-width: 0; overflow-x: auto; }
  .track { display: flex; gap: 10px; align-items: flex-start; }
  .space { flex: 1 1 0; min-width: 96px; }
  .space.hidden { display: none; }
  .space-title { height: 22px; font-weight: 600; font-size: 12px; white-space: nowrap; overflow: hidden; }
  .lane { position: relative; background: repeating-linear-gradient(to bottom, #fff 0, #fff var(--line), #f8fafc var(--line), #f8fafc calc(2 * var(--line))); border: 1px solid #e2e8f0; }
  .box { position: absolute; min-width: 2px; background: rgba(37, 99, 235, .18); border: 1px solid rgba(37, 99, 235, .8); border-radius: 3px; overflow: hidden; font: 11px/1.2 ui-monospace, Menlo, Consolas, monospace; padding: 1px 3px; cursor: pointer; white-space: nowrap; }
  .box > .label.aside { visibility: hidden; }
  .beside { position: absolute; font: 11px/1.2 ui-monospace, Menlo, Consolas, monospace; white-space: nowrap; color: #1e3a8a; background: rgba(255, 255, 255, .85); cursor: pointer; padding-top: 2px; }
  .box.view { border-style: dashed; background: rgba(37, 99, 235, .08); }
  .box.conflict { border-color: #dc2626; background: rgba(220, 38, 38, .25); }
  .box.rotating { background: repeating-linear-gradient(135deg, rgba(37, 99, 235, .22) 0 4px, rgba(37, 99, 235, .06) 4px 8px); border-style: dotted; }
  .box.over { border-color: #dc2626; border-width: 2px; }
  .capacity { position: absolute; top: 0; bottom: 0; border-left: 2px solid #dc2626; }
  .box.pinned { outline: 3px solid #f59e0b; z-index: 3; }
  .slot { position: absolute; top: 0; bottom: 0; border-left: 1px dashed rgba(37, 99, 235, .8); }
  .hwm { position: absolute; top: 0; bottom: 0; border-left: 1px dashed #64748b; }
  .axis { display: flex; justify-content: space-between; color: var(--muted); font-size: 11px; white-space: nowrap; }
</style>
</head>
<body>
<header>
  <h1 id="title"></h1>
  <div class="meta" id="meta"></div>
  <div class="controls">
    <span>zoom <button id="zoom-out" title="zoom out">&minus;</button> <span id="zoom-level"></span> <button id="zoom-in" title="zoom in">+</button></span>
    <span>x axis <label><input type="radio" name="axis" value="limit" checked> limit</label>
      <label><input type="radio" name="axis" value="used"> used</label></span>
    <span>width <label><input type="radio" name="scale" value="fit" checked> each space alike</label>
      <label><input type="radio" name="scale" value="bytes"> by bytes</label></span>
    <span id="toggles">show </span>
    <span id="pin-chip" class="chip" hidden></span>
  </div>
  <div class="legend"><b>name +N</b>: N more tiles in the same bytes, each taking over as the one before
    it dies (an op computed in place, a value carried round a loop); hover a box for their names.
    Dashed: a view inside a larger tile. Red: two allocations overlapping while both live.
    Hatched: a slot picked by the loop index, drawn over its whole allocation. Dashed rule: the high-water mark.
    A label too wide for its box stands beside it, or only in the box's tooltip.</div>
</header>
<main id="functions"></main>
<script>
"use strict";
const DATA = /*__DATA__*/null;
const TITLE = /*__TITLE__*/"";
const LINE = 18;
let zoom = 1, axis = "limit", widths = "fit", pinned = null;
const hidden = new Set();

function el(tag, cls, text) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (text !== undefined) node.textContent = String(text);
  return node;
}
function kib(bytes) { return bytes >= 1024 ? (bytes / 1024).toFixed(1) + " KiB" : bytes + " B"; }
function hex(n) { return "0x" + n.toString(16).padStart(5, "0"); }

function pct(bytes, domain) { return (100 * bytes / domain) + "%"; }

function render() {
  document.getElementById("zoom-level").textContent = zoom.toFixed(2) + "x";
  const main = document.getElementById("functions");
  const open = new Set([...main.querySelectorAll("details.card")].filter(d => !d.open).map(d => d.dataset.function));
  main.replaceChildren();
  DATA.functions.forEach((fn, k) => {
    const card = el("details", "card");
    card.dataset.function = fn.name;
    card.open = !open.has(fn.name);
    const summary = el("summary");
    summary.append(el("span", "fname", fn.name), el("span", "ftype", fn.type));
    for (const s of fn.spaces) {
      const pill = el("span", "pill" + (s.usage >= 95 ? " full" : ""),
        `${s.name} ${kib(s.hwm)} / ${kib(s.capacity)} (${s.usage}%)` + (s.over ? " over capacity" : ""));
      pill.dataset.space = s.name;
      pill.title = `high-water mark ${s.hwm} B of ${s.capacity} B`;
      summary.append(pill);
    }
    card.append(summary);
    const body = el("div", "body");
    const source = el("pre", "source");
    fn.source.forEach((text, i) => {
      const row = el("div", "src-line");
      row.dataset.line = fn.first + i;
      row.append(el("span", "ln", fn.first + i), el("span", "code", text));
      source.append(row);
    });
    body.append(source);
    const spaces = el("div", "spaces"), track = el("div", "track");
    track.style.width = (100 * zoom) + "%";  // zoom 1: every space in view, no scrolling
    spaces.append(track);
    for (const s of fn.spaces) {
      const panel = el("div", "space" + (hidden.has(s.name) ? " hidden" : ""));
      panel.dataset.space = s.name;
      const limit = axis === "limit" ? s.capacity : s.hwm;
      // Every box fits the lane: one past the capacity is drawn where it is, not clamped.
      const domain = Math.max(1, limit, s.hwm);
      if (widths === "bytes") panel.style.flexGrow = domain;  // one byte scale (down to the least lane width)
      const title = el("div", "space-title", s.name + (s.over ? " over capacity" : ""));
      title.title = `${s.name}: ${s.capacity} B capacity, high-water mark ${s.hwm} B`;
      panel.append(title);
      const lane = el("div", "lane");
      lane.style.height = (fn.source.length * LINE) + "px";
      for (const b of fn.boxes.filter(b => b.space === s.name)) {
        const box = el("div", "box" + (b.kind === "view" ? " view" : b.kind === "conflict" ? " conflict" : "") +
          (b.dynamic ? " rotating" : "") + (b.over ? " over" : ""));
        const label = b.aliases.length ? `${b.name} +${b.aliases.length}` : b.name;
        box.append(el("span", "label", b.dynamic ? `${label} [${b.index}] rotating x${b.slots}` : label));
        Object.assign(box.dataset, { name: b.name, space: b.space, addr: b.addr, size: b.size, memref: b.memref,
          kind: b.kind, slots: b.slots, start: b.start, end: b.end, rotating: b.dynamic, over: b.over });
        box.style.left = pct(b.addr, domain);
        box.style.width = pct(b.size, domain);
        box.style.top = ((b.start - fn.first) * LINE) + "px";
        box.style.height = Math.max(LINE - 2, (b.end - b.start + 1) * LINE - 2) + "px";
        box.title = [`${[b.name, ...b.aliases].join(", ")}`, `${b.dtype}[${b.shape.join("x")}] ${b.op}`,
          `${b.memref}${b.slots > 1 ? ` (${b.slots} slots, slot ${b.index})` : ""} @ ${hex(b.addr)} +${b.size} B`,
          `lines ${b.start}-${b.end}${b.kind !== "tile" ? " (" + b.kind + ")" : ""}`,
          ...(b.dynamic ? [`rotating: slot ${b.index} of ${b.slots}, so drawn over the whole allocation`] : []),
          ...(b.over ? [`runs past the end of ${b.space} (${s.capacity} B)`] : [])].join("\n");
        for (let k = 1; b.dynamic && k < b.slots; k++) {  // slot boundaries of a rotating allocation
          const slot = el("div", "slot");
          slot.style.left = pct(k, b.slots);
          box.append(slot);
        }
        box.addEventListener("click", event => { event.stopPropagation(); pin(b, card); });
        lane.append(box);
      }
      const rule = el("div", "hwm");
      rule.style.left = `calc(${pct(s.hwm, domain)} - 1px)`;
      rule.title = `high-water mark ${s.hwm} B`;
      lane.append(rule);
      if (s.over) {
        const end = el("div", "capacity");
        end.style.left = pct(s.capacity, domain);
        end.title = `capacity ${s.capacity} B`;
        lane.append(end);
      }
      const ticks = el("div", "axis");
      ticks.append(el("span", "", "0"), el("span", "", kib(domain)));
      panel.append(lane, ticks);
      track.append(panel);
    }
    body.append(spaces);
    card.append(body);
    main.append(card);
  });
  placeLabels();
  if (pinned) highlight();
}

// Labels are measured in the page's layout: one whole in its box, else beside it (right,
// then left) where it crosses no box and no other label, else only in the box's tooltip —
// never cut ("loa"). The page records what it did on #functions (data-overflows: labels
// shown but cut, data-hscroll: a space out of view sideways), for the tests to read.
function placeLabels() {
  let overflows = 0, besides = 0, tooltipOnly = 0;
  for (const lane of document.querySelectorAll(".lane")) {
    lane.querySelectorAll(".beside").forEach(x => x.remove());
    if (!lane.offsetParent) continue;  // a hidden space or a closed card: placed when shown
    const width = lane.clientWidth, taken = [];
    const boxes = [...lane.querySelectorAll(".box")];
    const rect = node => ({ l: node.offsetLeft, t: node.offsetTop, r: node.offsetLeft + node.offsetWidth,
      b: node.offsetTop + node.offsetHeight });
    boxes.forEach(b => taken.push(rect(b)));
    const free = r => r.l >= 0 && r.r <= width && !taken.some(o => r.l < o.r && o.l < r.r && r.t < o.b && o.t < r.b);
    for (const box of boxes) {
      const label = box.querySelector(".label");
      label.classList.remove("aside");
      box.dataset.px = box.offsetWidth;
      if (label.offsetWidth <= box.clientWidth - 6) continue;
      label.classList.add("aside");
      const w = label.offsetWidth, h = 16, at = rect(box);
      const spot = [{ l: at.r + 3, t: at.t, r: at.r + 3 + w, b: at.t + h },
                    { l: at.l - 3 - w, t: at.t, r: at.l - 3, b: at.t + h }].find(free);
      if (!spot) { tooltipOnly++; continue; }
      const beside = el("div", "beside", label.textContent);
      Object.assign(beside.style, { left: spot.l + "px", top: spot.t + "px" });
      beside.title = box.title;
      beside.addEventListener("click", event => { event.stopPropagation(); box.click(); });
      lane.append(beside);
      taken.push(spot);
      besides++;
      if (beside.offsetLeft + beside.offsetWidth > width) overflows++;
    }
  }
  for (const t of document.querySelectorAll(".space-title, .axis span"))
    if (t.offsetParent && t.scrollWidth > t.clientWidth + 1) overflows++;
  let hscroll = document.documentElement.scrollWidth > document.documentElement.clientWidth ? 1 : 0;
  for (const s of document.querySelectorAll(".spaces")) if (s.scrollWidth > s.clientWidth + 1) hscroll = 1;
  const main = document.getElementById("functions");
  Object.assign(main.dataset, { overflows, besides, tooltipOnly, hscroll });
}

function pin(box, card) {
  pinned = pinned && pinned.box === box ? null : { box, fn: card.dataset.function };
  highlight();
}

function highlight() {
  document.querySelectorAll(".box.pinned").forEach(b => b.classList.remove("pinned"));
  document.querySelectorAll(".src-line.hit").forEach(l => l.classList.remove("hit"));
  const chip = document.getElementById("pin-chip");
  if (!pinned) { chip.hidden = true; return; }
  const card = [...document.querySelectorAll("details.card")].find(d => d.dataset.function === pinned.fn);
  if (!card) return;
  card.querySelectorAll(".box").forEach(b => {
    if (b.dataset.name === pinned.box.name && b.dataset.addr === String(pinned.box.addr)) b.classList.add("pinned");
  });
  // The lines come from the IR (where each tile of the box is defined, used or yielded),
  // not from matching its name in the text: `pl.tile.load(` never mentions tile `load`.
  const lines = new Set(pinned.box.lines.map(String));
  card.querySelectorAll(".src-line").forEach(line => {
    if (lines.has(line.dataset.line)) line.classList.add("hit");
  });
  chip.textContent = `pinned ${pinned.box.name} \u00d7`;
  chip.hidden = false;
}

document.title = TITLE;
document.getElementById("title").textContent = TITLE;
document.getElementById("meta").textContent =
  `${DATA.dump} \u2014 ${DATA.pass ? "after " + DATA.pass : "no \"# after:\" line"}, backend ${DATA.backend}; ` +
  "address across, dump line down";
const toggles = document.getElementById("toggles");
for (const name of [...new Set(DATA.functions.flatMap(f => f.spaces.map(s => s.name)))]) {
  const label = el("label");
  const box = el("input");
  box.type = "checkbox";
  box.checked = true;
  box.dataset.space = name;
  box.addEventListener("change", () => { box.checked ? hidden.delete(name) : hidden.add(name); render(); });
  label.append(box, document.createTextNode(" " + name + " "));
  toggles.append(label);
}
document.getElementById("zoom-in").addEventListener("click", () => { zoom = Math.min(64, zoom * 2); render(); });
document.getElementById("zoom-out").addEventListener("click", () => { zoom = Math.max(1 / 16, zoom / 2); render(); });
document.querySelectorAll("input[name=axis]").forEach(r => r.addEventListener("change", () => { axis = r.value; render(); }));
document.querySelectorAll("input[name=scale]").forEach(r => r.addEventListener("change", () => { widths = r.value; render(); }));
let resizing = 0;
window.addEventListener("resize", () => { cancelAnimationFrame(resizing); resizing = requestAnimationFrame(placeLabels); });
document.getElementById("functions").addEventListener("toggle", placeLabels, true);  // a card opened
document.getElementById("pin-chip").addEventListener("click", () => { pinned = null; highlight(); });
document.addEventListener("keydown", e => { if (e.key === "Escape") { pinned = null; highlight(); } });
render();
</script>
</body>
</html>
"""
