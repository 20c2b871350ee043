"""An interval map over one byte-addressed space: every byte segment holds a value, and an
access splits segments at its ends. The hazard checker keeps a last writer and readers per
segment; the chip's dependency tracker and task-race detection need the same structure.

Paged: a space is cut into pages of ``2**page_bits`` bytes, each with its own sorted
segment list, so the many short runs of strided windows (a transposed load touches one
run per row, rows far apart) keep every list short and the work linear in the accesses.
"""

from __future__ import annotations

import bisect


class Segments:
    """One page: ``bounds`` sorted, ``values[k]`` the value of [bounds[k], bounds[k+1])
    (None where nothing was stored). The two pieces of a split segment share its value:
    store immutable values, and replace them."""

    __slots__ = ("bounds", "values")

    def __init__(self):
        self.bounds: list[int] = []
        self.values: list = []

    def split(self, x: int) -> int:
        """The index of the segment starting at ``x``, splitting the one that holds it."""
        k = bisect.bisect_left(self.bounds, x)
        if k < len(self.bounds) and self.bounds[k] == x:
            return k
        prev = self.values[k - 1] if 0 < k < len(self.bounds) else None
        self.bounds.insert(k, x)
        self.values.insert(k, prev)
        return k


class IntervalMap:
    """``pieces(lo, hi)``: the (page, index) of every segment covering [lo, hi), made as
    needed; read and write ``page.values[index]``; a segment spans [page.bounds[index],
    page.bounds[index + 1])."""

    def __init__(self, page_bits: int | None = None):
        self.page_bits = page_bits
        self.pages: dict[int, Segments] = {}

    def pieces(self, lo: int, hi: int):
        for p, plo, phi in self._parts(lo, hi):
            yield from self._in(p, plo, phi)

    def _in(self, p: int, lo: int, hi: int):
        page = self.pages.get(p)
        if page is None:
            page = self.pages[p] = Segments()
        a = page.split(lo)
        b = page.split(hi)
        for k in range(a, b):
            yield page, k

    def assign(self, lo: int, hi: int, value) -> None:
        """[lo, hi) holds ``value``, as one segment per page (a range written whole over and
        over stays one segment, however often it was cut before)."""
        for p, plo, phi in self._parts(lo, hi):
            page = self.pages.get(p)
            if page is None:
                page = self.pages[p] = Segments()
            a = page.split(plo)
            b = page.split(phi)
            del page.bounds[a + 1:b], page.values[a + 1:b]
            page.values[a] = value

    def values(self, lo: int, hi: int):
        """The values of the segments overlapping [lo, hi) (bytes never stored to may give
        None or nothing); nothing is split."""
        for p, plo, phi in self._parts(lo, hi):
            page = self.pages.get(p)
            if page is None:
                continue
            bounds = page.bounds
            k = max(bisect.bisect_right(bounds, plo) - 1, 0)
            while k < len(bounds) - 1 and bounds[k] < phi:
                if bounds[k + 1] > plo:
                    yield page.values[k]
                k += 1

    def rewrite(self, lo: int, hi: int, fn) -> None:
        """Each segment overlapping [lo, hi) that holds a value holds ``fn(value)`` instead
        (nothing is split: a segment partly outside gets it whole)."""
        for p, plo, phi in self._parts(lo, hi):
            page = self.pages.get(p)
            if page is None:
                continue
            bounds, values = page.bounds, page.values
            k = max(bisect.bisect_right(bounds, plo) - 1, 0)
            while k < len(bounds) - 1 and bounds[k] < phi:
                if bounds[k + 1] > plo and values[k] is not None:
                    values[k] = fn(values[k])
                k += 1

    def _parts(self, lo: int, hi: int):
        if hi <= lo:
            return
        bits = self.page_bits
        if bits is None:
            yield 0, lo, hi
            return
        for p in range(lo >> bits, ((hi - 1) >> bits) + 1):
            yield p, max(lo, p << bits), min(hi, (p + 1) << bits)
