"""The task-race check as it was before its runs were merged (issue 39), by brute force: a
test-only oracle that ``pypto.chip.races.check`` must match race for race.

Every pair of blocks, in the order the check reports them: by the later one's start
(start, task number, block), then the earlier one's; a pair is a suspect when no chain of
edges orders it and it overlapped in time or ran against program order, or when it is two
blocks of one task (those after the others). In a suspect pair, every pair of byte ranges
(one from each block, sorted by their first byte) that overlaps with one writing — two
atomic adds commute — and the first of them in a sweep over the first bytes: the one whose
later range starts first, then whose earlier range does."""

from __future__ import annotations

from pypto.chip import races
from pypto.sim.record import ATOMIC_ADD


def check(tasks, accesses) -> None:
    runs = sorted((races._Run(t, p.block if len(t.placements) > 1 else None, p.start, p.end)
                   for t in tasks for p in t.placements), key=lambda r: (r.start, r.number, r.block or 0))
    for k, t in enumerate(runs):
        mine = _ancestors(tasks, t.number)
        others = [u for u in runs[:k] if u.task is not t.task and u.number not in mine
                  and (u.end > t.start or u.number > t.number)]
        for u in others + [u for u in runs[:k] if u.task is t.task]:
            met = _first_shared(_sorted(accesses, u), _sorted(accesses, t))
            if met is not None:
                (lo, hi, u_writes, u_arg), (_, _, t_writes, t_arg) = met
                overlapped = u.start < t.end and t.start < u.end
                raise races._race(u, u_writes, u_arg, t, t_writes, t_arg, (lo, hi), overlapped)


def _sorted(accesses, r) -> list:
    return sorted(accesses(r.task, r.block or 0), key=lambda a: a[0])


def _ancestors(tasks, number: int) -> set:
    out, todo = set(), list(tasks[number].preds)
    while todo:
        p = todo.pop()
        if p not in out:
            out.add(p)
            todo.extend(tasks[p].preds)
    return out


def _first_shared(a: list, b: list):
    best = None
    for i, x in enumerate(a):
        for j, y in enumerate(b):
            if x[0] < y[1] and y[0] < x[1] and (x[2] or y[2]) and not x[2] == y[2] == ATOMIC_ADD:
                ex, ey = (x[0], 0, i), (y[0], 1, j)
                key = (max(ex, ey), min(ex, ey))
                if best is None or key < best[0]:
                    best = (key, ((max(x[0], y[0]), min(x[1], y[1]), x[2], x[3]), y))
    return None if best is None else best[1]
