"""AllocateMemoryAddr (memory_planner=PYPTO): every MemRef gets a byte address in its
space; buffers live at the same time never overlap, and everything fits the SoC table's
capacity at the space's alignment.

    t: ...pl.MemRef("mem_vec_0", size=32768)...   ->   t: ...pl.MemRef("mem_vec_0", 0, 32768)...
    u: ...pl.MemRef("pipe_u", size=65536, slots=2)[1]...  ->  ...pl.MemRef("pipe_u", 32768, 65536, slots=2)[1]...

Placement is first fit: largest buffers first, each at the lowest aligned address clear
of every placed buffer whose lifetime overlaps its own. A set of tiles that cannot fit
is an error naming the space, the bytes needed and available, and the tiles live there.
"""

from __future__ import annotations

import attrs

from pypto.errors import MemorySpaceError
from pypto.ir import nodes as n
from pypto.ir.types import TileType
from pypto.passes.context import PassContext, PassResult, Planner, result
from pypto.backend import MemorySpace as M
from pypto.passes.memory import Buffer, aligned, buffers, peak, retype, ring_overflow, ring_reserve

PLANNERS = frozenset({Planner.PYPTO})


def allocate_memory_addr(program: n.Program, ctx: PassContext) -> PassResult:
    functions = []
    for fn in program.functions:
        if any(isinstance(t, TileType) and t.memref for t in n.symbols(fn).values()):
            fn = _allocate(fn, ctx)
        functions.append(fn)
    return result(n.Program(program.name, tuple(functions)))


def _allocate(fn: n.Function, ctx: PassContext) -> n.Function:
    bufs = buffers(fn, lambda s: ctx.soc.spec(s).align)
    addr: dict[str, int] = {}
    ring = ring_reserve(fn.body)
    spaces = {b.space for b in bufs.values()} | ({M.Vec} if ring else set())
    for space in spaces:
        spec = ctx.soc.spec(space)
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
