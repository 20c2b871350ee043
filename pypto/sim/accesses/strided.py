"""Sets of GM bytes as strided runs: whether two sets meet, in time that grows with how many
runs describe them, not with how many rows they cover.

A window of a row-major tensor is one byte range per row, all of one length, a row stride
apart (``x[:, 0:64]`` of a [5120, 5120] tensor: 5120 ranges, as ``views.runs`` lists them);
as a ``Strided`` run — (first byte, stride, bytes per row, rows) — it is one.

    window(t, offsets, extents)  a window's bytes as strided runs, its rows not listed
    union(runs)                  strided runs with the ones that continue each other joined
                                 (a K-blocked weight window, block after block: one run)
    meet(a, b)                   whether two sets of runs share a byte: a sweep over both in
                                 address order, and per pair of runs whose extents overlap
                                 an exact test — O(1) for two runs of one stride (windows of
                                 one tensor), else row by row over the run with fewer rows in
                                 the other's extent
"""

from __future__ import annotations

from typing import NamedTuple

from pypto.sim.accesses.views import layout


class Strided(NamedTuple):
    """``rows`` ranges of ``size`` bytes, the first at ``base``, each ``stride`` bytes after
    the one before (``stride`` > ``size``: the rows are apart; one row: ``stride`` 0)."""

    base: int
    stride: int
    size: int
    rows: int

    @property
    def end(self) -> int:
        """One past the last byte."""
        return self.base + (self.rows - 1) * self.stride + self.size


def window(t, offsets, extents) -> tuple[Strided, ...]:
    """The bytes of ``t[offsets : offsets + extents]`` (a torch tensor's window: what
    ``views.window_runs`` lists) as strided runs: the axes that continue one contiguous
    stretch make a row, the next moving axis the rows of a run, and each further axis one
    run per index (an axis of stride 0 repeats bytes: it adds none). The runs may overlap
    and come in any order when the view's axes interleave (``union`` sorts them)."""
    address, _, strides, esize = layout(t)
    address += sum(o * s for o, s in zip(offsets, strides))
    if 0 in extents:
        return ()
    axes = sorted((st, sz) for st, sz in zip(strides, extents) if sz != 1 and st != 0)
    size, k = esize, 0
    while k < len(axes) and axes[k][0] == size:  # the axes that continue one contiguous row
        size *= axes[k][1]
        k += 1
    if k == len(axes):
        return (Strided(address, 0, size, 1),)
    stride, rows = axes[k]
    bases = [address]
    for st, sz in reversed(axes[k + 1:]):  # the largest stride outermost: address order, unless interleaved
        bases = [b + i * st for b in bases for i in range(sz)]
    return tuple(_normal(Strided(b, stride, size, rows)) for b in bases)


def union(runs_) -> tuple[Strided, ...]:
    """The runs in address order, each joined with the next where it continues it: the next
    rows at its stride (a K block after the one before), or the columns beside its own in
    the same rows (a tile after the tile to its left); duplicates dropped. What is left may
    still overlap: ``meet`` allows that."""
    out: list[Strided] = []
    for r in sorted(_normal(r) for r in runs_):
        joined = _join(out[-1], r) if out else None
        if joined is None:
            out.append(r)
        else:
            out[-1] = joined
    return tuple(out)


def _normal(r: Strided) -> Strided:
    """One range, where the rows touch or overlap or the run has one row."""
    if r.rows == 1 and r.stride == 0:
        return r
    if r.rows == 1 or r.stride <= r.size:
        return Strided(r.base, 0, r.end - r.base, 1)
    return r


def _join(p: Strided, r: Strided) -> Strided | None:
    """``p`` and ``r`` (starting no earlier) as one run, when they are."""
    if p.rows == 1 and r.rows == 1:
        if r.base <= p.end:  # overlapping or touching ranges
            return p if r.end <= p.end else Strided(p.base, 0, r.end - p.base, 1)
        return Strided(p.base, r.base - p.base, p.size, 2) if r.size == p.size else None
    if r == p:
        return p
    if r.size == p.size:
        stride = p.stride or r.stride
        if (r.stride in (0, stride)) and r.base == p.base + p.rows * stride:
            return Strided(p.base, stride, p.size, p.rows + r.rows)  # the rows that follow
    if p.rows == r.rows and p.stride == r.stride and r.base == p.base + p.size and p.size + r.size <= p.stride:
        return _normal(Strided(p.base, p.stride, p.size + r.size, p.rows))  # the columns beside
    return None


def meet(a: tuple[Strided, ...], b: tuple[Strided, ...]) -> bool:
    """Whether two sets of runs, each in address order of their first bytes, share a byte."""
    if not a or not b:
        return False
    active: tuple[list, list] = ([], [])  # per side: its runs that reach past the sweep point
    i = j = 0
    while i < len(a) or j < len(b):
        side = 0 if j == len(b) or i < len(a) and a[i].base <= b[j].base else 1
        r = a[i] if side == 0 else b[j]
        if side == 0:
            i += 1
        else:
            j += 1
        theirs = active[1 - side]
        theirs[:] = [q for q in theirs if q.end > r.base]
        if not theirs and (j == len(b) if side == 0 else i == len(a)):
            return False  # the other side has nothing left to meet
        for q in theirs:
            if _runs_meet(r, q):
                return True
        active[side].append(r)
    return False


def _runs_meet(p: Strided, q: Strided) -> bool:
    if p.rows == 1:
        return _hits(p.base, p.base + p.size, q)
    if q.rows == 1:
        return _hits(q.base, q.base + q.size, p)
    if p.stride == q.stride:
        # row i of p against row j of q: q's row starts d + (j - i) * stride after p's,
        # and they meet when that is in (-q.size, p.size)
        s, d = p.stride, q.base - p.base
        lo = max(-(p.rows - 1), -((q.size + d - 1) // s))
        hi = min(q.rows - 1, (p.size - d - 1) // s)
        return lo <= hi
    # row by row over the run with fewer rows inside the other's extent
    pi = _rows_within(p, q.base, q.end)
    qj = _rows_within(q, p.base, p.end)
    if len(pi) <= len(qj):
        return any(_hits(p.base + i * p.stride, p.base + i * p.stride + p.size, q) for i in pi)
    return any(_hits(q.base + j * q.stride, q.base + j * q.stride + q.size, p) for j in qj)


def _rows_within(p: Strided, lo: int, hi: int) -> range:
    """The rows of ``p`` that meet [lo, hi)."""
    first = max(0, (lo - p.size - p.base) // p.stride + 1)
    last = min(p.rows - 1, (hi - 1 - p.base) // p.stride)
    return range(first, last + 1)


def _hits(lo: int, hi: int, q: Strided) -> bool:
    """Whether [lo, hi) shares a byte with a row of ``q``."""
    if q.rows == 1:
        return q.base < hi and lo < q.base + q.size
    j = max(0, (lo - q.size - q.base) // q.stride + 1)  # the first row ending after lo
    return j < q.rows and q.base + j * q.stride < hi
