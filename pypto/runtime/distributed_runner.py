"""The reference's module path of the distributed worker (``from pypto.runtime.distributed_runner
import DistributedWorker``): here the worker is ``pypto.runtime.distributed.worker``'s, whose
ranks are threads of this process rather than forked chip processes, so the reference's
wire arguments are the tensors themselves: a sub-worker bound at ``prepare`` gets its
argument list, and ``_tensor_from_continuous`` (the reference's unwrapping of one) gives the
tensor back."""

from pypto.runtime.distributed.worker import DistributedRunHandle, DistributedWorker, StackedDeviceTensor



def _tensor_from_continuous(arg):
    """A sub-worker's argument as a torch tensor (here it already is one)."""
    import torch

    if not isinstance(arg, torch.Tensor):
        raise TypeError(f"a sub-worker argument is a tensor, not {type(arg).__name__}")
    return arg


__all__ = ["DistributedRunHandle", "DistributedWorker", "StackedDeviceTensor"]
