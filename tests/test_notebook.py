"""In a notebook: what a cell shows of a compiled program, a program, a function and a
report is a line (a table for the report), and ``pypto.tools.show`` puts the L0 trace, the
memory map and the swimlane inline — the pages the commands write, in a sandboxed frame
whose ``srcdoc`` escapes them — or says what to turn on to have one."""

import html
import re

import pytest
import torch

import pypto.language as pl
from pypto.runtime import RunConfig
from pypto.tools import show


@pl.jit
def scaled(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(2):
            t = pl.load(a, [i * 16, 0], [16, 64])
            pl.store(pl.mul(t, t), [i * 16, 0], out)
    return out


def _args():
    return torch.randn(32, 64), torch.zeros(32, 64)


@pytest.fixture(scope="module")
def build(tmp_path_factory):
    a, out = _args()
    compiled = scaled.compile(a, out, config=RunConfig(output_dir=tmp_path_factory.mktemp("nb") / "b", dump_passes=True,
                                                       enable_l0_trace=True, enable_chip_swimlane=True))
    return compiled, compiled.run(a, out)


def test_a_compiled_program_a_program_and_a_function_show_as_a_line(build):
    compiled, _ = build
    for shown in (repr(compiled), repr(compiled.program), repr(compiled.lowered),
                  *(repr(f) for f in compiled.lowered.functions)):
        assert "\n" not in shown and len(shown) < 300, shown
    assert f"output_dir={str(compiled.output_dir)!r}" in repr(compiled) and "scaled" in repr(compiled)


@pytest.mark.parametrize("view", ["trace of the report", "trace of the build", "memory map", "swimlane"])
def test_each_page_shows_inline_as_the_commands_write_it(build, view):
    compiled, report = build
    page = {"trace of the report": lambda: show.trace(report), "trace of the build": lambda: show.trace(compiled),
            "memory map": lambda: show.memory_map(compiled), "swimlane": lambda: show.swimlane(compiled)}[view]()
    shown = page._repr_html_()
    assert shown.startswith("<iframe ") and "sandbox='allow-scripts'" in shown
    srcdoc = re.search(r"srcdoc='([^']*)'", shown).group(1)  # escaped: no quote of the page ends it early
    assert html.unescape(srcdoc) == page.page and page.page.lstrip().lower().startswith("<!doctype html")
    assert "\n" not in repr(page)


def test_a_page_s_text_cannot_become_the_notebook_s_markup():
    page = show.Page("<p title='x'>a</p><script>alert(1)</script>", "it's <b>")
    shown = page._repr_html_()
    assert "<script>" not in shown and "<b>" not in shown and shown.count("'") == 8  # only the attributes' own


def test_show_outside_a_notebook_writes_the_page_and_says_where(build, capsys):
    import sys

    compiled, _ = build
    limit, loaded = sys.getrecursionlimit(), "IPython" in sys.modules
    path = show.swimlane(compiled).show()
    assert (sys.getrecursionlimit(), "IPython" in sys.modules) == (limit, loaded)  # nothing imported for it
    assert path.read_text() == show.swimlane(compiled).page and str(path) in capsys.readouterr().out
    path.unlink()


def test_without_the_artifact_each_view_says_what_to_turn_on(tmp_path):
    a, out = _args()
    plain = scaled.compile(a, out, config=RunConfig(output_dir=tmp_path / "plain"))
    report = plain.run(a, out)
    with pytest.raises(show.ShowError, match="enable_l0_trace=True"):
        show.trace(report)
    with pytest.raises(show.ShowError, match="enable_l0_trace=True"):
        show.trace(plain)
    with pytest.raises(show.ShowError, match="dump"):
        show.memory_map(plain)
    with pytest.raises(show.ShowError, match="enable_chip_swimlane=True"):
        show.swimlane(plain)
    with pytest.raises(show.ShowError, match="no build directory"):
        show.swimlane(scaled.compile(a, out, config=RunConfig(platform="ref")).run(a, out))
