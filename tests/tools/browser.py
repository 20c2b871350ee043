"""Headless Chromium for the page tests: the DOM after the page's script ran, and screenshots."""

from __future__ import annotations

import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def chromium() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        pytest.skip("chromium is not installed (.ci/run installs Debian's)")
    return path


def _run(args, profile: Path) -> subprocess.CompletedProcess:
    return subprocess.run([chromium(), *FLAGS, f"--user-data-dir={profile}", *args], capture_output=True, text=True,
                          timeout=120)


def dom(page: Path | str, profile: Path, fragment: str = "") -> str:
    """``page``: a file, or a URL (a page a local server serves); ``fragment``: the URL's
    ``#...`` (a page's view, say)."""
    url = page if isinstance(page, str) else page.resolve().as_uri()
    done = _run(["--virtual-time-budget=5000", "--window-size=1400,900", "--dump-dom", url + fragment], profile)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def screenshot(page: Path, png: Path, profile: Path, size=(1400, 800)) -> Path:
    done = _run([f"--screenshot={png}", f"--window-size={size[0]},{size[1]}", page.resolve().as_uri()], profile)
    assert done.returncode == 0 and png.is_file(), done.stderr[-2000:]
    return png


class Elements(HTMLParser):
    """Every element as (tag, attributes, text inside it)."""

    def __init__(self, html: str):
        super().__init__()
        self.found: list[dict] = []
        self.stack: list[dict] = []
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        node = {"tag": tag, "attrs": dict(attrs), "text": ""}
        self.found.append(node)
        if tag not in ("input", "meta", "br", "img", "link"):
            self.stack.append(node)

    def handle_endtag(self, tag):
        while self.stack:
            if self.stack.pop()["tag"] == tag:
                break

    def handle_data(self, data):
        for node in self.stack:
            node["text"] += data

    def select(self, tag: str, cls: str | None = None) -> list[dict]:
        return [e for e in self.found if e["tag"] == tag and (cls is None or cls in e["attrs"].get("class", "").split())]
