"""InitMemRef: every tile gets a MemRef with its size; no addresses yet.

    t = pl.tile.load(a, ...)       ->   t: pl.Tile[[64, 128], pl.FP32, pl.MemRef("mem_vec_0", size=32768), pl.Mem.Vec] = ...
    x: ...MemRef("ub", slots=2)[i % 2]...   ->   x: ...MemRef("ub", size=65536, slots=2)[i % 2]...

A declared MemRef (``pl.MemRef("ub", slots=2)``, or a pipeline's stage slots) is sized
slots x its largest tile. A loop-carried tile is one buffer through the loop: its initial
value, the iter arg, the value yielded and the loop's result share a MemRef (likewise an
if's result and what its branches yield) — InsertAliasCopies has made sure none of them
is live while another is written. Sizes round up to the space's alignment.
"""

from __future__ import annotations

import attrs

from pypto.errors import MemorySpaceError
from pypto.ir import nodes as n
from pypto.ir.types import MemRef, TileType
from pypto.passes.context import PassContext, PassResult, result
from pypto.passes.memory import UnionFind, aligned, alias_edges, retype


def init_mem_ref(program: n.Program, ctx: PassContext) -> PassResult:
    functions = []
    for fn in program.functions:
        types = n.symbols(fn)
        if any(isinstance(t, TileType) for t in types.values()):
            fn = _init(fn, types, ctx)
        functions.append(fn)
    return result(n.Program(program.name, tuple(functions)))


def _init(fn: n.Function, types: dict, ctx: PassContext) -> n.Function:
    tiles = [name for name, t in types.items() if isinstance(t, TileType)]
    groups = UnionFind({name: i for i, name in enumerate(types)})
    for name in tiles:
        groups.find(name)
    for edge in alias_edges(fn):
        groups.union(edge.a, edge.b)

    # One MemRef per group (or per declared name): sized by its largest tile.
    declared: dict[str, list[str]] = {}
    for name in tiles:
        m = types[name].memref
        if m is not None:
            declared.setdefault(m.name, []).append(name)
    for names in declared.values():
        spaces = {types[x].space for x in names}
        slots = {types[x].memref.slots for x in names}
        if len(spaces) > 1 or len(slots) > 1:
            raise MemorySpaceError(
                f"the tiles bound to pl.MemRef(\"{types[names[0]].memref.name}\") disagree on its "
                + ("memory space" if len(spaces) > 1 else "slot count"),
                hint="bind one declared allocation to tiles of one space and one slot count")
    members = _members(groups, tiles)
    for root_members in members.values():
        named = {types[x].memref.name for x in root_members if types[x].memref is not None}
        if len(named) > 1:
            raise MemorySpaceError(f"a loop-carried tile is bound to two declared allocations: {sorted(named)}")

    align = {s: ctx.soc.spec(s).align for s in ctx.soc.spaces}
    size_of = {}
    for name in tiles:
        t = types[name]
        key = t.memref.name if t.memref is not None else groups.find(name)
        size_of[key] = max(size_of.get(key, 0), aligned(t.nbytes, align[t.space]))

    fresh: dict[str, str] = {}
    used_names = set(declared)

    def memref_of(name: str, t: TileType) -> MemRef:
        if t.memref is not None:
            m = t.memref
            return attrs.evolve(m, size=m.slots * size_of[m.name])
        root = groups.find(name)
        member_decl = next((types[x].memref for x in members[root] if types[x].memref), None)
        if member_decl is not None:
            return attrs.evolve(member_decl, size=member_decl.slots * size_of[member_decl.name])
        if root not in fresh:
            fresh[root] = n.fresh_name(f"mem_{t.space.name.lower()}_{len(fresh)}", used_names)
        return MemRef(name=fresh[root], size=size_of[root])

    return retype(fn, lambda name, t: attrs.evolve(t, memref=memref_of(name, t)) if isinstance(t, TileType) else t)


def _members(groups: UnionFind, tiles) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for name in tiles:
        out.setdefault(groups.find(name), []).append(name)
    return out
