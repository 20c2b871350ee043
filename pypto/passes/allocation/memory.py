"""What the memory passes share: where each tile's MemRef is live (in program order, loops
taken whole when a value crosses their back edge) and rewriting tile types in place.

Positions number the statements of a function in pre-order. A buffer is live from its
first definition to its last use; a buffer defined outside a loop and used inside it, or
carried by the loop, is live over the whole loop.
"""

from __future__ import annotations

import attrs

from pypto.errors import MemorySpaceError, Span
from pypto.ir import nodes as n
from pypto.ir.liveness import Liveness
from pypto.ir.types import TileType


def aligned(nbytes: int, align: int) -> int:
    return -(-nbytes // align) * align


@attrs.define
class Buffer:
    """One MemRef of a function: its tiles and where it is live."""

    name: str
    space: object
    slots: int
    slot_size: int  # aligned bytes of its largest tile
    start: int
    end: int
    tiles: list = attrs.Factory(list)  # tile names, in definition order
    loop_span: Span | None = None  # the innermost loop around its first tile
    first_span: Span | None = None
    pipeline: bool = False
    reusable: bool = False  # InitMemRef's: MemoryReuse may merge and rename it (never a declared one)
    # Where it is live, as disjoint (start, end) intervals: buffers merged into one MemRef
    # are live only where their tiles are, not across the gaps between them.
    intervals: list = attrs.Factory(list)

    @property
    def size(self) -> int:
        return self.slots * self.slot_size

    def live(self) -> list:
        return self.intervals or [(self.start, self.end)]

    def live_at(self, position: int) -> bool:
        return any(a <= position <= b for a, b in self.live())

    def overlaps(self, other: Buffer) -> bool:
        if not (self.start <= other.end and other.start <= self.end):
            return False
        return any(a <= d and c <= b for a, b in self.live() for c, d in other.live())

    def join(self, start: int, end: int) -> None:
        """Live over [start, end] too."""
        self.intervals = union(self.live() + [(start, end)])
        self.start, self.end = min(self.start, start), max(self.end, end)


def union(intervals) -> list:
    """Disjoint, sorted intervals covering the same positions (touching ones joined)."""
    out: list = []
    for a, b in sorted(intervals):
        if out and a <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def buffers(fn: n.Function, align_of) -> dict[str, Buffer]:
    """MemRef name -> Buffer, for every tile of ``fn`` that has a MemRef."""
    walker = Liveness(fn.body)
    types = n.symbols(fn)
    out: dict[str, Buffer] = {}
    for name in walker.order:
        t = types.get(name)
        if not isinstance(t, TileType) or t.memref is None:
            continue
        m = t.memref
        _, loop_starts, span = walker.defs[name]
        loops = [walker.loop_by_start[s] for s in loop_starts]
        start, end = walker.interval(name)
        if m.slots > 1 and not isinstance(m.index, n.Const) and loops:
            # A rotating slot keeps its data until the iteration that comes back to it:
            # the region is in use for the whole loop.
            start, end = min(start, loops[-1].start), max(end, loops[-1].end)
        size = aligned(t.nbytes, align_of(t.space))
        b = out.get(m.name)
        if b is None:
            inner = loops[-1].span if loops else None
            out[m.name] = Buffer(m.name, t.space, m.slots, size, start, end, [name], inner, span, m.pipeline,
                                 m.reusable, [(start, end)])
        else:
            b.slot_size = max(b.slot_size, size)
            b.join(start, end)
            b.tiles.append(name)
    return out


def retype(fn: n.Function, new_type) -> n.Function:
    """``fn`` with each binding's type replaced by ``new_type(name, type)``."""
    from pypto.ir.rewrite import rewrite

    def at(node, name):
        t = new_type(name, node.type)
        return None if t == node.type else attrs.evolve(node, type=t)

    return rewrite(fn, {
        n.Assign: lambda s: at(s, s.target),
        n.IterArg: lambda a: at(a, a.name),
        n.Binding: lambda b: at(b, b.name),
    })


def ring_reserve(body) -> int:
    """The Vec bytes a kernel's cross-core rings reserve from its base (``system.reserve_buffer``):
    its tiles go above them."""
    from pypto.ir.ops.rings import reserved

    return max((base + size for base, size, _ in reserved(body).values()), default=0)


def ring_overflow(fn: n.Function, capacity: int, base: int, top: int) -> MemorySpaceError:
    """The reference's words: the ring, reserved from Vec's base, and the tiles above it overrun Vec."""
    span = next((s.span for s in n.walk_stmts(fn.body) if isinstance(getattr(s, "value", None), n.Call)
                 and s.value.op == "system.reserve_buffer" and s.span is not None), fn.span)
    return MemorySpaceError(
        f"Vec buffer usage ({base + top} bytes) exceeds platform limit ({capacity} bytes). The first {base} bytes of "
        "that space are reserved by system.reserve_buffer, so tiles are allocated above them — this is the "
        "cross-core pipe ring. Lower its depth with optimizations=[pl.cross_core_slot(slot_num=N)] on the enclosing "
        "pl.at(...), or shrink the tile that crosses the cube/vector boundary", span=span,
        hint="the ring holds slot_num slots of the crossing tile: fewer slots, or a smaller tile crossing each trip")


def peak(bufs, position: int) -> int:
    return sum(b.size for b in bufs if b.live_at(position))


@attrs.frozen
class AliasEdge:
    """Two tiles InitMemRef puts in one buffer, and why: a loop's initial value, the value
    its body yields, or its result, each with the iter arg of ``slot``; or an if's result
    with what ``branch`` ("then"/"else") yields. ``stmt`` is the loop or if."""

    a: str
    b: str
    kind: str  # "init" | "yield" | "result" | "branch"
    stmt: object
    slot: int
    branch: str = ""


def alias_edges(fn: n.Function) -> list[AliasEdge]:
    """Every tile pair a carried loop or an if joins, in a fixed order (statements in
    pre-order; per loop: inits, yields, results) that InitMemRef and the pass that makes
    the joins safe both follow."""
    out = []
    for stmt in n.walk_stmts(fn.body):
        if isinstance(stmt, n.LOOPS) and stmt.iter_args:
            yields = stmt.body[-1].values if stmt.body and isinstance(stmt.body[-1], n.Yield) else ()
            tiles = [k for k, a in enumerate(stmt.iter_args) if isinstance(a.type, TileType)]
            for k in tiles:
                init = stmt.iter_args[k].init
                if isinstance(init, n.Var):
                    out.append(AliasEdge(init.name, stmt.iter_args[k].name, "init", stmt, k))
            for k in tiles:
                if k < len(yields) and isinstance(yields[k], n.Var):
                    out.append(AliasEdge(stmt.iter_args[k].name, yields[k].name, "yield", stmt, k))
            for k in tiles:
                out.append(AliasEdge(stmt.iter_args[k].name, stmt.results[k].name, "result", stmt, k))
        elif isinstance(stmt, n.If) and stmt.results:
            for branch, body in (("then", stmt.then_body), ("else", stmt.else_body)):
                if body and isinstance(body[-1], n.Yield):
                    for k, (b, v) in enumerate(zip(stmt.results, body[-1].values)):
                        if isinstance(b.type, TileType) and isinstance(v, n.Var):
                            out.append(AliasEdge(b.name, v.name, "branch", stmt, k, branch))
    return out


class UnionFind:
    """Groups of tile names that share a buffer; the earliest-bound name leads."""

    def __init__(self, rank: dict[str, int]):
        self.parent: dict[str, str] = {}
        self.rank = rank
        self.members: dict[str, list[str]] = {}

    def find(self, x: str) -> str:
        if x not in self.parent:
            self.parent[x] = x
            self.members[x] = [x]
        while self.parent[x] != x:
            self.parent[x] = self.parent[self.parent[x]]
            x = self.parent[x]
        return x

    def union(self, a: str, b: str) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            first, second = sorted((ra, rb), key=lambda x: self.rank.get(x, len(self.rank)))
            self.parent[second] = first
            self.members[first] += self.members.pop(second)

    def group(self, x: str) -> list[str]:
        return self.members[self.find(x)]
