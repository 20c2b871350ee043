"""Whether two accesses can touch the same bytes: buffers by address range or rotating
slot, GM windows by ring slot and by offsets that differ by a proven constant; what is not
proven apart may overlap (``beyond``: also past a loop's window of iterations). ``blur`` makes
what depends on names bound inside a compound unknown."""

from __future__ import annotations

import attrs

import math

from pypto.codegen.isa import BufLoc, GmLoc, Loop
from pypto.codegen.sync.edges import UNKNOWN
from pypto.ir import nodes as n
from pypto.codegen.sync.passages import trip_count
from pypto.ir.affine import linear, static_difference


def map_exprs(loc, f):
    region = loc.region
    if region is not None and region.slot is not UNKNOWN:
        region = attrs.evolve(region, slot=f(region.slot))
    if isinstance(loc, BufLoc):
        return attrs.evolve(loc, addr=f(loc.addr), region=region)
    return attrs.evolve(loc, offsets=tuple(f(o) for o in loc.offsets), region=region)


def blur(loc, names: set):
    """Addresses and offsets that depend on ``names`` become UNKNOWN."""
    if not names:
        return loc
    return map_exprs(loc, lambda e: UNKNOWN if e is UNKNOWN or n.expr_vars(e) & names else e)


def same_value(a, b):
    """True / False when a == b is decidable for every value of the free names, else None."""
    if a is UNKNOWN or b is UNKNOWN:
        return None
    if a == b:
        return True
    if isinstance(a, n.Const) and isinstance(b, n.Const):
        return a.value == b.value
    if isinstance(a, n.BinOp) and isinstance(b, n.BinOp) and a.op == b.op == "%" and a.rhs == b.rhs \
            and isinstance(a.rhs, n.Const):
        d = static_difference(a.lhs, b.lhs)
        if d is not None:
            return d % a.rhs.value == 0
    d = static_difference(a, b)
    if d is not None:
        return d == 0
    return None


def may_overlap(a, b) -> bool:
    if isinstance(a, BufLoc) and isinstance(b, BufLoc):
        if a.space is not b.space or a.core is not b.core:
            return False
        if a.region is not None and b.region is not None and a.region.name == b.region.name:
            same = same_value(a.region.slot, b.region.slot)
            return same is not False
        ra, rb = buffer_range(a), buffer_range(b)
        if ra is None or rb is None:
            return True
        return ra[0] < rb[1] and rb[0] < ra[1]
    if isinstance(a, GmLoc) and isinstance(b, GmLoc):
        if a.tensor != b.tensor:
            return False
        if a.region is not None and b.region is not None and same_value(a.region.slot, b.region.slot) is False:
            return False  # two slots of a ring
        for oa, ea, ob, eb in zip(a.offsets, a.extents, b.offsets, b.extents):
            if oa is UNKNOWN or ob is UNKNOWN:
                continue
            d = static_difference(ob, oa)
            if d is not None and (d >= ea or -d >= eb):
                return False
        return True
    return False


def buffer_range(loc: BufLoc):
    if isinstance(loc.addr, n.Const):
        return loc.addr.value, loc.addr.value + loc.size
    if loc.region is not None:
        r = loc.region
        return r.base, r.base + r.slots * r.slot_size
    return None


def beyond(la, lb, loop: Loop, reach: int, variant: set) -> bool:
    """Whether GM accesses ``la`` and then ``lb``, ``reach`` or more iterations of ``loop``
    later, can touch the same bytes (``out[(i + 2) * 8]`` stored, ``out[i * 8]`` loaded):
    dependences farther than the window are ordered at its widest distance, which in-order
    pipes carry on to every later iteration. ``variant``: the scalars the body assigns."""
    if not (isinstance(la, GmLoc) and isinstance(lb, GmLoc) and la.tensor == lb.tensor
            and isinstance(loop.step, n.Const)):
        return False
    if la.region is not None and lb.region is not None and all(
            r.slot is not UNKNOWN and loop.var in n.expr_vars(r.slot) for r in (la.region, lb.region)):
        return False  # ring slots: the window spans a whole rotation, or the loop ends before one
    trip = trip_count(loop)
    lo, hi = reach, trip.value - 1 if isinstance(trip, n.Const) else None
    for oa, ea, ob, eb in zip(la.offsets, la.extents, lb.offsets, lb.extents):
        a, b = linear(oa) if oa is not UNKNOWN else None, linear(ob) if ob is not UNKNOWN else None
        if a is None or b is None or variant & (set(a[1]) | set(b[1])):
            return False  # not provably apart at any distance: the window saw it
        ca, cb = a[1].pop(loop.var, 0), b[1].pop(loop.var, 0)
        if ca != cb or a[1] != b[1]:
            return False
        # lb's offset minus la's, k iterations later: d + slope * k, overlapping in (-eb, ea)
        d, slope = b[0] - a[0], ca * loop.step.value
        if slope == 0:
            if not -eb < d < ea:
                return False
            continue
        first, last = sorted(((-eb - d) / slope, (ea - d) / slope))
        lo = max(lo, math.floor(first) + 1)
        hi = math.ceil(last) - 1 if hi is None else min(hi, math.ceil(last) - 1)
        if lo > hi:
            return False
    return True
