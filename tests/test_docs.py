"""The docs site: every code block a tutorial shows runs as written, every marked block on
the other pages too, the generated reference pages are in step with the code, and
``mkdocs build --strict`` passes (broken links, anchors and pages left out of the nav fail it)."""

import os
import runpy
import shutil
import subprocess
import sys

import pytest

from docs_pages import DOCS, ROOT, blocks, pages, script

RUNNABLE = ("python", "bash")
# the pages whose every block a reader pastes: each must run
TAUGHT = [DOCS / "quickstart.md", *pages("tutorials")]


def test_the_site_has_the_pages_the_nav_names():
    nav = (ROOT / "mkdocs.yml").read_text()
    for page in pages():
        assert str(page.relative_to(DOCS)) in nav, f"{page} is not in mkdocs.yml's nav"


@pytest.mark.parametrize("page", TAUGHT, ids=lambda p: str(p.relative_to(DOCS)))
def test_every_code_block_of_a_tutorial_is_marked_to_run(page):
    unmarked = [code.splitlines()[0] for language, code, marked in blocks(page) if language in RUNNABLE and not marked]
    assert not unmarked, f"{page.name}: mark these blocks <!-- test --> (they must run): {unmarked}"
    assert page.name == "index.md" or any(marked for *_, marked in blocks(page))


def test_the_quickstart_is_twenty_lines():
    (code,) = [code for language, code, marked in blocks(DOCS / "quickstart.md") if language == "python"]
    assert len(code.strip().splitlines()) <= 20


MARKED = [p for p in pages() if any(marked for *_, marked in blocks(p))]


@pytest.mark.parametrize("page", MARKED, ids=lambda p: str(p.relative_to(DOCS)))
def test_the_marked_blocks_of_a_page_run_in_order(page, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # builds, traces and pages the blocks write land here
    monkeypatch.syspath_prepend(str(ROOT / "tests"))
    path = tmp_path / (page.stem.replace("-", "_") + "_page.py")  # kernels need their source on disk
    path.write_text(script(page))
    runpy.run_path(str(path), run_name="docs_page")


def test_the_language_reference_is_what_the_docstrings_give():
    from pypto.tools import language_reference

    assert language_reference.main(["--check", str(DOCS / "reference" / "language.md")]) == 0, \
        "regenerate it: python -m pypto.tools.language_reference -o docs/reference/language.md"


def test_the_language_reference_lists_every_name_the_front_end_knows():
    from pypto.lang.vocabulary.names import BUILTINS, DECORATORS, ENUMS, TYPE_CTORS
    from pypto.tools.language_reference import listed

    names = listed()
    assert set(BUILTINS) | set(TYPE_CTORS) | set(DECORATORS) <= names
    assert set(ENUMS) - {"MemorySpace"} <= names  # pl.MemorySpace is pl.Mem


def test_mkdocs_build_strict(tmp_path):
    if shutil.which("mkdocs") is None:
        try:
            import mkdocs  # noqa: F401
        except ImportError:
            pytest.skip("mkdocs is not installed (pip install -e '.[docs]')")
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(tmp_path / "site")], cwd=ROOT,
                          capture_output=True, text=True, timeout=600, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert done.returncode == 0, done.stderr[-4000:]
    for page in ("quickstart/index.html", "tutorials/tuning/index.html", "reference/python-api/index.html"):
        assert (tmp_path / "site" / page).is_file()
    api = (tmp_path / "site" / "reference" / "python-api" / "index.html").read_text()
    assert "kernel_cycles" in api and "dataclasses.replace" in api  # mkdocstrings rendered the docstrings
