"""Running a compiled program on its platform: the reference interpreter, or the host
orchestration interpreted with each InCore call simulated on a core cluster."""

from __future__ import annotations

from pypto.ir import nodes as n
from pypto.runtime.config import RunConfig
from pypto.sim import interpreter
from pypto.sim.numerics import one_thread
from pypto.sim.simulator import RunReport, run_kernel
from pypto.backend import backend


def execute(program: n.Program, entry: str, args, config: RunConfig, kernels: dict | None = None,
            on_launch=None):
    """(values the entry returns, RunReport). ``on_launch(kernel, report)`` sees each
    simulated launch's own report (the L0 trace writer does)."""
    with one_thread():
        return _execute(program, entry, args, config, kernels, on_launch)


def _execute(program, entry, args, config, kernels, on_launch):
    report = RunReport()
    if config.platform == "ref":
        return interpreter.run(program, entry, args), report
    soc = backend(config.backend)

    def kernel_call(fn: n.Function, fargs):
        kernel = kernels[fn.name]
        _, launch = run_kernel(kernel, fargs, soc, unsafe=config.unsafe_allow_colive_slots)
        if on_launch is not None:
            on_launch(kernel, launch)
        report.merge(launch)
        by_name = {name: value for (name, _), value in zip(kernel.params, fargs)}
        return tuple(by_name[name] for name in kernel.returns)

    values = interpreter.run(program, entry, args, kernel_call)
    return values, report
