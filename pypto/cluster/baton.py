"""Ranks as threads of which one runs at a time: the running rank keeps the baton until it
ends or waits for something no rank has done yet, then hands it to the next rank in rank
order that can go on. A run is therefore one interleaving, the same every time (ranks in
program order, as far as their waits allow): the oracle's order. When every rank left
is waiting, no rank can ever go on — a deadlock, which the run reports rather than hangs.
"""

from __future__ import annotations

import threading
from collections.abc import Callable


class Deadlock(Exception):
    """Every rank that has not ended waits; ``blocked``: rank -> what it waits for."""

    def __init__(self, blocked: dict):
        super().__init__("deadlock")
        self.blocked = blocked


class _Abort(BaseException):
    """Unwinds a waiting rank's thread once the run has failed elsewhere."""


class Baton:
    def __init__(self, nranks: int):
        self.nranks = nranks
        self.cv = threading.Condition()
        self.turn: int | None = None
        self.done = [False] * nranks
        self.waiting: dict[int, tuple[Callable[[], bool], object]] = {}
        self.failure: BaseException | None = None
        self.results: list = [None] * nranks
        # each rank's place in the host's program order (its next dispatch's): the baton goes
        # to the rank that can go on and is earliest in it, so the ranks run in the order the
        # host wrote their dispatches as far as their waits allow (0s: rank order)
        self.next: list = [0] * nranks

    def step(self, rank: int, seq) -> None:
        """Rank ``rank`` (holding the baton) is about to begin its step ``seq`` of the host's
        order: a rank that can go on and is earlier in that order runs first."""
        with self.cv:
            self.next[rank] = seq
            best = self._choose(rank, include_self=True)
            if best == rank:
                return
            self.turn = best
            self.cv.notify_all()
            self.cv.wait_for(lambda: self.turn == rank or self.failure is not None)
            if self.failure is not None:
                raise _Abort()

    def _can_go(self, r: int) -> bool:
        return not self.done[r] and (r not in self.waiting or self.waiting[r][0]())

    def _choose(self, rank: int, include_self: bool) -> int | None:
        """The rank to run: earliest in the host's order among those that can go on, ties to
        ``rank`` itself (when included), then the next after it in rank order."""
        order = [(rank + k) % self.nranks for k in range(0 if include_self else 1, self.nranks + (0 if include_self
                                                                                                  else 1))]
        ready = [r for r in order if self._can_go(r)]
        return min(ready, key=lambda r: (self.next[r], order.index(r))) if ready else None

    def run(self, bodies: list[Callable[[], object]], setup: Callable[[int], None]) -> list:
        """Run ``bodies[r]`` as rank r (``setup(r)`` first, in its thread); their results,
        or the first failure (a rank's error, or ``Deadlock``) raised here."""
        threads = [threading.Thread(target=self._rank, args=(r, bodies[r], setup), name=f"pypto-rank{r}",
                                    daemon=True) for r in range(self.nranks)]
        for t in threads:
            t.start()
        with self.cv:
            self.turn = min(range(self.nranks), key=lambda r: (self.next[r], r))
            self.cv.notify_all()
            self.cv.wait_for(lambda: all(self.done) or self.failure is not None)
        for t in threads:
            t.join()
        if self.failure is not None:
            raise self.failure
        return self.results

    def block(self, rank: int, ready: Callable[[], bool], what) -> None:
        """Rank ``rank`` (holding the baton) waits until ``ready()``; ``what`` says for what."""
        with self.cv:
            if ready():
                return
            self.waiting[rank] = (ready, what)
            self._hand_over(rank)
            self.cv.wait_for(lambda: self.turn == rank or self.failure is not None)
            del self.waiting[rank]
            if self.failure is not None:
                raise _Abort()

    def _rank(self, rank: int, body, setup) -> None:
        with self.cv:
            self.cv.wait_for(lambda: self.turn == rank or self.failure is not None)
            if self.failure is not None:
                self.done[rank] = True
                return
        try:
            setup(rank)
            self.results[rank] = body()
        except _Abort:
            pass
        except BaseException as exc:  # noqa: BLE001  (the run's failure, raised in the caller)
            with self.cv:
                if self.failure is None:
                    self.failure = exc
                self.cv.notify_all()
        with self.cv:
            self.done[rank] = True
            if self.failure is None:
                self._hand_over(rank)
            self.cv.notify_all()

    def _hand_over(self, rank: int) -> None:
        """The baton leaves ``rank`` (done, or waiting): to the rank that can go on earliest
        in the host's order, the next after ``rank`` among equals."""
        if self.done[rank]:
            self.next[rank] = float("inf")
        r = self._choose(rank, include_self=False)
        if r is not None:
            self.turn = r
            self.cv.notify_all()
            return
        if self.waiting and self.failure is None:
            self.failure = Deadlock({r: w[1] for r, w in sorted(self.waiting.items())})
        self.turn = None
        self.cv.notify_all()
