"""Scalar arguments that only move a kernel's GM windows — the band a task of a task graph
works on, say. The timing, trace and hazards of a launch do not depend on them, so one
timeline serves every value: a launch with another value is the first one's timeline with
its data effects and footprint moved (``Family``).

Decided on the kernel's programs (``moving``): a scalar parameter qualifies when every
value computed from it is affine in it with constant coefficients and reaches nothing but
the offsets of loads and stores — no loop bound, branch, address, extent or flag. A launch
then shares the timeline when, for every group of its tensors that share bytes, the
accesses it writes in move by one amount per unit of the scalar (else how they overlap
would change with the value); ``shifts`` says that.
"""

from __future__ import annotations

import copy

import attrs

from pypto.codegen.isa import Cond, Instr, Loop, ScalarArray, ScalarAssign, SetFlag, TensorArg, WaitFlag
from pypto.errors import PyptoError
from pypto.sim.timing.affine import exprs
from pypto.sim.fastforward import drift
from pypto.sim.fastforward.drift import Unshown
from pypto.ir import nodes as n
from pypto.ir.ops import lookup
from pypto.ir.types import TensorType


class _Reaches(Exception):
    """The scalar reaches something other than an offset, or not affinely."""


def moving(kernel, registers=()) -> dict:
    """Scalar parameter (or one of ``registers``, core registers its programs read) -> the
    (tensor parameter, per-axis coefficients, writes) of every load and store (coefficients
    0 where it does not move them), for every one that only moves offsets and moves some."""
    out = {}
    names = [name for name, t in kernel.params if not isinstance(t, TensorType)] + list(registers)
    for name in names:
        uses: list = []
        try:
            for program in kernel.programs:
                _walk(program.body, name, {}, uses)
        except _Reaches:
            continue
        if any(any(c) for _, c, _ in uses):
            out[name] = uses
    return out


def shifts(uses: list, tensors: dict, groups: dict) -> bool:
    """Whether, in every group of tensors sharing bytes (``groups``: parameter -> group)
    that some access writes, all accesses move by one amount per unit of the scalar."""
    per_group: dict = {}
    written = set()
    for param, coefs, writes in uses:
        t = tensors[param]
        step = sum(c * s for c, s in zip(coefs, t.stride())) * t.element_size()
        per_group.setdefault(groups[param], set()).add(step)
        if writes:
            written.add(groups[param])
    return all(len(per_group[g]) == 1 for g in written)


def _walk(body, p: str, coef: dict, uses: list) -> None:
    for node in body:
        if isinstance(node, ScalarAssign):
            c = _coef(node.value, p, coef)
            if c:
                coef[node.name] = c
            else:
                coef.pop(node.name, None)
        elif isinstance(node, ScalarArray):  # an array holds values, not offsets: the scalar may not reach it
            for e in node.args:
                if isinstance(e, (n.Var, n.Const, n.BinOp, n.UnaryOp)):
                    _still(e, p, coef)
            coef.pop(node.name, None)
        elif isinstance(node, Loop):
            for e in (node.start, node.stop, node.step, node.cond):
                if e is not None:  # (a while loop has no stop, a counted one no condition)
                    _still(e, p, coef)
            _walk(node.body, p, coef, uses)
            once = dict(coef)
            _walk(node.body, p, coef, [])  # a value carried from trip to trip would move on
            if coef != once:
                raise _Reaches
        elif isinstance(node, Cond):
            _still(node.cond, p, coef)
            then, other = dict(coef), dict(coef)
            _walk(node.then_body, p, then, uses)
            _walk(node.else_body, p, other, uses)
            if then != other:
                raise _Reaches
            coef.clear()
            coef.update(then)
        elif isinstance(node, (SetFlag, WaitFlag)):
            _still(node.event, p, coef)
        elif isinstance(node, Instr):
            moved = None
            for param, a in zip(lookup(node.op).params, node.args):
                if param.name == "offsets" and node.op in _MOVED and isinstance(a, tuple):
                    moved = tuple(_coef(e, p, coef) for e in a)
                    continue
                for e in exprs(a):
                    _still(e, p, coef)
            for e in exprs(node.dst):
                _still(e, p, coef)
            if moved is not None:  # every GM access, moved or not: how they overlap is what must not change
                tensor = next(a.name for a in node.args if isinstance(a, TensorArg))
                uses.append((tensor, moved, node.op == "tile.store"))


_MOVED = ("tile.load", "tile.store")  # the ops whose offsets place a GM window


def _still(e, p, coef) -> None:
    if _coef(e, p, coef):
        raise _Reaches


def _coef(e, p: str, coef: dict) -> int:
    """The coefficient of ``p`` in ``e`` (0 where ``e`` does not depend on it)."""
    if isinstance(e, n.Const):
        return 0
    if isinstance(e, n.Var):
        return 1 if e.name == p else coef.get(e.name, 0)
    if isinstance(e, n.UnaryOp):
        c = _coef(e.operand, p, coef)
        if c and e.op != "-":
            raise _Reaches
        return -c
    if isinstance(e, n.BinOp):
        a, b = _coef(e.lhs, p, coef), _coef(e.rhs, p, coef)
        if not a and not b:
            return 0
        if e.op == "+":
            return a + b
        if e.op == "-":
            return a - b
        if e.op == "*" and not b and isinstance(e.rhs, n.Const) and type(e.rhs.value) is int:
            return a * e.rhs.value
        if e.op == "*" and not a and isinstance(e.lhs, n.Const) and type(e.lhs.value) is int:
            return b * e.lhs.value
        raise _Reaches
    raise _Reaches


# ----------------------------------------------------------------------------- one timeline, many values


class Family:
    """One timeline and how its effects and footprint move per unit of each moving scalar
    (``steps``: learnt from a launch one unit on, the first time another value comes)."""

    def __init__(self, timeline, values: dict):
        self.timeline, self.values = timeline, values
        self.steps: dict | None = None  # scalar -> (effect deltas, footprint deltas), or None: cannot move

    def learn(self, simulate_at) -> bool:
        """Learn each scalar's deltas from ``simulate_at(values)`` (the timeline with those
        values of the moving scalars), one unit on from the first; False where a timeline
        does not move only in ints."""
        base = self.timeline
        if base.steps is None or any(not isinstance(v, tuple) for _, _, v in base.steps.steps):
            return False  # unsafe, or a fast-forwarded loop's trips (one effect of their own)
        self.steps = {}
        for name, value in self.values.items():
            try:
                other = simulate_at({**self.values, name: value + 1})
            except PyptoError:  # (it cannot differ in that; if it does, simulate each value)
                return False
            if other.steps is None or len(other.steps.steps) != len(base.steps.steps) \
                    or len(other.footprint) != len(base.footprint):
                return False
            try:
                effects = []
                for (t0, l0, v0), (t1, l1, v1) in zip(base.steps.steps, other.steps.steps):
                    if l0 != l1 or t0 is not t1 and getattr(t0, "template_key", 0) != getattr(t1, "template_key", 1):
                        return False
                    effects.append(drift.delta(v1, v0))
                prints = [drift.delta(b, a) for a, b in zip(base.footprint, other.footprint)]
            except Unshown:
                return False
            self.steps[name] = (effects, prints)
        return True

    def at(self, values: dict):
        """The timeline for these values of the moving scalars."""
        if values == self.values:
            return self.timeline
        base = self.timeline
        steps = [varying for _, _, varying in base.steps.steps]
        prints = list(base.footprint)
        for name, (deltas, moves) in self.steps.items():
            by = values[name] - self.values[name]
            if by:
                steps = [drift.moved(v, d, by) for v, d in zip(steps, deltas)]
                prints = [drift.moved(f, d, by) for f, d in zip(prints, moves)]
        moved = copy.copy(base.steps)
        moved.steps = [(t, launch, v) for (t, launch, _), v in zip(base.steps.steps, steps)]
        # each window once, as a simulation keeps them (two may meet at this value)
        return attrs.evolve(base, steps=moved, footprint=tuple(dict.fromkeys(prints)))


def inside(footprint, tensors: dict) -> bool:
    """Whether every window of a footprint lies inside its tensor (one launch's)."""
    for _, param, _, offs, extents in footprint:
        shape = tensors[param].shape
        if any(o < 0 or o + e > d for o, e, d in zip(offs, extents, shape)):
            return False
    return True
