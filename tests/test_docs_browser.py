"""The built docs site in headless Chromium: the Quickstart and a tutorial render their code
(highlighted), their images (loaded, not broken) and the navigation; and the screenshots the
tuning and task-graph tutorials show are taken from the real pages.

The site is served from a local HTTP server on 127.0.0.1 (its pages link by directory,
which file:// URLs do not resolve), and a probe page on the same server reads the page it
frames once every image has settled, writing what it found into its own DOM."""

import functools
import http.server
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from docs_images import IMAGES, take
from docs_pages import DOCS, ROOT
from tools.browser import Elements, chromium, dom, screenshot

PROBE = """<!doctype html><html><body><pre id="result">pending</pre>
<iframe id="page" src="{page}" width="1400" height="900"></iframe>
<script>
const frame = document.getElementById("page");
frame.addEventListener("load", () => {{
  const d = frame.contentDocument;
  const article = d.querySelector("article");
  const images = [...article.querySelectorAll("img")];
  const visible = e => {{ const r = e.getBoundingClientRect(); return r.width > 0 && r.height > 0; }};
  function report() {{
    if (images.some(i => !i.complete)) return setTimeout(report, 50);
    const blocks = [...article.querySelectorAll("div.highlight pre")];
    document.getElementById("result").textContent = JSON.stringify({{
      title: article.querySelector("h1").textContent.replace("\\u00b6", "").trim(),
      blocks: blocks.length,
      shown: blocks.filter(visible).length,
      keywords: article.querySelectorAll("div.highlight span.kn, div.highlight span.k").length,
      images: images.map(i => [i.getAttribute("src"), i.naturalWidth, i.naturalHeight]),
      nav: [...d.querySelectorAll(".md-sidebar--primary .md-nav__link")].filter(visible)
             .map(a => a.textContent.trim()),
      next: [...d.querySelectorAll(".md-footer__link--next")].map(a => a.getAttribute("href")),
    }});
  }}
  report();
}});
</script></body></html>"""


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    try:
        import mkdocs  # noqa: F401
    except ImportError:
        pytest.skip("mkdocs is not installed (pip install -e '.[docs]')")
    chromium()
    out = tmp_path_factory.mktemp("site")
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(out)], cwd=ROOT,
                          capture_output=True, text=True, timeout=600, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert done.returncode == 0, done.stderr[-4000:]
    handler = functools.partial(_Quiet, directory=str(out))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield out, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    thread.join(timeout=10)


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # the test reads the page, not the server's log
        pass


def _probe(site, page: str, profile: Path) -> dict:
    out, base = site
    name = f"probe_{page.strip('/').replace('/', '_')}.html"
    (out / name).write_text(PROBE.format(page=page))
    (result,) = [e for e in Elements(dom(f"{base}/{name}", profile)).found if e["attrs"].get("id") == "result"]
    assert result["text"] != "pending", "the page did not load in the frame"
    return json.loads(result["text"])


def _rendered(found: dict, title: str, images: int) -> None:
    assert found["title"] == title
    assert found["blocks"] >= 1 and found["shown"] == found["blocks"], found  # every code block on screen
    assert found["keywords"] >= 3, found  # highlighted: `import`, `def`, ... as tokens
    assert len(found["images"]) == images
    for src, width, height in found["images"]:
        assert width > 100 and height > 50, f"{src} did not load ({width} x {height})"
    for entry in ("Install", "Quickstart", "1. Elementwise and pl.pipeline", "4. Tuning a kernel", "Architecture"):
        assert entry in found["nav"], found["nav"]


def test_the_quickstart_renders_its_code_and_the_navigation(site, tmp_path):
    found = _probe(site, "quickstart/", tmp_path / "profile")
    _rendered(found, "Quickstart", images=0)
    assert found["next"] and "tutorials" in found["next"][0]
    png = screenshot(site[0] / "quickstart" / "index.html", tmp_path / "quickstart.png", tmp_path / "profile")
    assert png.stat().st_size > 20_000


def test_the_tuning_tutorial_renders_its_code_screenshots_and_the_navigation(site, tmp_path):
    found = _probe(site, "tutorials/tuning/", tmp_path / "profile")
    _rendered(found, "4. Tuning a kernel", images=2)
    assert sorted(Path(src).name for src, *_ in found["images"]) == ["memory-map.png", "trace.png"]
    png = screenshot(site[0] / "tutorials" / "tuning" / "index.html", tmp_path / "tuning.png", tmp_path / "profile",
                     size=(1400, 2400))
    assert png.stat().st_size > 40_000


def test_the_tutorials_screenshots_are_taken_from_the_real_pages(tmp_path):
    """The pictures of docs/images/ are what this takes (``python dev/docs_images.py`` writes
    them there): the trace, memory map and swimlane pages of the tutorials' kernels."""
    chromium()
    taken = take(tmp_path / "images", tmp_path / "work")
    assert [p.name for p in taken] == list(IMAGES)
    for png in taken:
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 20_000
        assert (DOCS / "images" / png.name).is_file(), f"docs/images/{png.name}: run python dev/docs_images.py"
    shown = "".join(p.read_text() for p in (DOCS / "tutorials").glob("*.md"))
    assert all(f"../images/{name}" in shown for name in IMAGES)
