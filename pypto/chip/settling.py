"""When GM holds what is read of it (a mixin of the orchestrator's ``ChipRun``): a task's
predicate read at its dispatch, an element the orchestration reads once its producer has
finished — each over the data of every task started by then, applied in the order they
started, with the atomic adds completed by then — and a writer nothing orders before the
read is a task race."""

from __future__ import annotations

from pypto.chip import races
from pypto.chip import groups
from pypto.chip.tasks import Task
from pypto.sim.record import ATOMIC_ADD
from pypto.sim.simulator import apply, scalar_reads
from pypto.sim.accesses.strided import Strided, meet, union, window
from pypto.sim.accesses.views import tensor_runs, window_runs


class Settling:
    def _decide(self, t: Task, now: int) -> bool:
        """The scheduler reached task ``t``'s dispatch at cycle ``now``: its predicate over
        the data as it is then — every task that started by then in place. A writer of the
        element that no edge orders before ``t`` makes the value a race when it has not
        finished by then, or when it comes later in the program and has already started
        (``ref`` reads the element where the program puts the task)."""
        p = t.predicate
        placed = self.chip.placed
        self._settle(now)
        tensor = p.tensor
        lo, hi = _element_bytes(tensor, p.indices)
        before = _ancestors(self.tasks, t.number)
        for u in self.tasks:
            if u is t or u.number in before or self.unsafe_races or not self.launches[u.number]:
                continue
            started = placed[u.number] and u.start < now
            if not (u.number < t.number and not self.chip.finished[u.number] or u.number > t.number and started):
                continue
            if self._writes(u, lo, hi):
                raise races.TaskRace(
                    f"the predicate of {t.where()} reads {_element(tensor, p.indices)} at cycle {now}, when it is "
                    f"dispatched, while {u.where()} writes it, and no dependency orders them", span=t.span,
                    hint=f"put the task that writes the element in deps=[...] ({u.name} here): the scheduler reads "
                         "the predicate once the task's deps have finished" if u.number < t.number else
                         f"make {u.name} wait for {t.name} (deps=[...] on it): the predicate is read at dispatch, "
                         "and the runtime does not order a writer after an earlier reader")
        if p.holds():
            return True
        self.launches[t.number] = []  # retired: it runs nothing
        for writes in (True, False):
            self.footprints.pop((t.number, writes), None)
        return False

    def _finish_of(self, number: int) -> int:
        """When a task submitted so far finishes: the orchestrator waits for it, so nothing
        submitted later can move it."""
        return self.chip.until_placed(number).finish

    def wait(self, tensor, indices, span) -> None:
        """The orchestrator reads one element of ``tensor``: it waits until the element's
        registered producer has finished, and then the data of every task that started by
        then is in place (the schedule up to that cycle cannot change: whatever is
        submitted later arrives later). A task that writes the element and has not finished
        by then, ordered by nothing, is a race with the orchestrator."""
        lo, hi = _element_bytes(tensor, indices)
        self._wait(lo, hi, span, f"the orchestrator reads {_element(tensor, indices)}")

    def writing(self, tensor, indices, span) -> None:
        """The orchestrator is to write one element of ``tensor``: the runtime tracks no
        write of the host's, so it waits until every task submitted so far that reads or
        writes the element has finished; GM then holds their data, and the write lands
        after them and before anything submitted later."""
        self._host_write([_element_bytes(tensor, indices)])

    def copying(self, window, source, span) -> None:
        """The orchestrator is to copy ``source`` into ``window`` (an assemble the host
        makes, a view of its target): it waits for the producers of the source's bytes —
        a task writing them that nothing orders is a race —, then as for a write of its own
        for every byte of the window."""
        for lo, hi in tensor_runs(source):
            self._wait(lo, hi, span, f"the orchestrator copies a {list(source.shape)} tensor (pl.assemble)")
        self._host_write(tensor_runs(window))

    def _host_write(self, ranges) -> None:
        for t in self.unfinished:
            if any(self._touches(t, lo, hi, False) for lo, hi in ranges):
                self.clock = max(self.clock, self._finish_of(t.number))
        self.chip.through(self.clock)
        placed = self.chip.placed
        self.unfinished = [t for t in self.unfinished if not placed[t.number] or t.finish > self.clock]
        self._settle(self.clock)

    def wait_for_scalar_reads(self, kernel, args, span) -> None:
        """A kernel about to be submitted reads elements of some of its tensors on its
        scalar unit (``pl.read``): its control flow depends on them, and the simulator
        computes a task's timeline when it is submitted, so the orchestrator waits until
        those tensors' producers have finished — as for a read of its own. (On the device
        the kernel would read the data itself once its dependencies have run, and the host
        would go on: here the host's wait shows on the swimlane.)"""
        read = scalar_reads(kernel)
        for (name, _), tensor in zip(kernel.params, args):
            if name in read:
                lo = tensor.data_ptr()
                hi = lo + (sum((d - 1) * st for d, st in zip(tensor.shape, tensor.stride())) + 1) * \
                    tensor.element_size()
                self._wait(lo, hi, span, f"a kernel reads '{name}' on its scalar unit (pl.read)")

    def wait_for_all(self) -> None:
        """A launch that acts with other ranks is about to be simulated: its peers may read
        any of this rank's windows while it runs, so every task before it has finished and
        its data is in place (the orchestrator's clock then is the launch's start)."""
        for t in self.tasks:
            self.clock = max(self.clock, self.chip.until_placed(t.number).finish)
        self.chip.through(self.clock)
        self.unfinished = []
        self._settle(self.clock + 1)

    def _wait(self, lo: int, hi: int, span, reader: str) -> None:
        producers = self.tracker.producer_of(lo, hi)
        for p in producers:
            self.clock = max(self.clock, self.chip.until_placed(p).finish)
        self.chip.through(self.clock)  # what has started by now, and where
        placed = self.chip.placed
        self.unfinished = [t for t in self.unfinished if not placed[t.number] or t.finish > self.clock]
        for t in self.unfinished:
            running = placed[t.number]
            if not self.unsafe_races and self._writes(t, lo, hi):
                when = f"cycles {t.start}-{t.end}" if running else "it has not started yet"
                raise races.TaskRace(
                    f"{reader} at cycle {self.clock} while {t.where()} writes it ({when}), and no dependency orders "
                    "them", span=span,
                    hint="read a tensor its producer registers (not manual_dep / a manual scope / no_dep_args), "
                         "or read after the task by another route")
        self._settle(self.clock)

    def _settle(self, cycle: int) -> None:
        """GM as it is at ``cycle``: the data of every task placed to start before it, and
        the atomic adds completed by then."""
        self._apply([t for t in self.unapplied if self.chip.placed[t.number] and t.start < cycle])
        self.atomics.flush(until=cycle)

    def _apply(self, tasks) -> None:
        """Perform the tasks' data effects, in the order they started."""
        if not tasks:
            return
        runs = sorted((p.start, t.number, p.block) for t in tasks for p in t.placements)
        for start, number, block in runs:
            if self.launches[number]:  # a dummy has no data
                launch, timeline = self.launches[number][block]
                self.atomics.flush(until=start)  # what completed before it starts is in place
                core = self.soc.core_number(self.tasks[number].placements[block].core)
                # a kernel that also reads or rewrites what it adds into sees its adds at once
                sink = None if _reads_back(timeline) else self.atomics.sink(start, core)
                apply(timeline, *_tensor_maps(launch), atomic=sink)
        done = {t.number for t in tasks}
        self.unapplied = [t for t in self.unapplied if t.number not in done]

    def _writes(self, t: Task, lo: int, hi: int) -> bool:
        """Whether any block of ``t`` writes (or adds into) bytes of [lo, hi)."""
        return self._touches(t, lo, hi, True)

    def _touches(self, t: Task, lo: int, hi: int, writes: bool) -> bool:
        """Whether any block of ``t`` writes (``writes``; or adds into) — or touches at all —
        bytes of [lo, hi): against its windows merged into strided runs once per task, so a
        read the orchestrator waits on costs the task's runs, not its rows (an attention task
        reading a page of a cache in 128 rows, a hundred tasks still running)."""
        key = (t.number, writes)
        runs = self.footprints.get(key)
        if runs is None:
            runs = self.footprints[key] = union(r for block in range(len(self.launches[t.number]))
                                      for window_, write in self._windows(t, block) if write or not writes
                                      for r in window_)
        return meet(runs, (Strided(lo, 0, hi - lo, 1),))

    def _accesses(self, t: Task, block: int = 0) -> list:
        if not self.launches[t.number]:
            return []
        launch, timeline = self.launches[t.number][block]
        maps = _tensor_maps(launch)
        by_param = {a.param: a for a in t.args}
        out = []
        for member, param, write, offsets, extents in timeline.footprint:
            key = launch.key(member, param) if isinstance(launch, groups.GroupLaunch) else param
            for lo, hi in window_runs(maps[member][param], offsets, extents):
                out.append((lo, hi, write, by_param[key]))
        return out

    def _windows(self, t: Task, block: int = 0) -> list:
        """``_accesses``' bytes a window at a time, its rows not listed: [(strided runs, write)]."""
        if not self.launches[t.number]:
            return []
        launch, timeline = self.launches[t.number][block]
        maps = _tensor_maps(launch)
        return [(window(maps[member][param], offsets, extents), write)
                for member, param, write, offsets, extents in timeline.footprint]

def _element(tensor, indices) -> str:
    return f"element [{', '.join(map(str, indices))}] of a {list(tensor.shape)} tensor"

def _element_bytes(tensor, indices) -> tuple:
    """[lo, hi): the bytes of one element of ``tensor``."""
    lo = tensor.data_ptr() + sum(i * st for i, st in zip(indices, tensor.stride())) * tensor.element_size()
    return lo, lo + tensor.element_size()

def _ancestors(tasks: list, number: int) -> set:
    """The tasks some chain of edges puts before task ``number``."""
    out, todo = set(), list(tasks[number].preds)
    while todo:
        p = todo.pop()
        if p not in out:
            out.add(p)
            todo.extend(tasks[p].preds)
    return out

def _reads_back(timeline) -> bool:
    """Whether a timeline loads or plainly stores a tensor it also adds into atomically."""
    modes: dict = {}
    for _, param, mode, _, _ in timeline.footprint:
        modes.setdefault(param, set()).add(mode)
    return any(ATOMIC_ADD in m and len(m) > 1 for m in modes.values())

def _tensor_maps(launch) -> tuple:
    """What ``apply`` takes: each launch's tensors by parameter name."""
    return launch.maps() if isinstance(launch, groups.GroupLaunch) else (launch.tensors(),)
