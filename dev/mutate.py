"""Mutation testing for pypto: plant one small bug at a time, run the tests, see if they notice.

Run it before closing an issue that touches the core modules (not in CI: a full run is
hours). It depends on nothing but the standard library and never touches the working tree:
the repository's files (``git ls-files``, untracked ones included) are copied once to a
temporary directory, each mutant is written into that copy only, and the tests run there
with ``PYTHONPATH=<copy>`` (nothing is installed; the copy shadows the editable install).

    python dev/mutate.py --list                            # every mutant of the default modules
    python dev/mutate.py --sample 20 --seed 1 pypto/codegen/sync/*.py
    python dev/mutate.py --only pypto/codegen/sync/locations.py:60          # the mutants of one line
    python dev/mutate.py --only pypto/codegen/sync/locations.py:60:2        # one of them (as --list numbers them)
    python dev/mutate.py --match "d > ea" pypto/codegen/sync/*.py    # by what it changes (lines move)
    python dev/mutate.py --quick "python -m pytest -x -q tests/test_sync_windows.py" pypto/codegen/sync/*.py
    nice -n 10 python dev/mutate.py                        # everything (hours)

Modules (positional, globs allowed; default: pypto/codegen/sync/*.py, pypto/passes/*.py, pypto/passes/*/*.py,
pypto/sim/ops/semantics.py, pypto/ir/verifier.py). Mutants, made with ``ast`` and applied as a
text edit of the one expression or statement, so line numbers and the rest of the file
stay as they are:

- comparisons: ``<`` <-> ``<=``, ``>`` <-> ``>=`` (off by one), each negated (``<`` -> ``>=``,
  ``==`` <-> ``!=``, ``is`` <-> ``is not``, ``in`` <-> ``not in``), and the right operand of an
  ordering ``+ 1`` / ``- 1``;
- arithmetic: ``+`` <-> ``-``, a factor of ``a * b`` dropped, an integer constant in
  arithmetic or a comparison ``+ 1`` / ``- 1``;
- ``max`` <-> ``min``, and a two-argument ``max(a, b)`` / ``min(a, b)`` dropped to ``a`` or ``b``;
- ``and`` <-> ``or``, ``not x`` -> ``x``, ``True`` <-> ``False``, ``if c:`` -> ``if False:`` (a
  guard that never fires), ``a if c else b`` -> ``a`` or ``b``;
- a call (not of a builtin) replaced by its first argument (a conversion or a check skipped:
  ``num.scalar(x, dtype)`` -> ``x``);
- ``return <value>`` -> ``return None`` (or ``()`` for a tuple).

Type annotations are not mutated (they are strings at run time). A line ending in
``# pragma: no mutate`` is skipped.

Each mutant runs ``--test`` (default ``python -m pytest -x -q -p no:cacheprovider``) with a
timeout (``--timeout`` seconds; default three times the unmutated run, at least 60). With
``--quick CMD``, a mutant runs CMD first and the full ``--test`` only if CMD passes — a
mutant a subset of the suite kills is killed by the suite, so the score is the same and a
run is much shorter. Before the mutants, the commands run once on the unmutated copy, which
must pass (``--no-baseline`` skips that). A leading ``python`` in a command is this
interpreter.

Report: killed / survived / timed out, the score ((killed + timed out) / all), the test that
killed each mutant, and every survivor as a unified diff; ``--json PATH`` writes the same
as data. Exit status 0 when no mutant survived, 1 otherwise, 2 on a usage error.
"""

from __future__ import annotations

import argparse
import ast
import builtins
import copy
import difflib
import glob
import json
import os
import random
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

DEFAULT_MODULES = ("pypto/codegen/sync/*.py", "pypto/passes/*.py", "pypto/passes/*/*.py", "pypto/sim/ops/semantics.py", "pypto/ir/verifier.py")
DEFAULT_TEST = "python -m pytest -x -q -p no:cacheprovider"
PRAGMA = "# pragma: no mutate"


class UsageError(Exception):
    """Bad arguments or a repository the tool cannot work in: one ``error:`` line, exit 2."""


@dataclass(frozen=True)
class Mutant:
    path: str  # relative to the repository root
    line: int
    col: int
    end_line: int
    end_col: int
    original: str  # the source text replaced
    replacement: str
    kind: str
    index: int = 0  # 1-based among the mutants of its line

    @property
    def ident(self) -> str:
        return f"{self.path}:{self.line}:{self.index}"

    def describe(self) -> str:
        return f"{self.ident}  [{self.kind}]  {_one_line(self.original)}  ->  {_one_line(self.replacement)}"


def _one_line(text: str) -> str:
    return " ".join(text.split())


# ----------------------------------------------------------------------------- making mutants

_BOUNDARY = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt}
_NEGATED = {ast.Lt: ast.GtE, ast.LtE: ast.Gt, ast.Gt: ast.LtE, ast.GtE: ast.Lt, ast.Eq: ast.NotEq,
            ast.NotEq: ast.Eq, ast.Is: ast.IsNot, ast.IsNot: ast.Is, ast.In: ast.NotIn, ast.NotIn: ast.In}
_BUILTINS = frozenset(dir(builtins))
_ATOMS = (ast.Name, ast.Constant, ast.Call, ast.Attribute, ast.Subscript, ast.List, ast.Tuple, ast.Dict, ast.Set)


def _is_int(node) -> bool:
    return isinstance(node, ast.Constant) and type(node.value) is int


def _annotation_nodes(tree) -> set[int]:
    """ids of every node inside a type annotation."""
    roots = []
    for node in ast.walk(tree):
        if isinstance(node, ast.arg) and node.annotation is not None:
            roots.append(node.annotation)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.returns is not None:
            roots.append(node.returns)
        elif isinstance(node, ast.AnnAssign):
            roots.append(node.annotation)
    return {id(x) for root in roots for x in ast.walk(root)}


def _expression_mutations(node) -> list[tuple[str, ast.AST]]:
    """(kind, replacement node) for one expression node."""
    out = []
    if isinstance(node, ast.Compare):
        for k, op in enumerate(node.ops):
            for table, kind in ((_BOUNDARY, "boundary"), (_NEGATED, "negate")):
                if type(op) in table:
                    new = copy.deepcopy(node)
                    new.ops[k] = table[type(op)]()
                    out.append((f"compare {kind}", new))
            if type(op) in _BOUNDARY:
                for sign in (ast.Add, ast.Sub):
                    new = copy.deepcopy(node)
                    new.comparators[k] = ast.BinOp(new.comparators[k], sign(), ast.Constant(1))
                    out.append(("compare operand +-1", new))
    elif isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
        new = copy.deepcopy(node)
        new.op = ast.Sub() if isinstance(node.op, ast.Add) else ast.Add()
        out.append(("arithmetic +/-", new))
    elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        out.extend(("factor dropped", copy.deepcopy(x)) for x in (node.left, node.right))
    elif isinstance(node, ast.IfExp):
        out.extend(("conditional dropped", copy.deepcopy(x)) for x in (node.body, node.orelse))
    elif isinstance(node, ast.BoolOp):
        new = copy.deepcopy(node)
        new.op = ast.Or() if isinstance(node.op, ast.And) else ast.And()
        out.append(("and/or", new))
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        out.append(("not dropped", copy.deepcopy(node.operand)))
    elif isinstance(node, ast.Constant) and type(node.value) is bool:
        out.append(("bool negated", ast.Constant(not node.value)))
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("max", "min"):
        new = copy.deepcopy(node)
        new.func.id = "min" if node.func.id == "max" else "max"
        out.append(("max/min swapped", new))
        if len(node.args) == 2 and not node.keywords and not any(isinstance(a, ast.Starred) for a in node.args):
            out.extend((f"{node.func.id} dropped", copy.deepcopy(a)) for a in node.args)
    elif isinstance(node, ast.Call) and node.args and not isinstance(node.args[0], ast.Starred) and not (
            isinstance(node.func, ast.Name) and node.func.id in _BUILTINS):
        out.append(("call -> its first argument", copy.deepcopy(node.args[0])))
    return out


def _constant_mutations(node, parent) -> list[tuple[str, ast.AST]]:
    """An int constant that is an operand of arithmetic or a comparison, +-1."""
    if not _is_int(node) or not isinstance(parent, (ast.BinOp, ast.Compare, ast.UnaryOp)):
        return []
    return [("constant +-1", ast.Constant(node.value + d)) for d in (1, -1)]


def _unparse(node, as_statement: bool = False) -> str:
    text = ast.unparse(node)
    if as_statement or isinstance(node, _ATOMS):
        return text
    return f"({text})"  # a replacement never binds looser than what it replaces


def _segment(lines: list[bytes], node) -> str:
    """The source of a node (ast offsets are UTF-8 byte columns)."""
    if node.lineno == node.end_lineno:
        return lines[node.lineno - 1][node.col_offset:node.end_col_offset].decode()
    parts = [lines[node.lineno - 1][node.col_offset:]]
    parts += lines[node.lineno:node.end_lineno - 1]
    parts.append(lines[node.end_lineno - 1][:node.end_col_offset])
    return b"".join(parts).decode()


def mutants_of(path: str, source: str) -> list[Mutant]:
    tree = ast.parse(source)
    lines = source.encode().splitlines(keepends=True)
    skip = _annotation_nodes(tree)
    parents = {id(child): node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    found = []
    for node in ast.walk(tree):
        if id(node) in skip or not hasattr(node, "lineno"):
            continue
        if lines[node.lineno - 1].rstrip().endswith(PRAGMA.encode()):
            continue
        if isinstance(node, ast.If) and not (isinstance(node.test, ast.Constant) and node.test.value is False):
            found.append((node.test, "if never taken", "False"))
        if isinstance(node, ast.Return) and node.value is not None and not (
                isinstance(node.value, ast.Constant) and node.value.value is None):
            default = "()" if isinstance(node.value, ast.Tuple) else "None"
            found.append((node, "return default", f"return {default}"))
            continue
        if not isinstance(node, ast.expr):
            continue
        for kind, new in _expression_mutations(node) + _constant_mutations(node, parents.get(id(node))):
            found.append((node, kind, _unparse(new)))
    out, seen = [], set()
    for node, kind, replacement in sorted(found, key=lambda f: (f[0].lineno, f[0].col_offset, f[1], f[2])):
        original = _segment(lines, node)
        key = (node.lineno, node.col_offset, node.end_lineno, node.end_col_offset, replacement)
        if key in seen or _one_line(original) == _one_line(replacement).strip("()"):
            continue
        seen.add(key)
        out.append(Mutant(path, node.lineno, node.col_offset, node.end_lineno, node.end_col_offset, original,
                          replacement, kind))
    numbered, per_line = [], {}
    for m in out:
        per_line[m.line] = per_line.get(m.line, 0) + 1
        numbered.append(Mutant(**{**asdict(m), "index": per_line[m.line]}))
    return numbered


def apply(source: str, m: Mutant) -> str:
    lines = source.encode().splitlines(keepends=True)
    head = b"".join(lines[:m.line - 1]) + lines[m.line - 1][:m.col]
    tail = lines[m.end_line - 1][m.end_col:] + b"".join(lines[m.end_line:])
    text = (head + m.replacement.encode() + tail).decode()
    compile(text, m.path, "exec")  # a mutant that does not parse would be "killed" for nothing
    return text


def diff(source: str, m: Mutant) -> str:
    return "".join(difflib.unified_diff(source.splitlines(keepends=True), apply(source, m).splitlines(keepends=True),
                                        f"a/{m.path}", f"b/{m.path}", n=2))


# ----------------------------------------------------------------------------- running


@dataclass
class Outcome:
    mutant: str
    status: str  # killed | survived | timeout | invalid (the mutant does not compile)
    seconds: float
    by: str = ""  # the first failing test, when pytest names it
    diff: str = ""


def repo_root() -> Path:
    out = subprocess.run(["git", "rev-parse", "--show-toplevel"], capture_output=True, text=True,
                         cwd=Path(__file__).resolve().parent)
    if out.returncode != 0:
        raise UsageError("dev/mutate.py must run inside the pypto git repository")
    return Path(out.stdout.strip())


def snapshot(root: Path, dest: Path) -> None:
    """The working tree's files git knows of or would add (tracked and untracked, not ignored)."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=root,
                            capture_output=True, check=True).stdout.split(b"\0")
    for rel in {p.decode() for p in listed if p}:
        src = root / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)


def command(text: str) -> list[str]:
    argv = shlex.split(text)
    if argv and argv[0] == "python":
        argv[0] = sys.executable
    return argv


def environment(copy_root: Path) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(copy_root), *filter(None, [env.get("PYTHONPATH")])])
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # a stale .pyc of the same size and second would hide a mutant
    env.pop("PYTEST_ADDOPTS", None)
    return env


def run(argv: list[str], copy_root: Path, timeout: float) -> tuple[str, float, str]:
    began = time.monotonic()
    try:
        done = subprocess.run(argv, cwd=copy_root, env=environment(copy_root), capture_output=True, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        return "timeout", time.monotonic() - began, ""
    finally:
        # hypothesis' example database would carry one mutant's failures into the next run
        shutil.rmtree(copy_root / ".hypothesis", ignore_errors=True)
    if done.returncode == 0:
        return "survived", time.monotonic() - began, ""
    return "killed", time.monotonic() - began, _first_failure(done.stdout + done.stderr)


def _first_failure(output: str) -> str:
    match = re.search(r"^(?:FAILED|ERROR) (\S+)", output, re.M)
    if match:
        return match.group(1)
    lines = [x for x in output.strip().splitlines() if x.strip()]
    return lines[-1][:200] if lines else ""


def check_shadowing(copy_root: Path) -> None:
    """The copy, not the editable install, must be what ``import pypto`` finds."""
    out = subprocess.run([sys.executable, "-c", "import pypto, sys; sys.stdout.write(pypto.__file__)"],
                         cwd=copy_root, env=environment(copy_root), capture_output=True, text=True)
    found = Path(out.stdout.strip()).resolve() if out.returncode == 0 else None
    if found is None or copy_root.resolve() not in found.parents:
        raise UsageError(f"in the copy, `import pypto` finds {found or out.stderr.strip()!r}, not the copy")


def select(mutants: list[Mutant], only: list[str], sample: int | None, seed: int) -> list[Mutant]:
    if only:
        chosen = []
        for spec in only:
            parts = spec.rsplit(":", 2)
            if len(parts) >= 3 and parts[-1].isdigit() and parts[-2].isdigit():
                path, line, index = parts[0], int(parts[1]), int(parts[2])
            elif len(parts) >= 2 and parts[-1].isdigit():
                path, line, index = spec.rsplit(":", 1)[0], int(parts[-1]), None
            else:
                raise UsageError(f"--only {spec!r}: expected FILE:LINE or FILE:LINE:K")
            hit = [m for m in mutants if m.path == path and m.line == line and index in (None, m.index)]
            if not hit:
                raise UsageError(f"--only {spec!r}: no such mutant (see --list)")
            chosen += [m for m in hit if m not in chosen]
        mutants = chosen
    if sample is not None and sample < len(mutants):
        mutants = sorted(random.Random(seed).sample(mutants, sample), key=lambda m: (m.path, m.line, m.index))
    return mutants


def modules(root: Path, patterns) -> list[str]:
    paths = []
    for pattern in patterns:
        hits = sorted(glob.glob(str(root / pattern))) if any(c in pattern for c in "*?[") else [str(root / pattern)]
        hits = [Path(h).resolve() for h in hits if Path(h).is_file() and h.endswith(".py")]
        if not hits:
            raise UsageError(f"no Python module matches {pattern!r} under {root}")
        for hit in hits:
            if root.resolve() not in hit.parents:
                raise UsageError(f"{pattern!r} is outside the repository {root}")
            rel = hit.relative_to(root.resolve()).as_posix()
            if rel not in paths:
                paths.append(rel)
    return paths


def main(argv=None) -> int:
    try:
        return _main(argv)
    except UsageError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2


def _main(argv) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("modules", nargs="*", help="module paths or globs, relative to the repository root")
    parser.add_argument("--test", default=DEFAULT_TEST, help=f"the test command (default: {DEFAULT_TEST!r})")
    parser.add_argument("--quick", help="a faster command run first; the full one only when it passes")
    parser.add_argument("--timeout", type=float, help="seconds per command per mutant")
    parser.add_argument("--sample", type=int, help="run a random N of the mutants")
    parser.add_argument("--seed", type=int, default=0, help="the sample's seed (default 0)")
    parser.add_argument("--only", action="append", default=[], metavar="FILE:LINE[:K]",
                        help="the mutants of one line, or the K-th of them (repeatable)")
    parser.add_argument("--match", action="append", default=[], metavar="TEXT",
                        help="only mutants whose description (as --list shows it) contains TEXT (repeatable: any)")
    parser.add_argument("--list", action="store_true", help="list the mutants and stop")
    parser.add_argument("--no-baseline", action="store_true", help="skip the unmutated run")
    parser.add_argument("--json", type=Path, help="also write the outcomes here")
    args = parser.parse_args(argv)

    root = repo_root()
    paths = modules(root, args.modules or DEFAULT_MODULES)
    sources = {p: (root / p).read_text() for p in paths}
    everything = [m for p in paths for m in mutants_of(p, sources[p])]
    matching = [m for m in everything if not args.match or any(t in m.describe() for t in args.match)]
    chosen = select(matching, args.only, args.sample, args.seed)
    if args.list:
        for m in chosen:
            print(m.describe())
        print(f"{len(chosen)} of {len(everything)} mutants in {len(paths)} modules")
        return 0
    commands = [command(c) for c in (args.quick, args.test) if c]

    with tempfile.TemporaryDirectory(prefix="pypto-mutate-") as tmp:
        copy_root = Path(tmp) / "repo"
        snapshot(root, copy_root)
        check_shadowing(copy_root)
        timeout = args.timeout
        if not args.no_baseline:
            spent = 0.0
            for argv_ in commands:
                status, seconds, by = run(argv_, copy_root, timeout or 3600)
                if status != "survived":
                    print(f"error: the unmutated copy fails `{shlex.join(argv_)}` ({status}): {by}", file=sys.stderr)
                    return 2
                spent = max(spent, seconds)
            print(f"baseline: {len(commands)} command(s) pass unmutated ({spent:.0f} s for the longest)")
            timeout = timeout or max(60.0, 3 * spent)
        timeout = timeout or 600.0

        outcomes = []
        for k, m in enumerate(chosen, 1):
            target = copy_root / m.path
            original = sources[m.path]
            try:
                target.write_text(apply(original, m))
            except SyntaxError:  # not a program: no test run says anything about it
                print(f"[{k}/{len(chosen)}] invalid  {m.describe()}", flush=True)
                outcomes.append(Outcome(m.ident, "invalid", 0.0))
                continue
            try:
                status, seconds, by = "survived", 0.0, ""
                for argv_ in commands:
                    status, spent, by = run(argv_, copy_root, timeout)
                    seconds += spent
                    if status != "survived":
                        break
            finally:
                target.write_text(original)
            outcome = Outcome(m.ident, status, round(seconds, 1), by, diff(original, m) if status == "survived" else "")
            outcomes.append(outcome)
            print(f"[{k}/{len(chosen)}] {status:8} {seconds:6.1f}s  {m.describe()}" + (f"  <- {by}" if by else ""),
                  flush=True)

    report(outcomes)
    if args.json:
        args.json.write_text(json.dumps([asdict(o) for o in outcomes], indent=2) + "\n")
    return 1 if any(o.status == "survived" for o in outcomes) else 0


def report(outcomes: list[Outcome]) -> None:
    counts = {s: sum(o.status == s for o in outcomes) for s in ("killed", "survived", "timeout", "invalid")}
    total = len(outcomes) - counts["invalid"]
    score = (counts["killed"] + counts["timeout"]) / total if total else 1.0
    invalid = f"  (not compiling, left out: {counts['invalid']})" if counts["invalid"] else ""
    print(f"\nmutants: {total}  killed: {counts['killed']}  survived: {counts['survived']}  "
          f"timed out: {counts['timeout']}  score: {score:.0%}{invalid}")
    if counts["survived"]:
        print("(a survivor is a gap in the tests, or an equivalent mutant: one no program can tell apart)")
    for o in outcomes:
        if o.status == "survived":
            print(f"\nsurvived: {o.mutant}\n{o.diff}", end="")


if __name__ == "__main__":
    sys.exit(main())
