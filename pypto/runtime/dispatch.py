"""Running a program on a platform: argument checks, then the platform's executor."""

from __future__ import annotations

from pypto.ir import nodes as n
from pypto.runtime.config import RunConfig
from pypto.sim import interpreter


def execute(program: n.Program, entry: str, args, config: RunConfig) -> tuple:
    if config.platform == "ref":
        return interpreter.run(program, entry, args)
    raise AssertionError(f"platform {config.platform!r} passed RunConfig's check but has no executor")
