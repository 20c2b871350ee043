"""Call arguments as a kernel takes them: the IR type each specializes its parameter to,
and the check that a compiled program is run on what it was compiled for. Every mistake
names the argument where the user wrote it (``where``: its position or keyword)."""

from __future__ import annotations

import torch

from pypto.errors import SpecializationError
from pypto.ir import nodes as n
from pypto.ir.types import DataType, ScalarType, TensorType, binds, type_name
from pypto.runtime.callsite import call_span
from pypto.sim.ops.numerics import FROM_TORCH


def _error(message: str, where, hint: str | None = None) -> SpecializationError:
    return SpecializationError(message, span=call_span(argument=where), hint=hint)


def arg_type(name: str, value, where=None):
    """The IR type a call argument specializes its parameter to."""
    if isinstance(value, torch.Tensor):
        if value.dtype not in FROM_TORCH:
            supported = ", ".join(str(t).replace("torch.", "") for t in FROM_TORCH)
            raise _error(f"argument '{name}' has unsupported torch dtype {value.dtype}", where,
                         hint=f"Supported: {supported} (e.g. {name}.float())")
        if value.layout is not torch.strided or value.is_nested:
            layout = "a nested tensor" if value.is_nested else f"a {str(value.layout).replace('torch.', '')} tensor"
            raise _error(f"argument '{name}' is {layout}; kernels read and write dense, strided tensors", where,
                         hint=f"pass {name}.to_dense()" if not value.is_nested else
                         f"pass each of {name}'s tensors, or {name}.to_padded_tensor(0)")
        if value.device.type != "cpu":
            raise _error(f"argument '{name}' is on {value.device}; kernels run on CPU tensors here", where,
                         hint=f"pass {name}.cpu()" if value.device.type != "meta" else
                         "a meta tensor has no data: pass a CPU tensor")
        # a rank's view of a window buffer (``pypto.cluster.windows``): a pld.DistributedTensor
        return TensorType(tuple(value.shape), FROM_TORCH[value.dtype],
                          window=getattr(value, "_pypto_window", None) is not None)
    if isinstance(value, bool):
        return ScalarType(DataType.BOOL)
    if isinstance(value, int):
        return ScalarType(DataType.INT64)
    if isinstance(value, float):
        return ScalarType(DataType.FP32)
    kind = type(value).__name__
    hint = f"pass torch.from_numpy({name})" if type(value).__module__ == "numpy" and hasattr(value, "shape") else \
        f"pass torch.tensor({name})" if isinstance(value, (list, tuple)) else None
    raise _error(f"argument '{name}' is a {kind}; kernels take torch tensors and numbers", where,
                 hint=hint or "pass a torch tensor, an int or a float")


def as_declared(params, names, args, where) -> tuple:
    """``args`` checked against the specialized entry's ``params``: a tensor of the type it
    was compiled for, a number of the scalar's kind — a Python int for a float parameter
    becomes the float it declares; one for an integer parameter must fit its dtype."""
    out = []
    for k, (p, name, a) in enumerate(zip(params, names, args)):
        at = where(k)
        if isinstance(p.type, TensorType):
            t = arg_type(name, a, at)
            if not isinstance(t, TensorType) or t.shape != p.type.shape or not binds(p.type.dtype, t.dtype):
                raise _error(f"argument '{name}' is {type_name(t)}, but this program was compiled for "
                             f"{type_name(p.type)}", at,
                             hint=f"pass {name}.to(torch.int64): an int64 tensor binds pl.INDEX"
                             if p.type.dtype is DataType.INDEX and isinstance(t, TensorType) and t.shape == p.type.shape
                             else "compile for these arguments (or call the kernel: it compiles per argument type)")
        elif isinstance(p.type, ScalarType):
            a = _scalar(p, name, a, at)
        # Kernels are not differentiable: a tensor autograd tracks is read and written as the
        # storage it is (an input that requires grad; an output's in-place writes are not recorded).
        out.append(_detached(a) if isinstance(a, torch.Tensor) else a)
    return tuple(out)


def _detached(a: torch.Tensor) -> torch.Tensor:
    """The tensor as storage; a window view keeps its mark (a peer's copy is found by it)."""
    d = a.detach()
    tag = getattr(a, "_pypto_window", None)
    if tag is not None:
        d._pypto_window = tag
    return d


def _scalar(p: n.Param, name: str, a, at):
    dtype = p.type.dtype
    ok = isinstance(a, int) if dtype.is_bool else \
        isinstance(a, int) and not isinstance(a, bool) if dtype.is_int else isinstance(a, (int, float))
    if not ok or isinstance(a, bool) and not dtype.is_bool:
        raise _error(f"argument '{name}' is {a!r}, but its parameter is a {dtype.name} scalar", at)
    if dtype.is_float:
        return float(a)
    if dtype.is_bool:  # a 0/1 flag is the bool it stands for
        return bool(a)
    if dtype.is_int:
        lo, hi = dtype.int_range
        if not lo <= a <= hi:
            raise _error(f"argument '{name}' is {a}, which does not fit the parameter's {dtype.name} ({lo}..{hi})",
                         at, hint="pass a value in range, or declare a wider dtype")
    return a
