"""The memory map of pass dumps: what it draws for the seed's kernels, what it refuses, and
that nothing in a dump becomes markup — checked in the page's own DOM, in Chromium."""

import os
import subprocess
import sys

import pytest
import torch
from browser import Elements, dom, screenshot
from hypothesis import given
from hypothesis import strategies as st

import pypto.language as pl
from pypto.fuzz import strategies as ps
from pypto.ir import PassDumpLevel
from pypto.runtime import RunConfig
from pypto.tools.memory_map import MapError, main, model, run


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
    page = out / "passes_dump" / "11_after_AllocateMemoryAddr.memory_map.html"
    assert page.is_file() and done.stdout.strip() == f"wrote {page}"
    assert cli(out / "passes_dump", "-p", "MemoryReuse", "-o", tmp_path / "reuse.html").returncode == 1  # no addresses
    assert cli(out / "passes_dump", "-o", tmp_path / "x.html", "-b", "a2a3").returncode == 0


@pytest.mark.parametrize("what", ["pre-allocation", "ptoas", "missing", "not a dump", "backend"])
def test_refusals_are_one_line_with_the_reason(seed, tmp_path, what):
    out = dumped(seed, "pipelined", tmp_path, "PTOAS" if what == "ptoas" else "PYPTO")
    dumps = out / "passes_dump"
    args, reason = {
        "pre-allocation": ([dumps / "09_after_InitMemRef.py"], "this dump is from before AllocateMemoryAddr"),
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
    assert len(html.select("div", "src-line")) == len(model(out / "passes_dump" / "11_after_AllocateMemoryAddr.py")
                                                      ["functions"][0]["source"])
    png = screenshot(page, tmp_path / "pipelined.png", tmp_path / "profile")
    assert png.stat().st_size > 10_000


def test_a_matmul_map_shows_every_space_at_1400_px_with_every_label_whole(tmp_path):
    """Mat (512 KiB) beside Left, Right and Acc (64-128 KiB): all four in view without
    scrolling sideways, and each label whole — in its box, or beside a box too narrow for it
    (the 16 KiB loads in Mat) — as the page measured its own layout."""
    from pypto.examples import b_trans_matmul as mm

    a, w = mm.inputs()
    mm.matmul_row_major.compile(a, w, torch.zeros(mm.M, mm.N),
                                config=RunConfig(dump_passes=PassDumpLevel.EXPLICIT, output_dir=tmp_path / "mm"))
    page = run([str(tmp_path / "mm"), "-o", str(tmp_path / "mm.html")])
    html = Elements(dom(page, tmp_path / "profile"))  # a 1400 x 900 window
    (main,) = [e for e in html.found if e["attrs"].get("id") == "functions"]
    measured = main["attrs"]
    assert measured["data-hscroll"] == "0" and measured["data-overflows"] == "0"
    assert measured["data-tooltip-only"] == "0"  # every label is on the page somewhere
    assert [s["attrs"]["data-space"] for s in html.select("div", "space")] == ["Mat", "Left", "Right", "Acc"]
    drawn = html.select("div", "box")
    besides = [e["text"] for e in html.select("div", "beside")]
    aside = [b for b in drawn if "aside" in _label(html, b)["attrs"]["class"].split()]
    assert sorted(besides) == sorted(b["text"] for b in aside) and "load" in besides  # the loads of Mat
    for b in drawn:  # a label left in its box fits it (11 px monospace: ~6.6 px a character, 3 px padding a side)
        if b not in aside:
            assert len(b["text"]) * 6.6 + 6 <= float(b["attrs"]["data-px"]) + 1, (b["text"], b["attrs"]["data-px"])
    assert any(b["text"] == "acc +5" for b in drawn)  # acc and the five tiles carried or computed in its bytes
    (legend,) = html.select("div", "legend")
    assert "name +N" in legend["text"] and "computed in place" in legend["text"]
    assert screenshot(page, tmp_path / "mm.png", tmp_path / "profile").stat().st_size > 10_000


def _label(html: Elements, box: dict) -> dict:
    """A box's label: the element right after it."""
    label = html.found[html.found.index(box) + 1]
    assert label["tag"] == "span" and "label" in label["attrs"]["class"].split()
    return label


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


# ----------------------------------------------------------------------------- what a pin highlights


def allocation_dump(seed, name, tmp_path, planner="PYPTO"):
    return next((dumped(seed, name, tmp_path, planner) / "passes_dump").glob("*_after_AllocateMemoryAddr.py"))


def clicked(page, box_name, tmp_path):
    """The page's DOM after a click on the box named ``box_name``."""
    html = page.read_text().replace(
        "</body>", f"<script>document.querySelector('.box[data-name=\"{box_name}\"]').click()</script></body>")
    copy = tmp_path / f"clicked_{box_name}.html"
    copy.write_text(html)
    return Elements(dom(copy, tmp_path / "profile"))


def hit_lines(html):
    return sorted(int(e["attrs"]["data-line"]) for e in html.select("div", "src-line")
                  if "hit" in e["attrs"]["class"].split())


def lines_matching(dump, *patterns):
    return sorted(k for k, text in enumerate(dump.read_text().splitlines(), 1) if any(p in text for p in patterns))


def test_pinning_tile_highlights_its_own_lines_not_every_pl_tile_op(seed, tmp_path):
    dump = allocation_dump(seed, "pipelined", tmp_path)
    want = lines_matching(dump, " tile: ", " exp: ", "store(exp,")  # `tile +1`: tile and exp, computed in place
    boxes = {b["name"]: b for b in model(dump)["functions"][0]["boxes"]}
    assert boxes["tile"]["lines"] == want
    assert boxes["tile_1"]["lines"] == lines_matching(dump, " tile_1: ", " exp_1: ", "store(exp_1,")
    page = run([str(dump), "-o", str(tmp_path / "p.html")])
    assert hit_lines(clicked(page, "tile", tmp_path)) == want  # not the `pl.tile.load(` of tile_1


def test_pinning_a_tile_named_like_an_op(tmp_path):
    @pl.jit
    def ops_as_names(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            load = pl.load(a, [0, 0], [16, 128])
            other = pl.load(a, [16, 0], [16, 128])
            pl.store(pl.add(load, other), [0, 0], out)
        return out

    ops_as_names.compile(torch.randn(32, 128), torch.zeros(16, 128),
                         config=RunConfig(dump_passes=PassDumpLevel.EXPLICIT, output_dir=tmp_path / "o"))
    dump = next((tmp_path / "o" / "passes_dump").glob("*_after_AllocateMemoryAddr.py"))
    (box,) = [b for b in model(dump)["functions"][0]["boxes"] if b["name"] == "load"]
    assert box["aliases"] == ["add"]  # the add runs in place: `load +1`
    want = lines_matching(dump, " load: ", " add: ", "store(add,")
    assert len(want) == 3 and box["lines"] == want
    page = run([str(dump), "-o", str(tmp_path / "p.html")])
    hits = hit_lines(clicked(page, "load", tmp_path))
    assert hits == want and not set(hits) & set(lines_matching(dump, " other: "))  # not `other = pl.tile.load(`


# ----------------------------------------------------------------------------- impossible dumps


def cli_here(capsys, *args):
    """``cli`` in this process: the same exit code and output, without a Python start-up."""
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return subprocess.CompletedProcess(args, code, out, err)


def edited(dump, tmp_path, old, new, name="edited.py"):
    text = dump.read_text()
    assert old in text
    path = tmp_path / name
    path.write_text(text.replace(old, new))
    return path


SLOT_1 = 'pl.MemRef("pipe_tile", 0, 65536, slots=2)[1]'
SLOTS = 'pl.MemRef("pipe_tile", 0, 65536, slots=2)'


@pytest.mark.parametrize("old, new, reason", [
    (SLOT_1, 'pl.MemRef("pipe_tile", 0, 65536, slots=2)[7]', "slot 7 is out of range for 'pipe_tile', which has 2 slots"),
    (SLOT_1, 'pl.MemRef("pipe_tile", 0, 65536, slots=2)[-1]', "slot -1 is out of range for 'pipe_tile'"),
    (SLOTS, 'pl.MemRef("pipe_tile", -4096, 65536, slots=2)', "tile 'tile': MemRef 'pipe_tile' at negative address -4096"),
    (SLOTS, f'pl.MemRef("pipe_tile", {10 ** 26}, 65536, slots=2)', "starts past the end of Vec (188416 B)"),
    (SLOTS, f'pl.MemRef("pipe_tile", 0, {10 ** 30}, slots=2)', "is larger than all of Vec (188416 B)"),
    (SLOTS, 'pl.MemRef("pipe_tile", 0, 65535, slots=2)', "MemRef 'pipe_tile' of 65535 B does not split into 2 equal"),
    (SLOT_1, 'pl.MemRef("pipe_tile", 0, 131072, slots=2)[1]', "MemRef 'pipe_tile' is 131072 B at 0x0 in Vec in 2 slots"),
    (SLOTS, 'pl.MemRef("pipe_tile", 0, 32768, slots=2)', "needs 32768 B, but its slot of MemRef 'pipe_tile' holds only"),
], ids=["index-7", "index-negative", "address-negative", "address-absurd", "size-absurd", "size-odd",
        "memref-disagrees", "slot-too-small"])
def test_impossible_dumps_are_refused_naming_the_file_and_the_tile(seed, tmp_path, capsys, old, new, reason):
    path = edited(allocation_dump(seed, "pipelined", tmp_path), tmp_path, old, new)
    done = cli_here(capsys, path, "-o", tmp_path / "x.html")
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.startswith(f"error: {path}: ") and done.stderr.count("\n") == 1, done.stderr
    assert reason in done.stderr, done.stderr
    assert not (tmp_path / "x.html").exists()


def test_a_tile_past_the_end_of_its_space_is_drawn_where_it_is_and_flagged(seed, tmp_path):
    path = edited(allocation_dump(seed, "pipelined", tmp_path), tmp_path, SLOTS,
                  'pl.MemRef("pipe_tile", 150016, 65536, slots=2)')  # slot 1 ends at 215552 > 188416
    data = model(path)
    (space,) = data["functions"][0]["spaces"]
    assert space["over"] and space["hwm"] == 215552
    assert {b["name"]: b["over"] for b in data["functions"][0]["boxes"]} == {"tile": False, "tile_1": True}
    html = Elements(dom(run([str(path), "-o", str(tmp_path / "over.html")]), tmp_path / "profile"))
    (box,) = [b for b in html.select("div", "box") if b["attrs"]["data-name"] == "tile_1"]
    style = {k.strip(): v for k, v in (part.split(":") for part in box["attrs"]["style"].replace("%", "").split(";")
                                       if part.strip())}
    assert float(style["left"]) == pytest.approx(100 * 182784 / 215552)  # where it is, not clamped
    assert float(style["left"]) + float(style["width"]) == pytest.approx(100)  # and the lane holds all of it
    assert box["attrs"]["data-over"] == "true" and "over" in box["attrs"]["class"].split()
    assert "over capacity" in html.select("span", "pill")[0]["text"]
    assert html.select("div", "capacity")


# ----------------------------------------------------------------------------- labels and bad files


def test_the_after_label_comes_from_the_dump_not_its_file_name(seed, tmp_path):
    dump = allocation_dump(seed, "pipelined", tmp_path)
    renamed = tmp_path / "03_after_Bogus.py"
    renamed.write_text(dump.read_text())
    assert model(renamed)["pass"] == "AllocateMemoryAddr"
    html = Elements(dom(run([str(renamed), "-o", str(tmp_path / "r.html")]), tmp_path / "profile"))
    (meta,) = [e for e in html.found if e["attrs"].get("id") == "meta"]
    assert "after AllocateMemoryAddr" in meta["text"] and "Bogus" not in meta["text"].split("\u2014")[1]
    headless = tmp_path / "headless.py"
    headless.write_text("\n".join(x for x in dump.read_text().splitlines() if not x.startswith("# after:")))
    assert model(headless)["pass"] is None


@pytest.mark.parametrize("content, reason", [
    (b"# \xff\xfe latin-1\nimport pypto.language as pl\n", "not a pass dump (not UTF-8 text)"),
    (bytes(range(256)) * 4, "not a pass dump (not UTF-8 text)"),
    (b"", "not a pass dump this tool can read: expected one @pl.program class, found 0"),
], ids=["latin-1", "random-bytes", "empty"])
def test_files_that_are_not_dumps_get_one_clear_line(tmp_path, capsys, content, reason):
    path = tmp_path / "x.py"
    path.write_bytes(content)
    done = cli_here(capsys, path)
    assert done.returncode == 1 and done.stderr == f"error: {path}: {reason}\n"


def test_a_visualize_data_bin_is_not_a_dump(seed, tmp_path):
    out = torch.zeros(512, 128)
    compiled = seed["single_buffer"].compile(seed["A"], out, config=RunConfig(enable_l0_trace=True,
                                                                               output_dir=tmp_path / "t"))
    path = compiled.run(seed["A"], out).trace_dir / "simulator" / "visualize_data.bin"
    done = cli(path)
    assert done.returncode == 1 and done.stderr == f"error: {path}: not a pass dump (not UTF-8 text)\n"


@pytest.mark.parametrize("size", [0x41, 0x7f, 0x80, 0xc3, 0x1234, 0x4141])
def test_a_container_is_refused_alike_whatever_its_block_sizes_spell(tmp_path, capsys, size):
    """A block header's size field is valid UTF-8 for some sizes and not for others: what
    decides is the NUL bytes every container holds, not the length of a path in it."""
    from pypto.sim.reports.insight_format import TRACE, encode_block, write_blocks

    path = tmp_path / "visualize_data.bin"
    path.write_bytes(write_blocks([encode_block(TRACE, b"x" * size)]))
    done = cli_here(capsys, path)
    assert done.returncode == 1 and done.stderr == f"error: {path}: not a pass dump (not UTF-8 text)\n"


def test_text_with_a_nul_byte_is_not_a_dump(seed, tmp_path, capsys):
    dump = allocation_dump(seed, "pipelined", tmp_path)
    path = tmp_path / "nul.py"
    path.write_text(dump.read_text().replace("\n", "\n\0", 1))
    done = cli_here(capsys, path)
    assert done.returncode == 1 and done.stderr == f"error: {path}: not a pass dump (not UTF-8 text)\n"


# ----------------------------------------------------------------------------- every bad input: one line


def one_line(done, *reasons):
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.startswith("error: ") and done.stderr.count("\n") == 1, done.stderr
    for reason in reasons:
        assert reason in done.stderr, done.stderr
    return done.stderr


def test_a_memref_name_that_is_not_a_literal_is_refused_and_never_run(seed, tmp_path, capsys):
    dump = allocation_dump(seed, "pipelined", tmp_path)
    marker = tmp_path / "PWNED"
    path = edited(dump, tmp_path, SLOTS, f"pl.MemRef(__import__('os').system('touch {marker}'), 0, 65536, slots=2)")
    one_line(cli_here(capsys, path, "-o", tmp_path / "x.html"), f"error: {path}: not a pass dump this tool can read")
    assert not marker.exists() and not (tmp_path / "x.html").exists()


@pytest.mark.parametrize("depth", [1000, 5000, 20000])
def test_deeply_nested_expressions_are_refused(seed, tmp_path, capsys, depth):
    dump = allocation_dump(seed, "pipelined", tmp_path)
    text = dump.read_text()
    loop = next(x for x in ("pl.range(", "pl.pipeline(") if x in text)
    path = tmp_path / "deep.py"
    path.write_text(text.replace(loop, loop + "-" * depth, 1))
    one_line(cli_here(capsys, path), f"error: {path}: not a pass dump this tool can read")


@pytest.mark.parametrize("name", ["a**b", "**", "*", "x/y", "../passes_dump/08", "", "Alloc[ate]", "a b"])
def test_a_pass_name_is_an_identifier_not_a_pattern(seed, tmp_path, capsys, name):
    out = dumped(seed, "pipelined", tmp_path)
    one_line(cli_here(capsys, out, "-p", name), f"-p {name!r} is not a pass name")


def test_a_directory_without_the_dump_names_the_dumps_it_has(seed, tmp_path, capsys):
    out = dumped(seed, "pipelined", tmp_path)
    text = one_line(cli_here(capsys, out, "-p", "NoSuchPass"), "no '*_after_NoSuchPass.py' dump under",
                    "01_after_OutlineIncoreScopes.py")
    assert "Pass -p with one of those pass names" in text
    empty = tmp_path / "empty"
    empty.mkdir()
    one_line(cli_here(capsys, empty), "Compile with dump_passes enabled")


def test_a_directory_named_like_a_dump_is_not_read(seed, tmp_path, capsys):
    build = tmp_path / "b"
    (build / "passes_dump" / "11_after_AllocateMemoryAddr.py").mkdir(parents=True)
    one_line(cli_here(capsys, build), "no '*_after_AllocateMemoryAddr.py' dump under")


def test_a_huge_file_is_refused_without_reading_it(tmp_path, capsys):
    from pypto.tools.memory_map import MAX_DUMP_BYTES

    path = tmp_path / "huge.py"
    with path.open("wb") as f:
        f.truncate(MAX_DUMP_BYTES + 1)  # sparse: nothing is written
    one_line(cli_here(capsys, path), f"{path}: not a pass dump: {MAX_DUMP_BYTES + 1} bytes, more than the 16 MiB")


def test_special_files_and_missing_paths(tmp_path, capsys):
    one_line(cli_here(capsys, "/dev/null"), "/dev/null: not a regular file or a directory")
    link = tmp_path / "dangling.py"
    link.symlink_to(tmp_path / "gone.py")
    one_line(cli_here(capsys, link), "no such file or directory")
    one_line(cli_here(capsys, "bad\0path"))  # main(argv) from Python: argv from a shell holds no NUL


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root reads every file")
def test_an_unreadable_dump(seed, tmp_path, capsys):
    path = tmp_path / "locked.py"
    path.write_text(allocation_dump(seed, "pipelined", tmp_path).read_text())
    path.chmod(0)
    one_line(cli_here(capsys, path), f"{path}: cannot read it: Permission denied")


def test_an_output_that_cannot_be_written_and_a_file_name_with_a_newline(seed, tmp_path, capsys):
    dump = allocation_dump(seed, "pipelined", tmp_path)
    one_line(cli_here(capsys, dump, "-o", tmp_path), f"{tmp_path}: cannot write the page")
    odd = tmp_path / "two\nlines.py"
    odd.write_text("not a dump")
    one_line(cli_here(capsys, odd), "two\\nlines.py")
    one_line(cli_here(capsys, dump, "--bogus"), "unrecognized arguments: --bogus")


@pytest.fixture(scope="module")
def allocation_text(tmp_path_factory):
    @pl.jit
    def two_buffers(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            for i in pl.pipeline(4, stage=2):
                t = pl.load(a, [i * 16, 0], [16, 128])
                pl.store(pl.exp(t), [i * 16, 0], out)
        return out

    out = tmp_path_factory.mktemp("fuzzed") / "build"
    two_buffers.compile(torch.randn(64, 128), torch.zeros(64, 128),
                        config=RunConfig(dump_passes=PassDumpLevel.EXPLICIT, output_dir=out))
    return next((out / "passes_dump").glob("*_after_AllocateMemoryAddr.py")).read_text()


@given(st.data())
def test_property_a_damaged_dump_is_drawn_or_refused_in_one_line(allocation_text, data):
    """Bytes deleted, inserted or replaced anywhere in a real dump: the tool draws it or
    says why not, in one line and exit 1 — never a traceback."""
    import contextlib
    import io
    import tempfile
    from pathlib import Path

    raw = bytearray(allocation_text.encode())
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(0, len(raw)))
        edit = data.draw(st.sampled_from(["delete", "insert", "replace"]))
        junk = data.draw(st.binary(min_size=1, max_size=6) | st.sampled_from(
            [b"(", b")", b"-", b"[", b"]", b":", b",", b"\n", b"    ", b"pl.", b"9" * 30, b"'", b"0x"]))
        if edit == "delete":
            del raw[at:at + len(junk)]
        elif edit == "insert":
            raw[at:at] = junk
        else:
            raw[at:at + len(junk)] = junk
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp, "09_after_AllocateMemoryAddr.py")
        path.write_bytes(bytes(raw))
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            code = main([str(path), "-o", str(Path(tmp, "m.html"))])
    if code:
        assert code == 1 and err.getvalue().startswith("error: ") and err.getvalue().count("\n") == 1
    else:
        assert err.getvalue() == ""


# ----------------------------------------------------------------------------- rotating slots


def test_co_live_rotating_slots_are_drawn_hatched_over_the_allocation(tmp_path):
    @pl.jit
    def colive(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            for i in pl.range(4):
                x: pl.Tile[[16, 128], pl.FP32, pl.MemRef("ring", slots=2)[i % 2], pl.Mem.Vec] = pl.load(a, [i * 16, 0], [16, 128], target_memory=pl.Mem.Vec)  # noqa: E501
                y: pl.Tile[[16, 128], pl.FP32, pl.MemRef("ring", slots=2)[(i + 1) % 2], pl.Mem.Vec] = pl.load(a, [i * 16 + 64, 0], [16, 128], target_memory=pl.Mem.Vec)  # noqa: E501
                pl.store(pl.add(x, y), [i * 16, 0], out)
        return out

    colive.compile(torch.randn(128, 128), torch.zeros(64, 128),
                   config=RunConfig(dump_passes=PassDumpLevel.EXPLICIT, output_dir=tmp_path / "c"))
    page = run([str(tmp_path / "c"), "-o", str(tmp_path / "c.html")])
    drawn = {b["name"]: b for b in model(next((tmp_path / "c" / "passes_dump").glob("*_after_AllocateMemoryAddr.py")))
             ["functions"][0]["boxes"]}
    assert {(b["addr"], b["size"], b["dynamic"], b["kind"]) for b in drawn.values()} == {(0, 16384, True, "tile")}
    html = Elements(dom(page, tmp_path / "profile"))
    boxes = html.select("div", "box")
    assert len(boxes) == 2 and all("rotating" in b["attrs"]["class"].split() for b in boxes)
    assert all("rotating x2" in b["text"] for b in boxes)
    assert not any({"conflict", "view"} & set(b["attrs"]["class"].split()) for b in boxes)


@given(ps.tile_programs())
def test_property_every_allocation_dump_the_compiler_writes_is_drawn(case):
    """The refusals above never fire on the compiler's own output."""
    import tempfile
    from pathlib import Path

    from pypto.runtime.compiled import compile_program

    with tempfile.TemporaryDirectory() as tmp:
        params = [p.name for p in case.program.function(case.entry).params]
        compile_program(case.program, params, RunConfig(platform="ref", dump_passes=PassDumpLevel.EXPLICIT,
                                                        output_dir=tmp), write=True)
        dumps = sorted(Path(tmp, "passes_dump").glob("*_after_AllocateMemoryAddr.py"))
        assert dumps
        data = model(dumps[-1])
        assert data["pass"] == "AllocateMemoryAddr"
        assert not any(s["over"] for fn in data["functions"] for s in fn["spaces"])
