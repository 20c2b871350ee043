"""``Worker``: the reference's base type of its device handles, for code that takes any of
them (``def load(w: Worker, compiled): return w.register(compiled)``). Here there is one
kind, the simulated chip (``ChipWorker``), which is a ``Worker``; a distributed (L3+) worker
is not part of this package."""

from __future__ import annotations

import abc

from pypto.runtime.worker import ChipWorker


class Worker(abc.ABC):
    """What every device handle offers: device memory (``malloc`` / ``free`` / ``copy_to`` /
    ``copy_from``, ``alloc_tensor`` / ``free_tensor``) and dispatch (``run``, ``register``)."""

    @abc.abstractmethod
    def malloc(self, nbytes: int, *, worker_id: int = 0) -> int: ...

    @abc.abstractmethod
    def free(self, ptr: int) -> None: ...

    @abc.abstractmethod
    def copy_to(self, dst_dev_ptr: int, src_host_ptr: int, nbytes: int) -> None: ...

    @abc.abstractmethod
    def copy_from(self, dst_host_ptr: int, src_dev_ptr: int, nbytes: int) -> None: ...

    @abc.abstractmethod
    def alloc_tensor(self, shape, dtype, *, init=None, worker_id: int = 0): ...

    @abc.abstractmethod
    def free_tensor(self, t, *, worker_id: int = 0) -> None: ...

    @abc.abstractmethod
    def run(self, compiled, *args, config=None): ...

    @abc.abstractmethod
    def register(self, compiled): ...


abc.ABCMeta.register(Worker, ChipWorker)  # (Worker.register is the dispatch method, as the reference names it)
