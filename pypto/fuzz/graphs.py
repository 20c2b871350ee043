"""The task-graph property: random orchestrations (``pypto.fuzz.tasks``) give torch's values
in program order on ``ref``, and — when the runtime's rules order every conflicting pair
— the same bits on ``a2a3sim``; a consumer that opts out of a needed edge is reported as a
task race; integer atomic adds give the oracle's sums in any order. An example is the
orchestration's source with its steps (``Example.detail``: kind, steps, ...)."""

from __future__ import annotations

import runpy
import tempfile
from pathlib import Path

import torch

from pypto.fuzz import tasks
from pypto.fuzz.checks import Failure
from pypto.fuzz.data import bits_equal
from pypto.fuzz.drawing import st
from pypto.fuzz.example import Example, Knobs, Property


def kernel_from(source: str, name: str, directory: Path):
    """The kernel ``name`` a module's source defines (the front end reads kernels from their
    files, so the source is written to ``directory`` first)."""
    path = directory / "graph.py"
    path.write_text(source)
    return runpy.run_path(str(path))[name]


def _same(got: torch.Tensor, want: torch.Tensor) -> bool:
    """Equal values, NaN where torch has NaN (torch's NaN bits are the host's)."""
    nan = torch.isnan(want)
    return torch.equal(torch.isnan(got), nan) and torch.equal(got[~nan], want[~nan])


def _inputs() -> dict:
    g = torch.Generator().manual_seed(0)
    return {x: torch.randn(tasks.BANDS * tasks.R, tasks.C, generator=g) for x in tasks.INPUTS}


def _run(kernel, inputs: dict, platform: str, chip: str | None = None) -> dict:
    """The outputs of ``kernel`` on ``platform``; ``chip``: ref's, interpreting as that simulator's chip."""
    from pypto.fuzz.example import ref_of
    from pypto.runtime import RunConfig

    outs = [torch.zeros(tasks.BANDS * tasks.R, tasks.C) for _ in tasks.OUTPUTS]
    args = [inputs[x] for x in tasks.INPUTS] + outs + [torch.zeros(tasks.BANDS * tasks.R, tasks.C)]
    kernel(*args, config=ref_of(chip) if chip else RunConfig(platform=platform))  # a call writes no build (compile() would, into the cwd)
    return dict(zip(tasks.OUTPUTS, outs))


def source_of(detail) -> str:
    """The orchestration an example's steps (``Example.detail``) make."""
    kind, steps, *opt_out = detail
    if kind == "atomic":
        return tasks.atomic_source(steps)
    return tasks.source(steps, opt_out=tuple(opt_out) if kind == "opt_out" else None)


def check_tasks(ex: Example) -> None:
    """The source checked is rebuilt from the steps (``Example.source`` shows it)."""
    kind, steps, *opt_out = ex.detail
    source = source_of(ex.detail)
    with tempfile.TemporaryDirectory() as d:
        if kind == "atomic":
            return _check_atomic(kernel_from(source, "adds", Path(d)), steps, source, ex.platform)
        kernel = kernel_from(source, "graph", Path(d))
        if kind == "opt_out":
            return _check_opt_out(kernel, *opt_out, source, ex.platform)
        inputs = _inputs()
        want = tasks.oracle(steps, inputs)
        chip = ex.platform
        ref = _run(kernel, inputs, "ref", chip)
        for y in tasks.OUTPUTS:
            if not _same(ref[y], want[y]):
                raise Failure(f"ref: {y} differs from torch in program order\n{source}")
        unordered = tasks.unordered(steps)
        if unordered:  # the rules leave pairs unordered: the chip reports one of them, or ran them apart
            from pypto.chip.races import TaskRace

            try:
                sim = _run(kernel, inputs, chip)
            except TaskRace as race:
                if tuple(race.tasks) not in unordered:
                    raise Failure(f"{chip} reports a race between tasks {race.tasks}, which the rules order "
                                  f"(unordered: {sorted(unordered)}): {race.message}\n{source}") from None
                return
            for y in tasks.OUTPUTS:
                if not _same(sim[y], want[y]):
                    raise Failure(f"{chip}: {y} differs from program order, and no race was reported\n{source}")
            return
        sim = _run(kernel, inputs, chip)
        for y in tasks.OUTPUTS:
            if not bits_equal(sim[y], ref[y]):
                raise Failure(f"{chip}: {y} differs from ref in a graph the rules order\n{source}")


def _check_opt_out(kernel, op: str, band: int, source: str, platform: str = "a2a3sim") -> None:
    """A consumer that opts out of the edge on its producer (``no_dep_args``) races it: the
    producer waits for nothing and outlasts the orchestrator's submission of the consumer,
    so they overlap or the consumer runs first — a race the chip reports at the band."""
    from pypto.chip.races import TaskRace

    try:
        _run(kernel, _inputs(), platform)
    except TaskRace as race:
        if "no dependency orders them" not in race.message or f"w[{band * tasks.R}, 0]" not in race.message:
            raise Failure(f"the race is reported, but not at w[{band * tasks.R}, 0]: {race.message}\n{source}") \
                from None
        return
    raise Failure(f"an opt-out dropped the consumer's edge on its producer, and no race was reported\n{source}")


def _check_atomic(kernel, steps, source: str, platform: str = "a2a3sim") -> None:
    from pypto.runtime import RunConfig

    g = torch.Generator().manual_seed(1)
    x0 = torch.randint(-1000, 1000, (tasks.BANDS * tasks.R, tasks.C), generator=g, dtype=torch.int32)
    start = {y: torch.randint(-5, 5, (tasks.BANDS * tasks.R, tasks.C), generator=g, dtype=torch.int32)
             for y in tasks.OUTPUTS}
    want = tasks.atomic_oracle(steps, x0, start)
    from pypto.fuzz.example import ref_of

    for config in (ref_of(platform), RunConfig(platform=platform),
                   RunConfig(platform=platform, atomic_order_seed=7)):
        outs = {y: v.clone() for y, v in start.items()}
        kernel(x0, *outs.values(), config=config)
        for y in tasks.OUTPUTS:
            if not torch.equal(outs[y], want[y]):
                raise Failure(f"{config.platform}: atomic adds into {y} differ from the oracle's sums\n{source}")


@st.composite
def _opt_outs(draw):
    steps = draw(tasks.graphs())
    if not tasks.race_free(steps):  # the only race must be the one the opt-out makes
        return Example(source=tasks.source(steps), detail=("graph", _literal(steps)))
    op, band = draw(st.sampled_from(["exp", "neg"])), draw(st.integers(0, tasks.BANDS - 1))
    return Example(source=tasks.source(steps, opt_out=(op, band)), detail=("opt_out", _literal(steps), op, band))


def _examples(k: Knobs):
    graph = tasks.graphs().map(lambda s: Example(source=tasks.source(s), detail=("graph", _literal(s))))
    atomic = tasks.atomic_graphs().map(lambda s: Example(source=tasks.atomic_source(s), detail=("atomic", _literal(s))))
    return st.one_of(graph, graph, atomic, _opt_outs())


def _literal(value):
    """Lists as tuples, all the way down: the steps as a reproducer writes and reads them."""
    return tuple(_literal(v) for v in value) if isinstance(value, (list, tuple)) else value


TASKS = Property("tasks", "task graphs the rules order give ref's bits on a2a3sim, an opt-out that drops a needed "
                          "edge is a reported race, atomic adds give the oracle's sums",
                 _examples, check_tasks)
