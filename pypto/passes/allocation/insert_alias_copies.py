"""InsertAliasCopies: InitMemRef gives a carried loop's initial value, iter arg, yielded
value and result one buffer (and an if's result and what its branches yield); where two
of those are live at once, a ``tile.move`` copy first gives one of them a buffer of its own.

    for i, (x, y) in pl.range(4, init_values=(a, b)):     for i, (x, y) in pl.range(4, init_values=(a, b)):
        z = pl.tile.add(x, y)                       ->        z = pl.tile.add(x, y)
        x2 = pl.tile.muls(y, 1.0)                             x2 = pl.tile.muls(y, 1.0)
        x_1, y_1 = pl.yield_(x2, z)                           z_copy = pl.tile.move(z, target_memory=pl.Mem.Vec)
                                                              x_1, y_1 = pl.yield_(x2, z_copy)

(``z`` is computed while ``y``, whose buffer it would take, is still read.) Copies go
where the conflict is: before a loop whose initial value is read later, after a loop whose
result another value's buffer needs, or before a yield. When single copies before a yield
cannot be ordered (values swapped between carried slots), every carried tile of that yield
is first copied out, then copied back. Only spaces the SoC copies within (Vec) can be fixed;
elsewhere the conflict is an error with the lever.
"""

from __future__ import annotations

import attrs

from pypto.errors import MemorySpaceError, VerificationError
from pypto.ir import nodes as n
from pypto.ir.liveness import Liveness
from pypto.ir.types import TileType
from pypto.passes.context import PassContext, PassResult, result
from pypto.passes.allocation.memory import AliasEdge, UnionFind, alias_edges

COPY = "tile.move"


def insert_alias_copies(program: n.Program, ctx: PassContext) -> PassResult:
    functions = []
    for fn in program.functions:
        if any(isinstance(t, TileType) for t in n.symbols(fn).values()):
            fn = _Copier(fn, ctx.soc).run()
        functions.append(fn)
    return result(n.Program(program.name, tuple(functions)))


def first_conflict(fn: n.Function) -> AliasEdge | None:
    """The first alias edge (in InitMemRef's order) that would join two groups holding
    tiles live at the same time."""
    walker = Liveness(fn.body)
    cache: dict[str, tuple[int, int]] = {}
    # Iter args of one loop, and results of one if, part ways on the paths that set them
    # apart (a later iteration, the other branch), whatever their uses.
    parted = {a.name: id(s) for s in n.walk_stmts(fn.body) if isinstance(s, n.LOOPS) for a in s.iter_args}
    parted.update({b.name: id(s) for s in n.walk_stmts(fn.body) if isinstance(s, n.If) for b in s.results})

    def live(name):
        if name not in cache:
            cache[name] = walker.interval(name, carry=False)
        return cache[name]

    def interfere(x, y):
        if x in parted and parted.get(y) == parted[x]:
            return True
        (sx, ex), (sy, ey) = live(x), live(y)
        if sx == sy:  # one statement defines both (a loop's or an if's results): both used?
            return ex > sx and ey > sy
        return walker.live_after(x, sy) if sx < sy else walker.live_after(y, sx)

    groups = UnionFind({name: i for i, name in enumerate(walker.order)})
    for edge in alias_edges(fn):
        if groups.find(edge.a) == groups.find(edge.b):
            continue
        if any(interfere(x, y) for x in groups.group(edge.a) for y in groups.group(edge.b)):
            return edge
        groups.union(edge.a, edge.b)
    return None


class _Copier:
    def __init__(self, fn: n.Function, soc):
        self.fn = fn
        self.soc = soc
        self.types = n.symbols(fn)
        self.used = set(self.types)
        self.made: dict[str, str] = {}  # copy -> the tile it copies
        self.before_yield: set[str] = set()  # the single copies made just before a yield
        self.copied_back: set[str] = set()  # the second copies of a yield moved out and back

    def run(self) -> n.Function:
        # Each fix removes its conflict; a yield escalates at most once, so this ends.
        for _ in range(4 * len(alias_edges(self.fn)) + 1):
            edge = first_conflict(self.fn)
            if edge is None:
                return self.fn
            self.fn = attrs.evolve(self.fn, body=_replace(self.fn.body, edge.stmt, lambda s: self.fix(edge, s)))
        raise VerificationError(f"InsertAliasCopies did not settle in function '{self.fn.name}'")

    # ------------------------------------------------------------------ fixes

    def fix(self, edge: AliasEdge, stmt) -> list:
        if edge.kind == "init":
            a = stmt.iter_args[edge.slot]
            copy, name = self.copy(a.init.name, stmt, why=f"the loop starts '{a.name}' from '{a.init.name}', which "
                                   "is still read while the loop runs")
            args = list(stmt.iter_args)
            args[edge.slot] = attrs.evolve(a, init=n.Var(name))
            return [copy, attrs.evolve(stmt, iter_args=tuple(args))]
        if edge.kind == "result":
            b = stmt.results[edge.slot]
            inner = n.fresh_name(b.name, self.used)
            self.types[inner] = b.type
            results = list(stmt.results)
            results[edge.slot] = attrs.evolve(b, name=inner)
            self.check(b.type, stmt, f"the loop's result '{b.name}' shares a buffer with a value still live")
            copy = n.Assign(b.name, b.type, n.Call(COPY, (n.Var(inner), b.type.space)), span=stmt.span)
            self.made[b.name] = inner
            return [attrs.evolve(stmt, results=tuple(results)), copy]
        if edge.kind == "yield":
            return [attrs.evolve(stmt, body=self.fix_yield(stmt.body, edge.slot, stmt))]
        field = "then_body" if edge.branch == "then" else "else_body"
        return [attrs.evolve(stmt, **{field: self.fix_yield(getattr(stmt, field), edge.slot, stmt)})]

    def fix_yield(self, body: tuple, slot: int, stmt) -> tuple:
        """A copy of the value yielded in ``slot``, made just before the yield; if that
        value already is one, every tile the yield carries moves out and back."""
        *rest, last = body
        values = list(last.values)
        if values[slot].name in self.copied_back:
            raise VerificationError(f"InsertAliasCopies cannot separate the tiles carried at {stmt.span}")
        if values[slot].name not in self.before_yield:
            copy, name = self.copy(values[slot].name, stmt, why="a carried tile is replaced while the value it "
                                   "replaces is still live")
            self.before_yield.add(name)
            values[slot] = n.Var(name)
            return (*rest, copy, attrs.evolve(last, values=tuple(values)))
        # Undo the single copies, then copy every carried tile out before any is copied back.
        while rest and isinstance(rest[-1], n.Assign) and rest[-1].target in self.before_yield:
            undone = rest.pop()
            values = [n.Var(self.made[v.name]) if isinstance(v, n.Var) and v.name == undone.target else v
                      for v in values]
        outs, backs = [], []
        why = "carried tiles are exchanged between slots"
        for k, v in enumerate(values):
            if isinstance(v, n.Var) and isinstance(self.types.get(v.name), TileType):
                out, tmp = self.copy(v.name, stmt, why, f"{v.name}_tmp")
                back, name = self.copy(tmp, stmt, why, f"{v.name}_next")
                self.copied_back.add(name)
                outs.append(out)
                backs.append(back)
                values[k] = n.Var(name)
        return (*rest, *outs, *backs, attrs.evolve(last, values=tuple(values)))

    def copy(self, source: str, stmt, why: str, base: str = "") -> tuple[n.Assign, str]:
        t = self.types[source]
        self.check(t, stmt, why)
        name = n.fresh_name(base or f"{source}_copy", self.used)
        t = attrs.evolve(t, memref=None)
        self.types[name] = t
        self.made[name] = source
        return n.Assign(name, t, n.Call(COPY, (n.Var(source), t.space)), span=stmt.span), name

    def check(self, t: TileType, stmt, why: str) -> None:
        if not self.soc.can_move(t.space, t.space):
            raise MemorySpaceError(
                f"{why}, so two live values would share one {t.space.name} buffer, and {t.space.name} tiles cannot "
                "be copied on chip", span=stmt.span,
                hint="give the loop (or branch) a tile of its own — compute it afresh instead of reusing one that "
                     "is still needed")


def _replace(body: tuple, target, f) -> tuple:
    """``body`` with the statement ``target`` (by identity, at any depth) replaced by the
    statements ``f(target)``."""
    out = []
    for stmt in body:
        if stmt is target:
            out.extend(f(stmt))
            continue
        if isinstance(stmt, n.LOOPS):
            stmt = attrs.evolve(stmt, body=_replace(stmt.body, target, f))
        elif isinstance(stmt, n.If):
            stmt = attrs.evolve(stmt, then_body=_replace(stmt.then_body, target, f),
                                else_body=_replace(stmt.else_body, target, f))
        elif isinstance(stmt, n.BLOCKS):
            stmt = attrs.evolve(stmt, body=_replace(stmt.body, target, f))
        out.append(stmt)
    return tuple(out)
