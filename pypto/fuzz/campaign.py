"""A fuzz campaign: the properties (``pypto.fuzz.properties``) checked on generated kernels
by hypothesis, in units of examples (``pypto.fuzz.unit``) spread over worker processes,
until a number of examples or a time budget is spent. Failures are shrunk by hypothesis,
grouped by signature, and each group's smallest example saved as a runnable reproducer.
With an example database (a directory, or Redis shared by many machines) each property's
first unit replays the failures any campaign saved under it.

    plan = Plan(properties=("simulator", "passes"), examples=1000, jobs=2)
    result = run(plan, progress=print)
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import signal
import tempfile
import threading
import time
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from pathlib import Path
from typing import Callable

import attrs

from pypto.fuzz.example import Knobs
from pypto.fuzz.unit import CampaignError, Found, Unit, UnitResult, database, run_unit

__all__ = ["CampaignError", "Found", "Plan", "Result", "check", "run", "units"]

UNIT = 50  # examples per unit of work (each begins with hypothesis's simplest draws: not too small)


def _all():
    from pypto.fuzz.properties import PROPERTIES

    return tuple(PROPERTIES)


@attrs.frozen
class Plan:
    properties: tuple = attrs.field(factory=_all)
    knobs: Knobs = Knobs()
    examples: int | None = None  # in all, shared equally among the properties
    seconds: float | None = None  # or a time budget (both: whichever ends first)
    seed: int = 0
    jobs: int = 1
    database: str | None = None  # a directory, "redis://host:port[/db]", or None (no database)
    out: Path = Path("fuzz_failures")
    replay_only: bool = False  # only the database's saved examples, nothing new
    mutant: str | None = None  # a bug planted on purpose (``pypto.fuzz.mutants``): tests of the campaign


@attrs.define
class Result:
    examples: dict = attrs.Factory(dict)  # property -> examples drawn afresh
    runs: dict = attrs.Factory(dict)  # property -> checks run (replays and shrinking included)
    failures: dict = attrs.Factory(dict)  # signature -> Found (the smallest)
    reproducers: dict = attrs.Factory(dict)  # signature -> Path
    seconds: float = 0.0
    interrupted: bool = False
    stopped: str = ""  # why the campaign stopped early (a worker died, the database went away), if it did
    unwritten: str = ""  # why a reproducer could not be written, if one could not

    @property
    def total(self) -> int:
        return sum(self.examples.values())

    def rate(self) -> float:
        return self.total / self.seconds if self.seconds else 0.0


def units(plan: Plan):
    """The campaign's units in the order they run: round-robin over the properties, each
    round a fresh seed, the first replaying the database; endless under a time budget alone."""
    count = len(plan.properties)
    share = None if plan.examples is None else {  # the examples, split as evenly as they go
        p: plan.examples // count + (k < plan.examples % count) for k, p in enumerate(plan.properties)}
    done = dict.fromkeys(plan.properties, 0)
    round_ = 0
    while True:
        emitted = False
        for prop in plan.properties:
            n = UNIT if share is None else min(UNIT, share[prop] - done[prop])
            if n <= 0:
                continue
            digest = hashlib.sha256(f"{plan.seed}/{prop}/{round_}".encode()).digest()
            yield Unit(prop, n, int.from_bytes(digest[:4], "little"), reuse=round_ == 0)
            done[prop] += n
            emitted = True
        if not emitted or plan.replay_only:
            return
        round_ += 1


def check(plan: Plan) -> None:
    """What can be known before anything runs: the properties, the database, the output."""
    from pypto.fuzz.properties import PROPERTIES

    for name in plan.properties:
        if name not in PROPERTIES:
            raise CampaignError(f"no property {name!r}; there are {', '.join(PROPERTIES)}")
    if len(set(plan.properties)) != len(plan.properties):
        raise CampaignError(f"a property named twice: {', '.join(plan.properties)}")
    if plan.seconds is not None and plan.seconds <= 0:
        raise CampaignError("--time must be more than 0")
    if plan.replay_only and (plan.database is None or "://" not in plan.database
                             and not Path(plan.database).is_dir()):
        raise CampaignError("--replay-only replays a database's examples: give --database an existing directory "
                            "or redis://HOST:PORT")
    if plan.database is not None and "://" not in plan.database and not Path(plan.database).exists():
        try:
            Path(plan.database).mkdir(parents=True)
        except OSError as exc:
            raise CampaignError(f"--database {plan.database}: cannot make it ({exc.strerror or exc})") from None
    database(plan.database)  # an unreachable or unusable database says so before anything runs
    out = plan.out
    while not out.exists() and out.parent != out:
        out = out.parent
    try:  # (what may be written there is known by writing, not by asking: root is let past os.access)
        os.rmdir(tempfile.mkdtemp(dir=out))
    except OSError as exc:
        raise CampaignError(f"--out {plan.out}: cannot write reproducers there ({exc.strerror or exc})") from None


def run(plan: Plan, progress: Callable[[Result], None] | None = None) -> Result:
    """Run the plan; reproducers written to ``plan.out``. ``progress`` hears the result so
    far after every unit. Interrupted (Ctrl-C), it keeps what the finished units found:
    ``Result.interrupted``."""
    check(plan)
    result = Result(examples=dict.fromkeys(plan.properties, 0), runs=dict.fromkeys(plan.properties, 0))
    began = time.monotonic()
    deadline = None if plan.seconds is None else began + plan.seconds
    todo = units(plan)

    def take(r: UnitResult) -> None:
        result.examples[r.prop] += r.examples
        result.runs[r.prop] += r.runs
        for f in r.found:
            old = result.failures.get(f.signature)
            if old is None or f.size < old.size:
                result.failures[f.signature] = f
        result.seconds = time.monotonic() - began
        if progress is not None:
            progress(result)

    def more():
        if result.interrupted or result.stopped or deadline is not None and time.monotonic() >= deadline:
            return None
        return next(todo, None)

    from pypto.fuzz.checks import quietly

    with quietly(), _interrupts(result):
        try:
            if plan.jobs <= 1:
                from pypto.fuzz.mutants import planted

                with planted(plan.mutant):
                    while (unit := more()) is not None:
                        try:
                            outcome = run_unit(unit, plan.knobs, plan.database, plan.replay_only)
                        except CampaignError as exc:  # (the database went away, say)
                            result.stopped = str(exc)
                            break
                        take(outcome)
            else:
                _in_workers(plan, more, take, result)
        except KeyboardInterrupt:
            result.interrupted = True
    result.seconds = time.monotonic() - began
    _write(plan, result)
    return result


@contextlib.contextmanager
def _interrupts(result: Result):
    """Ctrl-C marks the campaign interrupted before it raises: an interrupt something swallows
    (hypothesis's collector callback can) still ends it after the unit running."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum, frame):
        result.interrupted = True
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _in_workers(plan: Plan, more, take, result: Result) -> None:
    import multiprocessing
    from concurrent.futures.process import BrokenProcessPool

    pool = ProcessPoolExecutor(plan.jobs, mp_context=multiprocessing.get_context("spawn"), initializer=_worker,
                               initargs=(plan.mutant,))
    running = set()

    def collect(done) -> None:
        for future in done:
            try:
                take(future.result())
            except (BrokenProcessPool, CampaignError, OSError) as exc:  # a worker killed, the database gone
                result.stopped = result.stopped or f"{type(exc).__name__}: {exc}"

    try:
        while True:
            while len(running) < plan.jobs and (unit := more()) is not None:
                running.add(pool.submit(run_unit, unit, plan.knobs, plan.database, plan.replay_only))
            if not running:
                break
            finished, running = wait(running, return_when=FIRST_COMPLETED)
            collect(finished)
    except KeyboardInterrupt:  # the units running finish (the workers ignore Ctrl-C) and count
        result.interrupted = True
        collect(wait(running).done)
    finally:
        pool.shutdown(cancel_futures=True)


def _worker(mutant: str | None) -> None:
    """A worker process: one torch thread (the cores are the campaign's), quiet logs, Ctrl-C
    left to the campaign (which lets the running units finish), the planted bug if any."""
    import signal

    import torch

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    torch.set_num_threads(1)
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
        name = f"{f.prop}-{hashlib.sha256(sig.encode()).hexdigest()[:8]}.py"
        try:
            plan.out.mkdir(parents=True, exist_ok=True)
            result.reproducers[sig] = reproducer.write(plan.out / name, f.prop, f.example, sig, f.message, f.bisect)
        except OSError as exc:
            result.unwritten = f"--out {plan.out}: cannot write {name}: {exc.strerror or exc}"
