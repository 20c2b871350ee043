"""``pypto.debug.torch_codegen``, the reference's name: the generator lives beside the
interpreter whose semantics its code calls (``pypto.sim.reference.torch_codegen``)."""

from pypto.sim.reference.torch_codegen import torch_codegen

__all__ = ["torch_codegen"]
