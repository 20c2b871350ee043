"""The reference's ``pypto.runtime.device_runner``: the steps under its ``execute_compiled``
for a real NPU — build the kernels' binaries (``compile_and_assemble``), pack the arguments
(``build_orch_args_from_inputs``), launch (``execute_on_device``) — and the comparison of
outputs with a golden (``validate_golden``).

Here a build is run by the simulator, with no binaries: the three device steps are refused,
each pointing at the call that does the whole run (``execute_compiled``, or the
``CompiledProgram``). ``validate_golden`` compares as the reference does."""

from __future__ import annotations

import torch

from pypto.errors import ConfigError

_INSTEAD = ("run the build on the simulator: pypto.runtime.runner.execute_compiled(work_dir, tensors, "
            "platform='a2a3sim'), or CompiledProgram.from_dir(work_dir)(*tensors)")


def _refused(step: str) -> ConfigError:
    return ConfigError(f"{step} builds or launches binaries for a real NPU; this package simulates the build instead",
                       hint=_INSTEAD)


def compile_and_assemble(work_dir, platform, *args, **kwargs):
    raise _refused("compile_and_assemble()")


def build_orch_args_from_inputs(*args, **kwargs):
    raise _refused("build_orch_args_from_inputs()")


def execute_on_device(*args, **kwargs):
    raise _refused("execute_on_device()")


def validate_golden(outputs: dict, golden: dict, rtol: float = 1e-5, atol: float = 1e-5) -> None:
    """Each named output close to its golden (``torch.isclose``); an element whose golden is
    NaN is one the kernel leaves undefined by contract, and is not compared. An
    AssertionError names the output, how many elements differ, and the first of them."""
    for name, actual in outputs.items():
        got, want = actual.detach().cpu(), golden[name].detach().cpu()
        loose = torch.isnan(want)  # golden NaN: don't care
        ok = torch.isclose(got, want, rtol=rtol, atol=atol) | loose
        if bool(ok.all()):
            continue
        bad = torch.nonzero(~ok.flatten()).flatten()
        shown = [f"    [{i}] actual={got.flatten()[i].item()}, expected={want.flatten()[i].item()}"
                 for i in bad[:20].tolist()]
        skipped = int(loose.sum())
        raise AssertionError(
            f"Output '{name}' does not match golden.\nMismatched elements: {bad.numel()}/{got.numel()}"
            + (f" ({skipped} don't-care skipped)" if skipped else "")
            + f"\nrtol={rtol}, atol={atol}\nFirst {len(shown)} mismatches:\n" + "\n".join(shown))
