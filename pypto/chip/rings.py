"""The runtime's rings, one per scope depth (0..3, the deepest sharing the last): a task
window (in-flight task slots), a heap (bytes of the tensors a scope creates) and a
dependency pool (edge entries). A task holds its slot and its edges' entries until it is
reclaimed — oldest first, once it has finished and the scope it was submitted in has
closed — so a scope that submits more tasks than the window holds cannot go on: the
reference's deadlock. A scope's tensors hold heap until it closes.

``Rings`` is the accounting; the orchestrator asks it before each submission and creation
and tells it each scope boundary. ``stats()`` is ``scope_stats.jsonl``'s content.
"""

from __future__ import annotations

import collections

import attrs

from pypto.errors import PyptoError

RINGS = 4
DEFAULTS = {"task_window": 16384, "heap": 256 * 1024 * 1024, "dep_pool": 16384}  # per ring


class RingExhausted(PyptoError):
    """A ring the orchestration needs more of than it has, with nothing left to reclaim."""


def sizes(field: str, configured) -> tuple:
    """The four sizes of one resource: as configured (0 keeps the default; the runtime
    resolves the ``PTO2_RING_*`` variables into it), else the default."""
    return tuple(v or DEFAULTS[field] for v in (configured or (0,) * RINGS))


@attrs.define
class _Scope:
    ring: int
    site: str
    tasks: list = attrs.Factory(list)  # task numbers submitted directly in it
    heap: int = 0  # bytes it created
    closed_at: int | None = None


class Rings:
    def __init__(self, task_window=None, heap=None, dep_pool=None):
        self.window = sizes("task_window", task_window)
        self.heap = sizes("heap", heap)
        self.pool = sizes("dep_pool", dep_pool)
        self.inflight = [collections.deque() for _ in range(RINGS)]  # (task number, edges, scope)
        self.heap_used = [0] * RINGS
        self.pool_used = [0] * RINGS
        # monotonic counters per ring: slots taken / given back, heap bytes, pool entries
        self.taken = [0] * RINGS
        self.given = [0] * RINGS
        self.heap_in = [0] * RINGS
        self.heap_out = [0] * RINGS
        self.pool_in = [0] * RINGS
        self.pool_out = [0] * RINGS
        self.peak = {"task_window": [0] * RINGS, "heap": [0] * RINGS, "dep_pool": [0] * RINGS}
        self.scopes: list[_Scope] = []
        self.lines: list[dict] = []

    # ------------------------------------------------------------------ scopes

    def open(self, depth: int, site: str, tensormap: int) -> None:
        self.scopes.append(_Scope(min(depth, RINGS - 1), site))
        self._line("begin", tensormap)

    def close(self, now: int, tensormap: int) -> None:
        scope = self.scopes[-1]
        self._line("end", tensormap)
        self.scopes.pop()
        scope.closed_at = now
        self.heap_used[scope.ring] -= scope.heap
        self.heap_out[scope.ring] += scope.heap

    def _line(self, phase: str, tensormap: int) -> None:
        s = self.scopes[-1]
        r = s.ring
        self.lines.append({"site": s.site, "phase": phase, "depth": len(self.scopes) - 1, "ring": r,
                           "task_window_start": self.given[r], "task_window_end": self.taken[r],
                           "heap_start": self.heap_out[r], "heap_end": self.heap_in[r],
                           "dep_pool_start": self.pool_out[r], "dep_pool_end": self.pool_in[r],
                           "tensormap": tensormap})

    # ------------------------------------------------------------------ resources

    def create(self, nbytes: int, span) -> None:
        """A tensor the current scope creates, from its ring's heap (held until it closes)."""
        scope = self.scopes[-1]
        r = scope.ring
        if self.heap_used[r] + nbytes > self.heap[r]:
            raise RingExhausted(
                f"ring {r}'s heap ({self.heap[r]} bytes) cannot hold another {nbytes}-byte tensor: "
                f"{self.heap_used[r]} bytes are held by the scopes still open", span=span,
                hint="raise ring_heap (PTO2_RING_HEAP) or shrink per-task args / intermediate tensors")
        scope.heap += nbytes
        self.heap_used[r] += nbytes
        self.heap_in[r] += nbytes
        self.peak["heap"][r] = max(self.peak["heap"][r], self.heap_used[r])

    def admit(self, ring: int, edges: int, finish_of, span) -> int:
        """Room for one more task of ``ring`` with ``edges`` dependency entries: the cycle
        the orchestrator may submit it (``finish_of(task number)`` schedules what is needed
        to know when a task finishes), reclaiming the oldest tasks as they allow."""
        at = 0
        while len(self.inflight[ring]) >= self.window[ring] or self.pool_used[ring] + edges > self.pool[ring]:
            if not self.inflight[ring]:
                raise RingExhausted(f"a task with {edges} dependencies does not fit ring {ring}'s dep pool of "
                                    f"{self.pool[ring]} entries", span=span,
                                    hint="raise ring_dep_pool (PTO2_RING_DEP_POOL), or join the producers with "
                                         "pl.system.task_dummy(deps=[...]) first")
            number, held, scope = self.inflight[ring][0]
            if scope.closed_at is None:
                what = (f"task window ({self.window[ring]} slots)" if len(self.inflight[ring]) >= self.window[ring]
                        else f"dep pool ({self.pool[ring]} entries)")
                raise RingExhausted(
                    f"deadlock: ring {ring}'s {what} is full of tasks of the scope at {scope.site}, which is still "
                    "open, so none can be reclaimed", span=span,
                    hint=f"raise ring_{'task_window' if 'window' in what else 'dep_pool'} "
                         f"(PTO2_RING_{'TASK_WINDOW' if 'window' in what else 'DEP_POOL'}) or split the scope so "
                         "slots are reclaimed sooner; enable RunConfig(enable_scope_stats=True) to see each "
                         "scope's use")
            at = max(at, finish_of(number), scope.closed_at)
            self.inflight[ring].popleft()
            self.pool_used[ring] -= held
            self.given[ring] += 1
            self.pool_out[ring] += held
        return at

    def submitted(self, number: int, ring: int, edges: int) -> None:
        scope = self.scopes[-1]
        scope.tasks.append(number)
        self.inflight[ring].append((number, edges, scope))
        self.pool_used[ring] += edges
        self.taken[ring] += 1
        self.pool_in[ring] += edges
        self.peak["task_window"][ring] = max(self.peak["task_window"][ring], len(self.inflight[ring]))
        self.peak["dep_pool"][ring] = max(self.peak["dep_pool"][ring], self.pool_used[ring])

    def stats(self, tensormap_max: int) -> list[dict]:
        """scope_stats.jsonl: the summary line, then one line per scope boundary."""
        head = {"version": 1, "fatal": False, "dropped": 0, "total": len(self.lines),
                "task_window_max": self.peak["task_window"], "heap_max": self.peak["heap"],
                "dep_pool_max": self.peak["dep_pool"], "tensormap_max": tensormap_max,
                "task_window_size": list(self.window), "heap_size": list(self.heap), "dep_pool_size": list(self.pool)}
        return [head, *self.lines]
