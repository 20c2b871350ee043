"""The reference's module of its PTO code generator: the error users catch from it, and the
two steps of its vendor toolchain that code written against the reference calls by hand —
running ``ptoas`` (the PTO assembler, which turns a kernel's ``.pto`` into C++) and fitting
its C++ into the kernel wrapper.

This package has no vendor toolchain: its kernels are listed as PTO instructions
(``kernels/aic|aiv/<fn>.pto`` in a build) and simulated from those, with no C++ between. The
two steps are refused, each with what to do instead."""

from pypto.errors import ConfigError, PartialCodegenError

__all__ = ["PartialCodegenError"]

_INSTEAD = ("run the compiled program on a simulated platform (platform='a2a3sim' or 'ref'); its instruction "
            "listings are kernels/aic|aiv/<fn>.pto in the build")


def _run_ptoas(pto_path, cpp_path, ptoas_flags=None, **options):
    raise ConfigError("ptoas (the vendor's PTO assembler) is not part of this package: kernels are simulated from "
                      f"their PTO listings, never assembled into C++ (asked to assemble {pto_path})", hint=_INSTEAD)


def _preprocess_ptoas_output(cpp_text: str) -> str:
    raise ConfigError("there is no ptoas C++ output to preprocess here: this package assembles no kernels",
                      hint=_INSTEAD)
