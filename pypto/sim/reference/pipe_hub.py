"""The interpreter's cross-core pipes: a Group's members run as threads (each vector core
of a dual-dispatch AIV function its own), and each pipe is a queue per vector lane with
``slot_num`` slots. A push waits for a free slot, a pop for a tile, a free gives the slot
back — the same protocol the simulator runs with flags — and when every member waits,
the Group deadlocks with the pipe named.

    hub = Hub(dual)                            # one Group launch
    hub.run([(run, lane), ...])                # the members' bodies, concurrently
    with hub.member(side, lane): ...           # inside a member: the pipe ops find it
"""

from __future__ import annotations

import collections
import contextlib
import threading

import torch

from pypto.errors import ExecutionError, PyptoError
from pypto.ir.ops.pipes import C2V, DEFAULT_SLOTS, V2C, direction

_current = threading.local()


def current():
    """(hub, lane) of the member this thread runs, or None outside a Group."""
    return getattr(_current, "member", None)


class Hub:
    def __init__(self, dual: bool):
        self.dual = dual  # the AIV member runs on both vector cores
        self.cond = threading.Condition()
        self.queues = collections.defaultdict(collections.deque)  # (pipe, direction, lane) -> tiles
        self.busy = collections.Counter()  # (pipe, direction, lane) -> slots pushed, not freed
        self.slots: dict = {}  # (pipe, direction) -> slot_num
        self.alive = 0
        self.failure: BaseException | None = None
        self.blocked: dict = {}  # thread -> (what would wake it, what it waits for)
        self.produced: dict = {}  # thread -> {(pipe, direction, lane): what its drain waits for}
        self.origins: dict = {}  # id of a popped tile's data -> (the data, its pipe id)

    @contextlib.contextmanager
    def member(self, lane: int):
        old = current()
        _current.member = (self, lane)
        try:
            yield
        finally:
            _current.member = old

    def run(self, members) -> None:
        """Run each ``(fn, lane)`` on a thread of its own; the first error (a deadlock among
        them) is raised here."""
        self.alive = len(members)
        threads = [threading.Thread(target=self._run, args=(fn, lane), daemon=True) for fn, lane in members]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if self.failure is not None:
            raise self.failure

    def _run(self, fn, lane: int) -> None:
        try:
            with self.member(lane):
                fn()
                # like the simulator's producer, a member ends once every slot it filled is free again
                mine = self.produced.get(threading.get_ident(), {})
                for key, what in mine.items():
                    self._wait(lambda key=key: self.busy[key] == 0, what, None)
        except BaseException as exc:  # handed to the launching thread
            with self.cond:
                if self.failure is None or isinstance(self.failure, _Abandoned):
                    self.failure = exc
                self.cond.notify_all()
        finally:
            with self.cond:
                self.alive -= 1
                self._check()
                self.cond.notify_all()

    def _wait(self, ready, what: str, span) -> None:
        with self.cond:
            while not ready():
                if self.failure is not None:
                    raise _Abandoned()
                self.blocked[threading.get_ident()] = (ready, what)
                self._check()
                if self.failure is None:  # (this thread may have just found the deadlock: then nobody wakes it)
                    self.cond.wait()
                self.blocked.pop(threading.get_ident(), None)
            if self.failure is not None:
                raise _Abandoned()
            self.cond.notify_all()

    def _check(self) -> None:
        """Every member alive waits, and for nothing that holds: nothing will ever wake them."""
        if self.alive and len(self.blocked) == self.alive and self.failure is None and \
                not any(ready() for ready, _ in self.blocked.values()):
            what = "; ".join(sorted({w for _, w in self.blocked.values()}))
            free = "free slot" in what
            self.failure = ExecutionError(
                f"the Group deadlocks: {what}" + (": the consumer popped a tile and did not free it (or waits "
                                                  "itself, for the producer)" if free else ""),
                hint="free every popped tile once it is used: pl.tfree_to_aiv(tile) on the cube, pl.tfree_to_aic(tile) "
                     "on a vector core" if free else "pair every tpop with a tpush of the same pipe id in the peer "
                                                     "function")
            self.cond.notify_all()

    # ------------------------------------------------------------------ the ops

    def init(self, dir_mask: int, slot_num, pipe) -> None:
        for d in (C2V, V2C):
            if dir_mask & d:
                self.slots[(pipe or 0, d)] = slot_num or DEFAULT_SLOTS[dir_mask]

    def push(self, op: str, tile, split: int, pipe, lane: int, span) -> None:
        d, pipe = direction(op), pipe or 0
        slots = self._slots(pipe, d, op, span)
        lanes = (0, 1) if self.dual and d == C2V else (lane,)
        what = f"the producer of cross-core pipe {pipe} waits for a free slot"
        self._wait(lambda: all(self.busy[(pipe, d, k)] < slots for k in lanes), what, span)
        with self.cond:
            mine = self.produced.setdefault(threading.get_ident(), {})
            for k in lanes if d == C2V else (lane,):
                mine[(pipe, d, k)] = what
            data = tile.region().clone()
            if d == C2V:
                parts = _halves(data, split) if split else [data] * len(lanes)
                for k, part in zip(lanes, parts):
                    self.queues[(pipe, d, k)].append(part.clone())
                    self.busy[(pipe, d, k)] += 1
            else:
                self.queues[(pipe, d, lane)].append(data)
                self.busy[(pipe, d, lane)] += 1
            self.cond.notify_all()

    def pop(self, op: str, split: int, pipe, lane: int, span) -> torch.Tensor:
        d, pipe = direction(op), pipe or 0
        self._slots(pipe, d, op, span)
        lanes = ((0, 1) if self.dual else (0,)) if d == V2C else (lane,)
        what = f"the consumer of cross-core pipe {pipe} waits for a tile that never comes"
        self._wait(lambda: all(self.queues[(pipe, d, k)] for k in lanes), what, span)
        with self.cond:
            parts = [self.queues[(pipe, d, k)].popleft() for k in lanes]
            data = torch.cat(parts, dim=split - 1) if d == V2C and split and len(parts) == 2 else parts[0]
            self.origins[id(data)] = (data, pipe)  # (the tile kept: its id stays its own)
            return data

    def free(self, op: str, tile, lane: int) -> None:
        """Give back the slot of the pop that made ``tile`` (its pipe id the pop's)."""
        d = direction(op)
        lanes = ((0, 1) if self.dual else (0,)) if d == V2C else (lane,)
        with self.cond:
            _, pipe = self.origins.pop(id(tile))
            for k in lanes:
                self.busy[(pipe, d, k)] -= 1
            self.cond.notify_all()

    def _slots(self, pipe: int, d: int, op: str, span) -> int:
        if (pipe, d) not in self.slots:
            raise ExecutionError(f"{op} uses cross-core pipe {pipe}, which is not set up", span=span,
                                 hint="call pl.aic_initialize_pipe / pl.aiv_initialize_pipe for it first")
        return self.slots[(pipe, d)]


class _Abandoned(PyptoError):
    """A member stopped because another failed."""


def _halves(data: torch.Tensor, split: int) -> list:
    return list(torch.chunk(data, 2, dim=split - 1))
