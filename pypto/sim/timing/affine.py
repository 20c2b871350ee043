"""Whether every trip of a loop is the same to the machine: the same instructions in the
same order, with the same costs, buffers, extents and flags, only their GM offsets moving
by a constant step per trip — or every P trips: slots taken in turn (``i % 2``) repeat
every few trips. Then the timing of a trip (of P trips) depends on nothing but the state
it starts in (``steady`` fast-forwards such loops once that state repeats).

Decided on the program before the loop runs, from the scalar environment at its entry:
each expression the body evaluates is, as a function of the trip number k, affine
(``c0 + c1 * k``) or periodic (the same every P trips but for a drift D: value(k + P) =
value(k) + D, as ``(i + 1) % 2`` or ``i // 2`` are); offsets may drift, everything else
must not. Anything this cannot show — a nested loop, a branch on k, a scalar carried from
trip to trip, a product of two moving values, an atomic store (its adds are ordered in
time) — and the loop is simulated trip by trip.
"""

from __future__ import annotations

import math

from pypto.codegen.isa import (Buf, Cond, Instr, Loop, ScalarArray, ScalarAssign, ScalarLoad, SetFlag, WaitFlag,
                               assigned_scalars)
from pypto.ir import nodes as n
from pypto.ir.ops import lookup
from pypto.ir.simplify import OPERATORS
from pypto.ir.types import AtomicType


# Longer periods make the warm-up (two periods alike) longer than most loops
_MAX_PERIOD = 8


class _Moving(Exception):
    """Something of a trip depends on k in a way the fast-forward cannot follow."""


class _Periodic:
    """value(k + period) == value(k) + drift, nothing more known."""

    __slots__ = ("period", "drift")

    def __init__(self, period: int, drift):
        if period > _MAX_PERIOD:
            raise _Moving
        self.period, self.drift = period, drift


def _shape(f) -> tuple:
    """(period, drift) of a form: an affine one has period 1."""
    return (f.period, f.drift) if isinstance(f, _Periodic) else (1, f[1])


def uniform_trips(loop: Loop, env: dict, start: int, step: int) -> int:
    """The period P (1 when every trip is alike) after which ``loop``'s trips (its
    variable ``start + k * step``) issue the same instructions, flags and costs, only GM
    offsets moving, by a constant per P trips; 0 when they cannot be shown so."""
    carried = assigned_scalars(loop.body)
    forms = {loop.var: (start, step)}
    periods = [1]
    try:
        _body(loop.body, forms, carried, env, periods)
    except _Moving:
        return 0
    period = 1
    for p in periods:
        period = math.lcm(period, p)
    return period if period <= _MAX_PERIOD else 0


def _body(body, forms: dict, assigned: set, env: dict, periods: list) -> None:
    for node in body:
        if isinstance(node, ScalarAssign):
            forms[node.name] = _form(node.value, forms, assigned, env)
        elif isinstance(node, (Loop, ScalarLoad, ScalarArray)):  # (a value read from GM may differ trip by trip)
            raise _Moving
        elif isinstance(node, Cond):
            _body(node.then_body if _fixed(node.cond, forms, assigned, env) else node.else_body, forms, assigned,
                  env, periods)
        elif isinstance(node, (SetFlag, WaitFlag)):
            periods.append(_repeating(node.event, forms, assigned, env))
        elif isinstance(node, Instr):
            if AtomicType.Add in node.args or node.result is not None:  # (or a value read from a tile)
                raise _Moving
            for p, a in zip(lookup(node.op).params, node.args):
                for e in exprs(a):
                    if p.name != "offsets":
                        periods.append(_repeating(e, forms, assigned, env))
                        continue
                    f = _form(e, forms, assigned, env)
                    period, drift = _shape(f)
                    if type(drift) is not int or not isinstance(f, _Periodic) and type(f[0]) is not int:
                        raise _Moving
                    periods.append(period)
            for e in exprs(node.dst):
                periods.append(_repeating(e, forms, assigned, env))


def _repeating(e, forms, assigned, env) -> int:
    """The period of an expression that must come back to its value."""
    period, drift = _shape(_form(e, forms, assigned, env))
    if drift != 0:
        raise _Moving
    return period


def exprs(a):
    """The expressions an instruction's argument (or destination) evaluates."""
    if isinstance(a, Buf):
        yield a.addr
        yield from a.valid or ()
        if a.region is not None:
            yield a.region.slot
    elif isinstance(a, tuple):
        for x in a:
            yield from exprs(x)
    elif isinstance(a, (n.Var, n.Const, n.BinOp, n.UnaryOp)):
        yield a


def _fixed(e, forms, assigned, env):
    """The value of an expression the same on every trip."""
    f = _form(e, forms, assigned, env)
    if isinstance(f, _Periodic) or f[1] != 0:
        raise _Moving
    return f[0]


def _form(e, forms: dict, assigned: set, env: dict):
    """(c0, c1): ``e`` is c0 + c1 * k on trip k; or _Periodic."""
    if isinstance(e, n.Const):
        return e.value, 0
    if isinstance(e, n.Var):
        got = forms.get(e.name)
        if got is not None:
            return got
        if e.name in assigned or e.name not in env:  # carried from the trip before, or unknown
            raise _Moving
        return env[e.name], 0
    if isinstance(e, n.UnaryOp):
        a = _form(e.operand, forms, assigned, env)
        if isinstance(a, _Periodic):
            if e.op != "-":
                raise _Moving
            return _Periodic(a.period, -a.drift)
        if e.op == "-":
            return -a[0], -a[1]
        if a[1] != 0:
            raise _Moving
        return (not a[0]), 0
    if isinstance(e, n.BinOp):
        a = _form(e.lhs, forms, assigned, env)
        b = _form(e.rhs, forms, assigned, env)
        if isinstance(a, _Periodic) or isinstance(b, _Periodic):
            return _periodic(e.op, a, b)
        a0, a1 = a
        b0, b1 = b
        if e.op == "+":
            return a0 + b0, a1 + b1
        if e.op == "-":
            return a0 - b0, a1 - b1
        if e.op == "*" and (a1 == 0 or b1 == 0):
            return a0 * b0, a0 * b1 + a1 * b0
        if e.op in ("%", "//") and b1 == 0 and a1 != 0:
            return _periodic(e.op, a, b)
        if a1 != 0 or b1 != 0:
            raise _Moving
        if e.op == "and":
            return (a0 and b0), 0
        if e.op == "or":
            return (a0 or b0), 0
        try:
            return OPERATORS[e.op](a0, b0), 0
        except (ArithmeticError, KeyError, TypeError):  # the scalar unit will say what is wrong
            raise _Moving from None
    raise _Moving


def _periodic(op: str, a, b) -> _Periodic:
    """``a op b`` where one moves other than affinely, or a modulus or quotient of a moving value."""
    pa, da = _shape(a)
    pb, db = _shape(b)
    if op in ("+", "-"):
        period = math.lcm(pa, pb)
        sign = 1 if op == "+" else -1
        return _Periodic(period, da * (period // pa) + sign * db * (period // pb))
    if op == "*":
        fixed = b if not isinstance(b, _Periodic) and b[1] == 0 else a if not isinstance(a, _Periodic) and a[1] == 0 \
            else None
        if fixed is None:
            raise _Moving
        other = (pa, da) if fixed is b else (pb, db)
        return _Periodic(other[0], other[1] * fixed[0])
    if op in ("%", "//") and not isinstance(b, _Periodic) and b[1] == 0 and type(b[0]) is int and b[0] > 0 \
            and type(da) is int:
        modulus = b[0]
        turns = modulus // math.gcd(da, modulus) if da else 1  # periods until the drift is a multiple
        return _Periodic(pa * turns, 0 if op == "%" else da * turns // modulus)
    raise _Moving
