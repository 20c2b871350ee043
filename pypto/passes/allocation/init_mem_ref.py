"""InitMemRef: every tile gets a MemRef with its size; no addresses yet.

    t = pl.tile.load(a, ...)       ->   t: pl.Tile[[64, 128], pl.FP32, pl.MemRef("mem_vec_0", size=32768, reusable=True), pl.Mem.Vec] = ...
    x: ...MemRef("ub", slots=2)[i % 2]...   ->   x: ...MemRef("ub", size=65536, slots=2)[i % 2]...

The buffers it makes are ``reusable``: MemoryReuse may merge and rename them. Which
MemRefs are the compiler's is that flag, never a name (a kernel may declare "mem_vec_0";
the fresh names avoid every declared one). A MemRef named before this pass (declared
``pl.MemRef("ub", slots=2)``, or a pipeline's stage slots) is sized slots x its largest
tile. A loop-carried tile is one buffer through the loop: its initial
value, the iter arg, the value yielded and the loop's result share a MemRef (likewise an
if's result and what its branches yield) — InsertAliasCopies has made sure none of them
is live while another is written. Sizes round up to the space's alignment.
"""

from __future__ import annotations

import attrs

from pypto.errors import MemorySpaceError
from pypto.ir import nodes as n
from pypto.ir.liveness import Liveness
from pypto.ir.types import MemRef, TileType
from pypto.passes.context import PassContext, PassResult, result
from pypto.ir.affine import static_difference
from pypto.ir.printer import expr
from pypto.ir.simplify import simplify
from pypto.passes.allocation.memory import UnionFind, aligned, alias_edges, retype


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
    members = _members(groups, tiles)
    _check_declared(fn, types, declared, groups)

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
        return MemRef(name=fresh[root], size=size_of[root], reusable=True)

    return retype(fn, lambda name, t: attrs.evolve(t, memref=memref_of(name, t)) if isinstance(t, TileType) else t)


def _check_declared(fn: n.Function, types: dict, declared: dict[str, list[str]], groups: UnionFind) -> None:
    """What a kernel author declares with pl.MemRef must be one allocation that holds its
    tiles apart: one space, one slot count, slot indexes in range, no two tiles live in
    one slot at once, and one declared name per carried value."""
    walker = Liveness(fn.body)

    def where(name):
        return walker.defs[name][2] if name in walker.defs else None

    for mname, names in declared.items():
        first = types[names[0]]
        for x in names[1:]:
            t = types[x]
            if t.space is not first.space or t.memref.slots != first.memref.slots:
                what = "memory space" if t.space is not first.space else "slot count"
                raise MemorySpaceError(
                    f"the tiles bound to pl.MemRef(\"{mname}\") disagree on its {what}: '{names[0]}' has "
                    f"{first.space.name}, slots={first.memref.slots}; '{x}' has {t.space.name}, "
                    f"slots={t.memref.slots}", span=where(x),
                    hint="bind one declared allocation to tiles of one space and one slot count")
        for x in names:
            m = types[x].memref
            if m.pipeline or m.index is None:
                continue
            top = _largest_slot(m.index)
            if top is not None and not (0 <= _smallest_slot(m.index) and top < m.slots):
                raise MemorySpaceError(
                    f"'{x}' takes slot {expr(m.index)} of pl.MemRef(\"{mname}\", slots={m.slots}), which has slots "
                    f"0..{m.slots - 1}", span=where(x), hint=f"index the MemRef within range, e.g. i % {m.slots}")
        for i, x in enumerate(names):
            for y in names[i + 1:]:
                mx, my = types[x].memref, types[y].memref
                if mx.pipeline or groups.find(x) == groups.find(y) or not _same_slot(mx.index, my.index, mx.slots):
                    continue
                (sx, _), (sy, _) = walker.interval(x, carry=False), walker.interval(y, carry=False)
                early, late = (x, y) if sx <= sy else (y, x)
                if walker.live_after(early, max(sx, sy)):
                    index = types[late].memref.index
                    slot = "" if index is None else f" slot {expr(index)} of"
                    raise MemorySpaceError(
                        f"'{late}' is written to{slot} pl.MemRef(\"{mname}\") while '{early}', which is in the same "
                        "bytes, is still to be read", span=where(late),
                        hint="give one of them another slot or its own pl.MemRef")
    scope = _loop_vars(fn.body, frozenset())
    loop_vars = set().union(*scope.values()) if scope else set()
    for root_members in _members(groups, list(types)).values():
        named = {types[x].memref.name for x in root_members if isinstance(types[x], TileType) and types[x].memref}
        if len(named) > 1:
            raise MemorySpaceError(f"a loop-carried tile is bound to two declared allocations: {sorted(named)}",
                                   span=where(root_members[0]),
                                   hint="declare one pl.MemRef for a carried value and what it is carried from")
        for x in root_members:
            m = types[x].memref if isinstance(types[x], TileType) else None
            if m is None or m.pipeline or m.index is None:
                continue
            needs = n.expr_vars(m.index) & loop_vars
            for y in root_members:
                missing = needs - scope.get(y, frozenset())
                if missing:
                    raise MemorySpaceError(
                        f"this tile is carried out of its loop (as '{y}'), but its slot {expr(m.index)} of "
                        f"pl.MemRef(\"{m.name}\", slots={m.slots}) changes with '{sorted(missing)[0]}', which the "
                        "value outside the loop does not have: a carried tile keeps one place",
                        span=where(x), hint="store the tile inside the loop, or copy it (pl.move) into a tile of "
                                             "its own before it leaves the loop")


def _same_slot(a, b, slots: int) -> bool:
    """Whether two slot indexes surely pick the same slot: the same position modulo the
    slot count (``i % 2`` and ``(i + 2) % 2`` do; ``i % 2`` and ``(i + 1) % 2`` do not)."""
    if a is None or b is None:
        return a is b

    def position(e):  # what the slot is, modulo ``slots``
        if isinstance(e, n.BinOp) and e.op == "%" and e.rhs == n.Const(slots):
            return e.lhs
        return e

    diff = static_difference(position(a), position(b))
    if diff is not None:
        return diff % slots == 0
    return simplify(a) == simplify(b)


def _largest_slot(index):
    """The largest slot an index can take, when it is known: a constant, or ``e % c``."""
    if isinstance(index, n.Const):
        return index.value
    if isinstance(index, n.BinOp) and index.op == "%" and isinstance(index.rhs, n.Const):
        return index.rhs.value - 1
    return None


def _smallest_slot(index):
    return index.value if isinstance(index, n.Const) else 0


def _members(groups: UnionFind, tiles) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for name in tiles:
        out.setdefault(groups.find(name), []).append(name)
    return out


def _loop_vars(body, loops: frozenset) -> dict[str, frozenset]:
    """The loop variables in scope where each name is bound."""
    out: dict[str, frozenset] = {}
    for stmt in body:
        if isinstance(stmt, n.LOOPS):
            inner = loops | ({stmt.var} if isinstance(stmt, n.For) else set())
            out.update({a.name: inner for a in stmt.iter_args})
            out.update(_loop_vars(stmt.body, inner))
            out.update({b.name: loops for b in stmt.results})
        elif isinstance(stmt, n.If):
            out.update(_loop_vars(stmt.then_body, loops))
            out.update(_loop_vars(stmt.else_body, loops))
            out.update({b.name: loops for b in stmt.results})
        elif isinstance(stmt, n.BLOCKS):
            out.update(_loop_vars(stmt.body, loops))
        else:
            out.update({name: loops for name in n.bound_names(stmt)})
    return out
