"""Constant folding of index arithmetic, shared by the front end (``TR * 2`` reads as 128)
and the passes (a substituted loop index leaves ``16 + 0``)."""

from __future__ import annotations

import operator

import attrs

from pypto.ir import nodes as n

def divide(a, b):
    """``a / b`` as the scalar unit computes it (the reference's FloatDiv, C's ``/``): a float
    quotient of floats; of integers, the integer quotient rounded toward zero."""
    if isinstance(a, int) and isinstance(b, int):
        q = abs(a) // abs(b)
        return q if (a < 0) == (b < 0) else -q
    return a / b


# IR operator -> what it computes on Python numbers
OPERATORS = {"+": operator.add, "-": operator.sub, "*": operator.mul, "//": operator.floordiv, "%": operator.mod,
             "/": divide,
             "<<": operator.lshift, ">>": operator.rshift,
             "==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le, ">": operator.gt,
             ">=": operator.ge, "min": min, "max": max}

SHIFTS = ("<<", ">>")  # a negative count is an error where it runs
DIVISIONS = ("//", "%", "/")  # a zero divisor is an error where it runs


def fold(e):
    """A BinOp of two number constants, computed; anything else unchanged."""
    if isinstance(e, n.BinOp) and isinstance(e.lhs, n.Const) and isinstance(e.rhs, n.Const):
        f = OPERATORS.get(e.op)
        lhs, rhs = e.lhs.value, e.rhs.value
        if f is not None and not isinstance(lhs, bool) and not isinstance(rhs, bool):
            if e.op in DIVISIONS and rhs == 0 or e.op in SHIFTS and rhs < 0:
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


def inline_static_ifs(body: tuple) -> tuple[tuple, dict]:
    """``body`` with each if whose condition is a constant replaced by the branch it takes,
    and the if's results renamed to what that branch yields; also the renaming, for the
    values the block itself passes on (its yield is part of it, but a caller's is not)."""
    from pypto.ir.rewrite import substitute

    out: list = []
    mapping: dict[str, object] = {}
    for stmt in body:
        stmt = substitute(stmt, mapping)
        if isinstance(stmt, n.If) and isinstance(stmt.cond, n.Const):
            taken, _ = inline_static_ifs(stmt.then_body if stmt.cond.value else stmt.else_body)
            if taken and isinstance(taken[-1], n.Yield):
                *taken, last = taken
                mapping.update({b.name: v for b, v in zip(stmt.results, last.values)})
            out.extend(taken)
            continue
        if isinstance(stmt, n.LOOPS):
            stmt = attrs.evolve(stmt, body=inline_static_ifs(stmt.body)[0])
        elif isinstance(stmt, n.If):
            stmt = attrs.evolve(stmt, then_body=inline_static_ifs(stmt.then_body)[0],
                                else_body=inline_static_ifs(stmt.else_body)[0])
        elif isinstance(stmt, n.BLOCKS):
            stmt = attrs.evolve(stmt, body=inline_static_ifs(stmt.body)[0])
        out.append(stmt)
    return tuple(out), mapping
