"""Which values an index expression takes where an op runs, for the front end's static
bounds check: every combination of the enclosing loops' indices the op's branch
conditions let through, evaluated exactly. An expression or a condition that depends on a
runtime value is not decided here (the interpreter and the simulator check those accesses
when they run).
"""

from __future__ import annotations

import itertools

from pypto.ir import nodes as n
from pypto.ir.simplify import DIVISIONS, OPERATORS

# Combinations beyond this are not enumerated: the caller falls back to interval bounds.
LIMIT = 1 << 14


class Unknown(Exception):
    """A value that depends on something other than loop indices and constants."""


def evaluate(e, env: dict, defs: dict):
    """The value of ``e`` with loop indices from ``env`` and scalar names bound to
    expressions in ``defs``."""
    if isinstance(e, n.Const):
        return e.value
    if isinstance(e, n.Var):
        if e.name in env:
            return env[e.name]
        if e.name in defs:
            return evaluate(defs[e.name], env, defs)
        raise Unknown(e.name)
    if isinstance(e, n.UnaryOp):
        v = evaluate(e.operand, env, defs)
        return {"-": lambda x: -x, "not": lambda x: not x, "abs": abs}.get(e.op, _unknown)(v)
    if isinstance(e, n.BinOp):
        if e.op in ("and", "or"):
            lhs = evaluate(e.lhs, env, defs)
            if (e.op == "and") != bool(lhs):
                return lhs
            return evaluate(e.rhs, env, defs)
        f = OPERATORS.get(e.op)
        if f is None:
            raise Unknown(e.op)
        lhs, rhs = evaluate(e.lhs, env, defs), evaluate(e.rhs, env, defs)
        if e.op in DIVISIONS and rhs == 0 or e.op in ("<<", ">>") and rhs < 0:
            raise Unknown("division by zero or a negative shift")
        return f(lhs, rhs)
    raise Unknown(repr(e))


def _unknown(_):
    raise Unknown("operator")


def free_indices(e, domains: dict, defs: dict) -> set[str]:
    """The loop indices ``e`` reads (through ``defs``); Unknown if it reads anything else."""
    if isinstance(e, n.Const):
        return set()
    if isinstance(e, n.Var):
        if e.name in domains:
            return {e.name}
        if e.name in defs:
            return free_indices(defs[e.name], domains, defs)
        raise Unknown(e.name)
    if isinstance(e, n.UnaryOp):
        return free_indices(e.operand, domains, defs)
    if isinstance(e, n.BinOp):
        return free_indices(e.lhs, domains, defs) | free_indices(e.rhs, domains, defs)
    raise Unknown(repr(e))


def reach(e, guards, domains: dict, defs: dict):
    """(least value, its indices, greatest value, its indices) of ``e`` over the index
    combinations where every guard ``(cond, holds)`` has ``bool(cond) == holds``; None when
    no combination gets there; raises Unknown when that is not decidable here (a runtime
    value, or too many combinations)."""
    names = free_indices(e, domains, defs)
    for cond, _ in guards:
        names |= free_indices(cond, domains, defs)
    names = sorted(names)
    total = 1
    for name in names:
        total *= len(domains[name])
    if total > LIMIT:
        raise Unknown("too many combinations")
    best = None
    for values in itertools.product(*(domains[x] for x in names)):
        env = dict(zip(names, values))
        if not all(bool(evaluate(c, env, defs)) == holds for c, holds in guards):
            continue
        v = evaluate(e, env, defs)
        if best is None:
            best = [v, env, v, env]
        if v < best[0]:
            best[0], best[1] = v, env
        if v > best[2]:
            best[2], best[3] = v, env
    return None if best is None else tuple(best)
