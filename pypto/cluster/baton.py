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

    def run(self, bodies: list[Callable[[], object]], setup: Callable[[int], None]) -> list:
        """Run ``bodies[r]`` as rank r (``setup(r)`` first, in its thread); their results,
        or the first failure (a rank's error, or ``Deadlock``) raised here."""
        threads = [threading.Thread(target=self._rank, args=(r, bodies[r], setup), name=f"pypto-rank{r}",
                                    daemon=True) for r in range(self.nranks)]
        for t in threads:
            t.start()
        with self.cv:
            self.turn = 0
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
        """The next rank after ``rank`` (cyclically) that can go on gets the baton."""
        for k in range(1, self.nranks + 1):
            r = (rank + k) % self.nranks
            if self.done[r]:
                continue
            if r in self.waiting and not self.waiting[r][0]():
                continue
            self.turn = r
            self.cv.notify_all()
            return
        if self.waiting and self.failure is None:
            self.failure = Deadlock({r: w[1] for r, w in sorted(self.waiting.items())})
        self.turn = None
        self.cv.notify_all()
