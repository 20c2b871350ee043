"""The op table of the docs (``docs/ops.md``), generated from the op registry.

    python -m pypto.tools.op_table            # the table, on stdout
    python -m pypto.tools.op_table -o FILE    # written to FILE
    python -m pypto.tools.op_table --check FILE   # exit 1 when FILE is not what the registry gives

One section for the unified ``pl.*`` names (the op each picks for tiles and tensors), one
per level (``pl.tile``, ``pl.tensor``, ``pl.system``, ``pl.array``) with each op's call
form, the memory spaces its tile operands must be in, and its description.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pypto.ir.ops.registry import UNIFIED, all_ops, spelled
from pypto.lang.vocabulary.op_reference import forms, keyword_forms, rules, signature
from pypto.tools import description

HEADER = """# The op reference

Generated from the op registry by `python -m pypto.tools.op_table -o docs/ops.md`; a test
keeps it in step. Every op here is also documented where you use it: `help(pl.tile.load)`,
`inspect.signature(pl.matmul)`.
"""


# The catalog's names that are forms of the language, not ops: the front end reads them
# (``pypto.lang.vocabulary.names``), so the registry has no entry — listed here so the table covers the
# catalog. (name, where it is reached, what it does)
LANGUAGE_FORMS = (
    ("const", "`pl.const(value, dtype)`", "a literal with an explicit dtype (pl.const(2.0, pl.FP32))"),
    ("submit", "`pl.submit(kernel, *args, deps=[...])`",
     "an orchestration's kernel call as a task, giving its TaskId for later deps="),
    ("spmd_submit", "`pl.spmd_submit(kernel, *args, core_num=n)`",
     "an SPMD task: n blocks of one kernel, its TaskId"),
    ("dim", "`pl.dim(t, axis)`, `pl.tensor.dim`", "a tensor's extent on an axis, as a scalar"),
    ("no_dep", "`pl.no_dep(t)`, `pl.tensor.no_dep`",
     "one argument of one task kept out of the dependency tracking"),
    ("dump_tag", "`pl.dump_tag(t)`, `pl.tensor.dump_tag`", "marks a tensor for the selective tensor dump"),
    ("max", "`pl.max(a, b)`, `pl.tile.max`", "the larger of two scalars (index arithmetic; not a tile reduction: "
     "pl.row_max / pl.col_max reduce tiles)"),
    ("min", "`pl.min(a, b)`, `pl.tile.min`", "the smaller of two scalars (index arithmetic; not a tile reduction: "
     "pl.row_min / pl.col_min reduce tiles)"),
)


def _cell(text: str) -> str:
    """Table-cell text: pipes escaped, on one line."""
    return text.replace("|", "\\|").replace("\n", " ")


def _call(name: str, op) -> str:
    sig = signature(op)
    bare = sig.replace(parameters=[p.replace(annotation=p.empty) for p in sig.parameters.values()])
    return f"`pl.{name}{bare}`"


def table() -> str:
    lines = [HEADER, "## Unified names", "", "| name | for tiles | for tensors | description |", "|---|---|---|---|"]
    for name in sorted(UNIFIED):
        picked = dict(forms(name))
        # each form, and after it those a keyword picks instead (`tile.gather_mask` (mask_pattern=))
        named = [(why, f"`{spelled(op.name)}`") for why, op in forms(name)]
        named += [(why, f"`{spelled(op.name)}` ({key}=)") for why, op, key in keyword_forms(name)]
        tile = [text for why, text in named if why.startswith(("Tile", "a Tile", "always"))]
        tensor = [text for why, text in named if why.startswith(("Tensor", "a Tensor", "always"))]
        doc = next(iter(picked.values())).doc
        lines.append(f"| `pl.{name}` | {', '.join(tile) or '—'} | {', '.join(tensor) or '—'} | {_cell(doc)} |")
    lines += ["", "## Language forms", "", "Names of the language that are not ops: the front end reads them where "
              "they are written.", "", "| name | written | what it does |", "|---|---|---|"]
    for name, written, doc in LANGUAGE_FORMS:
        lines.append(f"| `pl.{name}` | {_cell(written)} | {_cell(doc)} |")
    ops = all_ops()
    sections = [(f"pl.{level}", [op for op in ops if op.name.startswith(level + ".") and not op.module])
                for level in ("tile", "tensor", "system", "array")]
    sections.append(("pld (pypto.language.distributed, spelled pl.distributed in dumps)",
                     [op for op in ops if op.module]))
    for title, mine in sections:
        lines += ["", f"## {title} ({len(mine)} ops)", "", "| op | rules | description |", "|---|---|---|"]
        for op in mine:
            lines.append(f"| {_cell(_call(op.module + spelled(op.name), op))} | {_cell('; '.join(rules(op)))} | "
                         f"{_cell(op.doc)} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="pypto ops", description=description(__doc__))
    parser.add_argument("-o", "--output", type=Path, help="write the table to this file")
    parser.add_argument("--check", type=Path, help="exit 1 when this file differs from the registry's table")
    args = parser.parse_args(argv)
    text = table()
    if args.check is not None:
        try:
            same = args.check.read_bytes().decode("utf-8", errors="replace") == text
        except OSError as exc:
            print(f"error: {exc.strerror}: {args.check}", file=sys.stderr)
            return 1
        if not same:
            print(f"error: {args.check} is out of date; regenerate it with "
                  f"python -m pypto.tools.op_table -o {args.check}", file=sys.stderr)
            return 1
        return 0
    if args.output is not None:
        try:
            args.output.write_text(text, encoding="utf-8")
        except OSError as exc:
            print(f"error: {exc.strerror}: {args.output}", file=sys.stderr)
            return 1
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
