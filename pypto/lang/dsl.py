"""The Python objects behind ``pl.*`` names.

Kernel bodies are parsed, never run, so these objects only have to exist, be recognizable
to the front end (``__pypto_path__``), and explain themselves when someone calls one
outside a kernel. Annotations Python evaluates eagerly (parameter annotations, or a
module-level ``T = pl.Tile[...]``) build inert markers; the front end reads the source.
"""

from __future__ import annotations

from pypto.errors import PyptoError


class DslName:
    """A kernel-language name: an op, a loop form, a scope."""

    def __init__(self, *path: str):
        self.__pypto_path__ = tuple(path)

    def __repr__(self) -> str:
        return "pl." + ".".join(self.__pypto_path__)

    def __call__(self, *args, **kwargs):
        raise PyptoError(
            f"{self!r} is part of the kernel language and only has meaning inside a "
            "@pl.jit / @pl.function body, which the compiler parses and never runs",
            hint="call the kernel instead: kernel(*tensors, config=RunConfig(...))",
        )


class OpNamespace(DslName):
    """``pl.tile`` / ``pl.tensor``: attribute access names level-specific ops."""

    def __getattr__(self, name: str) -> DslName:
        from pypto.lang.names import Op, member

        if name.startswith("__"):
            raise AttributeError(name)
        from pypto.lang.names import NAMESPACED_ENUMS

        level = self.__pypto_path__[0]
        if f"{level}.{name}" in NAMESPACED_ENUMS:  # the enum itself: its members are ints a host reads
            return NAMESPACED_ENUMS[f"{level}.{name}"]
        meaning = member(level, name)
        if meaning is None:
            raise AttributeError(f"pl.{level} has no operation {name!r}")
        if isinstance(meaning, Op):  # a registered op: documented from the registry
            from pypto.lang.op_reference import stand_in

            return stand_in((level, name))
        return DslName(level, name)

    def __dir__(self):
        from pypto.ir.ops.registry import ALIASES, all_ops, spelled
        from pypto.lang.names import _NAMESPACED_BUILTINS, NAMESPACED_ENUMS

        level = self.__pypto_path__[0]
        names = [*(op.name for op in all_ops()), *ALIASES, *_NAMESPACED_BUILTINS, *NAMESPACED_ENUMS]
        return sorted({spelled(x).split(".", 1)[1] for x in names if x.startswith(level + ".")})


class _Marker:
    """What evaluating an annotation or declaration at module level produces."""

    __pypto_alias__ = "a kernel-language annotation"

    def __init__(self, text: str):
        self._text = text

    def __getitem__(self, item) -> _Marker:
        return type(self)(f"{self._text}[...]")

    def __repr__(self) -> str:
        return self._text


class TypeAnnotation(_Marker):
    __pypto_alias__ = "a type annotation"


class MemRefDeclaration(_Marker):
    __pypto_alias__ = "a pl.MemRef declaration"


class TypeConstructor(DslName):
    """``pl.Tensor``, ``pl.Tile``, ``pl.Scalar``, ``pl.Out``, ``pl.InOut``."""

    def __getitem__(self, item) -> TypeAnnotation:
        return TypeAnnotation(f"{self!r}[...]")


class MemRefConstructor(DslName):
    def __call__(self, *args, **kwargs) -> MemRefDeclaration:
        return MemRefDeclaration("pl.MemRef(...)")


class TileViewConstructor(DslName):  # pl.TileView and pl.TensorView: read in annotations
    def __call__(self, *args, **kwargs) -> TypeAnnotation:
        return TypeAnnotation(f"{self!r}(...)")


def documented(kind: type, name: str, doc: str) -> DslName:
    """``pl.<name>`` as an instance of its own subclass of ``kind``, so that ``help()`` —
    which documents an instance's class — shows ``doc`` rather than the kind's."""
    cls = type(name, (kind,), {"__doc__": doc, "__module__": "pypto.language"})
    return cls(name)
