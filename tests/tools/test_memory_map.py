"""The memory map of pass dumps: what it draws for the seed's kernels, what it refuses, and
that nothing in a dump becomes markup — checked in the page's own DOM, in Chromium."""

import subprocess
import sys

import pytest
import torch
from browser import Elements, dom, screenshot

import pypto.language as pl
from pypto.ir import PassDumpLevel
from pypto.runtime import RunConfig
from pypto.tools.memory_map import MapError, model, run


def dumped(seed, name, tmp_path, planner="PYPTO"):
    out = tmp_path / f"{name}_{planner}"
    seed[name].compile(seed["A"], torch.zeros(512, 128),
                       config=RunConfig(dump_passes=PassDumpLevel.EXPLICIT, output_dir=out, memory_planner=planner))
    return out


def cli(*args):
    return subprocess.run([sys.executable, "-m", "pypto.tools.memory_map", *map(str, args)], capture_output=True,
                          text=True, timeout=120)


def boxes(data):
    (fn,) = data["functions"]
    return [(b["name"], b["addr"], b["size"], b["dynamic"], b["slots"]) for b in fn["boxes"]]


def test_pipelined_draws_two_load_buffers_at_different_addresses(seed, tmp_path):
    data = model(next((dumped(seed, "pipelined", tmp_path) / "passes_dump").glob("*_after_AllocateMemoryAddr.py")))
    assert boxes(data) == [("tile", 0, 32768, False, 2), ("tile_1", 32768, 32768, False, 2)]


def test_single_buffer_draws_one(seed, tmp_path):
    data = model(next((dumped(seed, "single_buffer", tmp_path) / "passes_dump").glob("*_after_AllocateMemoryAddr.py")))
    assert boxes(data) == [("tile", 0, 32768, False, 1)]
    assert data["functions"][0]["boxes"][0]["aliases"] == ["exp"]  # exp runs in place: one box, "tile +1"


def test_explicit_slots_draws_one_two_slot_allocation(seed, tmp_path):
    data = model(next((dumped(seed, "explicit_slots", tmp_path) / "passes_dump").glob("*_after_AllocateMemoryAddr.py")))
    assert boxes(data) == [("tile", 0, 65536, True, 2)]
    (space,) = data["functions"][0]["spaces"]
    assert (space["name"], space["hwm"], space["capacity"]) == ("Vec", 65536, 188416)


def test_cli_defaults_next_to_the_dump_and_picks_the_allocation_dump(seed, tmp_path):
    out = dumped(seed, "pipelined", tmp_path)
    done = cli(out)
    assert done.returncode == 0, done.stderr
    page = out / "passes_dump" / "07_after_AllocateMemoryAddr.memory_map.html"
    assert page.is_file() and done.stdout.strip() == f"wrote {page}"
    assert cli(out / "passes_dump", "-p", "MemoryReuse", "-o", tmp_path / "reuse.html").returncode == 1  # no addresses
    assert cli(out / "passes_dump", "-o", tmp_path / "x.html", "-b", "a2a3").returncode == 0


@pytest.mark.parametrize("what", ["pre-allocation", "ptoas", "missing", "not a dump", "backend"])
def test_refusals_are_one_line_with_the_reason(seed, tmp_path, what):
    out = dumped(seed, "pipelined", tmp_path, "PTOAS" if what == "ptoas" else "PYPTO")
    dumps = out / "passes_dump"
    args, reason = {
        "pre-allocation": ([dumps / "05_after_InitMemRef.py"], "this dump is from before AllocateMemoryAddr"),
        "ptoas": ([out], "memory_planner=PTOAS, which skips AllocateMemoryAddr"),
        "missing": ([tmp_path / "nope.py"], "no such file or directory"),
        "not a dump": ([__file__], "not a pass dump this tool can read"),
        "backend": ([out, "-b", "a9"], "unknown backend 'a9'"),
    }[what]
    done = cli(*args)
    assert done.returncode == 1
    assert done.stderr.startswith("error: ") and done.stderr.count("\n") == 1 and reason in done.stderr
    if what == "ptoas":
        assert "Compare end to end instead" in done.stderr
        for dump in sorted(dumps.glob("*.py")):  # any single PTOAS dump is refused as well
            with pytest.raises(MapError, match="PTOAS"):
                model(dump)


def test_the_page_in_chromium_shows_cards_boxes_and_pills(seed, tmp_path):
    out = dumped(seed, "pipelined", tmp_path)
    page = run([str(out), "-o", str(tmp_path / "pipelined.html")])
    html = Elements(dom(page, tmp_path / "profile"))
    cards = html.select("details", "card")
    assert [c["attrs"]["data-function"] for c in cards] == ["pipelined_incore_0"]
    drawn = html.select("div", "box")
    assert sorted((b["attrs"]["data-name"], int(b["attrs"]["data-addr"])) for b in drawn) == [("tile", 0),
                                                                                               ("tile_1", 32768)]
    assert all("+1" in b["text"] for b in drawn)
    pills = html.select("span", "pill")
    assert [p["attrs"]["data-space"] for p in pills] == ["Vec"]
    assert "64.0 KiB / 184.0 KiB (34.8%)" in pills[0]["text"]
    assert len(html.select("div", "src-line")) == len(model(out / "passes_dump" / "07_after_AllocateMemoryAddr.py")
                                                      ["functions"][0]["source"])
    png = screenshot(page, tmp_path / "pipelined.png", tmp_path / "profile")
    assert png.stat().st_size > 10_000


def test_a_hostile_memref_name_is_text_not_markup(tmp_path):
    @pl.jit
    def hostile(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            for i in pl.range(2):
                t: pl.Tile[[16, 128], pl.FP32, pl.MemRef("</script><script>alert(1)</script>", slots=2)[i % 2], pl.Mem.Vec] = pl.load(a, [i * 16, 0], [16, 128])  # noqa: E501
                pl.store(t, [i * 16, 0], out)
        return out

    a, o = torch.randn(32, 128), torch.zeros(32, 128)
    hostile.compile(a, o, config=RunConfig(dump_passes=True, output_dir=tmp_path / "h"))
    page = run([str(tmp_path / "h"), "-o", str(tmp_path / "h.html")])
    raw = page.read_text()
    assert "</script><script>alert(1)" not in raw
    html = Elements(dom(page, tmp_path / "profile"))
    assert len(html.select("script")) == 1  # only the page's own
    (box,) = html.select("div", "box")
    assert box["attrs"]["data-memref"] == "</script><script>alert(1)</script>"
    assert any("</script><script>alert(1)</script>" in line["text"] for line in html.select("div", "src-line"))
