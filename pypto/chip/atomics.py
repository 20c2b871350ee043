"""Atomic adds on the chip. A task's atomic-add stores (split-K's partial products) do not
land when its data is applied: each is kept with the cycles its store ran, and added into
GM once it has completed — before any task that starts later runs, and before the
orchestrator reads — in the order the stores completed, by cycle, then core. The sum's
last bits depend on that order (floating-point addition does not associate); with a seed,
the adds whose stores were in flight at once commit in an order the seed picks, as
hardware gives no order among them.

    adds = AtomicAdds(seed=None)
    apply(timeline, tensors, atomic=adds.sink(task_start, core_number))
    adds.flush(until=cycle)   # or flush() for all
"""

from __future__ import annotations

import random

from pypto.sim.ops import numerics as num


class AtomicAdds:
    def __init__(self, seed: int | None = None):
        self.pending: list[tuple] = []  # (end, core, seq, start, tensor, index, data)
        self.seq = 0
        self.rng = random.Random(seed) if seed is not None else None

    def sink(self, offset: int, core: int):
        """Where one block's atomic adds go: its timeline's cycles start at ``offset``."""
        def take(tensor, index, data, start, end) -> None:
            self.pending.append((offset + end, core, self.seq, offset + start, tensor, index, data))
            self.seq += 1
        return take

    def flush(self, until: int | None = None) -> None:
        """Add every kept add whose store completed by ``until`` (all, without it)."""
        if not self.pending:
            return
        due = [p for p in self.pending if until is None or p[0] <= until]
        if not due:
            return
        self.pending = [p for p in self.pending if until is not None and p[0] > until]
        due.sort()
        for end, core, seq, start, tensor, index, data in self._ordered(due):
            num.atomic_add(tensor, index, data)

    def _ordered(self, due: list) -> list:
        """By completion, then core; with a seed, each run of stores in flight at once
        (windows overlapping, transitively) shuffled."""
        if self.rng is None:
            return due
        out, group, reach = [], [], None
        for p in sorted(due, key=lambda p: (p[3], p[0], p[1], p[2])):
            if group and p[3] >= reach:
                self.rng.shuffle(group)
                out.extend(group)
                group = []
            group.append(p)
            reach = p[0] if len(group) == 1 else max(reach, p[0])
        self.rng.shuffle(group)
        return out + group
