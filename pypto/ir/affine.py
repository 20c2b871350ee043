"""Affine views of index expressions: ``i * 64 + 8`` as ``8 + 64·i``, and the interval an
expression spans when its variables range over known loop bounds.

Used for static out-of-range checks and for slice extents like ``(i + 1) * 64 - i * 64``.
"""

from __future__ import annotations

from pypto.ir.nodes import BinOp, Const, UnaryOp, Var


def linear(e) -> tuple[int, dict[str, int]] | None:
    """(constant, {var: coefficient}) when ``e`` is integer-affine, else None."""
    if isinstance(e, Const):
        if isinstance(e.value, bool) or not isinstance(e.value, int):
            return None
        return e.value, {}
    if isinstance(e, Var):
        return 0, {e.name: 1}
    if isinstance(e, UnaryOp) and e.op == "-":
        inner = linear(e.operand)
        return None if inner is None else _scale(inner, -1)
    if isinstance(e, BinOp) and e.op in ("+", "-"):
        a, b = linear(e.lhs), linear(e.rhs)
        if a is None or b is None:
            return None
        if e.op == "-":
            b = _scale(b, -1)
        coefs = dict(a[1])
        for k, v in b[1].items():
            coefs[k] = coefs.get(k, 0) + v
        return a[0] + b[0], {k: v for k, v in coefs.items() if v}
    if isinstance(e, BinOp) and e.op == "*":
        a, b = linear(e.lhs), linear(e.rhs)
        if a is None or b is None:
            return None
        if not a[1]:
            return _scale(b, a[0])
        if not b[1]:
            return _scale(a, b[0])
    return None


def _scale(lin, k: int):
    c, coefs = lin
    return c * k, {v: x * k for v, x in coefs.items() if x * k}


def static_difference(hi, lo) -> int | None:
    """``hi - lo`` when it does not depend on any variable."""
    a, b = linear(hi), linear(lo)
    if a is None or b is None:
        return None
    if a[1] != b[1]:
        return None
    return a[0] - b[0]


def interval(e, ranges: dict[str, tuple[int, int]]) -> tuple[int, int] | None:
    """Inclusive [lo, hi] of ``e`` when every variable has a known inclusive range."""
    if isinstance(e, Const):
        if isinstance(e.value, bool) or not isinstance(e.value, int):
            return None
        return e.value, e.value
    if isinstance(e, Var):
        return ranges.get(e.name)
    if isinstance(e, UnaryOp) and e.op == "-":
        r = interval(e.operand, ranges)
        return None if r is None else (-r[1], -r[0])
    if not isinstance(e, BinOp):
        return None
    a, b = interval(e.lhs, ranges), interval(e.rhs, ranges)
    if a is None or b is None:
        return None
    if e.op == "+":
        return a[0] + b[0], a[1] + b[1]
    if e.op == "-":
        return a[0] - b[1], a[1] - b[0]
    if e.op == "*":
        products = (a[0] * b[0], a[0] * b[1], a[1] * b[0], a[1] * b[1])
        return min(products), max(products)
    if e.op == "//" and b[0] > 0:
        return a[0] // b[1] if a[0] >= 0 else a[0] // b[0], a[1] // b[0] if a[1] >= 0 else a[1] // b[1]
    if e.op == "%" and b[0] > 0 and a[0] >= 0:
        return 0, min(a[1], b[1] - 1)
    if e.op in ("min", "max"):
        f = min if e.op == "min" else max
        return f(a[0], b[0]), f(a[1], b[1])
    return None
