"""A program's functions: in order, as a tuple, and by name, as the reference's
``program.functions`` dict reads (``.values()``, ``.items()``, ``["name"]``)."""

from __future__ import annotations


class FunctionTable(tuple):
    """The functions in program order. Iterating gives the functions (the compiler walks
    them so); ``keys``/``values``/``items`` and indexing by name read it as a mapping."""

    def keys(self) -> list[str]:
        return [f.name for f in self]

    def values(self) -> list:
        return list(self)

    def items(self) -> list[tuple]:
        return [(f.name, f) for f in self]

    def get(self, name: str, default=None):
        return next((f for f in self if f.name == name), default)

    def __getitem__(self, key):
        if isinstance(key, str):
            found = self.get(key)
            if found is None:
                raise KeyError(key)
            return found
        item = super().__getitem__(key)
        return FunctionTable(item) if isinstance(key, slice) else item

    def __contains__(self, item) -> bool:
        if isinstance(item, str):
            return any(f.name == item for f in self)
        return super().__contains__(item)
