"""A notebook as its users see it: cells that compile and run a kernel and show its report,
its L0 trace, its memory map and its swimlane, executed by nbconvert in a real kernel, exported
to HTML and opened in headless Chromium. Each view renders inline — the report as a table, each
page in its own sandboxed frame of a real size — and the screenshot of the executed notebook is
taken."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from docs_pages import ROOT
from tools.browser import Elements, chromium, dom, screenshot

CELLS = [
    """import torch
import pypto.language as pl
from pypto.runtime import RunConfig
from pypto.tools import show

@pl.jit
def wide(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.pipeline(8, stage=2):
            t = pl.load(a, [i * 16, 0], [16, 256])
            pl.store(pl.exp(t), [i * 16, 0], out)
    return out

a, out = torch.randn(128, 256), torch.zeros(128, 256)
compiled = wide.compile(a, out, config=RunConfig(output_dir="build", dump_passes=True, enable_l0_trace=True,
                                                        enable_chip_swimlane=True))
report = compiled.run(a, out)""",
    "compiled",
    "report",
    "show.trace(report)",
    "show.memory_map(compiled)",
    "show.swimlane(compiled)",
]

# read in the exported page itself once it has laid out (a frame of a file:// page could not
# look into it): each output's text, tables and frames with their size, into <pre id=result>
PROBE = """<pre id="result">pending</pre><script>
window.addEventListener("load", () => {
  const size = e => { const r = e.getBoundingClientRect(); return [Math.round(r.width), Math.round(r.height)]; };
  const outputs = [...document.querySelectorAll(".jp-OutputArea-output")];
  document.getElementById("result").textContent = JSON.stringify(outputs.map(o => ({
    text: o.innerText.slice(0, 400),
    tables: [...o.querySelectorAll("table")].map(t => [...t.querySelectorAll("th, td")].map(c => c.textContent.trim())),
    frames: [...o.querySelectorAll("iframe")].map(f => ({size: size(f), sandbox: f.getAttribute("sandbox"),
                                                        srcdoc: (f.getAttribute("srcdoc") || "").length})),
  })));
});
</script>"""


@pytest.fixture(scope="module")
def notebook(tmp_path_factory):
    try:
        import nbformat
        from nbconvert import HTMLExporter
        from nbconvert.preprocessors import ExecutePreprocessor
    except ImportError:
        pytest.skip("nbconvert is not installed (pip install -e '.[notebook]')")
    chromium()
    work = tmp_path_factory.mktemp("notebook")
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in CELLS])
    with pytest.MonkeyPatch.context() as env:  # the kernel imports this checkout, as the test process does
        env.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
        ExecutePreprocessor(timeout=600, kernel_name="python3").preprocess(nb, {"metadata": {"path": str(work)}})
    body, _ = HTMLExporter().from_notebook_node(nb)
    page = work / "notebook.html"
    page.write_text(body)
    return nb, page


def _probe(page: Path, profile: Path) -> list[dict]:
    probe = page.parent / "probe.html"
    probe.write_text(page.read_text().replace("</body>", PROBE + "</body>"))
    (result,) = [e for e in Elements(dom(probe, profile)).found if e["attrs"].get("id") == "result"]
    assert result["text"] != "pending", "the notebook did not load in the frame"
    return json.loads(result["text"])


def test_every_cell_ran_and_each_view_has_its_inline_form(notebook):
    nb, _ = notebook
    outputs = [cell["outputs"] for cell in nb.cells]
    assert not [o for out in outputs for o in out if o["output_type"] == "error"]
    compiled, report, *pages = outputs[1:]
    assert compiled[0]["data"]["text/plain"].count("\n") == 0  # a line, not the program
    assert "<table" in report[0]["data"]["text/html"]
    for shown in pages:
        assert shown[0]["data"]["text/html"].startswith("<iframe ")


def test_the_executed_notebook_renders_a_table_and_three_framed_pages_in_chromium(notebook, tmp_path):
    _, page = notebook
    found = _probe(page, tmp_path / "profile")
    assert len(found) == 6, [f["text"][:60] for f in found]
    notes, compiled, report, *pages = found
    assert notes["text"].startswith("[l0_trace] wide_incore_0: wrote ")  # the run's own line, as printed
    assert "wide" in compiled["text"] and not compiled["frames"]
    (table,) = report["tables"]
    assert any("kernel" in cell for cell in table) and any("µs" in cell for cell in table), table
    for shown in pages:
        (frame,) = shown["frames"]
        width, height = frame["size"]
        assert width > 600 and height > 150, frame  # laid out at a readable size, not collapsed
        assert frame["sandbox"] == "allow-scripts" and frame["srcdoc"] > 1000
    png = screenshot(page, tmp_path / "notebook.png", tmp_path / "profile", size=(1400, 3000))
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 40_000
