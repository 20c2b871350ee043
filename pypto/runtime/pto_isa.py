"""The reference's resolution of its PTO-ISA checkout (the C++ headers it compiles kernels
against for a real NPU): ``ensure_pto_isa_root`` / ``pto_isa_include_dir``.

This package compiles nothing against those headers — its kernels are simulated from their
PTO listings — so there is no checkout to resolve, and asking for one is a ConfigError
that says so. (The reference's own code calls them only for on-board platforms; on
``a2a3sim`` nothing needs them.)"""

from __future__ import annotations

from pypto.errors import ConfigError


def _refused(what: str) -> ConfigError:
    return ConfigError(f"{what}: there is no PTO-ISA checkout here — this package simulates its kernels and compiles "
                       "nothing against the vendor's ISA headers",
                       hint="simulated platforms need none: run on platform='a2a3sim' (or 'ref') and skip this step")


def ensure_pto_isa_root() -> str:
    raise _refused("ensure_pto_isa_root()")


def pto_isa_include_dir():
    raise _refused("pto_isa_include_dir()")
