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
        value = self.init_value
        if value is None:
            return torch.zeros(self.shape, dtype=self.dtype)
        if isinstance(value, bool) or not isinstance(value, (int, float, torch.Tensor)) and not callable(value):
            raise ConfigError(f"TensorSpec {self.name!r}: init_value {value!r} is not a number, a tensor or a "
                              "callable", hint="init_value=torch.randn, 0.5, a torch.Tensor, or lambda: ...")
        if isinstance(value, (int, float)):
            return torch.full(self.shape, value, dtype=self.dtype)
        if isinstance(value, torch.Tensor):
            data = value.to(dtype=self.dtype)
        elif value in _FACTORIES:
            return value(self.shape, dtype=self.dtype)
        else:
            data = torch.as_tensor(value(), dtype=self.dtype)
        if list(data.shape) != list(self.shape):
            raise ConfigError(f"TensorSpec {self.name!r}: init_value has shape {list(data.shape)}, not "
                              f"{list(self.shape)}", hint="give data of the spec's shape")
        return data


@attrs.define
class ScalarSpec:
    """A scalar argument by name, with its C type (one of ``SCALAR_CTYPES``)."""

    name: str
    value: int | float
    ctype: str = "int64"

    def __attrs_post_init__(self):
        if self.ctype not in SCALAR_CTYPES:
            raise ConfigError(f"ScalarSpec {self.name!r}: ctype {self.ctype!r} is not one of "
                              f"{', '.join(SCALAR_CTYPES)}", hint='ctype="int64"')
