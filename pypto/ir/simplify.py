"""Constant folding of index arithmetic, shared by the front end (``TR * 2`` reads as 128)
and the passes (a substituted loop index leaves ``16 + 0``)."""

from __future__ import annotations

import operator

from pypto.ir import nodes as n

# IR operator -> what it computes on Python numbers
OPERATORS = {"+": operator.add, "-": operator.sub, "*": operator.mul, "//": operator.floordiv, "%": operator.mod,
             "==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le, ">": operator.gt,
             ">=": operator.ge, "min": min, "max": max}


def fold(e):
    """A BinOp of two number constants, computed; anything else unchanged."""
    if isinstance(e, n.BinOp) and isinstance(e.lhs, n.Const) and isinstance(e.rhs, n.Const):
        f = OPERATORS.get(e.op)
        lhs, rhs = e.lhs.value, e.rhs.value
        if f is not None and not isinstance(lhs, bool) and not isinstance(rhs, bool):
            if e.op in ("//", "%") and rhs == 0:
                return e
            return n.Const(f(lhs, rhs))
    return e


def _identity(e):
    """x + 0, 0 + x, x - 0, x * 1, 1 * x -> x."""
    zero, one = n.Const(0), n.Const(1)
    if e.op == "+" and e.rhs == zero or e.op == "-" and e.rhs == zero or e.op == "*" and e.rhs == one:
        return e.lhs
    if e.op == "+" and e.lhs == zero or e.op == "*" and e.lhs == one:
        return e.rhs
    return None


def simplify(node):
    """Fold constants and drop additive/multiplicative identities throughout ``node``."""
    from pypto.ir.rewrite import rewrite

    def rule(e):
        folded = fold(e)
        if folded is not e:
            return folded
        return _identity(e)

    return rewrite(node, {n.BinOp: rule})
