"""Whether every trip of a loop is the same to the machine: the same instructions in the
same order, with the same costs, buffers, extents and flags, only their GM offsets moving
by a constant step per trip. Then the timing of a trip depends on nothing but the state it
starts in (``steady`` fast-forwards such loops once that state repeats).

Decided on the program before the loop runs, from the scalar environment at its entry:
each expression the body evaluates is, as a function of the trip number k, either fixed or
affine (``c0 + c1 * k``); offsets may be affine, everything else must be fixed. Anything
this cannot show — a nested loop, a branch on k, a scalar carried from trip to trip, a
product of two moving values, an atomic store (its adds are ordered in time) — and the
loop is simulated trip by trip.
"""

from __future__ import annotations

from pypto.codegen.isa import Buf, Cond, Instr, Loop, ScalarAssign, SetFlag, WaitFlag, walk
from pypto.ir import nodes as n
from pypto.ir.ops import lookup
from pypto.ir.simplify import OPERATORS
from pypto.ir.types import AtomicType


class _Moving(Exception):
    """Something of a trip depends on k in a way the fast-forward cannot follow."""


def uniform_trips(loop: Loop, env: dict, start: int, step: int) -> bool:
    """Whether every trip of ``loop`` (its variable ``start + k * step``) issues the same
    instructions, flags and costs, only GM offsets moving, and affinely."""
    carried = {x.name for x in walk(loop.body) if isinstance(x, ScalarAssign)}
    forms = {loop.var: (start, step)}
    try:
        _body(loop.body, forms, carried, env)
    except _Moving:
        return False
    return True


def _body(body, forms: dict, assigned: set, env: dict) -> None:
    for node in body:
        if isinstance(node, ScalarAssign):
            forms[node.name] = _form(node.value, forms, assigned, env)
        elif isinstance(node, Loop):
            raise _Moving
        elif isinstance(node, Cond):
            _body(node.then_body if _fixed(node.cond, forms, assigned, env) else node.else_body, forms, assigned, env)
        elif isinstance(node, (SetFlag, WaitFlag)):
            _fixed(node.event, forms, assigned, env)
        elif isinstance(node, Instr):
            if AtomicType.Add in node.args:
                raise _Moving
            for p, a in zip(lookup(node.op).params, node.args):
                for e in _exprs(a):
                    if p.name == "offsets":
                        c0, c1 = _form(e, forms, assigned, env)
                        if type(c0) is not int or type(c1) is not int:
                            raise _Moving
                    else:
                        _fixed(e, forms, assigned, env)
            for e in _exprs(node.dst):
                _fixed(e, forms, assigned, env)


def _exprs(a):
    """The expressions an argument evaluates."""
    if isinstance(a, Buf):
        yield a.addr
        yield from a.valid or ()
        if a.region is not None:
            yield a.region.slot
    elif isinstance(a, tuple):
        for x in a:
            yield from _exprs(x)
    elif isinstance(a, (n.Var, n.Const, n.BinOp, n.UnaryOp)):
        yield a


def _fixed(e, forms, assigned, env):
    c0, c1 = _form(e, forms, assigned, env)
    if c1 != 0:
        raise _Moving
    return c0


def _form(e, forms: dict, assigned: set, env: dict) -> tuple:
    """(c0, c1): ``e`` is c0 + c1 * k on trip k."""
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
        a0, a1 = _form(e.operand, forms, assigned, env)
        if e.op == "-":
            return -a0, -a1
        if a1 != 0:
            raise _Moving
        return (not a0), 0
    if isinstance(e, n.BinOp):
        a0, a1 = _form(e.lhs, forms, assigned, env)
        b0, b1 = _form(e.rhs, forms, assigned, env)
        if e.op == "+":
            return a0 + b0, a1 + b1
        if e.op == "-":
            return a0 - b0, a1 - b1
        if e.op == "*" and (a1 == 0 or b1 == 0):
            return a0 * b0, a0 * b1 + a1 * b0
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
