"""Compile-time arithmetic: what Python computes on the constants of kernel source
(``1.0 / HIDDEN``, ``2 ** 4``, ``math.sqrt(2.0)``), with the one difference that a
computation too large to be a kernel constant is refused instead of run.

The front end folds a constant expression to the exact value Python gives, so the
kernel computes with the bits the author would get from the same expression at the
Python prompt. Nothing here reads the user's program: these are pure functions of values.
"""

from __future__ import annotations

import ast
import operator

from pypto.ir.simplify import OPERATORS

BINOPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
          ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow,
          ast.LShift: operator.lshift, ast.RShift: operator.rshift, ast.BitAnd: operator.and_,
          ast.BitOr: operator.or_, ast.BitXor: operator.xor}
COMPARISONS = {ast.Eq: OPERATORS["=="], ast.NotEq: OPERATORS["!="], ast.Lt: OPERATORS["<"],
               ast.LtE: OPERATORS["<="], ast.Gt: OPERATORS[">"], ast.GtE: OPERATORS[">="],
               # compile-time identity: a closure's optional value tested against None
               ast.Is: operator.is_, ast.IsNot: operator.is_not}

# No kernel constant needs more: an int64 has 64 bits, a shape a few thousand elements.
# The bound keeps '9 ** 9 ** 9' or '1 << 10 ** 12' from stalling the compiler.
MAX_INT_BITS = 1 << 14
MAX_LENGTH = 1 << 16  # of a string or list a constant expression repeats


class TooLarge(Exception):
    """A computation whose result would be too large to be a kernel constant."""


def compute(f, *args):
    """``f(*args)`` as Python computes it; ``TooLarge`` instead of a result past the bounds
    (any exception Python raises, a ZeroDivisionError say, passes through)."""
    _check_size(f, args)
    result = f(*args)
    if _is_int(result) and result.bit_length() > MAX_INT_BITS:
        raise TooLarge(f"the result has {result.bit_length()} bits")
    return result


def _check_size(f, args) -> None:
    if len(args) != 2:
        return
    a, b = args
    if f is operator.pow and _is_int(a) and _is_int(b) and b > 0 and abs(a) > 1 \
            and b * (abs(a).bit_length() - 1) > MAX_INT_BITS:
        raise TooLarge(f"{a} ** {b} has more than {MAX_INT_BITS} bits")
    if f is operator.lshift and _is_int(a) and _is_int(b) and a != 0 and b > MAX_INT_BITS:
        raise TooLarge(f"{a} << {b} has more than {MAX_INT_BITS} bits")
    if f is operator.mul:
        for seq, count in ((a, b), (b, a)):
            if isinstance(seq, (str, list)) and _is_int(count) and len(seq) * count > MAX_LENGTH:
                raise TooLarge(f"repeating {len(seq)} items {count} times makes more than {MAX_LENGTH}")


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def boolean(values, conjunction: bool):
    """``a and b`` / ``a or b`` as Python computes it: the deciding operand itself. The
    operands are thunks, so the ones Python would not look at are not evaluated."""
    value = None
    for thunk in values:
        value = thunk()
        if (not value) if conjunction else value:
            return value
    return value
