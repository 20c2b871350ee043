"""The device a compiled program runs on, as the reference's runtime hands it out:
``ChipWorker`` (its memory, the programs registered on it, explicit dispatch),
``RegistrationHandle`` and ``DeviceTensor``. Here the device is modeled memory on the host:
a ``DeviceTensor`` is a buffer the worker owns, which a dispatch reads and writes where it
lies (no copy either way), and which the host reads back with ``copy_from``.

    with ChipWorker(config=RunConfig(platform="a2a3sim")) as w:
        weight = w.alloc_tensor((128, 128), torch.float32, init=b)   # stays on the device
        w.run(compiled, a, weight, out)                                 # or compiled(a, weight, out)
        w.free_tensor(weight)
"""

from __future__ import annotations

import contextvars
import ctypes
import itertools

import attrs
import torch

from pypto.errors import ConfigError
from pypto.runtime.config import RunConfig

RUNTIME = "tensormap_and_ringbuffer"  # the one runtime a level-2 worker runs (the reference's name)
_ACTIVE: contextvars.ContextVar = contextvars.ContextVar("pypto_chip_worker", default=())
_ALIGN = 512  # device addresses the allocator hands out are aligned like the device's
_SPAN = 1 << 40  # each worker's addresses are its own: no two workers hand out one address
_WORKERS = itertools.count(1)


def _check_ptr(value) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"DeviceTensor.data_ptr must be a positive int, got {value!r}")
    return value


def _check_shape(value) -> tuple:
    shape = tuple(value)
    if not shape or any(isinstance(d, bool) or not isinstance(d, int) or d <= 0 for d in shape):
        raise ValueError(f"DeviceTensor.shape must be positive ints, got {value!r}")
    return shape


def _check_dtype(value):
    if not isinstance(value, torch.dtype):
        raise ValueError(f"DeviceTensor.dtype must be a torch.dtype, got {value!r}")
    return value


@attrs.frozen
class DeviceTensor:
    """A tensor in a worker's device memory: accepted wherever a compiled program takes a
    ``torch.Tensor``; never copied to or from the host by a dispatch."""

    data_ptr: int = attrs.field(converter=_check_ptr)
    shape: tuple = attrs.field(converter=_check_shape)
    dtype: torch.dtype = attrs.field(validator=lambda self, a, v: _check_dtype(v))
    buffer: object = attrs.field(default=None, eq=False, repr=False)  # the worker's storage behind it

    @property
    def nbytes(self) -> int:
        count = 1
        for d in self.shape:
            count *= d
        return count * torch.empty((), dtype=self.dtype).element_size()

    def __repr__(self) -> str:
        return f"DeviceTensor(data_ptr=0x{self.data_ptr:x}, shape={self.shape}, dtype={self.dtype})"


class RegistrationHandle:
    """A compiled program registered on a worker: call it as the program is called."""

    def __init__(self, worker: ChipWorker, compiled, cid: int):
        self.worker, self.compiled, self.cid = worker, compiled, cid
        self.closed = False

    def __call__(self, *args, config: RunConfig | None = None):
        if self.closed:
            raise RuntimeError("RegistrationHandle has been unregistered (or its parent Worker was closed). "
                               "Re-register via worker.register(compiled) to get a fresh handle.")
        return self.worker.run(self.compiled, *args, config=config)

    def unregister(self) -> None:
        """Marks this handle closed; the registration itself is released by ``close()``."""
        self.closed = True

    def __enter__(self) -> RegistrationHandle:
        return self

    def __exit__(self, *exc) -> None:
        self.unregister()


class ChipWorker:
    """One simulated device and what is registered and allocated on it."""

    def __init__(self, config: RunConfig | None = None, *, level: int = 2, runtime: str = RUNTIME,
                 enable_sdma: bool = False, auto_init: bool | None = None):
        if level != 2:
            raise ValueError(f"ChipWorker only supports level=2; got level={level}. L3+ runtimes go through "
                             "DistributedWorker.")
        if runtime != RUNTIME:
            raise ValueError(f"ChipWorker runs the '{RUNTIME}' runtime here; got runtime={runtime!r}")
        self.config = config if config is not None else RunConfig()
        self.level, self.runtime, self.enable_sdma = level, runtime, enable_sdma
        self.initialized = False
        self.aicpu_dlopen_count = self.host_dlopen_count = 0
        self._tokens: list = []
        if auto_init is None or auto_init:
            self.init()

    @property
    def platform(self) -> str:
        return self.config.platform

    @property
    def device_id(self) -> int:
        return self.config.device_id

    @property
    def binding(self) -> tuple:
        return (self.level, self.platform, self.device_id, self.runtime)

    # ------------------------------------------------------------------ lifetime

    def init(self) -> None:
        if self.initialized:
            return
        self._memory: dict[int, torch.Tensor] = {}  # device address -> the bytes there
        self._tensors: dict[int, DeviceTensor] = {}
        self._cids: dict[int, int] = {}  # id(compiled) -> its registration's id
        self._handles: list[RegistrationHandle] = []
        self._next = itertools.count(1)
        self._top = next(_WORKERS) * _SPAN
        self._freed: list[DeviceTensor] = []  # what this worker freed: freeing it again does nothing
        self.initialized = True

    def close(self) -> None:
        """Releases the registrations (their handles are closed) and any memory left."""
        if not self.initialized:
            return
        for handle in self._handles:
            handle.closed = True
        self._memory.clear()
        self._tensors.clear()
        self._cids.clear()
        self.initialized = False

    def __enter__(self) -> ChipWorker:
        active = _ACTIVE.get()
        if any(w.binding == self.binding for w in active):
            level, platform, device, runtime = self.binding
            raise ValueError(f"A ChipWorker for (level={level}, platform={platform!r}, device_id={device}, "
                             f"runtime={runtime!r}) is already active in an enclosing scope. Reuse the enclosing "
                             "worker, or close it before opening another.")
        self.init()
        self._tokens.append(_ACTIVE.set((*active, self)))
        return self

    def __exit__(self, *exc) -> None:
        _ACTIVE.reset(self._tokens.pop())
        self.close()

    def _require(self, what: str) -> None:
        if not self.initialized:
            raise RuntimeError(f"ChipWorker.{what}() requires an initialized ChipWorker. Use `with chipworker:` or "
                               "call `chipworker.init()` first.")

    # ------------------------------------------------------------------ dispatch

    def register(self, compiled) -> RegistrationHandle:
        """The program loaded on the device now (a mistake shows here, not at the first
        call); registering it again gives another handle on the same registration."""
        self._require("register")
        self._check_platform(compiled)
        key = id(compiled)
        if key not in self._cids:
            self._cids[key] = next(self._next)
            self.aicpu_dlopen_count += 1
            self.host_dlopen_count += 1
        handle = RegistrationHandle(self, compiled, self._cids[key])
        self._handles.append(handle)
        return handle

    def run(self, compiled, *args, config: RunConfig | None = None):
        """Run ``compiled`` once on this device: what ``compiled(*args)`` returns."""
        self._require("run")
        self._check_platform(compiled)
        token = _ACTIVE.set((*_ACTIVE.get(), self))
        try:
            return compiled(*args)
        finally:
            _ACTIVE.reset(token)

    def _check_platform(self, compiled) -> None:
        if compiled.platform != self.platform:
            raise ValueError(f"CompiledProgram.platform={compiled.platform!r} does not match "
                             f"ChipWorker.platform={self.platform!r}. Compile for the matching platform, or "
                             f"construct ChipWorker(config=RunConfig(platform={compiled.platform!r})).")

    # ------------------------------------------------------------------ memory

    def malloc(self, nbytes: int, *, worker_id: int = 0) -> int:
        self._require("malloc")
        if isinstance(nbytes, bool) or not isinstance(nbytes, int) or nbytes <= 0:
            raise ValueError(f"malloc takes a positive number of bytes, got {nbytes!r}")
        ptr = self._top
        self._top += (nbytes + _ALIGN - 1) // _ALIGN * _ALIGN
        self._memory[ptr] = torch.zeros(nbytes, dtype=torch.uint8)
        return ptr

    def free(self, ptr: int) -> None:
        self._require("free")
        if self._memory.pop(ptr, None) is None:
            raise ValueError(f"0x{ptr:x} is not memory this ChipWorker allocated (or it was freed already)")
        self._tensors.pop(ptr, None)

    @staticmethod
    def _count(nbytes) -> int:
        if isinstance(nbytes, bool) or not isinstance(nbytes, int) or nbytes < 0:
            raise ValueError(f"a copy's byte count is an int >= 0, got {nbytes!r}")
        return nbytes

    def copy_to(self, dst_dev_ptr: int, src_host_ptr: int, nbytes: int) -> None:
        """Host bytes at ``src_host_ptr`` (a tensor's ``data_ptr()``) into device memory."""
        nbytes = self._count(nbytes)
        ctypes.memmove(self._bytes(dst_dev_ptr, nbytes).data_ptr(), src_host_ptr, nbytes)

    def copy_from(self, dst_host_ptr: int, src_dev_ptr: int, nbytes: int) -> None:
        """Device bytes into host memory at ``dst_host_ptr`` (a tensor's ``data_ptr()``)."""
        nbytes = self._count(nbytes)
        ctypes.memmove(dst_host_ptr, self._bytes(src_dev_ptr, nbytes).data_ptr(), nbytes)

    def _bytes(self, ptr: int, nbytes: int) -> torch.Tensor:
        self._require("copy")
        for base, buf in self._memory.items():
            if base <= ptr and ptr + nbytes <= base + buf.numel():
                return buf[ptr - base:ptr - base + nbytes]
        raise ValueError(f"[0x{ptr:x}, +{nbytes}) is not within memory this ChipWorker allocated")

    def alloc_tensor(self, shape, dtype, *, init=None, worker_id: int = 0) -> DeviceTensor:
        shape, dtype = _check_shape(shape), _check_dtype(dtype)
        if init is not None and (not isinstance(init, torch.Tensor) or tuple(init.shape) != shape
                                 or init.dtype != dtype):
            got = f"{tuple(init.shape)} {init.dtype}" if isinstance(init, torch.Tensor) else type(init).__name__
            raise ValueError(f"alloc_tensor's init must be a torch.Tensor of shape {shape} and dtype {dtype}, "
                             f"got {got}")
        probe = DeviceTensor(1, shape, dtype)
        ptr = self.malloc(probe.nbytes, worker_id=worker_id)
        data = self._memory[ptr].view(dtype).view(shape)
        if init is not None:
            data.copy_(init)
        tensor = DeviceTensor(ptr, shape, dtype, buffer=data)
        self._tensors[ptr] = tensor
        return tensor

    def free_tensor(self, t: DeviceTensor, *, worker_id: int = 0) -> None:
        """Frees ``t``'s memory; freeing it again does nothing."""
        self._require("free_tensor")
        if self._tensors.get(t.data_ptr) is t:
            del self._tensors[t.data_ptr]
            self._memory.pop(t.data_ptr, None)
            self._freed.append(t)
        elif not any(f is t for f in self._freed):
            raise ValueError(f"{t!r} is not a tensor of this ChipWorker: free it on the worker that allocated it")

    @property
    def _owned_tensors(self) -> tuple:
        """The live tensors ``alloc_tensor`` made and nothing freed yet (``close`` frees them
        all): the reference's private name for them, which its tests read."""
        return tuple(self._tensors.values()) if self.initialized else ()

    def owns(self, t: DeviceTensor) -> bool:
        return self.initialized and self._tensors.get(t.data_ptr) is t

    def storage(self, t: DeviceTensor) -> torch.Tensor:
        """The bytes behind a DeviceTensor of this worker, as a dispatch reads them."""
        if self.owns(t):
            return t.buffer
        raise ValueError(f"{t!r} is not a live tensor of this ChipWorker: a DeviceTensor is bound to the worker "
                         "that allocated it, until it is freed")


def on_device(args, compiled=None) -> tuple:
    """``args`` with each DeviceTensor replaced by its storage on the active worker that
    owns it (which must be one for ``compiled``'s platform)."""
    if not any(isinstance(a, DeviceTensor) for a in args):
        return tuple(args)
    active = _ACTIVE.get()
    if not active:
        raise ConfigError("a DeviceTensor is passed with no ChipWorker active: it lives on the worker that "
                          "allocated it", hint="dispatch with worker.run(compiled, ...) or inside `with worker:`")
    out = []
    for a in args:
        if isinstance(a, DeviceTensor):
            worker = next((w for w in reversed(active) if w.owns(a)), active[-1])
            if compiled is not None:
                worker._check_platform(compiled)
            a = worker.storage(a)
        out.append(a)
    return tuple(out)
