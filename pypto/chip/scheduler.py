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
    return _Chip(tasks, soc).run()


class _Chip:
    def __init__(self, tasks: list[Task], soc: SoC):
        self.tasks, self.soc, self.c = tasks, soc, soc.chip
        self.number = soc.core_number
        self.idle = {kind: sorted(soc.cores(kind), key=self.number) for kind in (CoreKind.AIC, CoreKind.AIV)}
        self.ready = {"aic": collections.deque(), "aiv": collections.deque(), "mix": collections.deque(),
                      "dummy": collections.deque()}
        self.pending = [len(t.preds) for t in tasks]
        self.arrived = [False] * len(tasks)
        self.queued = [False] * len(tasks)
        self.running = [False] * len(tasks)  # dispatched: its end is known
        self.finished = [False] * len(tasks)
        self.consumers = collections.defaultdict(list)
        for t in tasks:
            for p in t.preds:
                self.consumers[p].append(t.number)
        self.events = [(t.submitted, _ARRIVE, t.number) for t in tasks]
        heapq.heapify(self.events)
        self.held: dict[int, tuple] = {}  # task number -> the cores it holds
        self.scheduler_free = 0

    def run(self) -> int:
        tasks, events = self.tasks, self.events
        makespan = max((t.submitted for t in tasks), default=0)
        while events:
            now = events[0][0]
            while events and events[0][0] == now:
                _, kind, k = heapq.heappop(events)
                if kind == _FINISH:
                    self.finish(k, now)
                elif kind == _ARRIVE:
                    self.arrived[k] = True
                    if self.pending[k] == 0:
                        done = max((tasks[p].finish for p in tasks[k].preds), default=None)
                        self.enqueue(k, now if done is None else max(now, done + self.c.release))
                    else:
                        self.stage(k, now)
                else:
                    self.ready[tasks[k].core_type].append(k)
            for core_type, queue in self.ready.items():
                while queue:
                    cores = _take(core_type, self.idle, self.soc)
                    if cores is None:
                        break
                    t = tasks[queue.popleft()]
                    self.dispatch(t, cores, now)
                    makespan = max(makespan, t.finish)
        stuck = [t for t in tasks if not self.running[t.number]]
        if stuck:  # preds name earlier tasks only, so this is a broken graph, not a user's
            raise RuntimeError(f"{len(stuck)} task(s) never became ready, first {stuck[0].name}")
        return makespan

    def enqueue(self, k: int, at: int) -> None:
        if not self.queued[k]:
            self.queued[k] = True
            heapq.heappush(self.events, (at, _READY, k))

    def stage(self, k: int, now: int) -> None:
        """allow_early_resolve: a task whose unfinished producers are all flagged and all
        running may take a core now, to start the moment the last of them ends."""
        waiting = [p for p in self.tasks[k].preds if not self.finished[p]]
        if waiting and all(self.tasks[p].early and self.running[p] for p in waiting):
            self.enqueue(k, now)

    def dispatch(self, t: Task, cores: tuple, now: int) -> None:
        c = self.c
        self.held[t.number] = cores
        if not cores:  # a dummy: done as soon as it is ready, without the scheduler's dispatch
            t.core, t.dispatch = None, now
            t.start = t.end = t.finish = now
            self.running[t.number] = True
            heapq.heappush(self.events, (now, _FINISH, t.number))
            return
        self.scheduler_free = max(now, self.scheduler_free) + c.dispatch
        t.core = cores[0]
        t.dispatch = self.scheduler_free
        # staged early: released the instant its producers end (their completion, the
        # scheduler's release and this pickup are off the critical path)
        released = max((self.tasks[p].end for p in t.preds if not self.finished[p]), default=0)
        t.start = max(t.dispatch + c.pickup, released)
        t.end = t.start + t.duration
        t.finish = t.end + c.completion
        self.running[t.number] = True
        heapq.heappush(self.events, (t.finish, _FINISH, t.number))
        if t.early:
            for succ in self.consumers[t.number]:
                if self.arrived[succ]:
                    self.stage(succ, now)

    def finish(self, k: int, now: int) -> None:
        self.finished[k] = True
        for core in self.held.pop(k):
            bisect.insort(self.idle[core.kind], core, key=self.number)
        for succ in self.consumers[k]:
            self.pending[succ] -= 1
            if self.pending[succ] == 0 and self.arrived[succ]:
                self.enqueue(succ, now + self.c.release)


def _take(core_type: str, idle: dict, soc: SoC) -> tuple | None:
    """The idle cores a task of ``core_type`` takes now (the lowest numbered), or None; a
    dummy takes none."""
    if core_type == "dummy":
        return ()
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
