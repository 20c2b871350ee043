"""The tools' timeline viewer in headless Chromium: a time axis in cycles and microseconds,
the view range from the URL (zoom), labels only where they fit (measured by the page in
the browser's layout), and a 100,000-instruction trace drawn as shaded aggregate blocks,
with only what is in view in the DOM."""

import json
import random
import re

import pytest

from pypto.tools import clean_sim_trace as cst
from pypto.tools.trace_page import model, render

from browser import Elements, dom, screenshot

PIPES = {"MTE2": "TLOAD", "VEC": "TADD", "MTE3": "TSTORE"}


def synthetic(n: int, seed: int = 1) -> dict:
    """A cleaned trace of ``n`` instructions on one vector core, a load, an add and a store
    every 60 cycles, with the flags between them."""
    rng = random.Random(seed)
    events = [{"name": "process_name", "ph": "M", "pid": 0, "args": {"name": "core0.veccore0"}}]
    for tid, pipe in enumerate(PIPES):
        events.append({"name": "thread_name", "ph": "M", "pid": 0, "tid": tid, "args": {"name": pipe}})
    t = 0
    for k in range(n // 3):
        for tid, (pipe, name) in enumerate(PIPES.items()):
            events.append({"name": name, "ph": "X", "pid": 0, "tid": tid, "ts": t + 50 * tid,
                           "dur": rng.randint(5, 40), "args": {"source": f"k.py:{3 + tid}"}})
        t += 60
    cleaned, stats = cst.clean({"traceEvents": events})
    assert stats["slices"] == n // 3 * 3
    return cleaned


def page(tmp_path, cleaned, name="t"):
    path = tmp_path / f"{name}.html"
    path.write_text(render(cleaned, f"trace {name}"))
    return path


def view_of(html: Elements) -> dict:
    (view,) = [e for e in html.found if e["attrs"].get("id") == "view"]
    return view["attrs"]


def check_labels_fit(html: Elements) -> int:
    """Every label the page shows fits its block: the page's own measurement, and ours."""
    assert view_of(html)["data-overflows"] == "0"
    labelled = 0
    for s in html.select("div", "slice"):
        if s["text"]:
            width = float(re.search(r"width: ([0-9.]+)px", s["attrs"]["style"]).group(1))
            assert len(s["text"]) * 6.1 + 4 <= width + 0.5, (s["text"], width)
            labelled += 1
    return labelled


def agg_key(html: Elements) -> dict:
    """The legend's key for the shaded aggregate blocks."""
    (key,) = [e for e in html.found if e["attrs"].get("id") == "agg-key"]
    return key


def ticks(html: Elements, axis: str) -> list[float]:
    rows = [e for e in html.found if e["attrs"].get("data-axis") == axis]
    assert len(rows) == 1
    return [float(t["attrs"]["data-value"]) for t in html.select("span", "tick")
            if t["text"] and t in html.found and _inside(html, t, rows[0])]


def _inside(html, tick, row) -> bool:
    i, j = html.found.index(row), html.found.index(tick)
    nxt = next((k for k in range(i + 1, len(html.found)) if html.found[k]["tag"] == "div"), len(html.found))
    return i < j < nxt


def test_twelve_instructions_every_one_labelled_on_an_axis_of_cycles_and_microseconds(tmp_path):
    path = page(tmp_path, synthetic(12))
    html = Elements(dom(path, tmp_path / "profile"))
    slices = html.select("div", "slice")
    assert len(slices) == 12 and not html.select("div", "agg")
    assert check_labels_fit(html) >= 10  # wide enough at 1400 px for all but the one cut at the end
    cycles, us = ticks(html, "ticks"), ticks(html, "us")
    assert len(cycles) >= 4 and len(us) >= 4 and cycles == sorted(cycles)
    assert all(0 <= c <= 286 for c in cycles) and 0 < us[-1] < 286 / 1.8e3
    assert [e["text"] for e in html.select("div", "group")] == ["core0.veccore0"]
    assert [e["attrs"]["data-lane"] for e in html.select("div", "lane")] == ["MTE2", "VECTOR", "MTE3"]
    assert "hidden" in agg_key(html)["attrs"]  # nothing aggregated, nothing to explain
    assert [e["text"] for e in html.select("span", "key")][:3] == ["MTE2", "VECTOR", "MTE3"]
    assert "12 instructions on 1 core(s), 286 cycles (0.159 \u00b5s at 1.8 GHz)" in dom(path, tmp_path / "profile")
    assert screenshot(path, tmp_path / "t12.png", tmp_path / "profile").stat().st_size > 5_000


def test_zooming_in_shows_a_narrower_range_with_finer_ticks_and_fewer_labels(tmp_path):
    path = page(tmp_path, synthetic(12))
    zoomed = Elements(dom(path, tmp_path / "profile", "#t=100,160"))
    v = view_of(zoomed)
    assert (v["data-lo"], v["data-hi"]) == ("100", "160")
    shown = [(int(s["attrs"]["data-ts"]), int(s["attrs"]["data-dur"])) for s in zoomed.select("div", "slice")]
    assert shown and all(ts + dur >= 100 and ts <= 160 for ts, dur in shown)  # only what is in view
    cycles = ticks(zoomed, "ticks")
    assert cycles and all(100 <= c <= 160 for c in cycles) and cycles[1] - cycles[0] <= 10
    check_labels_fit(zoomed)


def test_a_hundred_thousand_instructions_aggregate_and_zoom_to_single_labelled_ones(tmp_path):
    cleaned = synthetic(100_000)
    path = page(tmp_path, cleaned, "big")
    html = Elements(dom(path, tmp_path / "profile"))
    v = view_of(html)
    blocks = html.select("div", "agg")
    assert blocks and int(v["data-elements"]) < 1_500  # a few per pixel column at most, not 100k
    assert sum(int(b["attrs"]["data-count"]) for b in blocks) + len(html.select("div", "slice")) == 99_999
    assert all(0.25 <= float(b["attrs"]["style"].split("opacity: ")[1].split(";")[0]) <= 1 for b in blocks)
    assert "busy" in blocks[0]["attrs"]["title"] and "zoom in" in blocks[0]["attrs"]["title"]
    assert "hidden" not in agg_key(html)["attrs"] and "zoom in to see each" in agg_key(html)["text"]
    assert len(ticks(html, "ticks")) >= 4 and len(ticks(html, "us")) >= 4
    check_labels_fit(html)
    zoomed = Elements(dom(path, tmp_path / "profile", "#t=600000,600600"))
    assert not zoomed.select("div", "agg") and check_labels_fit(zoomed) > 10
    assert (view_of(zoomed)["data-lo"], view_of(zoomed)["data-hi"]) == ("600000", "600600")
    assert screenshot(path, tmp_path / "big.png", tmp_path / "profile").stat().st_size > 5_000


def test_the_model_keeps_cycles_and_what_each_slice_came_with():
    m = model(synthetic(12))
    assert m["hz"] == 1.8e9 and m["axes"] == ["ticks", "us"] and m["unit"] == "cycles"
    (group,) = m["groups"]
    first = group["lanes"][0]["s"][0]
    assert first[0] == 0 and m["strings"][first[2]] == "TLOAD" and m["strings"][first[4]] == "source: k.py:3"
    json.dumps(m)  # the page's data is plain JSON


@pytest.mark.parametrize("hostile", ["</script><img src=x onerror=alert(1)>", "<b>bold</b>"])
def test_names_from_the_trace_are_text_never_markup(tmp_path, hostile):
    cleaned = synthetic(3)
    for e in cleaned["traceEvents"]:
        if e.get("ph") == "X":
            e["name"] = hostile
        if e.get("name") == "process_name":
            e["args"]["name"] = hostile
    html = Elements(dom(page(tmp_path, cleaned), tmp_path / "profile"))
    assert not html.select("img") and not html.select("b")
    assert [e["text"] for e in html.select("div", "group")] == [hostile]
