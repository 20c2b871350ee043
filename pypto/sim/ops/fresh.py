"""What on-chip bytes hold before anything writes them, for one run: a byte pattern
(``RunConfig.uninitialized_memory``: 0, 0xFF — NaN in every float dtype — or any byte),
and whether the simulator reports a read of them (``check_uninitialized_reads``). Both
platforms read the run's setting here, so they agree bit for bit on any fill."""

from __future__ import annotations

import contextlib
import contextvars

import torch

_BYTE = contextvars.ContextVar("pypto_fresh_byte", default=0)
_CHECK = contextvars.ContextVar("pypto_check_uninitialized", default=False)


@contextlib.contextmanager
def fresh_memory(byte: int = 0, check: bool = False):
    tokens = _BYTE.set(byte), _CHECK.set(check)
    try:
        yield
    finally:
        _BYTE.reset(tokens[0])
        _CHECK.reset(tokens[1])


def fresh_byte() -> int:
    return _BYTE.get()


def checking() -> bool:
    return _CHECK.get()


def fresh(shape, dtype: torch.dtype) -> torch.Tensor:
    """A tensor of ``shape`` whose bytes are all the run's fresh byte."""
    byte = _BYTE.get()
    if byte == 0:
        return torch.zeros(tuple(shape), dtype=dtype)
    size = torch.empty((), dtype=dtype).element_size()
    count = 1
    for s in shape:
        count *= s
    return torch.full((count * size,), byte, dtype=torch.uint8).view(dtype).reshape(tuple(shape))


def memory(size: int) -> torch.Tensor:
    """``size`` fresh bytes."""
    byte = _BYTE.get()
    return torch.zeros(size, dtype=torch.uint8) if byte == 0 else torch.full((size,), byte, dtype=torch.uint8)
