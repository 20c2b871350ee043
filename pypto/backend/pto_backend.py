"""The reference's module of its PTO code generator, for the one name users catch from it."""

from pypto.errors import PartialCodegenError

__all__ = ["PartialCodegenError"]
