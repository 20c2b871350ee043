"""The reference's module path of the distributed worker (``from pypto.runtime.distributed_runner
import DistributedWorker``): here the worker is ``pypto.runtime.distributed.worker``'s, whose
ranks are threads of this process rather than forked chip processes, so the reference's
wire-argument helpers for Python sub-workers have no counterpart."""

from pypto.runtime.distributed.worker import DistributedRunHandle, DistributedWorker, StackedDeviceTensor

__all__ = ["DistributedRunHandle", "DistributedWorker", "StackedDeviceTensor"]
