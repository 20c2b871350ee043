"""One generic rewriter over the IR, and the renamings built on it.

``rewrite(node, rules)`` rebuilds bottom-up: children come from the attrs fields (tuples
element-wise), a rule for the node's class returns a replacement or None (unchanged), and
an unchanged subtree comes back as the very same object.
"""

from __future__ import annotations

from collections.abc import Callable

import attrs

from pypto.ir import nodes as n


def rewrite(node, rules: dict[type, Callable]):
    # Rules over statements and bindings alone (a retyping) cannot match inside an
    # expression or a type, which are most of the nodes: those are left as leaves.
    structural = all(cls in _STRUCTURE for cls in rules)
    return _rewrite(node, rules, _STRUCTURE if structural else None)


def _rewrite(node, rules, within):
    if isinstance(node, tuple):
        items = tuple(_rewrite(x, rules, within) for x in node)
        return node if all(a is b for a, b in zip(items, node)) else items
    if within is not None and type(node) not in within:
        return node
    names = _FIELDS.get(type(node))
    if names is None:
        names = _FIELDS[type(node)] = _fields(type(node))
    if names is False:  # not a node: a leaf value
        return node
    changes = {}
    for name in names:
        value = getattr(node, name)
        new = _rewrite(value, rules, within)
        if new is not value:
            changes[name] = new
    if changes:
        node = attrs.evolve(node, **changes)
    rule = rules.get(type(node))
    if rule is not None:
        replaced = rule(node)
        if replaced is not None:
            return replaced
    return node


# What holds statements or bindings; everything else (expressions, calls, types) holds neither.
_STRUCTURE = frozenset({n.Binding, n.IterArg, n.Assign, n.Eval, n.For, n.While, n.If, n.Yield, n.Return, n.Scope,
                        n.RuntimeScope, n.Cluster, n.Param, n.Function, n.Program})
_FIELDS: dict[type, tuple | bool] = {}  # class -> the fields the rewriter descends into; False: not attrs


def _fields(cls) -> tuple | bool:
    if not attrs.has(cls):
        return False
    return tuple(f.name for f in attrs.fields(cls) if f.eq)  # spans are not children


def substitute(node, mapping: dict[str, object]):
    """Replace uses of names by expressions (binding sites are left alone)."""
    if not mapping:
        return node
    return rewrite(node, {n.Var: lambda v: mapping.get(v.name)})


def rename(node, mapping: dict[str, str]):
    """Rename names everywhere: uses and binding sites."""
    if not mapping:
        return node

    def new(name):
        return mapping.get(name)

    return rewrite(node, {
        n.Var: lambda v: n.Var(mapping[v.name]) if v.name in mapping else None,
        n.Assign: lambda s: attrs.evolve(s, target=new(s.target)) if new(s.target) else None,
        n.For: lambda s: attrs.evolve(s, var=new(s.var)) if new(s.var) else None,
        n.IterArg: lambda a: attrs.evolve(a, name=new(a.name)) if new(a.name) else None,
        n.Binding: lambda b: attrs.evolve(b, name=new(b.name)) if new(b.name) else None,
        n.Param: lambda p: attrs.evolve(p, name=new(p.name)) if new(p.name) else None,
    })


def bound_in(body) -> list[str]:
    """Every name a block binds, nested blocks included, in order."""
    out = []
    for stmt in n.walk_stmts(body):
        out.extend(n.bound_names(stmt))
    return out


def clone_block(body: tuple, used: set, subst: dict[str, object] | None = None) -> tuple[tuple, dict[str, str]]:
    """A copy of a block with fresh names for everything it binds (``used`` grows) and
    ``subst`` applied to the names it reads from outside. Returns (block, old -> new)."""
    mapping = {name: n.fresh_name(name, used) for name in bound_in(body)}
    # Rename first: the substituted values may name things bound elsewhere under the same names.
    return substitute(rename(body, mapping), subst or {}), mapping
