"""Shared checks: run a fuzz Case on a platform and compare with its oracle."""

from __future__ import annotations

from pypto.fuzz import strategies as ps
from pypto.fuzz.checks import against_oracle
from pypto.fuzz.properties import compile_case, interpret, simulate
from pypto.sim.reference import interpreter


def run_case(case: ps.Case, program=None) -> tuple:
    """Interpret ``program`` (default: the case's) on fresh arguments; the Out tensors."""
    return interpret(case, program)


def assert_matches_oracle(case: ps.Case, outputs) -> None:
    against_oracle(case, outputs)


# ----------------------------------------------------------------------------- pass tests

import textwrap  # noqa: E402

import torch  # noqa: E402

from pypto.lang import parse  # noqa: E402
from pypto.ir.types import ParamDirection, ScalarType, TensorType  # noqa: E402
from pypto.ir.verifier import verify  # noqa: E402
from pypto.passes.context import PassContext  # noqa: E402
from pypto.backend import A2A3

HEADER = "import pypto.language as pl\n\n\n"


def program_text(body: str, name: str = "P") -> str:
    """A program text from a class body written at any indentation."""
    return f"# pypto.program: {name}\n{HEADER}@pl.program\nclass {name}:\n" + textwrap.indent(
        textwrap.dedent(body).strip("\n"), "    ") + "\n"


def random_args(program, entry: str, seed: int = 0, scalars: dict | None = None) -> tuple:
    fn = program.function(entry)
    args = []
    for k, p in enumerate(fn.params):
        if isinstance(p.type, TensorType):
            t = ps.random_tensor(p.type.shape, p.type.dtype, seed + k)
            args.append(ps.sentinel(t.shape, t.dtype) if p.direction is ParamDirection.Out else t)
        elif isinstance(p.type, ScalarType):
            args.append((scalars or {}).get(p.name, 3))
    return tuple(args)


def outputs_of(program, entry: str, args) -> tuple:
    fresh = tuple(a.clone() if isinstance(a, torch.Tensor) else a for a in args)
    interpreter.run(program, entry, fresh)
    return tuple(a for a in fresh if isinstance(a, torch.Tensor))


def same_results(before, after, entry: str, seeds=(0, 1), scalars: dict | None = None) -> None:
    """Interpreting both programs on the same random inputs gives the same bits."""
    for seed in seeds:
        args = random_args(before, entry, seed, scalars)
        for x, y in zip(outputs_of(before, entry, args), outputs_of(after, entry, args)):
            assert ps.bits_equal(x, y), f"outputs differ (seed {seed})"


def check_pass(run, before: str, after: str, ctx: PassContext | None = None, *, entry: str | None = None,
               scalars: dict | None = None):
    """Parse BEFORE, run the pass, compare with AFTER as text and structurally, and check the
    interpreter gives the same bits before and after."""
    ctx = ctx or PassContext(soc=A2A3)
    program = parse(program_text(before))
    verify(program, A2A3)
    got = run(program, ctx)
    want = program_text(after)
    assert got.program.as_python() == want, "\n" + got.program.as_python()
    assert parse(want) == got.program
    verify(got.program, A2A3)
    name = entry or got.program.functions[-1].name
    same_results(program, got.program, name, scalars=scalars)
    return got


# ----------------------------------------------------------------------------- platforms

def run_on(case: ps.Case, platform: str = "a2a3sim", planner: str = "PYPTO", **config):
    """(Out tensors, RunReport) of the case on a platform, through the whole compiler."""
    if platform == "a2a3sim":
        return simulate(case, planner, **config)
    compiled = compile_case(case, platform, planner, **config)
    args = case.args()
    report = compiled.run(*args)
    return args[len(case.inputs):], report


def load_kernel(path, name: str = "k"):
    """The kernel ``name`` a source file defines (the front end reads kernels from their
    files, so a test writes one)."""
    import runpy

    return runpy.run_path(str(path))[name]


def scope_kernel(tmp_path, body: str, params: str = "x: pl.Tensor, out: pl.Out[pl.Tensor]"):
    """``k(params)``: a @pl.jit kernel whose one pl.at scope runs the lines of ``body`` and
    returns ``out``, written to tmp_path/k.py (so its errors name that file)."""
    src = tmp_path / "k.py"
    src.write_text("import pypto.language as pl\n\n@pl.jit\ndef k(" + params + "):\n"
                   "    with pl.at(level=pl.Level.CORE_GROUP):\n" + "".join(f"        {s}\n" for s in body.split("\n"))
                   + "    return out\n")
    return load_kernel(src)


def assert_cross_core_flows(trace_dir, out) -> None:
    """``clean_sim_trace`` of a split cluster's L0 trace (written to ``out``) shows its three
    cores, flow arrows from the cube to each vector core, and at least one back."""
    import json
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "pypto.tools.clean_sim_trace", str(trace_dir), "-o", str(out)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    events = json.loads((out / "trace.clean.json").read_text())["traceEvents"]
    names = {e["pid"]: e["args"]["name"] for e in events if e.get("name") == "process_name"}
    assert len(names) == 3
    starts = {e["id"]: e["pid"] for e in events if e.get("ph") == "s"}
    ends = {e["id"]: e["pid"] for e in events if e.get("ph") == "f"}
    kind = {pid: "cube" if "cube" in name else "vec" for pid, name in names.items()}  # core0.cubecore0, core0.veccore1
    crossing = {(kind[starts[i]], ends[i]) for i in starts if i in ends and starts[i] != ends[i]}
    assert {pid for k, pid in crossing if k == "cube"} == {p for p, k in kind.items() if k == "vec"}  # to each lane
    assert any(k == "vec" and kind[pid] == "cube" for k, pid in crossing)  # and back: a lane frees a slot
