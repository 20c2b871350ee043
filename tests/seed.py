"""The seed document's code blocks, found in the document itself.

A block is a maximal run of lines that parses as Python and mentions the kernel language
(prose lines never parse: they hold words in a row, or the '¶' of a heading).
"""

from __future__ import annotations

import ast
from pathlib import Path

SEED = Path(__file__).resolve().parent.parent / "docs" / "seed_tuning_the_incore_function.txt"


def code_blocks(text: str | None = None) -> list[str]:
    lines = (SEED.read_text() if text is None else text).splitlines()
    blocks, i = [], 0
    while i < len(lines):
        end = _longest_parse(lines, i)
        chunk = "\n".join(lines[i:end]) if end else ""
        if end and ("pl." in chunk or "import " in chunk):
            blocks.append(chunk.strip("\n") + "\n")
            i = end
        else:
            i += 1
    return blocks


def _longest_parse(lines, start: int) -> int | None:
    for end in range(len(lines), start, -1):
        chunk = "\n".join(lines[start:end])
        if not chunk.strip():
            continue
        try:
            ast.parse(chunk)
        except SyntaxError:
            continue
        return end
    return None


def runnable_program(platform: str) -> str:
    """The blocks that define and check the seed's kernels, as one module."""
    blocks = code_blocks()
    picked = [b for b in blocks if "RunConfig(platform=" in b or "check(" in b]
    return "\n\n".join(picked).replace("__PLATFORM__", platform)
