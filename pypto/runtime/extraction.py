"""The extraction surface of a ``CompiledProgram``: what a harness that drives the runtime
itself needs (the reference's ``chip_callable`` / ``runtime_name`` / ``runtime_config`` /
``build_orch_args`` / ``build_call_config``), handed to the runtime's worker (``simpler``,
here the simulated device's).

    compiled.chip_callable                 ChipCallable: what a worker registers (one per program)
    compiled.runtime_config                {"aicpu_thread_num": None}: the runtime's defaults
    compiled.build_orch_args(*args)        (OrchArgs, coerced list, return_style)
    compiled.build_call_config(config, aicpu_thread_num=..., dfx_dir=...) -> CallConfig
"""

from __future__ import annotations

from pathlib import Path

import attrs

from pypto.errors import ConfigError
from pypto.runtime.config import RunConfig


@attrs.frozen(eq=False)
class ChipCallable:
    """The device side of one compiled program — its kernels and its orchestration — as a
    worker registers it. Here the simulated chip runs them: the handle is the program."""

    compiled: object = attrs.field(repr=False)
    name: str

    def __repr__(self) -> str:
        return f"ChipCallable({self.name!r})"


@attrs.frozen(eq=False)
class OrchArgs:
    """The arguments of one dispatch, packed for the worker: the coerced positional list
    (tensors in place, the Out tensors of a return-style call allocated), for the program
    they were built for."""

    callable: ChipCallable
    args: tuple


@attrs.define
class CallConfig:
    """How one dispatch runs: the RunConfig's platform, device and DFX flags, the AICPU
    scheduler threads (recorded: the simulated chip schedules as one scheduler), and where
    DFX output goes (``output_prefix``)."""

    config: RunConfig
    aicpu_thread_num: int | None = None
    output_prefix: Path | None = None


def runtime_config() -> dict:
    """The runtime's configuration baked into a build: its defaults (no AICPU thread count
    chosen, the runtime's own applies)."""
    return {"aicpu_thread_num": None}


def build_call_config(compiled, config: RunConfig | None = None, *, aicpu_thread_num: int | None = None,
                      dfx_dir=None) -> CallConfig:
    """``aicpu_thread_num``: the keyword, else the config's, else the build's."""
    if config is not None and not isinstance(config, RunConfig):
        raise ConfigError(f"config={config!r} is not a RunConfig", hint="compiled.build_call_config(RunConfig(...))")
    run_config = compiled._config(config)
    if aicpu_thread_num is not None and (not isinstance(aicpu_thread_num, int) or isinstance(aicpu_thread_num, bool)
                                         or aicpu_thread_num < 1):
        raise ConfigError(f"aicpu_thread_num={aicpu_thread_num!r} is not a thread count",
                          hint="aicpu_thread_num=4 (or None)")
    threads = next((t for t in (aicpu_thread_num, run_config.aicpu_thread_num,
                                compiled.runtime_config.get("aicpu_thread_num")) if t is not None), None)
    return CallConfig(run_config, threads, Path(dfx_dir) if dfx_dir is not None else None)


def build_orch_args(compiled, *args, worker=None) -> tuple:
    """(OrchArgs, the coerced positional list, whether the call was return-style): every
    parameter given, or the inputs only (the Out tensors then allocated here, read from
    the coerced list at ``output_indices`` after the run)."""
    from pypto.runtime.worker import on_device

    given = on_device(args, compiled)
    full = compiled._with_outputs(given)
    if len(full) != len(compiled.param_names):
        outs = len(compiled.output_indices)
        raise TypeError(f"'{compiled.name}' takes {len(compiled.param_names)} arguments "
                        f"({', '.join(compiled.param_names)})" + (f", or the {len(compiled.param_names) - outs} "
                                                                  "inputs alone" if outs else "")
                        + f"; got {len(args)}")
    return_style = len(full) != len(given)
    coerced = list(full)
    return OrchArgs(compiled.chip_callable, tuple(coerced)), coerced, return_style
