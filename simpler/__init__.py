"""The runtime's Python API as the reference's harnesses drive it (``simpler``): a worker
that registers a compiled program's ``chip_callable`` and runs it with the arguments
``build_orch_args`` packed and the ``build_call_config`` of a run. Here the device is the
simulated one (``platform="a2a3sim"``) or the reference interpreter (``"ref"``): the worker
is a ``pypto.runtime.ChipWorker`` underneath."""

from simpler.worker import Worker

__all__ = ["Worker"]
