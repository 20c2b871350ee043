"""Scalar arguments that only move a kernel's GM windows — the band a task of a task graph
works on, say. The timing, trace and hazards of a launch do not depend on them, so one
timeline serves every value: a launch with another value is the first one's timeline with
its data effects and footprint moved (``Family``).

Decided on the kernel's programs (``moving``): a scalar parameter qualifies when every
value computed from it reaches nothing but the offsets of loads and stores — no loop bound,
branch, address, extent or flag — and is affine, with constant coefficients, in its
*atoms*: the scalar itself, and floor divisions and remainders of values computed from it
alone (``hq // group``, the KV head a query head reads). A launch then shares the timeline
when, for every group of its tensors that share bytes, the accesses it writes in move by
one amount per unit of each atom (else how they overlap would change with the value);
``shifts`` says that.
"""

from __future__ import annotations

import copy
from fractions import Fraction

import attrs

from pypto.codegen.isa import (Cond, Instr, Loop, ScalarArray, ScalarAssign, ScalarLoad, SetFlag, TensorArg, WaitFlag,
                               assigned_scalars, walk)
from pypto.errors import PyptoError
from pypto.sim.timing.affine import exprs
from pypto.sim.fastforward import drift
from pypto.sim.fastforward.drift import Unshown
from pypto.ir import nodes as n
from pypto.ir.ops import lookup
from pypto.ir.simplify import OPERATORS
from pypto.ir.types import TensorType


class _Reaches(Exception):
    """The scalar reaches something other than an offset, or not affinely."""


def moving(kernel, registers=()) -> dict:
    """Scalar parameter (or one of ``registers``, core registers its programs read) -> the
    (tensor parameter, per-axis coefficients, writes) of every load and store (coefficients
    0 where it does not move them), for every one that only moves offsets and moves some.
    An axis's coefficient is an int (elements per unit of the scalar) where the scalar
    moves it alone, else the ((atom, elements per unit of it), ...) it moves by (``atoms``)."""
    out = {}
    names = [name for name, t in kernel.params if not isinstance(t, TensorType)] + list(registers)
    for name in names:
        uses: list = []
        try:
            for program in kernel.programs:
                _walk(program.body, name, {}, {}, uses)
        except _Reaches:
            continue
        if any(any(c) for _, c, _ in uses):
            out[name] = uses
    return out


def atoms(uses: list) -> list:
    """The atoms the offsets of ``uses`` are affine in: None (the scalar itself) first,
    then each expression of it alone they move by, in order of appearance."""
    out: dict = {None: None}
    for _, coefs, _ in uses:
        for c in coefs:
            if type(c) is tuple:
                out.update((atom, None) for atom, _ in c)
    return list(out)


def _terms(c) -> dict:
    """An axis's coefficient as {atom: elements per unit of it}."""
    return dict(c) if type(c) is tuple else ({None: c} if c else {})


def shifts(uses: list, tensors: dict, groups: dict) -> bool:
    """Whether, in every group of tensors sharing bytes (``groups``: parameter -> group)
    that some access writes, all accesses move by one amount per unit of each atom."""
    per_group: dict = {}
    written = set()
    for param, coefs, writes in uses:
        t = tensors[param]
        step: dict = {}
        for c, s in zip(coefs, t.stride()):
            for atom, k in _terms(c).items():
                step[atom] = step.get(atom, 0) + k * s * t.element_size()
        per_group.setdefault(groups[param], set()).add(frozenset((a, k) for a, k in step.items() if k))
        if writes:
            written.add(groups[param])
    return all(len(per_group[g]) == 1 for g in written)


def _walk(body, p: str, coef: dict, pure: dict, uses: list) -> None:
    """``coef``: scalar -> {atom: coefficient} of those computed from ``p``; ``pure``:
    scalar -> its value as an expression of ``p`` alone (constants too), where it is one."""
    for node in body:
        if isinstance(node, ScalarAssign):
            c = _coef(node.value, p, coef, pure)
            if c:
                coef[node.name] = c
            else:
                coef.pop(node.name, None)
            e = _pure(node.value, p, pure)
            if e is not None:
                pure[node.name] = e
            else:
                pure.pop(node.name, None)
        elif isinstance(node, ScalarArray):  # an array holds values, not offsets: the scalar may not reach it
            for e in node.args:
                if isinstance(e, (n.Var, n.Const, n.BinOp, n.UnaryOp)):
                    _still(e, p, coef, pure)
            coef.pop(node.name, None)
            pure.pop(node.name, None)
        elif isinstance(node, Loop):
            for e in (node.start, node.stop, node.step, node.cond):
                if e is not None:  # (a while loop has no stop, a counted one no condition)
                    _still(e, p, coef, pure)
            # what the body binds is no fixed expression of p on entry (a counter carried from
            # trip to trip), nor after the loop (which may run no trip): an atom may not read it
            bound = assigned_scalars(node.body) | {x.var for x in walk(node.body) if isinstance(x, Loop)} | {node.var}
            for name in bound:
                pure.pop(name, None)
            coef.pop(node.var, None)
            _walk(node.body, p, coef, pure, uses)
            once = dict(coef)
            _walk(node.body, p, coef, pure, [])  # a value carried from trip to trip would move on
            if coef != once:
                raise _Reaches
            for name in bound:
                pure.pop(name, None)
        elif isinstance(node, Cond):
            _still(node.cond, p, coef, pure)
            then, other = dict(coef), dict(coef)
            then_pure, other_pure = dict(pure), dict(pure)
            _walk(node.then_body, p, then, then_pure, uses)
            _walk(node.else_body, p, other, other_pure, uses)
            if then != other:
                raise _Reaches
            coef.clear()
            coef.update(then)
            pure.clear()
            pure.update((k, e) for k, e in then_pure.items() if other_pure.get(k) == e)
        elif isinstance(node, (SetFlag, WaitFlag)):
            _still(node.event, p, coef, pure)
        elif isinstance(node, ScalarLoad):  # a value read from GM: no expression of p
            coef.pop(node.name, None)
            pure.pop(node.name, None)
        elif isinstance(node, Instr):
            if node.result is not None:  # (an element of a tile, read by the scalar unit)
                coef.pop(node.result, None)
                pure.pop(node.result, None)
            moved = None
            for param, a in zip(lookup(node.op).params, node.args):
                if param.name == "offsets" and node.op in _MOVED and isinstance(a, tuple):
                    moved = tuple(_shown(_coef(e, p, coef, pure)) for e in a)
                    continue
                for e in exprs(a):
                    _still(e, p, coef, pure)
            for e in exprs(node.dst):
                _still(e, p, coef, pure)
            if moved is not None:  # every GM access, moved or not: how they overlap is what must not change
                tensor = next(a.name for a in node.args if isinstance(a, TensorArg))
                uses.append((tensor, moved, node.op == "tile.store"))


_MOVED = ("tile.load", "tile.store")  # the ops whose offsets place a GM window
# what makes an atom of a value of the scalar alone: the offsets may be affine in it
_ATOMIC = ("//", "%")


def _shown(form: dict):
    """An axis's coefficient as ``moving`` gives it (``_terms`` reads it back)."""
    if not form:
        return 0
    if set(form) == {None}:
        return form[None]
    return tuple(sorted(form.items(), key=lambda item: repr(item[0])))


def _still(e, p, coef, pure) -> None:
    if _coef(e, p, coef, pure):
        raise _Reaches


def _coef(e, p: str, coef: dict, pure: dict) -> dict:
    """The coefficients of ``p``'s atoms in ``e`` (empty where ``e`` does not depend on it)."""
    if isinstance(e, n.Const):
        return {}
    if isinstance(e, n.Var):
        return {None: 1} if e.name == p else coef.get(e.name, {})
    if isinstance(e, n.UnaryOp):
        c = _coef(e.operand, p, coef, pure)
        if c and e.op != "-":
            raise _Reaches
        return {atom: -k for atom, k in c.items()}
    if isinstance(e, n.BinOp):
        a, b = _coef(e.lhs, p, coef, pure), _coef(e.rhs, p, coef, pure)
        if not a and not b:
            return {}
        if e.op in ("+", "-"):
            sign = 1 if e.op == "+" else -1
            out = dict(a)
            for atom, k in b.items():
                out[atom] = out.get(atom, 0) + sign * k
            return {atom: k for atom, k in out.items() if k}
        if e.op == "*" and not b and isinstance(e.rhs, n.Const) and type(e.rhs.value) is int:
            return {atom: k * e.rhs.value for atom, k in a.items() if k * e.rhs.value}
        if e.op == "*" and not a and isinstance(e.lhs, n.Const) and type(e.lhs.value) is int:
            return {atom: k * e.lhs.value for atom, k in b.items() if k * e.lhs.value}
        if e.op in _ATOMIC:
            atom = _pure(e, p, pure)
            if atom is not None:
                return {atom: 1}
        raise _Reaches
    raise _Reaches


def _pure(e, p: str, pure: dict):
    """``e`` as an expression of ``p`` and constants alone, or None where it reads
    anything else."""
    if isinstance(e, n.Const):
        return e
    if isinstance(e, n.Var):
        return e if e.name == p else pure.get(e.name)
    if isinstance(e, n.UnaryOp):
        x = _pure(e.operand, p, pure)
        return None if x is None else n.UnaryOp(e.op, x)
    if isinstance(e, n.BinOp) and e.op in OPERATORS and e.op != "/":  # (ints only: a float cannot place a window)
        a, b = _pure(e.lhs, p, pure), _pure(e.rhs, p, pure)
        return None if a is None or b is None else n.BinOp(e.op, a, b)
    return None


def _value(e, p: str, v: int):
    """An atom's value where ``p`` is ``v`` (the scalar unit's arithmetic: ``OPERATORS``);
    ArithmeticError where that has none (a zero divisor)."""
    if e is None:
        return v
    if isinstance(e, n.Const):
        return e.value
    if isinstance(e, n.Var):
        return v
    if isinstance(e, n.UnaryOp):
        x = _value(e.operand, p, v)
        return -x if e.op == "-" else not x
    return OPERATORS[e.op](_value(e.lhs, p, v), _value(e.rhs, p, v))


# ----------------------------------------------------------------------------- one timeline, many values


class Family:
    """One timeline and how its effects and footprint move per unit of each moving scalar's
    atoms (``steps``: learnt from launches at other values, the first time another value
    comes)."""

    # how far from the first value a launch to learn from may be: an atom ``p // g`` first
    # moves g on
    _REACH = 64

    def __init__(self, timeline, values: dict, uses: dict | None = None):
        self.timeline, self.values = timeline, values
        self.atoms = {name: atoms(uses[name]) if uses else [None] for name in values}
        self.steps: dict | None = None  # scalar -> [(atom, effect deltas, footprint deltas)], or None: cannot move

    def learn(self, simulate_at) -> bool:
        """Learn each atom's deltas from ``simulate_at(values)`` (the timeline with those
        values of the moving scalars): one launch per atom, at values whose atoms' moves
        are independent (one unit on, for a scalar that is its only atom), then each atom's
        share solved exactly; False where a timeline does not move only in ints, or
        its moves are not whole per unit of an atom."""
        base = self.timeline
        if base.steps is None or any(not isinstance(v, tuple) for _, _, v in base.steps.steps):
            return False  # unsafe, or a fast-forwarded loop's trips (one effect of their own)
        self.steps = {}
        for name, value in self.values.items():
            found = self._probe(name, value, simulate_at)
            if found is None:
                return False
            rows, effects, prints = found
            try:
                inverse = _inverse(rows)
                self.steps[name] = [
                    (atom, [drift.combined(each, weights) for each in zip(*effects)],
                     [drift.combined(each, weights) for each in zip(*prints)])
                    for atom, weights in zip(self.atoms[name], inverse)]
            except Unshown:
                return False
        return True

    def _probe(self, name: str, value: int, simulate_at):
        """(each launch's atom moves, its effect deltas, its footprint deltas) for as many
        launches near ``value`` as ``name`` has atoms, their moves independent; None where
        none such simulate to a timeline that moves only in ints."""
        base = self.timeline
        at = self.atoms[name]
        rows: list = []
        effects: list = []
        prints: list = []
        for step in range(1, self._REACH + 1):
            if len(rows) == len(at):
                break
            try:
                row = [Fraction(_value(a, name, value + step) - _value(a, name, value)) for a in at]
            except ArithmeticError:
                continue
            if _rank(rows + [row]) == len(rows):
                continue
            try:
                other = simulate_at({**self.values, name: value + step})
            except PyptoError:  # (it cannot differ in that; if it does, simulate each value)
                return None
            if other.steps is None or len(other.steps.steps) != len(base.steps.steps) \
                    or len(other.footprint) != len(base.footprint):
                return None
            try:
                moves = []
                for (t0, l0, v0), (t1, l1, v1) in zip(base.steps.steps, other.steps.steps):
                    if l0 != l1 or t0 is not t1 and getattr(t0, "template_key", 0) != getattr(t1, "template_key", 1):
                        return None
                    moves.append(drift.delta(v1, v0))
                prints.append([drift.delta(b, a) for a, b in zip(base.footprint, other.footprint)])
            except Unshown:
                return None
            rows.append(row)
            effects.append(moves)
        return (rows, effects, prints) if len(rows) == len(at) else None

    def at(self, values: dict):
        """The timeline for these values of the moving scalars."""
        if values == self.values:
            return self.timeline
        base = self.timeline
        steps = [varying for _, _, varying in base.steps.steps]
        prints = list(base.footprint)
        for name, shares in self.steps.items():
            for atom, deltas, moves in shares:
                by = _value(atom, name, values[name]) - _value(atom, name, self.values[name])
                if by:
                    steps = [drift.moved(v, d, by) for v, d in zip(steps, deltas)]
                    prints = [drift.moved(f, d, by) for f, d in zip(prints, moves)]
        moved = copy.copy(base.steps)
        moved.steps = [(t, launch, v) for (t, launch, _), v in zip(base.steps.steps, steps)]
        # each window once, as a simulation keeps them (two may meet at this value)
        return attrs.evolve(base, steps=moved, footprint=tuple(dict.fromkeys(prints)))


def _rank(rows: list) -> int:
    """The rank of a matrix of Fractions."""
    m = [list(r) for r in rows]
    rank = 0
    for col in range(len(m[0]) if m else 0):
        pivot = next((r for r in range(rank, len(m)) if m[r][col]), None)
        if pivot is None:
            continue
        m[rank], m[pivot] = m[pivot], m[rank]
        for r in range(len(m)):
            if r != rank and m[r][col]:
                f = m[r][col] / m[rank][col]
                m[r] = [x - f * y for x, y in zip(m[r], m[rank])]
        rank += 1
    return rank


def _inverse(rows: list) -> list:
    """The inverse of a square matrix of Fractions of full rank: the launches' moves are
    ``rows`` times the atoms' shares, so row a of the inverse weighs the launches' moves
    into atom a's share."""
    k = len(rows)
    m = [list(r) + [Fraction(int(i == j)) for j in range(k)] for i, r in enumerate(rows)]
    for col in range(k):
        pivot = next(r for r in range(col, k) if m[r][col])
        m[col], m[pivot] = m[pivot], m[col]
        m[col] = [x / m[col][col] for x in m[col]]
        for r in range(k):
            if r != col and m[r][col]:
                f = m[r][col]
                m[r] = [x - f * y for x, y in zip(m[r], m[col])]
    return [row[k:] for row in m]


def inside(footprint, tensors: dict) -> bool:
    """Whether every window of a footprint lies inside its tensor (one launch's)."""
    for _, param, _, offs, extents in footprint:
        shape = tensors[param].shape
        if any(o < 0 or o + e > d for o, e, d in zip(offs, extents, shape)):
            return False
    return True
