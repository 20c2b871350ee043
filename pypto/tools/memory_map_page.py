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
  .body { display: flex; gap: 12px; padding: 0 12px 12px; overflow-x: auto; }
  .source { margin: 0; padding-top: 22px; font: 12px/var(--line) ui-monospace, Menlo, Consolas, monospace; white-space: pre; min-width: 360px; max-width: 46vw; overflow-x: auto; overflow-y: hidden; flex: none; }
  .src-line { height: var(--line); padding-right: 8px; }
  .src-line .ln { display: inline-block; width: 3.5em; color: #9ca3af; text-align: right; margin-right: 10px; user-select: none; }
  .src-line.hit { background: #fef9c3; }
  .spaces { display: flex; gap: 10px; align-items: flex-start; }
  .space.hidden { display: none; }
  .space-title { height: 22px; font-weight: 600; font-size: 12px; white-space: nowrap; }
  .lane { position: relative; background: repeating-linear-gradient(to bottom, #fff 0, #fff var(--line), #f8fafc var(--line), #f8fafc calc(2 * var(--line))); border: 1px solid #e2e8f0; }
  .box { position: absolute; background: rgba(37, 99, 235, .18); border: 1px solid rgba(37, 99, 235, .8); border-radius: 3px; overflow: hidden; font: 11px/1.2 ui-monospace, Menlo, Consolas, monospace; padding: 1px 3px; cursor: pointer; white-space: nowrap; }
  .box.view { border-style: dashed; background: rgba(37, 99, 235, .08); }
  .box.conflict { border-color: #dc2626; background: rgba(220, 38, 38, .25); }
  .box.rotating { background: repeating-linear-gradient(135deg, rgba(37, 99, 235, .22) 0 4px, rgba(37, 99, 235, .06) 4px 8px); border-style: dotted; }
  .box.over { border-color: #dc2626; border-width: 2px; }
  .capacity { position: absolute; top: 0; bottom: 0; border-left: 2px solid #dc2626; }
  .box.pinned { outline: 3px solid #f59e0b; z-index: 3; }
  .slot { position: absolute; top: 0; bottom: 0; border-left: 1px dashed rgba(37, 99, 235, .8); }
  .hwm { position: absolute; top: 0; bottom: 0; border-left: 1px dashed #64748b; }
  .axis { display: flex; justify-content: space-between; color: var(--muted); font-size: 11px; }
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
    <span id="toggles">show </span>
    <span id="pin-chip" class="chip" hidden></span>
  </div>
</header>
<main id="functions"></main>
<script>
"use strict";
const DATA = /*__DATA__*/null;
const TITLE = /*__TITLE__*/"";
const LINE = 18, BASE_WIDTH = 640;
let zoom = 1, axis = "limit", pinned = null;
const hidden = new Set();

function el(tag, cls, text) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (text !== undefined) node.textContent = String(text);
  return node;
}
function kib(bytes) { return bytes >= 1024 ? (bytes / 1024).toFixed(1) + " KiB" : bytes + " B"; }
function hex(n) { return "0x" + n.toString(16).padStart(5, "0"); }

const maxCapacity = Math.max(1, ...DATA.functions.flatMap(f => f.spaces.map(s => s.capacity)));
const maxUsed = Math.max(1, ...DATA.functions.flatMap(f => f.spaces.map(s => s.hwm)));
function scale() { return zoom * BASE_WIDTH / (axis === "limit" ? maxCapacity : maxUsed); }

function render() {
  document.getElementById("zoom-level").textContent = zoom.toFixed(2) + "x";
  const main = document.getElementById("functions");
  const open = new Set([...main.querySelectorAll("details.card")].filter(d => !d.open).map(d => d.dataset.function));
  main.replaceChildren();
  const px = scale();
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
    const spaces = el("div", "spaces");
    for (const s of fn.spaces) {
      const panel = el("div", "space" + (hidden.has(s.name) ? " hidden" : ""));
      panel.dataset.space = s.name;
      const limit = axis === "limit" ? s.capacity : s.hwm;
      panel.append(el("div", "space-title", `${s.name} (${kib(limit)})` + (s.over ? " OVER CAPACITY" : "")));
      const lane = el("div", "lane");
      // Wide enough for every box: one past the capacity is drawn where it is, not clamped.
      const width = Math.max(72, Math.max(limit, s.hwm) * px);
      lane.style.width = width + "px";
      lane.style.height = (fn.source.length * LINE) + "px";
      for (const b of fn.boxes.filter(b => b.space === s.name)) {
        const box = el("div", "box" + (b.kind === "view" ? " view" : b.kind === "conflict" ? " conflict" : "") +
          (b.dynamic ? " rotating" : "") + (b.over ? " over" : ""));
        const label = b.aliases.length ? `${b.name} +${b.aliases.length}` : b.name;
        box.append(el("span", "label", b.dynamic ? `${label} [${b.index}] rotating x${b.slots}` : label));
        Object.assign(box.dataset, { name: b.name, space: b.space, addr: b.addr, size: b.size, memref: b.memref,
          kind: b.kind, slots: b.slots, start: b.start, end: b.end, rotating: b.dynamic, over: b.over });
        box.style.left = (b.addr * px) + "px";
        box.style.width = Math.max(2, b.size * px) + "px";
        box.style.top = ((b.start - fn.first) * LINE) + "px";
        box.style.height = Math.max(LINE - 2, (b.end - b.start + 1) * LINE - 2) + "px";
        box.title = [`${[b.name, ...b.aliases].join(", ")}`, `${b.dtype}[${b.shape.join("x")}] ${b.op}`,
          `${b.memref}${b.slots > 1 ? ` (${b.slots} slots, slot ${b.index})` : ""} @ ${hex(b.addr)} +${b.size} B`,
          `lines ${b.start}-${b.end}${b.kind !== "tile" ? " (" + b.kind + ")" : ""}`,
          ...(b.dynamic ? [`rotating: slot ${b.index} of ${b.slots}, so drawn over the whole allocation`] : []),
          ...(b.over ? [`runs past the end of ${b.space} (${s.capacity} B)`] : [])].join("\n");
        for (let k = 1; b.dynamic && k < b.slots; k++) {  // slot boundaries of a rotating allocation
          const slot = el("div", "slot");
          slot.style.left = (k * b.size / b.slots * px) + "px";
          box.append(slot);
        }
        box.addEventListener("click", event => { event.stopPropagation(); pin(b, card); });
        lane.append(box);
      }
      const rule = el("div", "hwm");
      rule.style.left = Math.min(s.hwm * px, width - 1) + "px";
      rule.title = `high-water mark ${s.hwm} B`;
      lane.append(rule);
      if (s.over) {
        const end = el("div", "capacity");
        end.style.left = (s.capacity * px) + "px";
        end.title = `capacity ${s.capacity} B`;
        lane.append(end);
      }
      const ticks = el("div", "axis");
      ticks.style.width = width + "px";
      ticks.append(el("span", "", "0"), el("span", "", kib(limit)));
      panel.append(lane, ticks);
      spaces.append(panel);
    }
    body.append(spaces);
    card.append(body);
    main.append(card);
  });
  if (pinned) highlight();
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
  "address across, dump line down; one byte scale for every space";
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
document.getElementById("pin-chip").addEventListener("click", () => { pinned = null; highlight(); });
document.addEventListener("keydown", e => { if (e.key === "Escape") { pinned = null; highlight(); } });
render();
</script>
</body>
</html>
"""
