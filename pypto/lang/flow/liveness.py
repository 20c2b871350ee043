"""Which Python names a block of kernel source assigns and reads, so that rebinding a name
inside a loop or an ``if`` can become a loop-carried value or a branch result — and only
when the rebound value is actually read afterwards.
"""

from __future__ import annotations

import ast


def assigned(stmts) -> list[str]:
    """Names (re)bound anywhere in ``stmts``, in order of first binding."""
    seen: dict[str, None] = {}
    for stmt in stmts:
        for node in _walk_stmt(stmt):
            for name in _targets(node):
                seen.setdefault(name, None)
    return list(seen)


def stored(stmts) -> list[str]:
    """Names stored into anywhere in ``stmts`` (``x[i] = v``), in order of first store."""
    seen: dict[str, None] = {}
    for stmt in stmts:
        for node in _walk_stmt(stmt):
            if isinstance(node, ast.Assign):
                for t in node.targets:
                    if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name):
                        seen.setdefault(t.value.id, None)
    return list(seen)


def first_bindings(stmts) -> dict[str, int]:
    """Each name (re)bound anywhere in ``stmts`` -> the line of its first binding."""
    seen: dict[str, int] = {}
    for stmt in stmts:
        for node in _walk_stmt(stmt):
            for name in _targets(node):
                seen.setdefault(name, node.lineno)
    return seen


def reads(nodes) -> set[str]:
    """Names read anywhere in the given statements or expressions."""
    out: set[str] = set()
    for root in nodes:
        for node in ast.walk(root):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                out.add(node.id)
            elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
                out.add(node.target.id)
            elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                # `out[...] = x` reads (and writes into) `out`.
                for t in node.targets if isinstance(node, ast.Assign) else [node.target]:
                    if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name):
                        out.add(t.value.id)
    return out


def live_after_each(stmts, live_after: frozenset = frozenset(), tail=()) -> list[frozenset]:
    """For each statement, which of the names it (re)binds anywhere inside it are read
    after it: in the statements that follow, in ``tail`` (expressions or statements after
    the block), or live after the block (``live_after``). A statement only ever asks about
    names it binds (loop carries, branch results), so this is all it needs — computed in
    one backward pass, not once per statement over everything after it."""
    read_later = reads(tail)
    out: list = [frozenset()] * len(stmts)
    for i in range(len(stmts) - 1, -1, -1):
        # (a store into an element or window may rebind the name too: an array's, a tile's)
        bound = assigned([stmts[i]]) + stored([stmts[i]])
        out[i] = frozenset(x for x in bound if x in live_after or x in read_later)
        read_later |= reads([stmts[i]])
    return out


def upward_exposed(stmts) -> set[str]:
    """Names a block may read before it has bound them itself."""
    exposed: set[str] = set()
    _exposed_block(stmts, set(), exposed)
    return exposed


def _exposed_block(stmts, defined: set[str], exposed: set[str]) -> set[str]:
    defined = set(defined)
    for stmt in stmts:
        if isinstance(stmt, ast.If):
            exposed |= reads([stmt.test]) - defined
            a = _exposed_block(stmt.body, defined, exposed)
            b = _exposed_block(stmt.orelse, defined, exposed)
            defined |= a & b
        elif isinstance(stmt, ast.For):
            exposed |= reads([stmt.iter]) - defined
            # The body may run zero times: what it binds is not definitely bound after it.
            _exposed_block(stmt.body, defined | set(_targets(stmt)), exposed)
        elif isinstance(stmt, ast.While):
            exposed |= reads([stmt.test]) - defined
            _exposed_block(stmt.body, defined, exposed)
        elif isinstance(stmt, ast.With):
            exposed |= reads([item.context_expr for item in stmt.items]) - defined
            defined = _exposed_block(stmt.body, defined, exposed)
        else:
            exposed |= reads([stmt]) - defined
            defined |= set(_targets(stmt))
    return defined


def _walk_stmt(stmt):
    yield stmt
    for field in ("body", "orelse"):
        for child in getattr(stmt, field, ()) or ():
            if isinstance(child, ast.stmt):
                yield from _walk_stmt(child)


def _targets(node) -> list[str]:
    if isinstance(node, ast.Assign):
        return [n for t in node.targets for n in _names(t)]
    if isinstance(node, (ast.AnnAssign, ast.AugAssign)):
        return _names(node.target)
    if isinstance(node, ast.For):
        return _names(node.target)
    if isinstance(node, ast.With):
        return [n for item in node.items if item.optional_vars is not None for n in _names(item.optional_vars)]
    return []


def _names(target) -> list[str]:
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [n for elt in target.elts for n in _names(elt)]
    return []
