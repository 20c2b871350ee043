"""Liveness over the IR: each statement of a function body numbered in program order
(nested blocks included), with where each name is defined and used, the loops and the
branches — so a value's live interval is definition to last use, widened to a whole loop
when it crosses the loop's back edge. The memory planners, the alias copies and the
model of the assembler read it.
"""

from __future__ import annotations

import attrs

from pypto.errors import Span
from pypto.ir import nodes as n


@attrs.frozen
class Loop:
    """A loop's positions: its header (``start``) and its body's last statement."""

    start: int
    end: int
    span: Span | None


class Liveness:
    """Positions of definitions and uses, and the loops and branches, of one function
    body, walked once: where each value is live, and whether it is live after a point."""

    def __init__(self, body):
        self.pos = 0
        self.order: list[str] = []
        self.defs: dict[str, tuple] = {}  # name -> (position, enclosing loops, span)
        self.uses: dict[str, list[int]] = {}
        self.loops: list[Loop] = []
        self.loop_by_start: dict[int, Loop] = {}
        self.loop_of: dict[int, Loop] = {}  # id(For or While statement) -> its loop
        self.carried: dict[int, set] = {}  # loop start -> its iter args and results
        self.branches: list[tuple[int, int, int]] = []  # per if: first then, first else, last position
        self.stmts: dict[int, object] = {}  # position -> the statement there
        self.block(body, ())

    def loops_at(self, pos: int):
        """The loops whose body holds ``pos`` (a loop's header, at its start, is outside it)."""
        return [loop for loop in self.loops if loop.start < pos <= loop.end]

    def interval(self, name: str, carry: bool = True) -> tuple[int, int]:
        """Where a value is live: definition to last use, and a whole loop when it crosses
        the loop's back edge (defined before a loop that uses it, or — with ``carry`` —
        carried by it; without, a carried value lives from its iter arg to its yield, the
        chain one iteration passes on in place)."""
        start = self.defs[name][0]
        end = max(self.uses.get(name, [start]) + [start])
        for pos in self.uses.get(name, []):
            for loop in self.loops_at(pos):
                if start < loop.start or carry and name in self.carried.get(loop.start, ()):
                    start = min(start, loop.start)
                    end = max(end, loop.end)
        return start, end

    def live_after(self, name: str, pos: int) -> bool:
        """Whether a value is still needed after position ``pos``: a use to come on a path
        from ``pos`` (not in the other branch of an if), or a loop it spans."""
        start, end = self.interval(name, carry=False)
        if not start <= pos < end:
            return False
        uses = self.uses.get(name, [])
        defined = self.defs[name][0]
        for loop in self.loops_at(pos):
            if defined < loop.start and any(loop.start < u <= loop.end for u in uses):
                return True  # the next trip reads it again (even where its last use is in an if's other branch)
        if end > max(uses, default=start):
            return True  # live across a loop's back edge
        return any(u > pos and not self.exclusive(pos, u) for u in uses)

    def exclusive(self, a: int, b: int) -> bool:
        """Positions in the two branches of one if (no path runs through both)."""
        return any(then <= min(a, b) < other <= max(a, b) <= last for then, other, last in self.branches)

    def define(self, name: str, loops: tuple[int, ...], span) -> None:
        self.order.append(name)
        self.defs[name] = (self.pos, tuple(loops), span)

    def use(self, expr_or_args) -> None:
        for e in n.value_exprs(expr_or_args):
            for name in n.expr_vars(e):
                self.uses.setdefault(name, []).append(self.pos)

    def block(self, body, loops) -> None:
        for stmt in body:
            self.pos += 1
            self.stmts[self.pos] = stmt
            if isinstance(stmt, n.Assign):
                self.use(stmt.value)
                self.define(stmt.target, loops, stmt.span)
            elif isinstance(stmt, n.Eval):
                self.use(stmt.value)
            elif isinstance(stmt, (n.Yield, n.Return)):
                self.use(stmt.values)
            elif isinstance(stmt, n.LOOPS):
                bounds = (stmt.start, stmt.stop, stmt.step) if isinstance(stmt, n.For) else ()
                self.use((*bounds, *(a.init for a in stmt.iter_args)))
                start = self.pos
                for a in stmt.iter_args:
                    self.define(a.name, loops, stmt.span)
                if isinstance(stmt, n.While):
                    self.use((stmt.cond,))
                self.block(stmt.body, (*loops, start))
                if isinstance(stmt, n.While):  # checked again after each trip: what it reads spans the loop
                    self.use((stmt.cond,))
                loop = Loop(start, self.pos, stmt.span)
                self.loops.append(loop)
                self.loop_by_start[start] = loop
                self.loop_of[id(stmt)] = loop
                self.carried[start] = {a.name for a in stmt.iter_args} | {b.name for b in stmt.results}
                for b in stmt.results:
                    self.define(b.name, loops, stmt.span)
            elif isinstance(stmt, n.If):
                self.use((stmt.cond,))
                then_start = self.pos + 1
                self.block(stmt.then_body, loops)
                else_start = self.pos + 1
                self.block(stmt.else_body, loops)
                self.branches.append((then_start, else_start, self.pos))
                for b in stmt.results:
                    self.define(b.name, loops, stmt.span)
            elif isinstance(stmt, n.BLOCKS):
                self.block(stmt.body, loops)
