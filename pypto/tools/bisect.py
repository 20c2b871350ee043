"""Which step of the compiler breaks a program: interpret it as the front end built it and
after every pass, and name the first step whose result differs from the one before — the
torch oracle, a pass, or, when every pass agrees, the code generation or the simulator —
with the diff of that pass's dumps.

    python -m pypto.tools.bisect <reproducer.py | passes_dump/ | output_dir/> [--planner P] [--seed N]

A reproducer (``python -m pypto.fuzz`` writes them) brings its inputs and its oracle; a
dump directory is bisected on random inputs (its scalar parameters 3). Files are read, never
run: a reproducer's values are literals read with ``ast``, dumps are parsed.
"""

from __future__ import annotations

import argparse
import difflib
import json
import re
import sys
from pathlib import Path

import attrs
import torch

from pypto.errors import PyptoError

MAX_BYTES = 64 * 1024 * 1024  # a reproducer with its tensors, or a dump: far less


@attrs.frozen
class Verdict:
    culprit: str | None  # a pass's name, "op semantics", "the interpreter", "codegen", "codegen or the simulator"
    what: str  # one line: what differs where
    diff: str = ""  # the culprit pass's dumps, before -> after

    def report(self) -> str:
        head = f"culprit: {self.culprit}\n{self.what}" if self.culprit else f"no step changes the result: {self.what}"
        return head + (f"\n\n{self.diff}" if self.diff else "")


class BisectError(Exception):
    """Why there is nothing to bisect: one line."""


# ----------------------------------------------------------------------------- stages


def _differs(got: dict, want: dict) -> str | None:
    """Which tensor argument differs (its name), if one does."""
    from pypto.fuzz.data import bits_equal

    return next((f"'{name}'" for name in got if not bits_equal(got[name], want[name])), None)


def _interpret(program, entry: str, args) -> dict:
    """Parameter name -> the tensor it holds after the run."""
    from pypto.sim import interpreter

    fresh = tuple(a.clone() if isinstance(a, torch.Tensor) else a for a in args)
    interpreter.run(program, entry, fresh)
    params = program.function(entry).params
    return {p.name: a for p, a in zip(params, fresh) if isinstance(a, torch.Tensor)}


def _dump_diff(before, after, name: str, soc) -> str:
    from pypto.ir.printer import print_program

    a = print_program(before, soc).splitlines(keepends=True)
    b = print_program(after, soc).splitlines(keepends=True)
    return "".join(difflib.unified_diff(a, b, f"before {name}", f"after {name}", n=2))


def bisect_stages(stages, entry: str, args, soc, expected=None) -> Verdict:
    """``stages``: (name, program) in order, the front end's first; ``expected``: a check of
    the tensor arguments after the run against an oracle (what is wrong, or None)."""
    first_name, first = stages[0]
    try:
        previous = _interpret(first, entry, args)
    except PyptoError as err:
        return Verdict("the interpreter", f"it cannot run the program as {first_name} built it: {_line(err)}")
    if expected is not None:
        problem = expected(previous)
        if problem:
            return Verdict("op semantics", f"before any pass, the interpreter's result differs from the torch oracle "
                                           f"({problem}): an op's semantics (pypto.sim.semantics), or the oracle")
    for (name_before, before), (name, program) in zip(stages, stages[1:]):
        try:
            got = _interpret(program, entry, args)
        except PyptoError as err:
            return Verdict(name, f"the program after {name} cannot run: {_line(err)}",
                           _dump_diff(before, program, name, soc))
        where = _differs(got, previous)
        if where:
            return Verdict(name, f"{where} after {name} differs from after {name_before}",
                           _dump_diff(before, program, name, soc))
        previous = got
    return Verdict(None, f"all {len(stages) - 1} passes keep the bits of {first_name}")


def _line(err: BaseException) -> str:
    return str(getattr(err, "message", err)).splitlines()[0]


def bisect_case(case, planner: str = "PYPTO") -> Verdict:
    """A fuzz case through the whole compiler: the oracle, each pass, then a2a3sim."""
    from pypto.backend import A2A3
    from pypto.fuzz.checks import Failure, against_oracle
    from pypto.passes.pipeline import passes_for, run_passes
    from pypto.runtime import RunConfig
    from pypto.runtime.compiled import pass_context

    ctx = pass_context(RunConfig(memory_planner=planner))
    stages, names = [("the front end", case.program)], [s.name for s in passes_for(ctx.planner)]
    try:
        for name, program, _, _ in run_passes(case.program, ctx):
            stages.append((name, program))
    except PyptoError as err:
        culprit = names[len(stages) - 1] if len(stages) - 1 < len(names) else "the checks"
        return Verdict(culprit, f"{culprit} fails: {type(err).__name__}: {_line(err)}")
    args = case.args()

    def oracle(tensors: dict) -> str | None:
        try:
            against_oracle(case, tuple(tensors.values())[len(case.inputs):])
        except Failure as f:
            return str(f).splitlines()[0]
        return None

    verdict = bisect_stages(stages, case.entry, args, A2A3, oracle)
    if verdict.culprit is not None:
        return verdict
    return _after_the_passes(case, planner, verdict)


def _after_the_passes(case, planner: str, verdict: Verdict) -> Verdict:
    from pypto.fuzz.properties import interpret, simulate
    from pypto.sim.hazards import SimulatorHazard

    try:
        got, _ = simulate(case, planner)
    except SimulatorHazard as err:
        return Verdict("codegen", f"every pass keeps the bits, and the generated code has a hazard on a2a3sim: "
                                  f"{_line(err)} (a sync the inserter did not place)")
    except PyptoError as err:
        return Verdict("codegen", f"every pass keeps the bits, and a2a3sim fails: {type(err).__name__}: {_line(err)}")
    names = [p.name for p in case.program.function(case.entry).params][len(case.inputs):]
    where = _differs(dict(zip(names, got)), dict(zip(names, interpret(case))))
    if where:
        return Verdict("codegen or the simulator", f"every pass keeps the bits, and a2a3sim's {where} differs from "
                                                   "the interpreter's")
    return Verdict(None, verdict.what + ", and a2a3sim gives them too")


# ----------------------------------------------------------------------------- inputs


def from_reproducer(path: Path, planner: str | None) -> Verdict:
    from pypto.fuzz.reproducer import NotAReproducer, read

    try:
        prop, example, _ = read(path)
    except NotAReproducer as exc:
        raise BisectError(str(exc)) from None
    if example.case is None:
        raise BisectError(f"{path}: a '{prop}' reproducer holds a kernel module, not a program and its inputs: "
                          f"run it (python {path.name}) instead")
    return bisect_case(example.case, planner or example.planner)


NUMBERED = re.compile(r"^(\d\d)_(frontend|after_[A-Za-z0-9_]+)\.py$")


def from_dumps(path: Path, planner: str | None, seed: int) -> Verdict:
    from pypto.backend import BACKENDS
    from pypto.fuzz.data import random_tensor, sentinel
    from pypto.ir.types import ParamDirection, ScalarType, TensorType
    from pypto.lang import parse

    directory = path / "passes_dump" if (path / "passes_dump").is_dir() else path
    files = sorted(p for p in directory.iterdir() if NUMBERED.match(p.name) and p.is_file())
    if len(files) < 2:
        raise BisectError(f"{path}: no pass dumps here (NN_frontend.py, NN_after_<Pass>.py): compile with "
                          "RunConfig(dump_passes=...) and give its output_dir or passes_dump/")
    texts = []
    for f in files:
        if f.stat().st_size > MAX_BYTES:
            raise BisectError(f"{f}: {f.stat().st_size} bytes is not a pass dump")
        texts.append((f, f.read_text(errors="replace")))
    notes = dict(re.findall(r"^# (backend|memory_planner): (\S+)$", texts[0][1], re.M))
    if planner is not None and notes.get("memory_planner", planner) != planner:
        raise BisectError(f"{directory}: these dumps are of memory_planner={notes['memory_planner']}, not {planner}")
    soc = BACKENDS.get(notes.get("backend", "a2a3"))
    if soc is None:
        raise BisectError(f"{directory}: backend {notes['backend']!r} is not one of {', '.join(BACKENDS)}")
    stages = []
    for f, text in texts:
        name = NUMBERED.match(f.name).group(2).removeprefix("after_")
        stages.append((name, parse(text, str(f), soc=soc)))
    program = stages[0][1]
    entry = _entry(path, program)
    fn = program.function(entry)
    args = []
    for k, p in enumerate(fn.params):
        if isinstance(p.type, TensorType):
            t = random_tensor(p.type.shape, p.type.dtype, seed + k)
            args.append(sentinel(t.shape, t.dtype) if p.direction is ParamDirection.Out else t)
        elif isinstance(p.type, ScalarType):
            args.append(3)
    return bisect_stages(stages, entry, tuple(args), soc)


def _entry(path: Path, program) -> str:
    from pypto.ir.types import FunctionType

    for meta in (path / "compiled_meta.json", path.parent / "compiled_meta.json"):
        try:
            entry = json.loads(meta.read_text()).get("entry")
        except (OSError, ValueError, AttributeError):
            continue
        if isinstance(entry, str) and any(f.name == entry for f in program.functions):
            return entry
    outer = [f for f in program.functions if f.type is FunctionType.Orchestration] or list(program.functions)
    return outer[0].name


# ----------------------------------------------------------------------------- the command


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pypto.tools.bisect", description=__doc__.splitlines()[0])
    parser.add_argument("path", type=Path, help="a pypto.fuzz reproducer (.py), a passes_dump/ or a build's output_dir")
    parser.add_argument("--planner", choices=("PYPTO", "PTOAS"), help="default: the reproducer's or the dumps'")
    parser.add_argument("--seed", type=int, default=0, help="of a dump's random inputs")
    args = parser.parse_args(argv)
    try:
        if args.path.is_dir():
            verdict = from_dumps(args.path, args.planner, args.seed)
        elif args.path.is_file():
            if args.path.stat().st_size > MAX_BYTES:
                raise BisectError(f"{args.path}: {args.path.stat().st_size} bytes is not a reproducer")
            verdict = from_reproducer(args.path, args.planner)
        else:
            raise BisectError(f"{args.path}: no such file or directory")
    except (BisectError, PyptoError, OSError) as exc:
        if isinstance(exc, PyptoError):
            text = exc.message.splitlines()[0] + (f" --> {exc.span}" if exc.span is not None else "")
        else:
            text = str(exc) if not isinstance(exc, OSError) else f"{args.path}: {exc.strerror or exc}"
        print(f"error: {text}", file=sys.stderr)
        return 2
    print(verdict.report())
    return 0


if __name__ == "__main__":
    sys.exit(main())
