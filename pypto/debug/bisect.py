"""Which step of the compiler breaks a program: interpret it as the front end built it and
after every pass, and name the first step whose result differs from the one before — an
oracle's check, a pass (with the diff of its dumps), or, when every pass agrees, the code
generation or the simulator. ``bisect_program`` runs the passes itself; ``from_dumps``
reads a build's pass dumps (parsed, never run) and bisects them on random inputs.
``python -m pypto.tools.bisect`` is its command; fuzz campaigns bisect what they find.
"""

from __future__ import annotations

import difflib
import json
import re
from pathlib import Path

import attrs
import torch

from pypto.errors import PyptoError

MAX_BYTES = 64 * 1024 * 1024  # a pass dump is far less


class BisectError(Exception):
    """Why there is nothing to bisect: one line."""


@attrs.frozen
class Verdict:
    culprit: str | None  # a pass's name, "op semantics", "the interpreter", "codegen", "codegen or the simulator"
    what: str  # one line: what differs where
    diff: str = ""  # the culprit pass's dumps, before -> after

    def report(self) -> str:
        head = f"culprit: {self.culprit}\n{self.what}" if self.culprit else f"no step changes the result: {self.what}"
        return head + (f"\n\n{self.diff}" if self.diff else "")


# ----------------------------------------------------------------------------- stages


def _differs(got: dict, want: dict) -> str | None:
    """Which tensor argument differs (its name), if one does: bit for bit, NaNs included."""
    from pypto.sim.ops.numerics import bits_equal

    return next((f"'{name}'" for name in got if not bits_equal(got[name], want[name])), None)


def _interpret(program, entry: str, args) -> dict:
    """Parameter name -> the tensor it holds after the run."""
    from pypto.sim.reference import interpreter

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
                                           f"({problem}): an op's semantics (pypto.sim.ops.semantics), or the oracle")
    for (name_before, before), (name, program) in zip(stages, stages[1:]):
        if not any(f.name == entry for f in program.functions):
            return Verdict(name, f"the program after {name} has no function '{entry}' (the entry)",
                           _dump_diff(before, program, name, soc))
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


def bisect_program(program, entry: str, args, planner: str = "PYPTO", expected=None,
                   platform: str = "a2a3sim") -> Verdict:
    """A program through the whole compiler on ``args``: ``expected`` (a check of the tensor
    arguments after the run, by name, as for ``bisect_stages``), each pass, then the
    simulator (``platform``: a2a3sim, or a5sim)."""
    from pypto.backend import backend
    from pypto.passes.pipeline import passes_for, run_passes
    from pypto.runtime import RunConfig
    from pypto.runtime.compiled import pass_context

    config = RunConfig(platform=platform, memory_planner=planner)
    ctx = pass_context(config)
    stages, names = [("the front end", program)], [s.name for s in passes_for(ctx.planner, ctx.soc)]
    try:
        for name, after, _, _ in run_passes(program, ctx):
            stages.append((name, after))
    except PyptoError as err:
        culprit = names[len(stages) - 1] if len(stages) - 1 < len(names) else "the checks"
        return Verdict(culprit, f"{culprit} fails: {type(err).__name__}: {_line(err)}")
    verdict = bisect_stages(stages, entry, args, backend(config.backend), expected)
    if verdict.culprit is not None:
        return verdict
    return _after_the_passes(program, entry, args, planner, stages[-1][1], verdict, platform)


def _after_the_passes(program, entry: str, args, planner: str, lowered, verdict: Verdict,
                      platform: str = "a2a3sim") -> Verdict:
    from pypto.runtime import RunConfig
    from pypto.runtime.compiled import compile_program
    from pypto.sim.timing.hazards import SimulatorHazard

    names = [p.name for p in program.function(entry).params]
    fresh = [a.clone() if isinstance(a, torch.Tensor) else a for a in args]
    try:
        compile_program(program, names, RunConfig(platform=platform, memory_planner=planner),
                        write=False).run(*fresh)
    except SimulatorHazard as err:
        return Verdict("codegen", f"every pass keeps the bits, and the generated code has a hazard on {platform}: "
                                  f"{_line(err)} (a sync the inserter did not place)")
    except PyptoError as err:
        return Verdict("codegen", f"every pass keeps the bits, and {platform} fails: {type(err).__name__}: "
                                  f"{_line(err)}")
    got = {n: a for n, a in zip(names, fresh) if isinstance(a, torch.Tensor)}
    where = _differs(got, _interpret(lowered, entry, args))
    if where:
        return Verdict("codegen or the simulator", f"every pass keeps the bits, and {platform}'s {where} differs "
                                                   "from the interpreter's")
    return Verdict(None, verdict.what + f", and {platform} gives them too")


NUMBERED = re.compile(r"^(\d\d)_(frontend|after_[A-Za-z0-9_]+)\.py$")


def from_dumps(path: Path, planner: str | None = None, seed: int = 0) -> Verdict:
    """Bisect the pass dumps of a build (its output_dir or passes_dump/) on random inputs,
    the scalar parameters 3."""
    from pypto.backend import BACKENDS
    from pypto.ir.types import ScalarType, TensorType
    from pypto.lang import parse

    directory = path / "passes_dump" if (path / "passes_dump").is_dir() else path
    numbered = sorted((p for p in directory.iterdir() if NUMBERED.match(p.name)), key=lambda p: p.name)
    if len(numbered) < 2:
        raise BisectError(f"{path}: no pass dumps here (NN_frontend.py, NN_after_<Pass>.py): compile with "
                          "RunConfig(dump_passes=...) and give its output_dir or passes_dump/")
    for k, f in enumerate(numbered):  # a stage missing would pin its change on the next one
        if int(f.name[:2]) != k:
            raise BisectError(f"{directory}: the dumps jump from {numbered[k - 1].name} to {f.name}: one is missing")
        if not f.is_file() or f.stat().st_size > MAX_BYTES:
            raise BisectError(f"{f}: not a pass dump (a regular file of at most {MAX_BYTES} bytes)")
    texts = [(f, f.read_text(errors="replace")) for f in numbered]
    notes = dict(re.findall(r"^# (backend|memory_planner): (\S+)$", texts[0][1], re.M))
    if planner is not None and notes.get("memory_planner", planner) != planner:
        raise BisectError(f"{directory}: these dumps are of memory_planner={notes['memory_planner']}, not {planner}")
    soc = BACKENDS.get(notes.get("backend", "a2a3"))
    if soc is None:
        raise BisectError(f"{directory}: backend {notes['backend']!r} is not one of {', '.join(BACKENDS)}")
    stages = []
    for f, text in texts:
        name = NUMBERED.match(f.name).group(2).removeprefix("after_")
        try:
            stages.append((name, parse(text, str(f), soc=soc)))
        except (MemoryError, RecursionError):
            raise BisectError(f"{f}: nested too deeply to be a pass dump") from None
    program = stages[0][1]
    entry = _entry(path, program)
    fn = program.function(entry)
    for p in fn.params:
        if isinstance(p.type, TensorType) and not all(isinstance(d, int) for d in p.type.shape):
            raise BisectError(f"{directory}: '{p.name}' of {entry} has no static shape ({p.type.shape}) to draw "
                              "random inputs of")
        if isinstance(p.type, TensorType) and p.type.nbytes > MAX_BYTES:
            raise BisectError(f"{directory}: '{p.name}' of {entry} takes more than {MAX_BYTES} bytes: too large "
                              "to bisect on random inputs")
    g = torch.Generator().manual_seed(seed)
    args = tuple(_random(p.type, g) if isinstance(p.type, TensorType) else 3 for p in fn.params
                 if isinstance(p.type, (TensorType, ScalarType)))
    return bisect_stages(stages, entry, args, soc)


def _random(t, g: torch.Generator) -> torch.Tensor:
    from pypto.sim.ops.numerics import TORCH

    dtype = TORCH[t.dtype]
    if dtype.is_floating_point:
        return (torch.randn(tuple(t.shape), generator=g, dtype=torch.float64) * 4).to(dtype)
    if dtype is torch.bool:
        return torch.randint(0, 2, tuple(t.shape), generator=g).to(torch.bool)
    return torch.randint(-100, 100, tuple(t.shape), generator=g).to(dtype)


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
