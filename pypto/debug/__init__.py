"""Host-side debugging aids the reference ships as ``pypto.debug``: ``torch_codegen``, an
IR program as executable Python over torch with the interpreter's semantics."""

from pypto.sim.reference.torch_codegen import torch_codegen

__all__ = ["torch_codegen"]
