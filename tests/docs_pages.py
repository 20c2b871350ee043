"""The docs site's pages as the tests read them: the code blocks a page marks to run, and
the page made into one script that runs them in order.

A block runs when the line before its fence is ``<!-- test -->`` (an HTML comment: the site
does not show it). A page's marked blocks share one module, as a reader pastes them one
after another: a later block uses what an earlier one defined. A ``bash`` block's lines run
as commands in the page's directory, ``pypto`` as ``python -m pypto`` of this interpreter.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
MARK = "<!-- test -->"
_BLOCK = re.compile(r"^```(\w+)[^\n]*\n(.*?)^```$", re.S | re.M)


def blocks(page: Path) -> list[tuple[str, str, bool]]:
    """Each fenced block of the page: (language, code, marked to run)."""
    text = page.read_text()
    found = []
    for match in _BLOCK.finditer(text):
        before = text[:match.start()].rstrip("\n").rsplit("\n", 1)[-1].strip()
        found.append((match.group(1), match.group(2), before == MARK))
    return found


def shell(commands: str) -> None:
    """A bash block's lines, each run as written (``pypto`` is this interpreter's), stopping
    at the first that fails."""
    for line in commands.splitlines():
        line = line.split("  #")[0].strip()
        if not line or line.startswith("#"):
            continue
        args = shlex.split(line)
        if args[0] == "pypto":
            args = [sys.executable, "-m", "pypto", *args[1:]]
        elif args[0] == "python":
            args = [sys.executable, *args[1:]]
        done = subprocess.run(args, capture_output=True, text=True, timeout=600)
        if done.returncode != 0:
            raise AssertionError(f"{line!r} exited {done.returncode}:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
        sys.stdout.write(done.stdout)


def script(page: Path) -> str:
    """The page's marked blocks as one Python module."""
    parts = ["from docs_pages import shell as _shell\n"]
    for language, code, marked in blocks(page):
        if not marked:
            continue
        if language == "python":
            parts.append(code)
        elif language == "bash":
            parts.append(f"_shell({code!r})\n")
        else:
            raise AssertionError(f"{page.name}: a {language} block cannot run; mark python or bash blocks")
    return "\n".join(parts)


def pages(under: str = "") -> list[Path]:
    return sorted((DOCS / under).rglob("*.md"))
