"""The chip as a discrete-event model on one clock (core cycles): the orchestrator submits
tasks in source order, each after the last (``ChipCosts.submit`` apiece); a task whose
producers have all finished is ready ``release`` later; the scheduler hands ready tasks,
first come first served per core kind, to idle cores of their kind — an AIV task to one
vector core, an AIC task to one cube core, a mix task to a whole cluster — writing one
descriptor at a time (``dispatch``); the core picks it up (``pickup``), runs it for its
simulated duration, and the scheduler sees it end ``completion`` later (its finish), when
the core is free again and its consumers are released. An SPMD task's blocks take cores
one after another (``block_dispatch`` each after the first; with ``sync_start``, all at
once or none), reusing cores when there are more blocks than cores; it finishes with its
last block.

The model runs as far as the orchestrator needs to know, and no further: a task submitted
later arrives later, so it cannot change what happened before it arrived, but it can take
a core an earlier task would otherwise have had after that.

    chip = Chip(soc); chip.add(task) ...   tasks in submission order, preds earlier tasks
    chip.until_placed(number)              fills in the task's core, dispatch, start, end, finish
    chip.through(cycle)                    every decision up to that cycle taken
    chip.drain() -> makespan               the rest
    schedule(tasks, soc) -> makespan       all at once
"""

from __future__ import annotations

import bisect
import collections
import heapq

from pypto.backend import CoreKind, SoC
from pypto.chip import barriers
from pypto.chip.tasks import Placement, Task

_FINISH, _ARRIVE, _READY = 0, 1, 2  # at one cycle: free cores first, then new work


def schedule(tasks: list[Task], soc: SoC) -> int:
    """Place every task (in submission order, ``preds`` naming earlier tasks only) on the
    chip; the makespan: the cycle the last task finishes (or the last submission ends)."""
    chip = Chip(soc)
    for t in tasks:
        chip.add(t)
    return chip.drain()


class Chip:
    def __init__(self, soc: SoC, decide=None):
        """``decide(task, cycle)``: whether a task with a dispatch predicate runs, asked
        once, when it reaches dispatch (None: every such task runs)."""
        self.soc, self.c = soc, soc.chip
        self.decide = decide
        self.number = soc.core_number
        self.idle = {kind: sorted(soc.cores(kind), key=self.number) for kind in (CoreKind.AIC, CoreKind.AIV)}
        self.ready = {"aic": collections.deque(), "aiv": collections.deque(), "mix": collections.deque(),
                      "dummy": collections.deque()}
        self.tasks: list[Task] = []
        self.pending: list[int] = []  # per task: its producers not finished yet
        self.arrived: list[bool] = []
        self.queued: list[bool] = []
        self.placed: list[bool] = []  # every block dispatched: its times are known
        self.finished: list[bool] = []
        self.ended: list[int] = []  # per task: its blocks finished
        self.consumers: list[list[int]] = []
        self.events: list[tuple] = []  # (cycle, kind, task number, block)
        self.held: dict[tuple, tuple] = {}  # (task number, block) -> the cores it holds
        self.scheduler_free = 0
        self.makespan = 0

    def add(self, t: Task) -> None:
        """The orchestrator submitted ``t`` (its submission ends at ``t.submitted``, no
        earlier than anything this model has decided so far)."""
        assert t.number == len(self.tasks)
        self.tasks.append(t)
        self.pending.append(sum(not self.finished[p] for p in t.preds))
        for flags in (self.arrived, self.queued, self.placed, self.finished):
            flags.append(False)
        self.ended.append(0)
        self.consumers.append([])
        for p in t.preds:
            self.consumers[p].append(t.number)
        t.placements = []
        heapq.heappush(self.events, (t.submitted, _ARRIVE, t.number, 0))
        self.makespan = max(self.makespan, t.submitted)

    def until_placed(self, number: int) -> Task:
        """Decide up to the dispatch of task ``number``'s last block: its times are known then."""
        while not self.placed[number]:
            if not self.events:  # preds name earlier tasks only, so this is a broken graph, not a user's
                raise RuntimeError(f"task {self.tasks[number].name} never became ready")
            self._step()
        return self.tasks[number]

    def through(self, cycle: int) -> None:
        """Take every decision due by ``cycle``."""
        while self.events and self.events[0][0] <= cycle:
            self._step()

    def drain(self) -> int:
        while self.events:
            self._step()
        stuck = [t for t in self.tasks if not self.placed[t.number]]
        if stuck:
            raise RuntimeError(f"{len(stuck)} task(s) never became ready, first {stuck[0].name}")
        return self.makespan

    def _step(self) -> None:
        """Everything due at the next cycle with an event, then the dispatches it allows."""
        tasks, events = self.tasks, self.events
        now = events[0][0]
        while events and events[0][0] == now:
            _, kind, k, block = heapq.heappop(events)
            if kind == _FINISH:
                self._finish(k, block, now)
            elif kind == _ARRIVE:
                self.arrived[k] = True
                if self.pending[k] == 0:
                    done = max((tasks[p].finish for p in tasks[k].preds), default=None)
                    self._enqueue(k, now if done is None else max(now, done + self.c.release))
                else:
                    self._stage(k, now)
            else:
                self.ready[tasks[k].core_type].append(k)
        for core_type, queue in self.ready.items():
            while queue:  # first come first served: the head's blocks take cores before the next task
                t = tasks[queue[0]]
                if t.predicate is not None and not t.placements and self.decide is not None \
                        and not self.decide(t, now):
                    queue.popleft()
                    self._retire(t, now)
                    continue
                if t.sync_start and not t.placements and _room(core_type, self.idle, self.soc) < len(t.blocks):
                    break  # all its blocks at once, or none yet
                cores = _take(core_type, self.idle, self.soc)
                if cores is None:
                    break
                self._dispatch(t, cores, now)
                if len(t.placements) == len(t.blocks):
                    queue.popleft()
                    self._placed(t, now)

    def _enqueue(self, k: int, at: int) -> None:
        if not self.queued[k]:
            self.queued[k] = True
            heapq.heappush(self.events, (at, _READY, k, 0))

    def _stage(self, k: int, now: int) -> None:
        """allow_early_resolve: a task whose unfinished producers are all flagged and all
        running may take a core now, to start the moment the last of them ends."""
        if self.tasks[k].predicate is not None:  # read at dispatch, once its producers have finished
            return
        waiting = [p for p in self.tasks[k].preds if not self.finished[p]]
        if waiting and all(self.tasks[p].early and self.placed[p] for p in waiting):
            self._enqueue(k, now)

    def _dispatch(self, t: Task, cores: tuple, now: int) -> None:
        """The task's next block onto ``cores`` (none: a dummy, done as soon as it is ready,
        without the scheduler's dispatch)."""
        c = self.c
        block = len(t.placements)
        self.held[(t.number, block)] = cores
        if not cores:
            t.placements.append(Placement(block, None, now, now, now, now))
            heapq.heappush(self.events, (now, _FINISH, t.number, block))
            return
        self.scheduler_free = max(now, self.scheduler_free) + (c.block_dispatch if block else c.dispatch)
        # staged early: released the instant its producers end (their completion, the
        # scheduler's release and this pickup are off the critical path)
        released = max((self.tasks[p].end for p in t.preds if not self.finished[p]), default=0)
        start = max(self.scheduler_free + c.pickup, released)
        end = start + t.blocks[block]
        t.placements.append(Placement(block, cores[0], self.scheduler_free, start, end, end + c.completion))
        if not t.sync_start and not t.arrivals:
            heapq.heappush(self.events, (end + c.completion, _FINISH, t.number, block))

    def _retire(self, t: Task, now: int) -> None:
        """A false predicate: done at once, on no core; its consumers are released."""
        t.retired = True
        t.placements.append(Placement(0, None, now, now, now, now))
        self.held[(t.number, 0)] = ()
        heapq.heappush(self.events, (now, _FINISH, t.number, 0))
        self._placed(t, now)

    def _placed(self, t: Task, now: int) -> None:
        """Every block of ``t`` has its cores: its times, and what its flag lets consumers do."""
        if (t.sync_start or t.arrivals) and not t.retired and t.core_type != "dummy":
            if t.sync_start:  # admitted together: they start when the last is picked up
                start = max(p.start for p in t.placements)
                for p in t.placements:
                    p.start = start
            # blocks that meet at a barrier go on from its release (``barriers``)
            ends = barriers.released([p.start for p in t.placements], t.blocks, t.arrivals)
            for p, end in zip(t.placements, ends):
                p.end = end
                p.finish = p.end + self.c.completion
                heapq.heappush(self.events, (p.finish, _FINISH, t.number, p.block))
        first = t.placements[0]
        t.core, t.dispatch = first.core, first.dispatch
        t.start = min(p.start for p in t.placements)
        t.end = max(p.end for p in t.placements)
        t.finish = max(p.finish for p in t.placements)
        self.makespan = max(self.makespan, t.finish)
        self.placed[t.number] = True
        if t.early:
            for succ in self.consumers[t.number]:
                if self.arrived[succ]:
                    self._stage(succ, now)

    def _finish(self, k: int, block: int, now: int) -> None:
        for core in self.held.pop((k, block)):
            bisect.insort(self.idle[core.kind], core, key=self.number)
        self.ended[k] += 1
        t = self.tasks[k]
        if self.ended[k] < (1 if t.retired else len(t.blocks)):
            return
        self.finished[k] = True
        for succ in self.consumers[k]:
            self.pending[succ] -= 1
            if self.pending[succ] == 0 and self.arrived[succ]:
                self._enqueue(succ, now + self.c.release)

def _room(core_type: str, idle: dict, soc: SoC) -> int:
    """How many blocks of ``core_type`` could take cores now."""
    if core_type in ("aic", "aiv"):
        return len(idle[CoreKind.AIC if core_type == "aic" else CoreKind.AIV])
    free_aiv = collections.Counter(core.cluster for core in idle[CoreKind.AIV])
    return sum(free_aiv[cube.cluster] == soc.aiv_per_cluster for cube in idle[CoreKind.AIC])


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
