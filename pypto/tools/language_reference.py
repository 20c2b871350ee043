"""The language reference of the docs (``docs/reference/language.md``): every control word,
decorator, annotation and enum of ``pypto.language``, from the docstrings ``help()`` shows.

    python -m pypto.tools.language_reference              # the page, on stdout
    python -m pypto.tools.language_reference -o FILE      # written to FILE
    python -m pypto.tools.language_reference --check FILE # exit 1 when FILE is not what the docstrings give

The lists come from the front end's own tables (``pypto.lang.vocabulary.names``), so a name the parser
knows cannot be missing from the page.
"""

from __future__ import annotations

import argparse
import enum
import inspect
import re
import sys
from pathlib import Path

import pypto.language as pl

HEADER = """# The kernel language

Generated from the docstrings `help()` shows by
`python -m pypto.tools.language_reference -o docs/reference/language.md`; a test keeps it in
step. The ops (`pl.load`, `pl.exp`, `pl.matmul`, ...) are in [the op reference](../ops.md).
"""

# the order a reader meets them: decorators, loops, scopes and tasks, values
SECTIONS = (
    ("Decorators", ("jit", "jit.incore", "jit.inline", "function", "program")),
    ("Loops", ("range", "pipeline", "parallel", "unroll", "yield_", "while_", "cond")),
    ("Scopes and tasks", ("at", "spmd", "cluster", "scope", "manual_scope", "submit", "spmd_submit", "no_dep",
                          "split", "cross_core_slot", "split_aiv", "dump_tag")),
    ("Values", ("const", "min", "max", "dim", "dynamic")),
    ("Annotations", ("Tensor", "Tile", "Scalar", "Array", "Out", "InOut", "MemRef", "TileView", "TensorView")),
    ("Enums", ("Level", "Role", "Mem", "FunctionType", "PadValue", "AtomicType", "SplitMode", "ScopeMode", "TensorLayout")),
)


def listed() -> set[str]:
    return {name for _, names in SECTIONS for name in names}


def _get(dotted: str):
    obj = pl
    for part in dotted.split("."):
        obj = getattr(obj, part)
    return obj


def _doc(obj) -> str:
    own = obj if inspect.isfunction(obj) or isinstance(obj, type) else type(obj)
    return inspect.getdoc(own) or ""


def _markdown(doc: str) -> str:
    """A docstring as Markdown: ``Example::`` blocks fenced, ``Args:`` a list."""
    out, lines, i = [], doc.splitlines(), 0
    while i < len(lines):
        line = lines[i]
        if line.rstrip().endswith("::") and i + 1 < len(lines):
            out.append(line.rstrip()[:-1])
            i += 1
            while i < len(lines) and not lines[i].strip():
                i += 1
            block = []
            while i < len(lines) and (lines[i].startswith("    ") or not lines[i].strip()):
                block.append(lines[i][4:])
                i += 1
            out += ["", "```python", *(b for b in "\n".join(block).strip("\n").splitlines()), "```", ""]
            continue
        if line.strip() == "Args:":
            out += ["Arguments:", ""]
            i += 1
            while i < len(lines) and lines[i].startswith("    "):
                m = re.match(r"    (\w+): (.*)", lines[i])
                if m:
                    out.append(f"- `{m.group(1)}`: {m.group(2)}")
                else:
                    out[-1] += " " + lines[i].strip()
                i += 1
            continue
        out.append(line)
        i += 1
    return "\n".join(out).strip()


def _signature(name: str, obj) -> str:
    if inspect.isfunction(obj):
        return f"pl.{name}{inspect.signature(obj)}"
    if isinstance(obj, type) and issubclass(obj, enum.Enum):
        return f"pl.{name}: " + ", ".join(m.name for m in obj)
    return ""  # a decorator object or an annotation: its docstring shows how it is written


def page() -> str:
    lines = [HEADER]
    for title, names in SECTIONS:
        lines += [f"## {title}", ""]
        for name in names:
            obj = _get(name)
            signature = _signature(name, obj)
            lines += [f"### `pl.{name}`", ""]
            lines += ["```text", signature, "```", ""] if signature else []
            lines += [_markdown(_doc(obj)), ""]
    return "\n".join(lines).rstrip() + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pypto.tools.language_reference", description=__doc__.splitlines()[0])
    parser.add_argument("-o", "--output", type=Path, help="write the page here (default: stdout)")
    parser.add_argument("--check", type=Path, help="exit 1 when this file is not the page the docstrings give")
    args = parser.parse_args(argv)
    text = page()
    if args.check is not None:
        if not args.check.is_file() or args.check.read_text() != text:
            print(f"error: {args.check} is not what the docstrings give; regenerate it: "
                  f"python -m pypto.tools.language_reference -o {args.check}", file=sys.stderr)
            return 1
        return 0
    if args.output is None:
        sys.stdout.write(text)
    else:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
