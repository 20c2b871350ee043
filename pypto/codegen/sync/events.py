"""Event ids for the edges: per pipe pair, by interval colouring over the program order
of their sets and waits; chains of edges share one id when a pair runs out."""

from __future__ import annotations

import collections

import attrs

from pypto.codegen.isa import Cond, Loop, SetFlag, WaitFlag, walk
from pypto.codegen.sync.edges import Edge
from pypto.ir import nodes as n
from pypto.ir.simplify import simplify


def assign_events(body, edges: list[Edge], limit: int) -> tuple[list, list[Edge]]:
    """Event ids per pipe pair by interval colouring: an edge holds its ids (one, or one per
    slot) from its first set or wait in program order to its last, so syncs of sequential
    loops or branches reuse ids that earlier ones have drained. When a pair runs out (a deep
    pipeline), edges whose sets and waits come in the same order share an id."""
    first: dict[int, int] = {}
    last: dict[int, int] = {}
    for pos, x in enumerate(walk(body)):
        if isinstance(x, (SetFlag, WaitFlag)):  # (a hand-written pipe's, edge -1, is no edge's: never looked up)
            first.setdefault(x.edge, pos)
            last[x.edge] = pos
    try:
        bases, shared = _colour(edges, first, last, limit, {e.id: e.id for e in edges})
    except _OutOfIds:
        try:
            bases, shared = _colour(edges, first, last, limit, _chains(edges))
        except _OutOfIds as out:  # (even when no two edges could chain)
            raise too_many(out.args[0], limit) from None

    def shifted(x):
        if not isinstance(x, (SetFlag, WaitFlag)) or x.edge < 0:
            return x
        if x.edge in shared:
            return attrs.evolve(x, event=n.Const(bases[x.edge]))
        if bases[x.edge]:
            return attrs.evolve(x, event=simplify(n.BinOp("+", n.Const(bases[x.edge]), x.event)))
        return x

    out = [attrs.evolve(e, base=bases[e.id], region=None if e.id in shared else e.region) for e in edges]
    return _map_flags(body, shifted), out


class _OutOfIds(Exception):
    """The pipe pair (its one argument) whose ids ran out."""


def _colour(edges, first: dict, last: dict, limit: int, leader: dict) -> tuple[dict, set]:
    """Edge id -> base id, and the per-slot edges folded onto one id. Edges with one
    ``leader`` hold one id together, over the union of their spans."""
    span: dict[int, list] = {}
    for e in edges:
        lo, hi = span.setdefault(leader[e.id], [first[e.id], last[e.id]])
        span[leader[e.id]] = [min(lo, first[e.id]), max(hi, last[e.id])]
    busy: dict[tuple, list] = {}  # pair -> (last position, base, width) of edges holding ids
    bases: dict[int, int] = {}
    widths: dict[int, int] = {}
    shared: set[int] = set()
    size = collections.Counter(leader.values())
    for e in sorted((e for e in edges if leader[e.id] == e.id), key=lambda e: span[e.id][0]):
        start, end = span[e.id]
        # Still held: an earlier edge whose last flag comes after this one's first. The two
        # are never one position (each is a flag of its own edge, and no edge is in two
        # groups), so ">=" here means ">": an edge whose first flag directly follows
        # another's last takes its id; one that starts before the other ends cannot.
        held = [(b, w) for stop, b, w in busy.get((e.src, e.dst), []) if stop >= start]
        base = width = None
        # One id per slot when the ids are there; else one id for all slots: flags pair
        # first in, first out, so each wait still meets its own set, only later.
        slots = e.region.slots if e.region is not None and size[e.id] == 1 else 1
        for want in (slots, 1):  # (width 1 tried twice when slots is 1: the same answer)
            base = next((b for b in range(limit - want + 1)
                         if not any(h < b + want and b < h + w for h, w in held)), None)
            if base is not None:
                width = want
                break
        if base is None:
            raise _OutOfIds((e.src, e.dst))
        busy.setdefault((e.src, e.dst), []).append((end, base, width))
        bases[e.id], widths[e.id] = base, width
    for e in edges:
        bases[e.id] = bases[leader[e.id]]
        if e.region is not None and widths[leader[e.id]] == 1:
            shared.add(e.id)
    return bases, shared


def _chains(edges) -> dict[int, int]:
    """Edge id -> the edge whose id it may share: edges of one block and pipe pair, with one
    distance, whose sets come in the order of their waits — the k-th wait then always meets
    the k-th set, of its own edge. A rotating edge that shares gives up its per-slot ids."""
    leader: dict[int, int] = {}
    chains: list[list] = []
    for e in sorted(edges, key=lambda e: (e.u, e.v, e.id)):
        for chain in chains:
            head = chain[0]
            if (head.src, head.dst, head.block, head.distance) == (e.src, e.dst, e.block, e.distance) \
                    and all(x.u < e.u and x.v < e.v for x in chain):
                chain.append(e)
                leader[e.id] = head.id
                break
        else:
            chains.append([e])
            leader[e.id] = e.id
    return leader


def _map_flags(body, f) -> list:
    out = []
    for x in body:
        if isinstance(x, Loop):
            x = attrs.evolve(x, body=_map_flags(x.body, f))
        elif isinstance(x, Cond):
            x = attrs.evolve(x, then_body=_map_flags(x.then_body, f), else_body=_map_flags(x.else_body, f))
        out.append(f(x))
    return out


def too_many(pair, limit):
    from pypto.codegen.select import CodegenError

    (c1, p1), (c2, p2) = pair
    return CodegenError(f"more than {limit} syncs between {c1.name}.{p1.name} and {c2.name}.{p2.name} in one "
                        "kernel: the hardware has that many event ids per pipe pair",
                        hint="split the kernel, or use fewer live buffers per loop")
