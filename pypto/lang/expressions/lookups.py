"""What a name in a kernel body denotes where it is read: a value the body bound (its SSA
name in ``env``), an entity of the kernel language or the module (``pypto.lang.vocabulary.names``),
or an error that says why it has no value here. A mixin of ``ExprConverter``."""

from __future__ import annotations

import ast
import builtins
import difflib

from pypto.errors import ParseError, PyptoError
from pypto.lang.vocabulary import names as N


class Lookups:
    def resolve_chain(self, node):
        """A Name/Attribute chain resolved to an entity of ``pypto.lang.vocabulary.names``, or None."""
        if isinstance(node, ast.Name):
            if node.id in self.env:  # a local value hides what the module binds to the name
                return None
            if node.id in getattr(self, "local_axes", {}):  # M = pl.dynamic("M") in the body
                return N.Value(self.local_axes[node.id])
            ref = self.source.resolver.resolve(node.id)
            if (node.id in self.dropped or node.id in self.local_names) and ref != N.Path(()):
                # 'pl' bound locally is its own error, where it is bound.
                raise self.undefined(node)
            return ref
        if isinstance(node, ast.Attribute):
            base = self.resolve_chain(node.value)
            if isinstance(base, N.Path):
                return base.child(node.attr)
            if isinstance(base, N.Value):
                return self.source.resolver.attribute(base, node.attr)
            return None
        return None

    def entity(self, node):
        """Resolve and interpret: what a (non-local) name denotes in the kernel language."""
        ref = self.resolve_chain(node)
        if isinstance(ref, N.Path):
            return ref, N.interpret(ref)
        return ref, ref

    def alias_error(self, node, ref: N.Alias) -> PyptoError:
        return self.error(
            ParseError, node,
            f"'{ref.name}' is {ref.what} bound at module level; the kernel source is re-parsed on "
            "its own, where such a variable is not in scope",
            hint="write the annotation inline where it is used, e.g. "
            "tile: pl.Tile[[64, 128], pl.FP32, pl.Mem.Vec] = ...",
        )

    def undefined(self, node: ast.Name) -> PyptoError:
        ref = None if node.id in self.env else self.source.resolver.resolve(node.id)
        if isinstance(ref, N.Declared):
            return self.error(
                ParseError, node, f"'{node.id}' is a pl.MemRef declaration: it says where a tile lives, and has no "
                "value to compute with", hint=f"name it in a tile's annotation, e.g. t: pl.Tile[[64, 128], pl.FP32, "
                f"{node.id}{f'[i % {ref.decl.slots}]' if ref.decl.slots > 1 else ''}, pl.Mem.Vec] = pl.load(...)")
        if node.id in self.dropped:
            d = self.dropped[node.id]
            return self.error(
                ParseError, node,
                d.message or f"'{node.id}' is bound inside the {d.where} at line {d.line} and is not available after it",
                hint=d.hint or f"give '{node.id}' a value before the {d.where} so it is carried out of it",
            )
        if node.id in self.local_names:
            shadows = isinstance(self.source.resolver.resolve(node.id), (N.Value, N.Kernel))
            line = self.local_names[node.id] + self.source.line_offset
            return self.error(
                ParseError, node,
                f"'{node.id}' has no value here: it is assigned at line {line}, which makes it (as in Python) "
                "a local name of the whole function" + (f", hiding the module-level '{node.id}'" if shadows else ""),
                hint=f"rename the local so it does not hide the module's '{node.id}'" if shadows
                else f"assign '{node.id}' before this line",
            )
        if node.id in vars(builtins):
            return self.error(ParseError, node, f"'{node.id}' is a Python builtin, used here as a value",
                              hint=f"call it where a value is needed, e.g. {node.id}(x)")
        candidates = list(self.env) + ["pl"]
        close = difflib.get_close_matches(node.id, candidates, n=1)
        return self.error(ParseError, node, f"name '{node.id}' is not defined",
                          hint=f"did you mean '{close[0]}'?" if close else None)
