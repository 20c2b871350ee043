"""A progress line on stderr for a run that takes more than a few seconds: how far the
simulation is (instructions started, the cycle reached; on the chip, tasks submitted) and
how much of its data has been applied.

    with progress.run("pipelined on a2a3sim"):      # the runtime, around one run
        for d in progress.counted(records, "simulated"):   # the simulator's loops
            ...

The loops count down and look at the clock once every ``EVERY`` items, so a run pays a
decrement per item; with no run in progress (a library call of the simulator) they are
not wrapped at all. Nothing is shown before ``AFTER`` seconds, nor when the ``pypto``
logger is quieter than INFO. With ``tqdm`` installed the line is a tqdm bar; without, a
line through the ``pypto`` logger at INFO that overwrites itself on a terminal (and is
written every ``LOG_INTERVAL`` seconds elsewhere).
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import time

from pypto.log import logger

EVERY = 1024  # items between two looks at the clock
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

    def add(self, kind: str, n: int, cycle: int | None = None) -> None:
        self.counts[kind] = self.counts.get(kind, 0) + n
        if cycle is not None and cycle > self.cycle:
            self.cycle = cycle
        now = clock()
        if now >= self.next and not self.quiet:
            self.show(now)

    def reached(self, instructions: int, syncs: int, cycle: int) -> None:
        """The run's own figures, for the line that says it is done: its report's (the trips
        a steady loop fast-forwarded were never started one by one, so the counts alone would
        leave them out, and the cycle with them)."""
        self.final = (instructions, syncs, cycle)

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
        if "applied" in self.counts and not done:
            total = self.totals.get("applied")
            parts.append(f"applying the data ({self.counts['applied']:,}" + (f" of {total:,}" if total else "")
                         + " steps)")
        took = f"{now - self.began:.1f} s" if done else f"{now - self.began:.0f} s"
        return f"done in {took}: {', '.join(parts)}" if done else f"{', '.join(parts) or 'starting'}; {took}"

    def show(self, now: float) -> None:
        tqdm = _tqdm()
        if tqdm is not None:
            if self.bar is None:
                self.bar = tqdm(total=None, desc=f"[pypto] {self.what}", bar_format="{desc}: {postfix}", leave=True)
            self.bar.set_postfix_str(self.text(now))
        else:
            logger.info(f"[pypto] {self.what}: {self.text(now)}", extra={"progress": True})
        self.shown = True
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
