"""The Python objects behind ``pl.*`` names.

Kernel bodies are parsed, never run, so these objects only have to exist, be recognizable
to the front end (``__pypto_path__``), and explain themselves when someone calls one
outside a kernel. Annotations Python evaluates eagerly (parameter annotations, or a
module-level ``T = pl.Tile[...]``) build inert markers; the front end reads the source.
"""

from __future__ import annotations

import linecache
import sys
from pathlib import Path

from pypto.errors import PyptoError, Span


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
        from pypto.lang.vocabulary.names import Op, member

        if name.startswith("__"):
            raise AttributeError(name)
        from pypto.lang.vocabulary.names import NAMESPACED_ENUMS

        level = self.__pypto_path__[0]
        if f"{level}.{name}" in NAMESPACED_ENUMS:  # the enum itself: its members are ints a host reads
            return NAMESPACED_ENUMS[f"{level}.{name}"]
        meaning = member(level, name)
        if meaning is None:
            raise AttributeError(f"pl.{level} has no operation {name!r}")
        if isinstance(meaning, Op):  # a registered op: documented from the registry
            from pypto.lang.vocabulary.op_reference import stand_in

            return stand_in((level, name))
        return DslName(level, name)

    def __dir__(self):
        from pypto.ir.ops.registry import ALIASES, all_ops, spelled
        from pypto.lang.vocabulary.names import _NAMESPACED_BUILTINS, NAMESPACED_ENUMS

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


class MemRefDeclaration:
    """``scratch = pl.MemRef(slots=2)`` outside a kernel: an allocation of the user's own,
    which tile annotations name by the variable (``pl.Tile[..., scratch[i % 2], pl.Mem.Vec]``).
    It takes the variable's name unless it was given one; the front end reads the fields,
    so a declaration is checked where it is written (``span``)."""

    def __init__(self, name: str | None, slots: int, addr: int | None, size: int | None, span=None):
        self.name, self.slots, self.addr, self.size, self.span = name, slots, addr, size, span

    def __getitem__(self, item):
        raise PyptoError("a pl.MemRef declaration's slot is selected in a tile annotation, which the compiler "
                         "parses and never runs", hint="t: pl.Tile[[64, 64], pl.FP32, buf[i % 2], pl.Mem.Vec] = ...")

    def __repr__(self) -> str:
        fields = [repr(self.name)] if self.name else []
        if self.addr is not None:
            fields += [str(self.addr), str(self.size)]
        if self.slots != 1:
            fields.append(f"slots={self.slots}")
        return f"pl.MemRef({', '.join(fields)})"


_MEMREF_KEYWORDS = ("slots", "size", "pipeline", "reusable")


def memref_fields(args: list, kw: dict, *, named: bool) -> dict:
    """The fields of ``pl.MemRef(*args, **kw)`` (values already in hand), or ValueError
    (message, hint). ``named``: the name is required (the inline form has no variable to
    take it from)."""
    for k in kw:
        if k not in _MEMREF_KEYWORDS:
            raise ValueError(f"pl.MemRef got an unexpected keyword '{k}'", 'pl.MemRef("name", slots=N)')
    name = args[0] if args and isinstance(args[0], str) else None
    if named and not name or args and not isinstance(args[0], str) or name == "":
        raise ValueError("pl.MemRef needs a name (a non-empty string) first", 'pl.MemRef("ub", slots=2)[i % 2]')
    rest = args[1:]
    if len(rest) not in (0, 2) or not all(isinstance(a, int) and not isinstance(a, bool) for a in rest):
        raise ValueError("pl.MemRef takes (name) or (name, address, size)", 'pl.MemRef("ub", slots=2)')
    slots = kw.get("slots", 1)
    if not isinstance(slots, int) or isinstance(slots, bool) or slots < 1:
        raise ValueError(f"slots must be a positive int, not {slots!r}", 'pl.MemRef("ub", slots=2)')
    addr, size = (rest[0], rest[1]) if rest else (None, kw.get("size"))
    if size is not None and (not isinstance(size, int) or isinstance(size, bool)):
        raise ValueError(f"a MemRef's size is a number of bytes, not {size!r}", 'pl.MemRef("ub", size=16384)')
    flags = {k: kw.get(k, False) for k in ("pipeline", "reusable")}
    for k, v in flags.items():
        if not isinstance(v, bool):
            raise ValueError(f"{k} must be True or False, not {v!r}", None)
    return dict(name=name, slots=slots, addr=addr, size=size, **flags)


class TypeConstructor(DslName):
    """``pl.Tensor``, ``pl.Tile``, ``pl.Scalar``, ``pl.Out``, ``pl.InOut``."""

    def __getitem__(self, item) -> TypeAnnotation:
        return TypeAnnotation(f"{self!r}[...]")


class MemRefConstructor(DslName):
    def __call__(self, *args, **kwargs) -> MemRefDeclaration:
        try:
            f = memref_fields(list(args), kwargs, named=False)
        except ValueError as exc:
            message, hint = exc.args
            raise PyptoError(message, span=_decorated_at(), hint=hint) from None
        if f["pipeline"] or f["reusable"]:  # the compiler's own marks, which a dump prints
            raise PyptoError("pipeline= and reusable= are the compiler's marks on the MemRefs it makes; a "
                             "declaration is an allocation of your own", span=_decorated_at(),
                             hint="scratch = pl.MemRef(slots=2)")
        return MemRefDeclaration(f["name"], f["slots"], f["addr"], f["size"], _decorated_at())


_PACKAGE = str(Path(__file__).resolve().parents[2])  # pypto/


def _decorated_at() -> Span | None:
    """The line applying the decorator being run: the first frame outside pypto (a class
    has no line of its own to report, and its module may be gone by the time it is called)."""
    frame = sys._getframe(1)
    while frame is not None and str(Path(frame.f_code.co_filename).resolve()).startswith(_PACKAGE + "/"):
        frame = frame.f_back
    if frame is None:
        return None
    file, line = frame.f_code.co_filename, frame.f_lineno
    text = linecache.getline(file, line).rstrip("\n")
    return Span(file, line, len(text) - len(text.lstrip()) + 1, line, len(text) + 1, text or None)


class TileViewConstructor(DslName):  # pl.TileView and pl.TensorView: read in annotations
    def __call__(self, *args, **kwargs) -> TypeAnnotation:
        return TypeAnnotation(f"{self!r}(...)")


def documented(kind: type, name: str, doc: str) -> DslName:
    """``pl.<name>`` as an instance of its own subclass of ``kind``, so that ``help()`` —
    which documents an instance's class — shows ``doc`` rather than the kind's."""
    cls = type(name, (kind,), {"__doc__": doc, "__module__": "pypto.language"})
    return cls(name)
