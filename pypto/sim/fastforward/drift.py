"""How values move by a step: what one trip (or one unit of a scalar) adds to a value made
of ints, tuples and fixed others (``delta``), and the value so many steps on (``moved``: a
closed form, so trip j of a skipped loop is made when it runs, nothing kept per trip) — the
effects and windows of trips a fast-forward skips (``steady``) and of values a shared
timeline serves (``offsets``)."""

from __future__ import annotations


class Unshown(Exception):
    """What cannot be shown to move by a step: simulate it as it is."""


def delta(now, before):
    """What moves ``before`` to ``now`` each trip: per int its difference, None where
    nothing moves; Unshown for anything else that differs."""
    if now is before:
        return None
    if type(now) is int and type(before) is int:
        return now - before or None
    if type(now) is tuple and type(before) is tuple and len(now) == len(before):
        parts = tuple(delta(a, b) for a, b in zip(now, before))
        return None if all(p is None for p in parts) else parts
    if type(now) is type(before) and type(now) is not float and _equal(now, before):
        return None
    if type(now) is float and type(before) is float and now.hex() == before.hex():
        return None
    raise Unshown


def _equal(a, b) -> bool:
    try:
        return bool(a == b)
    except Exception:  # an object with no equality (a tensor): not shown the same
        return False


def moved(value, delta, steps: int):
    """``value`` moved on by ``steps`` steps of ``delta``."""
    if delta is None:
        return value
    if type(delta) is int:
        return value + steps * delta
    return tuple(moved(v, d, steps) for v, d in zip(value, delta))


def combined(deltas: tuple, weights) -> object:
    """``sum(w * d)`` of deltas alike in shape (None moves nothing), each int of it whole;
    Unshown where one is not (the moves are not whole steps of what they were weighed by)."""
    if all(d is None for d in deltas):
        return None
    if any(type(d) is tuple for d in deltas):
        size = max(len(d) for d in deltas if type(d) is tuple)
        if any(type(d) is not tuple and d is not None or type(d) is tuple and len(d) != size for d in deltas):
            raise Unshown
        parts = tuple(combined(tuple(None if d is None else d[k] for d in deltas), weights) for k in range(size))
        return None if all(p is None for p in parts) else parts
    total = sum(w * d for w, d in zip(weights, deltas) if d is not None)
    if total.denominator != 1:
        raise Unshown
    return int(total) or None
