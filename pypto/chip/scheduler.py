"""The chip as a discrete-event model on one clock (core cycles): the orchestrator submits
tasks in source order, each after the last (``ChipCosts.submit`` apiece); a task whose
producers have all finished is ready ``release`` later; the scheduler hands ready tasks,
first come first served per core kind, to idle cores of their kind — an AIV task to one
vector core, an AIC task to one cube core, a mix task to a whole cluster — writing one
descriptor at a time (``dispatch``); the core picks it up (``pickup``), runs it for its
simulated duration, and the scheduler sees it end ``completion`` later (its finish), when
the core is free again and its consumers are released.

    schedule(tasks, soc) -> makespan   fills each task's core, dispatch, start, end, finish
"""

from __future__ import annotations

import bisect
import collections
import heapq

from pypto.backend import CoreKind, SoC
from pypto.chip.tasks import Task

_FINISH, _ARRIVE, _READY = 0, 1, 2  # at one cycle: free cores first, then new work


def schedule(tasks: list[Task], soc: SoC) -> int:
    """Place every task (in submission order, ``preds`` naming earlier tasks only) on the
    chip; the makespan: the cycle the last task finishes (or the last submission ends)."""
    c = soc.chip
    idle = {CoreKind.AIC: list(soc.cores(CoreKind.AIC)), CoreKind.AIV: list(soc.cores(CoreKind.AIV))}
    number = soc.core_number
    for cores in idle.values():
        cores.sort(key=number)
    ready = {"aic": collections.deque(), "aiv": collections.deque(), "mix": collections.deque()}
    pending = [len(t.preds) for t in tasks]
    arrived = [False] * len(tasks)
    consumers = collections.defaultdict(list)
    for t in tasks:
        for p in t.preds:
            consumers[p].append(t.number)
    events = [(t.submitted, _ARRIVE, t.number) for t in tasks]
    heapq.heapify(events)
    held: dict[int, tuple] = {}  # task number -> the cores it holds
    scheduler_free = 0
    makespan = max((t.submitted for t in tasks), default=0)
    while events:
        now = events[0][0]
        while events and events[0][0] == now:
            _, kind, k = heapq.heappop(events)
            if kind == _FINISH:
                for core in held.pop(k):
                    bisect.insort(idle[core.kind], core, key=number)
                for succ in consumers[k]:
                    pending[succ] -= 1
                    if pending[succ] == 0 and arrived[succ]:
                        heapq.heappush(events, (now + c.release, _READY, succ))
            elif kind == _ARRIVE:
                arrived[k] = True
                if pending[k] == 0:
                    done = max((tasks[p].finish for p in tasks[k].preds), default=None)
                    at = now if done is None else max(now, done + c.release)
                    heapq.heappush(events, (at, _READY, k))
            else:
                ready[tasks[k].core_type].append(k)
        for core_type, queue in ready.items():
            while queue:
                cores = _take(core_type, idle, soc)
                if cores is None:
                    break
                t = tasks[queue.popleft()]
                held[t.number] = cores
                scheduler_free = max(now, scheduler_free) + c.dispatch
                t.core = cores[0]
                t.dispatch = scheduler_free
                t.start = t.dispatch + c.pickup
                t.end = t.start + t.duration
                t.finish = t.end + c.completion
                makespan = max(makespan, t.finish)
                heapq.heappush(events, (t.finish, _FINISH, t.number))
    stuck = [t for t in tasks if t.core is None]
    if stuck:  # preds name earlier tasks only, so this is a broken graph, not a user's
        raise RuntimeError(f"{len(stuck)} task(s) never became ready, first {stuck[0].name}")
    return makespan


def _take(core_type: str, idle: dict, soc: SoC) -> tuple | None:
    """The idle cores a task of ``core_type`` takes now (the lowest numbered), or None."""
    if core_type == "aic" or core_type == "aiv":
        pool = idle[CoreKind.AIC if core_type == "aic" else CoreKind.AIV]
        return (pool.pop(0),) if pool else None
    free_aiv = collections.Counter(core.cluster for core in idle[CoreKind.AIV])
    for cube in idle[CoreKind.AIC]:
        if free_aiv[cube.cluster] == soc.aiv_per_cluster:
            cores = (cube,) + tuple(v for v in idle[CoreKind.AIV] if v.cluster == cube.cluster)
            idle[CoreKind.AIC].remove(cube)
            for v in cores[1:]:
                idle[CoreKind.AIV].remove(v)
            return cores
    return None
