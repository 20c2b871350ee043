"""Task races: two tasks that touch the same bytes (one writing) and that no chain of
edges orders, when their runs overlapped in time or ran against program order — then what
they leave depends on the schedule, and the result is not the program's. The reference
runtime does not check this (its opt-outs are the user's assertion, and it does not order
a writer after earlier readers); we do, as ``SimulatorHazard`` does for pipes.

Only pairs that could race are compared (found by a sweep in start order): each block's
bytes merged into strided runs per mode once (``sim.strided``: a window of thousands of rows
is one run), a pair's runs met against each other in time independent of the rows, and only
a pair that races walked byte range by byte range, for the message."""

from __future__ import annotations

import bisect

import attrs

from pypto.chip.tasks import Task
from pypto.errors import PyptoError
from pypto.sim.record import ATOMIC_ADD
from pypto.sim.accesses.strided import meet, union
from pypto.sim.accesses.views import element_at


class TaskRace(PyptoError):
    """Two tasks touch the same bytes, one writing, and no dependency orders them.
    ``tasks``: their numbers (in submission order; one number twice for two blocks of one
    SPMD task)."""

    tasks: tuple = ()


@attrs.frozen(eq=False)
class _Run:
    """One block of a task as it ran (``block`` None: a task that is not SPMD)."""

    task: Task
    block: int | None
    start: int
    end: int

    @property
    def number(self) -> int:
        return self.task.number

    @property
    def name(self) -> str:
        return self.task.name

    @property
    def span(self):
        return self.task.span

    def where(self) -> str:
        return self.task.where() + (f" (block {self.block})" if self.block is not None else "")


def check(tasks: list[Task], accesses, windows) -> None:
    """``windows(task, block)``: the GM bytes of one block of a task, a window at a time,
    [(strided runs, write)] (``sim.strided``; ``write`` True, False, or ``ATOMIC_ADD``) —
    asked for only of the runs in a suspect pair: two that no chain of edges orders and
    that overlapped in time or ran against program order, or two blocks of one SPMD task
    (which nothing orders: they run as one) — a chain, or one task, asks for nothing.
    ``accesses(task, block)``: the same bytes as ranges, [(lo, hi, write, TaskArg)], asked
    for only of a pair that races (for the message). Each suspect pair is compared on all
    of its bytes, so no third task can hide one. Raises ``TaskRace`` for the first racing
    pair, in start order."""
    before = _ancestors(tasks)
    runs = [_Run(t, p.block if len(t.placements) > 1 else None, p.start, p.end)
            for t in tasks for p in t.placements]
    cache: dict[tuple, list] = {}
    footprints: dict[tuple, tuple] = {}

    def sorted_accesses(r: _Run) -> list:
        key = (r.number, r.block)
        if key not in cache:
            cache[key] = sorted(accesses(r.task, r.block or 0), key=lambda a: a[0])
        return cache[key]

    def footprint(r: _Run) -> tuple:
        key = (r.number, r.block)
        if key not in footprints:
            footprints[key] = _footprint(windows(r.task, r.block or 0))
        return footprints[key]

    for u, t in _suspects(runs, before):
        if _conflict(footprint(u), footprint(t)):
            (lo, hi, u_writes, u_arg), (_, _, t_writes, t_arg) = _shared(sorted_accesses(u), sorted_accesses(t))
            overlapped = u.start < t.end and t.start < u.end
            raise _race(u, u_writes, u_arg, t, t_writes, t_arg, (lo, hi), overlapped)


def _footprint(windows) -> tuple:
    """(what it writes, adds into atomically, reads) of one block, each as strided runs."""
    writes, adds, reads = [], [], []
    for runs, mode in windows:
        (adds if mode == ATOMIC_ADD else writes if mode else reads).extend(runs)
    return union(writes), union(adds), union(reads)


def _conflict(a: tuple, b: tuple) -> bool:
    """Whether two blocks share a byte that one of them writes — two atomic adds commute,
    so they do not count (``_shared``'s rule, on the merged runs)."""
    (aw, aa, ar), (bw, ba, br) = a, b
    return (meet(aw, bw) or meet(aw, ba) or meet(aw, br) or meet(aa, bw) or meet(ar, bw)
            or meet(aa, br) or meet(ar, ba))


def _shared(a: list, b: list):
    """The first pair of accesses, one from each list, that share bytes with one of them
    writing — (a's, narrowed to the shared bytes; b's) — or None: two atomic adds commute,
    so they do not count. A sweep over the starts, keeping each side's accesses still open."""
    open_ = ([], [])  # per side: the indices of its accesses that reach past the sweep point
    sides = (a, b)
    for lo, side, k in sorted([(x[0], 0, k) for k, x in enumerate(a)] + [(y[0], 1, k) for k, y in enumerate(b)]):
        current, theirs = sides[side][k], sides[1 - side]
        still = open_[1 - side][:] = [o for o in open_[1 - side] if theirs[o][1] > lo]
        for o in still:
            other = theirs[o]
            if (current[2] or other[2]) and not current[2] == other[2] == ATOMIC_ADD:
                x, y = (current, other) if side == 0 else (other, current)
                return (max(x[0], y[0]), min(x[1], y[1]), x[2], x[3]), y
        open_[side].append(k)
    return None


def _suspects(runs: list[_Run], before: list[int]):
    """The pairs (earlier start, later start) that no edge orders and that overlapped in
    time or ran against program order, and the pairs of blocks of one task: a sweep in
    start order over the runs still running and over those started earlier though
    submitted later (found by number, not by a walk over all started), then over the
    earlier blocks of the same task."""
    running: list[tuple] = []  # (position in start order, run)
    by_number: list[tuple] = []  # (number, position, run) of every run started, sorted
    blocks: dict[int, list] = {}  # task number -> its blocks started so far
    latest = -1  # the highest task number started so far
    for k, t in enumerate(sorted(runs, key=lambda r: (r.start, r.number, r.block or 0))):
        running = [(j, u) for j, u in running if u.end > t.start]
        earlier = running
        if latest > t.number:  # inverted: a run submitted later has started: it may be a partner too
            later = by_number[bisect.bisect_right(by_number, (t.number, len(runs))):]
            earlier = sorted({j: u for j, u in running + [(j, u) for _, j, u in later]}.items(), key=lambda x: x[0])
        mine = before[t.number]
        for _, u in earlier:
            if u.task is not t.task and not (mine >> u.number) & 1:
                yield u, t
        for u in blocks.get(t.number, ()):
            yield u, t
        if t.block is not None:
            blocks.setdefault(t.number, []).append(t)
        running.append((k, t))
        bisect.insort(by_number, (t.number, k, t))
        latest = max(latest, t.number)


def _ancestors(tasks: list[Task]) -> list[int]:
    """Per task, a bit set of the tasks some chain of edges puts before it."""
    out = [0] * len(tasks)
    for t in tasks:
        bits = 0
        for p in t.preds:
            bits |= out[p] | (1 << p)
        out[t.number] = bits
    return out


def _race(u: _Run, u_writes: bool, u_arg, t: _Run, t_writes: bool, t_arg, seg, overlapped: bool) -> TaskRace:
    first, second = (u, t) if (u.number, u.block or 0) < (t.number, t.block or 0) else (t, u)
    lo, _ = seg
    index = element_at(t_arg.tensor, lo)
    place = (f"{t_arg.written}[{', '.join(map(str, index))}]" if index is not None
             else f"bytes of '{t_arg.written}'")
    when = (f"ran at the same time (cycles {u.start}-{u.end} and {t.start}-{t.end})" if overlapped
            else f"ran out of program order (the later submitted {u.name} ended at cycle {u.end}, before "
                 f"{t.name} began at {t.start})")
    first_writes = u_writes if first is u else t_writes
    why = f"no dependency orders them: they {when}"
    if u.task is t.task:
        why = "nothing orders the blocks of one SPMD task"
        hint = ("give each block its own bytes: offset its window by pl.tile.get_block_idx() (the loop variable "
                "of pl.spmd), or make the shared part a separate task")
    elif not first_writes:  # a writer after a reader: the runtime does not order that
        hint = (f"the runtime does not order a writer after earlier readers: make {second.name} wait for "
                f"{first.name} with deps=[...] on its pl.at (with pl.at(...) as tid)")
    else:
        hint = ("nothing orders the two (an opt-out — pl.parallel writers of one buffer, no_dep_args, "
                "manual_dep, a manual scope — asserted they were independent): give them disjoint bytes, or "
                "order them with deps=[...]; RunConfig(unsafe_allow_task_races=True) runs it anyway")
    race = TaskRace(f"{u.where()} {_verb(u_writes)} {place}, which {t.where()} {_verb(t_writes)}, and {why}",
                    span=second.span, hint=hint)
    race.tasks = (first.number, second.number)
    return race


def _verb(mode) -> str:
    return "adds into" if mode == ATOMIC_ADD else "writes" if mode else "reads"
