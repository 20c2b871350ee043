"""Task races: two tasks that touch the same bytes (one writing) and that no chain of
edges orders, when their runs overlapped in time or ran against program order — then what
they leave depends on the schedule, and the result is not the program's. The reference
runtime does not check this (its opt-outs are the user's assertion, and it does not order
a writer after earlier readers); we do, as ``SimulatorHazard`` does for pipes.

Tasks are visited in start order (a linear extension of the edges: a task starts after
its producers finish); each byte segment keeps its last writer and the readers since."""

from __future__ import annotations

from pypto.chip.tasks import Task
from pypto.errors import PyptoError
from pypto.sim.intervals import IntervalMap
from pypto.sim.views import element_at

_PAGE_BITS = 16
_UNTOUCHED = (None, ())


class TaskRace(PyptoError):
    """Two tasks touch the same bytes, one writing, and no dependency orders them."""


def check(tasks: list[Task], accesses) -> None:
    """``accesses(task)``: its GM bytes, [(lo, hi, write, TaskArg)] — asked for only of the
    tasks that could race: those that overlap in time, or run against program order, with a
    task no chain of edges orders them against (a chain, or one task, asks for nothing).
    Raises ``TaskRace`` for the first racing pair."""
    before = _ancestors(tasks)
    suspects = _suspects(tasks, before)
    if not suspects:
        return
    shadow = IntervalMap(_PAGE_BITS)
    for t in sorted((t for t in tasks if t.number in suspects), key=lambda t: (t.start, t.number)):
        for lo, hi, write, arg in accesses(t):
            for page, k in shadow.pieces(lo, hi):
                writer, readers = page.values[k] or _UNTOUCHED
                seg = (page.bounds[k], page.bounds[k + 1])
                if writer is not None:
                    _meet(writer, t, write, True, arg, seg, before)
                if write:
                    for r in readers:
                        _meet(r, t, True, False, arg, seg, before)
                    page.values[k] = ((t, arg), ())
                else:
                    page.values[k] = (writer, tuple(r for r in readers if r[0] is not t) + ((t, arg),))


def _suspects(tasks: list[Task], before: list[int]) -> set[int]:
    """The tasks in some pair that no edge orders and that overlapped in time or ran
    against program order: a sweep in start order over the tasks still running, and over
    those started earlier though submitted later."""
    out: set[int] = set()
    running: list[Task] = []
    started: list[Task] = []  # in start order
    latest = -1  # the highest task number started so far
    for t in sorted(tasks, key=lambda t: (t.start, t.number)):
        running = [u for u in running if u.end > t.start]
        earlier = running if latest < t.number else started  # inverted: any earlier start may be a partner
        for u in earlier:
            if (u.end > t.start or u.number > t.number) and not (before[t.number] >> u.number) & 1:
                out.update((u.number, t.number))
        running.append(t)
        started.append(t)
        latest = max(latest, t.number)
    return out


def _ancestors(tasks: list[Task]) -> list[int]:
    """Per task, a bit set of the tasks some chain of edges puts before it."""
    out = [0] * len(tasks)
    for t in tasks:
        bits = 0
        for p in t.preds:
            bits |= out[p] | (1 << p)
        out[t.number] = bits
    return out


def _meet(earlier: tuple, t: Task, t_writes: bool, earlier_writes: bool, arg, seg, before) -> None:
    u, u_arg = earlier
    if u is t or (before[t.number] >> u.number) & 1:
        return
    overlapped = u.start < t.end and t.start < u.end
    if not overlapped and u.number < t.number:
        return  # unordered, but this run kept program order: the program's result
    raise _race(u, earlier_writes, u_arg, t, t_writes, arg, seg, overlapped)


def _race(u: Task, u_writes: bool, u_arg, t: Task, t_writes: bool, t_arg, seg, overlapped: bool) -> TaskRace:
    first, second = (u, t) if u.number < t.number else (t, u)
    lo, _ = seg
    index = element_at(t_arg.tensor, lo)
    place = (f"{t_arg.written}[{', '.join(map(str, index))}]" if index is not None
             else f"bytes of '{t_arg.written}'")
    when = (f"ran at the same time (cycles {u.start}-{u.end} and {t.start}-{t.end})" if overlapped
            else f"ran out of program order (the later submitted {u.name} ended at cycle {u.end}, before "
                 f"{t.name} began at {t.start})")
    first_writes = u_writes if first is u else t_writes
    if not first_writes:  # a writer after a reader: the runtime does not order that
        hint = (f"the runtime does not order a writer after earlier readers: make {second.name} wait for "
                f"{first.name} with deps=[...] on its pl.at (with pl.at(...) as tid)")
    else:
        hint = ("nothing orders the two (an opt-out — pl.parallel writers of one buffer, no_dep_args, "
                "manual_dep, a manual scope — asserted they were independent): give them disjoint bytes, or "
                "order them with deps=[...]; RunConfig(unsafe_allow_task_races=True) runs it anyway")
    return TaskRace(
        f"{u.where()} {'writes' if u_writes else 'reads'} {place}, which {t.where()} "
        f"{'writes' if t_writes else 'reads'}, and no dependency orders them: they {when}",
        span=second.span, hint=hint)
