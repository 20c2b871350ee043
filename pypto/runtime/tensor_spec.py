"""The reference's ``TensorSpec`` / ``ScalarSpec``: a named tensor (shape, dtype, how to fill
it, whether it is an output) and a named scalar argument, from which a test harness makes
its inputs."""

from __future__ import annotations

from collections.abc import Callable

import attrs
import torch

from pypto.errors import ConfigError

_FACTORIES = (torch.randn, torch.rand, torch.zeros, torch.ones)  # called with (shape, dtype=)
SCALAR_CTYPES = ("int64", "int32", "uint64", "uint32", "float", "double")


@attrs.define
class TensorSpec:
    """``init_value``: None (zeros), a number (every element), a tensor (converted to
    ``dtype``), one of torch's factories (``torch.randn``, ...), or a callable of no
    arguments returning the data."""

    name: str
    shape: list
    dtype: torch.dtype
    init_value: int | float | torch.Tensor | Callable | None = None
    is_output: bool = False

    def create_tensor(self) -> torch.Tensor:
        """A fresh tensor (a given one is copied: the spec's data is never the run's)."""
        if not isinstance(self.dtype, torch.dtype):
            raise ConfigError(f"TensorSpec {self.name!r}: dtype {self.dtype!r} is not a torch dtype",
                              hint="dtype=torch.float32 (the host tensor's dtype)")
        if not isinstance(self.shape, (list, tuple, torch.Size)) or not all(
                isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in self.shape):
            raise ConfigError(f"TensorSpec {self.name!r}: shape {self.shape!r} is not a list of sizes",
                              hint="shape=[32, 128]")
        value = self.init_value
        try:
            data = self._made(value)
        except (RuntimeError, TypeError, ValueError, NotImplementedError, OverflowError) as exc:
            raise ConfigError(f"TensorSpec {self.name!r}: init_value {value!r} gives no {self.dtype} tensor of shape "
                              f"{list(self.shape)}: {str(exc).splitlines()[0]}",
                              hint="init_value=torch.randn, a number the dtype holds, a tensor, or lambda: data") from None
        if list(data.shape) != list(self.shape):
            raise ConfigError(f"TensorSpec {self.name!r}: init_value has shape {list(data.shape)}, not "
                              f"{list(self.shape)}", hint="give data of the spec's shape")
        return data

    def _made(self, value) -> torch.Tensor:
        if value is None:
            return torch.zeros(self.shape, dtype=self.dtype)
        if isinstance(value, bool) or not isinstance(value, (int, float, torch.Tensor)) and not callable(value):
            raise ConfigError(f"TensorSpec {self.name!r}: init_value {value!r} is not a number, a tensor or a "
                              "callable", hint="init_value=torch.randn, 0.5, a torch.Tensor, or lambda: ...")
        if isinstance(value, (int, float)):
            if not self.dtype.is_floating_point and (isinstance(value, float) or not _holds(self.dtype, value)):
                raise ConfigError(f"TensorSpec {self.name!r}: {value!r} is not a value of {self.dtype}",
                                  hint="a number the dtype holds")
            return torch.full(self.shape, value, dtype=self.dtype)
        if isinstance(value, torch.Tensor):
            return value.to(dtype=self.dtype).clone()
        if value in _FACTORIES:
            return value(self.shape, dtype=self.dtype)
        result = value()
        if result is None:
            raise TypeError("the callable returned None")
        return torch.as_tensor(result, dtype=self.dtype).clone()


def _holds(dtype: torch.dtype, value: int) -> bool:
    info = torch.iinfo(dtype)
    return info.min <= value <= info.max


@attrs.define
class ScalarSpec:
    """A scalar argument by name, with its C type (one of ``SCALAR_CTYPES``)."""

    name: str
    value: int | float
    ctype: str = "int64"

    def __attrs_post_init__(self):
        if isinstance(self.value, bool) or not isinstance(self.value, (int, float)):
            raise ConfigError(f"ScalarSpec {self.name!r}: value {self.value!r} is not a number", hint="value=4")
        if self.ctype not in SCALAR_CTYPES:
            raise ConfigError(f"ScalarSpec {self.name!r}: ctype {self.ctype!r} is not one of "
                              f"{', '.join(SCALAR_CTYPES)}", hint='ctype="int64"')
