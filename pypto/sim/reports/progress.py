"""A progress line on stderr for a run that takes more than a few seconds: how far the
simulation is (instructions started, the cycle reached; on the chip, tasks submitted) and
how much of its data has been applied.

    with progress.run("pipelined on a2a3sim"):      # the runtime, around one run
        for d in progress.counted(records, "simulated"):   # the simulator's loops
            ...

The loops count down and look at the clock once every ``EVERY`` items, so a run pays a
decrement per item; with no run in progress (a library call of the simulator) they are
not wrapped at all. A loop of the program of ``LONG`` trips or more (``looping``: the
interpreter's, the scalar unit's, the data of a fast-forwarded one's) is followed too: the
line shows the outermost one's trip and the time it has left at the rate so far, and one
expected to take more than ``WARN_AFTER`` is said once as a warning, whatever the line shows. Nothing is shown before ``AFTER`` seconds, nor when the ``pypto``
logger is quieter than INFO. With ``tqdm`` installed the line is a tqdm bar; without, a
line through the ``pypto`` logger at INFO that overwrites itself on a terminal (and is
written every ``LOG_INTERVAL`` seconds elsewhere).
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import os
import time

from pypto.log import logger

EVERY = 1024  # items between two looks at the clock
LONG = 1 << 12  # trips: a loop this long is followed on the line (its trip, and the time it has left)
TRIP_EVERY = 16  # trips between two looks at the clock
WARN_AFTER = 3600.0  # seconds: a loop expected to take longer is warned of once, under WARN too
AFTER = 3.0  # seconds of silence before the first line
INTERVAL = 0.5  # seconds between redraws on a terminal
LOG_INTERVAL = 10.0  # ... and between lines in a log file
clock = time.monotonic  # (a test's fake clock goes here)

_current: contextvars.ContextVar = contextvars.ContextVar("pypto_progress", default=None)


def _tqdm():
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm


class Meter:
    """What one run has done so far, shown once it has taken ``AFTER`` seconds."""

    def __init__(self, what: str):
        self.what = what
        self.began = clock()
        self.next = self.began + AFTER
        self.quiet = not logger.isEnabledFor(logging.INFO)
        self.counts: dict[str, int] = {}  # "simulated" instructions, "tasks", "applied" instructions
        self.totals: dict[str, int] = {}
        self.cycle = 0
        self.final = None  # (instructions, sync instructions, cycle) once the run is done
        self.bar = None
        self.shown = False
        self.loops: list = []  # the long loops under way, outermost first (``looping``)
        self.warned = self.interrupted = False

    def add(self, kind: str, n: int, cycle: int | None = None) -> None:
        self.counts[kind] = self.counts.get(kind, 0) + n
        if cycle is not None and cycle > self.cycle:
            self.cycle = cycle
        self.look()

    def look(self) -> None:
        now = clock()
        if now < self.next:
            return
        if self.loops and not self.warned:
            self.warn(now)
        if self.quiet:
            self.next = now + LOG_INTERVAL
        else:
            self.show(now)

    def reached(self, instructions: int, syncs: int, cycle: int) -> None:
        """The run's own figures, for the line that says it is done: its report's (the trips
        a steady loop fast-forwarded were never started one by one, so the counts alone would
        leave them out, and the cycle with them)."""
        self.final = (instructions, syncs, cycle)

    def warn(self, now: float) -> None:
        """Say once, whatever the line shows, that the outermost long loop has more time to
        go than anyone waits for."""
        loop = self.loops[0]
        left = loop.left(now)
        if left is not None and left > WARN_AFTER:
            self.warned = True
            logger.warning(f"[pypto] {self.what}: {loop.where} runs {loop.total:,} trips, about {duration(left)} "
                           "more at this rate (Ctrl-C stops it)")

    def text(self, now: float, done: bool = False) -> str:
        parts = []
        if done and self.final is not None:
            instructions, syncs, cycle = self.final
            parts.append(f"{instructions:,} instructions" + (f" and {syncs:,} sync instructions" if syncs else "")
                         + f" simulated (cycle {cycle:,})")
        elif "simulated" in self.counts:  # (every instruction started so far, sync ones too)
            parts.append(f"{self.counts['simulated']:,} instructions simulated (cycle {self.cycle:,})")
        if self.counts.get("tasks", 0) > 1:  # a plain kernel call is one task
            parts.append(f"{self.counts['tasks']:,} tasks")
        if self.loops and not done:
            parts.append(self.loops[0].text(now))
        if "applied" in self.counts and not done:
            total = self.totals.get("applied")
            parts.append(f"applying the data ({self.counts['applied']:,}" + (f" of {total:,}" if total else "")
                         + " steps)")
        took = f"{now - self.began:.1f} s" if done else f"{now - self.began:.0f} s"
        if done:
            return f"{'interrupted after' if self.interrupted else 'done in'} {took}" + (f": {', '.join(parts)}"
                                                                                       if parts else "")
        return f"{', '.join(parts) or 'starting'}; {took}"

    def show(self, now: float) -> None:
        tqdm = _tqdm()
        self.shown = True  # (before it is: a Ctrl-C as it is written still gets the closing line)
        if tqdm is not None:
            if self.bar is None:
                self.bar = tqdm(total=None, desc=f"[pypto] {self.what}", bar_format="{desc}: {postfix}", leave=True)
            self.bar.set_postfix_str(self.text(now))
        else:
            logger.info(f"[pypto] {self.what}: {self.text(now)}", extra={"progress": True})
        self.next = now + (INTERVAL if tqdm is not None or _overwrites() else LOG_INTERVAL)

    def close(self) -> None:
        if not self.shown:
            return
        now = clock()
        if self.bar is not None:
            self.bar.set_postfix_str(self.text(now, done=True))
            self.bar.close()
        else:
            logger.info(f"[pypto] {self.what}: {self.text(now, done=True)}")


def _overwrites() -> bool:
    """Whether the logger's line overwrites itself (its handler writes to a terminal)."""
    return any(getattr(h, "overwrites", lambda: False)() for h in logger.handlers)


@contextlib.contextmanager
def run(what: str):
    """Meter the simulated work done inside: the line shows what ``what`` names."""
    meter = Meter(what)
    token = _current.set(meter)
    try:
        yield meter
    except KeyboardInterrupt:
        meter.interrupted = True
        raise
    finally:
        _current.reset(token)
        meter.close()


def counted(items, kind: str, total: int | None = None, cycle=None):
    """``items`` as they are, counted into the run in progress (if any) as ``kind``;
    ``cycle(item)``: the simulated cycle an item reached."""
    meter = _current.get()
    if meter is None:
        return items
    if total is not None:
        meter.totals[kind] = meter.totals.get(kind, 0) + total
    return _counting(items, meter, kind, cycle)


def _counting(items, meter: Meter, kind: str, cycle):
    left, item = EVERY, None
    for item in items:
        left -= 1
        if not left:
            left = EVERY
            meter.add(kind, EVERY, cycle(item) if cycle is not None else None)
        yield item
    if left != EVERY:
        meter.add(kind, EVERY - left, cycle(item) if cycle is not None else None)


def counting(callback, kind: str, cycle=None):
    """``callback`` (called once per item), counted as ``counted`` counts a loop's items."""
    meter = _current.get()
    if meter is None:
        return callback
    left, last = EVERY, None

    def counted_call(item):
        nonlocal left, last
        left -= 1
        last = item
        if not left:
            left = EVERY
            meter.add(kind, EVERY, cycle(item) if cycle is not None else None)
        return callback(item)

    def flush():
        nonlocal left
        if left != EVERY:  # the last batch, with the cycle its last item reached
            meter.add(kind, EVERY - left, cycle(last) if cycle is not None else None)
            left = EVERY

    counted_call.flush = flush
    return counted_call


def done(callback) -> None:
    """The items a ``counting`` callback saw since it last counted, counted."""
    flush = getattr(callback, "flush", None)
    if flush is not None:
        flush()


def step(kind: str) -> None:
    """One more of ``kind`` (a task) in the run in progress, if any."""
    meter = _current.get()
    if meter is not None:
        meter.add(kind, 1)


class _Loop:
    """A long loop under way in a run (``looping``): ``trip(k)`` as its trip k (from 0)
    starts, ``close()`` when it ends."""

    __slots__ = ("meter", "where", "total", "first", "done", "began", "until")

    def __init__(self, meter: Meter, where: str, total: int, first: int):
        self.meter, self.where, self.total = meter, where, total
        self.first = self.done = first
        self.began, self.until = clock(), TRIP_EVERY
        meter.loops.append(self)

    def trip(self, k: int) -> None:
        self.until -= 1
        if self.until:
            return
        self.until = TRIP_EVERY
        self.done = k
        self.meter.look()

    def close(self) -> None:
        if self in self.meter.loops:
            self.meter.loops.remove(self)

    def left(self, now: float) -> float | None:
        """Seconds to its end at the rate so far (None: no trip done yet)."""
        spent, done = now - self.began, self.done - self.first
        if not done or spent <= 0 or self.total is None:
            return None
        return (self.total - self.done) * spent / done

    def text(self, now: float) -> str:
        left = self.left(now)
        of = "" if self.total is None else f" of {self.total:,}"  # (a while loop's: known when it ends)
        return f"{self.where}: trip {self.done:,}{of}" + ("" if left is None else
                                                                        f", about {duration(left)} left")


def looping(where: str, total: int | None, first: int = 0) -> _Loop | None:
    """A loop of ``total`` trips (None: not known before it ends) in the run in progress,
    followed from its trip ``first`` on, on its line (None: no run in progress, or too few
    trips left to follow)."""
    meter = _current.get()
    if meter is None or total is not None and total - first < LONG:
        return None
    return _Loop(meter, where, total, first)


def loop_at(span) -> str:
    """A loop as the line names it, by its file (not the whole path) and line."""
    return f"the loop at {os.path.basename(span.file)}:{span.line}" if span is not None else "a loop"


def duration(seconds: float) -> str:
    """Seconds as a person reads them: 45 s, 12 min, 5 h, 3 days, 120 years."""
    for unit, size in (("years", 365.25 * 86400), ("days", 86400), ("h", 3600), ("min", 60)):
        if seconds >= 2 * size:
            return f"{seconds / size:,.0f} {unit}"
    return f"{seconds:.0f} s"
