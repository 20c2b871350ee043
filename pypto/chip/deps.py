"""The runtime's dependency tracker, as the reference states it: for each task submitted,

- creator retention: every tensor argument waits for the task that created its buffer —
  here no task creates one (``pl.create_tensor``'s buffers are the orchestration's, there
  before any task), so it adds no edge;
- producer lookup: an ``Input`` or ``InOut`` argument waits for the registered producer of
  every byte it overlaps (by real addresses: views by their own offsets and strides, so
  disjoint slices of one tensor are disjoint);
- producer registration: an ``InOut`` or ``OutputExisting`` argument makes the task the
  producer of its bytes.

So read-after-write and write-after-write are ordered; write-after-read is not (a writer
does not wait for earlier readers), and ``NoDep`` arguments take no part.
"""

from __future__ import annotations

from pypto.chip.tasks import READS, REGISTERS, Edge, Task
from pypto.sim.accesses.intervals import IntervalMap
from pypto.sim.accesses.views import tensor_runs

class Tracker:
    def __init__(self):
        # byte -> the task number producing it; one list, not pages: a task is usually given
        # whole tensors, a few long runs, which pages would cut into thousands of pieces
        self.producers = IntervalMap()

    def producer_of(self, lo: int, hi: int) -> set:
        """The tasks registered as producing bytes of [lo, hi)."""
        return set(self.producers.values(lo, hi)) - {None}

    def entries(self) -> int:
        """How many byte segments have a registered producer (the tensor map's size)."""
        return sum(v is not None for page in self.producers.pages.values() for v in page.values)

    def submit(self, task: Task) -> list[Edge]:
        """The edges ``task`` waits on (one per producer and argument, as constructed: not
        reduced), then ``task`` registered as the producer of what it writes."""
        edges = self.lookup(task)
        self.register(task)
        return edges

    def lookup(self, task: Task) -> list[Edge]:
        """The edges ``task`` waits on: the producers of the bytes it reads."""
        edges: dict[tuple, Edge] = {}
        for a in task.args:
            if a.direction in READS:
                for lo, hi in tensor_runs(a.tensor):
                    for p in self.producers.values(lo, hi):
                        if p is not None and p != task.number:
                            edges.setdefault((p, a.index), Edge(p, task.number, a.index, "tensormap"))
        return list(edges.values())

    def register(self, task: Task) -> None:
        """``task`` becomes the producer of the bytes it writes (InOut, OutputExisting)."""
        for a in task.args:
            if a.direction in REGISTERS:
                for lo, hi in tensor_runs(a.tensor):
                    self.producers.assign(lo, hi, task.number)
