"""A fuzz campaign: the properties (``pypto.fuzz.properties``) checked on generated kernels
by hypothesis, in small units of examples spread over worker processes, until a number of
examples or a time budget is spent. Failures are shrunk by hypothesis, grouped by
signature, and each group's smallest example saved as a runnable reproducer. With an
example database (a directory, or Redis shared by many machines) every unit first replays
the failures any campaign saved under its property.

    plan = Plan(properties=("simulator", "passes"), examples=1000, jobs=2)
    result = run(plan, progress=print)
"""

from __future__ import annotations

import hashlib
import os
import time
import unittest
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from pathlib import Path
from typing import Callable

import attrs

from pypto.fuzz.properties import PROPERTIES, Example, Knobs, signature

UNIT = 20  # examples per unit of work: small, so progress and the time budget are fine-grained


@attrs.frozen
class Plan:
    properties: tuple = tuple(PROPERTIES)
    knobs: Knobs = Knobs()
    examples: int | None = None  # in all, shared equally among the properties
    seconds: float | None = None  # or a time budget (both: whichever ends first)
    seed: int = 0
    jobs: int = 1
    database: str | None = None  # a directory, "redis://host:port[/db]", or None (no database)
    out: Path = Path("fuzz_failures")
    replay_only: bool = False  # only the database's saved examples, nothing new
    mutant: str | None = None  # a bug planted on purpose (``pypto.fuzz.mutants``): tests of the campaign


@attrs.frozen
class Unit:
    prop: str
    examples: int
    seed: int


@attrs.frozen
class Found:
    prop: str
    signature: str
    message: str
    example: Example
    size: int  # of its source: the smallest of a signature is the one kept
    bisect: str = ""  # the step of the compiler that breaks it (``pypto.tools.bisect``), where it has a program

    @classmethod
    def of(cls, prop: str, exc: BaseException, example: Example) -> Found:
        text = example.source or (example.case.program.as_python() if example.case is not None else "")
        message = f"{type(exc).__name__}: {exc}"
        return cls(prop, signature(prop, exc), message, example, len(text))


@attrs.frozen
class UnitResult:
    prop: str
    ran: int
    found: tuple


@attrs.define
class Result:
    ran: dict = attrs.Factory(dict)  # property -> examples run
    failures: dict = attrs.Factory(dict)  # signature -> Found (the smallest)
    reproducers: dict = attrs.Factory(dict)  # signature -> Path
    seconds: float = 0.0

    @property
    def total(self) -> int:
        return sum(self.ran.values())

    def rate(self) -> float:
        return self.total / self.seconds if self.seconds else 0.0


# ----------------------------------------------------------------------------- one unit


def database(spec: str | None):
    """The hypothesis example database a spec names: None, a directory, or redis://."""
    if spec is None:
        return None
    if spec.startswith("redis://"):
        try:
            import redis
            from hypothesis.extra.redis import RedisExampleDatabase
        except ImportError:
            raise CampaignError(f"--database {spec} needs the redis package: pip install 'pypto[fuzz]'") from None
        try:
            client = redis.Redis.from_url(spec, socket_connect_timeout=5)
            client.ping()
        except (ValueError, redis.exceptions.RedisError) as exc:
            raise CampaignError(f"--database {spec}: cannot reach it ({exc})") from None
        return RedisExampleDatabase(client)
    from hypothesis.database import DirectoryBasedExampleDatabase

    return DirectoryBasedExampleDatabase(spec)


class CampaignError(ValueError):
    """A campaign that cannot start (a bad option, a database it cannot reach)."""


def database_key(prop: str, knobs: Knobs) -> bytes:
    """Where a property's examples are saved: the same on every machine that runs the same
    property with the same knobs (hypothesis would key on the test function's source)."""
    return f"pypto.fuzz/{prop}/{hashlib.sha256(repr(knobs).encode()).hexdigest()[:12]}".encode()


def run_unit(unit: Unit, knobs: Knobs, db_spec: str | None, replay_only: bool) -> UnitResult:
    """Up to ``unit.examples`` examples of one property (after the database's saved ones),
    failures shrunk; what ran and each failure's minimal example."""
    from hypothesis import HealthCheck, Phase, Verbosity, given, settings
    from hypothesis.control import current_build_context

    prop = PROPERTIES[unit.prop]
    found: dict[str, Found] = {}
    ran = 0

    phases = (Phase.reuse,) if replay_only else (Phase.reuse, Phase.generate, Phase.target, Phase.shrink)

    @settings(max_examples=max(unit.examples, 1), database=database(db_spec), deadline=None, phases=phases,
              verbosity=Verbosity.quiet, suppress_health_check=list(HealthCheck), report_multiple_bugs=True,
              print_blob=False)
    @given(prop.examples(knobs))
    def test(example):
        nonlocal ran
        ran += 1
        try:
            prop.check(example)
        except Exception as exc:
            if current_build_context().is_final:  # the shrunk example, replayed to report it
                f = Found.of(unit.prop, exc, example)
                if f.signature not in found or f.size < found[f.signature].size:
                    found[f.signature] = f
            raise

    # hypothesis's own @seed would turn the database off: the seed and the key are set as it keeps them
    test._hypothesis_internal_use_seed = unit.seed
    test._hypothesis_internal_database_key = database_key(unit.prop, knobs)
    try:
        test()
    except unittest.SkipTest:  # replaying only, and the database holds nothing for this property
        pass
    except Exception as exc:
        if not found:  # a failure hypothesis could not replay (flaky) or an error of its own
            found["?"] = Found(unit.prop, signature(unit.prop, exc), f"{type(exc).__name__}: {exc}", Example(), 0)
    # bisected here, where the failure happened (a planted bug lives in this process only)
    return UnitResult(unit.prop, ran, tuple(attrs.evolve(f, bisect=_bisect(f.example)) for f in found.values()))


def _bisect(example: Example) -> str:
    if example.case is None:
        return ""
    from pypto.fuzz.properties import bisect_example

    try:
        return bisect_example(example).report()
    except Exception as exc:  # the bisect is a diagnosis: its own failure must not hide the finding
        return f"the bisect failed: {type(exc).__name__}: {exc}"


# ----------------------------------------------------------------------------- the campaign


def units(plan: Plan):
    """The campaign's units in the order they run: round-robin over the properties, each
    round a fresh seed; endless under a time budget alone."""
    share = None if plan.examples is None else -(-plan.examples // len(plan.properties))
    done = dict.fromkeys(plan.properties, 0)
    round_ = 0
    while True:
        emitted = False
        for prop in plan.properties:
            n = UNIT if share is None else min(UNIT, share - done[prop])
            if n <= 0:
                continue
            digest = hashlib.sha256(f"{plan.seed}/{prop}/{round_}".encode()).digest()
            yield Unit(prop, n, int.from_bytes(digest[:4], "little"))
            done[prop] += n
            emitted = True
        if not emitted or plan.replay_only:
            return
        round_ += 1


def run(plan: Plan, progress: Callable[[Result], None] | None = None) -> Result:
    """Run the plan; reproducers written to ``plan.out``. ``progress`` hears the result so
    far after every unit."""
    for name in plan.properties:
        if name not in PROPERTIES:
            raise CampaignError(f"no property {name!r}; there are {', '.join(PROPERTIES)}")
    database(plan.database)  # an unreachable or unusable database says so before anything runs
    result = Result(ran=dict.fromkeys(plan.properties, 0))
    began = time.monotonic()
    deadline = None if plan.seconds is None else began + plan.seconds
    todo = units(plan)

    def take(r: UnitResult) -> None:
        result.ran[r.prop] += r.ran
        for f in r.found:
            old = result.failures.get(f.signature)
            if old is None or f.size < old.size:
                result.failures[f.signature] = f
        result.seconds = time.monotonic() - began
        if progress is not None:
            progress(result)

    def more():
        if deadline is not None and time.monotonic() >= deadline:
            return None
        return next(todo, None)

    if plan.jobs <= 1:
        from pypto.fuzz.mutants import planted

        with planted(plan.mutant):
            while (unit := more()) is not None:
                take(run_unit(unit, plan.knobs, plan.database, plan.replay_only))
    else:
        import multiprocessing

        with ProcessPoolExecutor(plan.jobs, mp_context=multiprocessing.get_context("spawn"), initializer=_worker,
                                 initargs=(plan.mutant,)) as pool:
            running = set()
            while True:
                while len(running) < plan.jobs and (unit := more()) is not None:
                    running.add(pool.submit(run_unit, unit, plan.knobs, plan.database, plan.replay_only))
                if not running:
                    break
                finished, running = wait(running, return_when=FIRST_COMPLETED)
                for future in finished:
                    take(future.result())
    result.seconds = time.monotonic() - began
    _write(plan, result)
    return result


def _worker(mutant: str | None) -> None:
    """A worker process: one torch thread (the cores are the campaign's), the planted bug if any."""
    import torch

    torch.set_num_threads(1)
    os.environ.setdefault("PYPTO_LOG_LEVEL", "WARN")
    from pypto.log import set_log_level

    set_log_level("WARN")
    if mutant is not None:
        from pypto.fuzz.mutants import plant

        plant(mutant)


def _write(plan: Plan, result: Result) -> None:
    from pypto.fuzz import reproducer

    for sig, f in sorted(result.failures.items()):
        if f.example.case is None and f.example.source is None:
            continue  # nothing to reproduce: an error of the campaign's own (in the summary)
        plan.out.mkdir(parents=True, exist_ok=True)
        name = f"{f.prop}-{hashlib.sha256(sig.encode()).hexdigest()[:8]}.py"
        result.reproducers[sig] = reproducer.write(plan.out / name, f.prop, f.example, sig, f.message, f.bisect)
