"""``DistributedWorker`` (``compiled.prepare()``): a distributed program run again and again.
Its setup is the reference's fork and comm bootstrap; here the ranks are threads of this
process started per dispatch, so what a worker keeps is its resident tensors and, with
``persistent=True``, its window buffers (zeroed before each dispatch, as the reference
resets retained windows)."""

from __future__ import annotations

import torch

from pypto.errors import ConfigError, PyptoError
from pypto.runtime.config import RunConfig


class DistributedRunHandle:
    """A dispatch ``submit`` accepted; here it has run by the time the handle exists."""

    def __init__(self, report=None, error: BaseException | None = None):
        self._report = report
        self._error = error

    @property
    def done(self) -> bool:
        return True

    def result(self, timeout: float | None = None):
        if self._error is not None:
            raise self._error
        return self._report

    wait = result


class StackedDeviceTensor:
    """A ``[B, *tail]`` tensor uploaded once (``alloc_stacked_tensor``), shard ``i`` resident on
    worker ``worker_ids[i]``: passed to the host orchestrator in place of a host tensor,
    ``x[i]`` is shard ``i``, and a dispatch of it to any other device is refused (the
    reference's placement contract). Its shards are this worker's copy: the host tensor it
    was uploaded from may change without changing them."""

    def __init__(self, data: torch.Tensor, worker_ids: tuple):
        self.data = data
        self.worker_ids = worker_ids
        self.full_shape = tuple(data.shape)
        self.freed = False

    @property
    def shape(self) -> tuple:
        return self.full_shape

    @property
    def shards(self) -> tuple:
        return tuple(self.data[i] for i in range(self.full_shape[0]))

    def __getitem__(self, index: int) -> torch.Tensor:
        return self.data[index]

    def __repr__(self) -> str:
        return f"StackedDeviceTensor(shape={list(self.full_shape)}, worker_ids={list(self.worker_ids)})"


class ProgramHandle:
    """``rt.register(compiled)``: one program of the worker, called as the program is."""

    def __init__(self, worker, compiled):
        self.worker = worker
        self.compiled = compiled

    @property
    def closed(self) -> bool:
        return self.worker.closed

    def __call__(self, *args, config: RunConfig | None = None):
        return self.worker.run(self.compiled, *args, config=config)


class DistributedWorker:
    def __init__(self, compiled, *, persistent: bool = False, extra_compiled=(), reset_windows: bool = True,
                 bound: dict | None = None, inherited_host_tensors=()):
        from pypto.runtime.distributed.program import DistributedProgram

        programs = list(compiled) if isinstance(compiled, (list, tuple)) else [compiled]  # the reference's list form
        for p in programs:
            if not isinstance(p, DistributedProgram):
                raise ConfigError(f"DistributedWorker takes compiled host orchestrators, not {p!r}",
                                  hint="compiled = host_orch.compile(config=RunConfig(distributed_config=...))")
        if not programs:
            raise ConfigError("DistributedWorker([]) has no program to run", hint="DistributedWorker(compiled)")
        compiled = programs[0]
        extra_compiled = (*programs[1:], *extra_compiled)
        self.compiled = compiled
        self._owned_tensors: list = []  # what alloc_tensor gave and free_tensor has not taken back (the reference's)
        # the host tensors the reference's forked workers inherit (a stacked tensor's upload source): kept
        # referenced until release_inherited_host_tensor_refs(); here nothing forks, so that is all they need
        self._inherited = list(inherited_host_tensors)
        # the reference's inner worker (``rt._w``) counts its comm-domain allocations: a persistent worker
        # makes its domain (its windows) at its first dispatch and keeps it, another one per dispatch
        self._w = self
        self._next_alloc_id = 0
        self.programs = [compiled, *extra_compiled]
        self.persistent = persistent
        self.reset_windows = reset_windows
        self.bound = dict(bound or {})  # the SubWorkers' Python bound at prepare
        self.windows: dict | None = {} if persistent else None
        self.closed = False
        self.reports: list = []

    def __enter__(self) -> DistributedWorker:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _live(self) -> None:
        if self.closed:
            raise RuntimeError("a DistributedWorker method called after close(): prepare() another "
                               "(compiled.prepare())")

    def register(self, compiled) -> ProgramHandle:
        """A handle that runs ``compiled`` (a program of this worker) when called."""
        self._live()
        if not any(compiled is p for p in self.programs):
            raise ValueError(f"{compiled!r} is not a program of this worker: pass it to prepare(extra_compiled=[...])")
        return ProgramHandle(self, compiled)

    def __call__(self, *args, config: RunConfig | None = None):
        if len(self.programs) > 1:
            raise TypeError("rt(...) is ambiguous: this worker holds several programs; dispatch each with "
                            "rt.run(compiled, ...)")
        return self.run(self.compiled, *args, config=config)

    def run(self, compiled, *args, config: RunConfig | None = None):
        from pypto.runtime.distributed.program import run_host

        self._live()
        if not any(compiled is p for p in self.programs):
            raise ValueError(f"{compiled!r} is not a program of this worker: pass it to prepare(extra_compiled=[...])")
        if self.windows is not None and self.reset_windows:
            for buf in self.windows.values():  # a retained window starts each dispatch zeroed
                for b in buf.ranks:
                    b.zero_()
        report = run_host(compiled.host, args, compiled._config(config), self.windows, self.bound,
                          compiled.output_dir)
        if self.windows is None or not self.reports:  # (a persistent worker's domain is made at its first)
            self._next_alloc_id += 1
        self.reports.append(report)
        compiled.last_report = report
        return report.outputs

    def submit(self, compiled, *args, config: RunConfig | None = None) -> DistributedRunHandle:
        try:
            self.run(compiled, *args, config=config)
        except PyptoError as err:
            return DistributedRunHandle(error=err)
        return DistributedRunHandle(self.reports[-1])

    def alloc_tensor(self, shape, dtype, *, init=None) -> torch.Tensor:
        self._live()
        t = torch.zeros(tuple(shape), dtype=dtype)
        if init is not None:
            t.copy_(init)
        self._owned_tensors.append(t)
        return t

    def free_tensor(self, tensor) -> None:
        self._live()
        self._owned_tensors = [t for t in self._owned_tensors if t is not tensor]

    def alloc_stacked_tensor(self, host: torch.Tensor, worker_ids=None) -> StackedDeviceTensor:
        """``host[i]`` uploaded to worker ``worker_ids[i]`` (default: worker ``i``), once."""
        self._live()
        count = host.shape[0] if host.dim() else 0
        ids = tuple(range(count)) if worker_ids is None else tuple(worker_ids)
        nranks = self.compiled.distributed.nranks
        if len(ids) != count or not all(isinstance(w, int) and 0 <= w < nranks for w in ids):
            raise ConfigError(f"alloc_stacked_tensor: worker_ids={list(ids)} for {count} shards of {nranks} workers",
                              hint="one worker id in 0..nranks-1 per shard (the device= each shard is dispatched to)")
        return StackedDeviceTensor(host.clone(), ids)

    def free_stacked_tensor(self, stacked: StackedDeviceTensor) -> None:
        self._live()
        stacked.freed = True

    def copy_stacked_from(self, stacked: StackedDeviceTensor, host: torch.Tensor) -> None:
        """The shards back into ``host`` (D2H)."""
        self._live()
        host.copy_(stacked.data)

    def copy_stacked_to(self, stacked: StackedDeviceTensor, host: torch.Tensor) -> None:
        """``host`` into the shards (H2D)."""
        self._live()
        stacked.data.copy_(host)

    def copy_to(self, dst: torch.Tensor, src: torch.Tensor, nbytes: int | None = None, *, worker_id: int = 0) -> None:
        self._live()
        dst.view(-1).view(torch.uint8)[: nbytes or dst.numel() * dst.element_size()].copy_(
            src.contiguous().view(-1).view(torch.uint8)[: nbytes or src.numel() * src.element_size()])

    def copy_from(self, dst: torch.Tensor, src: torch.Tensor, nbytes: int | None = None, *,
                  worker_id: int = 0) -> None:
        self.copy_to(dst, src, nbytes, worker_id=worker_id)

    def release_inherited_host_tensor_refs(self) -> None:
        """Drop the references to ``inherited_host_tensors`` (once what needed them is uploaded)."""
        self._inherited = []

    def close(self) -> None:
        self._owned_tensors = []  # (the resident tensors are reclaimed with the worker)
        self.closed = True
        self.windows = None
