"""First-fit placement, the analysis under AllocateMemoryAddr and the model of the
assembler's: largest buffers first, each at the lowest aligned address clear of every
placed buffer whose lifetime overlaps its own (when that leaves too little room, in order
of first use instead); the rings a kernel reserves come first in Vec.
"""

from __future__ import annotations

import attrs

from pypto.errors import MemorySpaceError
from pypto.ir import nodes as n
from pypto.ir.types import TileType
from pypto.backend import MemorySpace as M
from pypto.passes.allocation.memory import Buffer, aligned, buffers, peak, retype, ring_overflow, ring_reserve


def place(fn: n.Function, soc) -> n.Function:
    """``fn`` with every MemRef at its address in its space (``soc``'s capacities and
    alignments); the tiles that cannot fit are a MemorySpaceError."""
    bufs = buffers(fn, lambda s: soc.spec(s).align)
    addr: dict[str, int] = {}
    ring = ring_reserve(fn.body)
    spaces = {b.space for b in bufs.values()} | ({M.Vec} if ring else set())
    for space in spaces:
        spec = soc.spec(space)
        base = aligned(ring, spec.align) if space is M.Vec else 0  # the rings the kernel reserves come first
        group = [b for b in bufs.values() if b.space is space]
        room = spec.capacity - base
        placed = _first_fit(group, spec.align, key=lambda b: (-b.size, b.start, b.name))
        if max((placed[b.name] + b.size for b in group), default=0) > room:
            placed = _first_fit(group, spec.align, key=lambda b: (b.start, -b.size, b.name))
        top = max((placed[b.name] + b.size for b in group), default=0)
        if top > room:
            raise ring_overflow(fn, spec.capacity, base, top) if base else _overflow(fn, space, group, spec.capacity,
                                                                                     top)
        addr.update({name: at + base for name, at in placed.items()})

    def new_type(name, t):
        if isinstance(t, TileType) and t.memref is not None:
            return attrs.evolve(t, memref=attrs.evolve(t.memref, addr=addr[t.memref.name]))
        return t

    return retype(fn, new_type)


def _first_fit(group: list[Buffer], align: int, key) -> dict[str, int]:
    placed: dict[str, int] = {}
    done: list[Buffer] = []
    for b in sorted(group, key=key):
        at = 0
        for other in sorted((o for o in done if o.overlaps(b)), key=lambda o: placed[o.name]):
            if at + b.size <= placed[other.name]:
                break
            at = max(at, aligned(placed[other.name] + other.size, align))
        placed[b.name] = at
        done.append(b)
    return placed


def _overflow(fn: n.Function, space, group: list[Buffer], capacity: int, top: int) -> MemorySpaceError:
    worst = max(range(min(b.start for b in group), max(b.end for b in group) + 1), key=lambda p: peak(group, p))
    live = sorted((b for b in group if b.live_at(worst)), key=lambda b: -b.size)
    need = peak(group, worst)
    tiles = ", ".join(f"{'/'.join(b.tiles[:3])}{'...' if len(b.tiles) > 3 else ''} ({b.size} B"
                      + (f", {b.slots} slots" if b.slots > 1 else "") + ")" for b in live)
    span = next((b.first_span for b in live if b.first_span is not None), fn.span)
    return MemorySpaceError(
        f"{space.name} cannot hold the tiles of '{fn.name}': {max(need, top)} B needed, {capacity} B available; "
        f"live together: {tiles}",
        span=span,
        hint="use smaller tiles (tile the loop further), fewer pipeline stages or slots, or end tiles' lifetimes sooner",
    )
