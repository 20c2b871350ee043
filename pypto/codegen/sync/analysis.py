"""One block's analysis (a function body, a branch, a loop body, in a window of its
iterations): the conflicting pairs of pipe work, what each node knows has landed when it
starts (``known``), the edges that order every conflict, and the reduction that drops each
edge others already imply. Made fresh for each block, so a nested block's state never
overwrites its parent's."""

from __future__ import annotations

import bisect
import itertools

from pypto.codegen.isa import Loop, assigned_scalars
from pypto.codegen.sync.edges import UNKNOWN, Edge, Node, rank
from pypto.codegen.sync.knowledge import Knowledge
from pypto.codegen.sync.locations import beyond, map_exprs, may_overlap
from pypto.codegen.sync.passages import entered, exited, rotates, trip_count
from pypto.ir import nodes as n
from pypto.ir.rewrite import substitute
from pypto.ir.simplify import simplify


class BlockAnalysis:
    def __init__(self, summaries, loop: Loop | None, carried, runs, block_id: int, ids, edges: list):
        """``summaries``: per statement, (core, pipe) -> its accesses; ``carried``: per
        statement, a nested loop's own edges; ``runs``: per statement, whether it is a loop
        whose body surely runs; ``ids``: the edge id counter; ``edges``: where made edges go."""
        self.summaries, self.loop, self.carried, self.runs = summaries, loop, carried, runs
        self.block_id, self._ids, self.edges = block_id, ids, edges

    def analyse(self) -> list[Edge]:
        summaries, loop = self.summaries, self.loop
        window = 1
        if loop is not None:
            depth = max((a[0].region.slots for s in summaries for accs in s.values() for a in accs
                         if a[0].region is not None and getattr(a[0], "addr", None) is not UNKNOWN
                         and a[0].region.slot is not UNKNOWN and loop.var in n.expr_vars(a[0].region.slot)),
                        default=1)
            window = depth + 1
            trip = trip_count(loop)
            if isinstance(trip, n.Const):  # distances a loop never reaches need no sync
                window = max(1, min(window, trip.value))
        self._reach: dict[tuple, dict] = {}
        self.loop, self.reach = loop, max(window - 1, 1) if loop is not None else -1
        self.variant = assigned_scalars(loop.body) if loop is not None else set()
        nodes = []
        for t in range(window):
            for j, summary in enumerate(summaries):
                for key in sorted(summary, key=rank):
                    accesses = [(self.at(loc, loop, t), w, k) for loc, w, k in summary[key]]
                    nodes.append(Node(t, j, key, accesses, summary[key]))
        for seq, node in enumerate(nodes):
            node.seq = seq
        last = window - 1
        self.groups: dict[tuple, list] = {}
        for node in nodes:
            self.groups.setdefault((node.t, node.j), []).append(node)
        self.implicit = self.implied(nodes)
        conflicts = self.conflicts(nodes, last)
        pattern: dict[tuple, tuple] = {}  # (u.j, u.key, v.j, v.key, d) -> (u, v, access pair)
        self.groups_in_order = [list(g) for _, g in itertools.groupby(nodes, key=lambda y: (y.t, y.j))]
        by_place: dict[tuple, list] = {}  # (j, key) -> its node in each window iteration
        for x in nodes:
            by_place.setdefault((x.j, x.key), []).append(x)
        after: dict[int, list] = {}  # node -> what its completion implies of its compound's parts
        for a, x, at_start, own in self.implicit:
            after.setdefault(x.seq, []).append((a, at_start, own))
        knowledge = Knowledge(self.groups_in_order, {(x.t, x.j, x.key): x for x in nodes}, by_place, after)
        state = knowledge.full()
        while True:
            added = False
            for v in (x for x in nodes if x.t == last):
                for u, pair, first, last_k in sorted(conflicts.get(v.seq, []), key=lambda c: -c[0].seq):
                    knowledge.settle(state, knowledge.group_of[v.seq])  # what the check reads: v's group's starts
                    if self.ordered(state[0], u, v, first, last_k):
                        continue
                    key = (u.j, u.key, v.j, v.key, v.t - u.t)
                    if key not in pattern:  # (else its edges are there already)
                        knowledge = knowledge.adding(key, state)
                    pattern[key] = (u, v, pair)
                    added = True
            if not added:
                break
        knowledge.settle(state)
        order = lambda k: (k[0], rank(k[1]), k[2], rank(k[3]), k[4])  # noqa: E731
        by_group: dict[int, dict] = {}  # each group's nodes' conflicts
        for v, found in conflicts.items():
            by_group.setdefault(knowledge.group_of[v], {})[v] = found
        for key in sorted(pattern, key=lambda k: (-k[4], *order(k))):  # drop what others already order
            trial, undo = knowledge.dropping(key, state)
            # (state covered every conflict: only those whose consumer's group moved may now not be)
            moved = {v: found for g in trial.moved for v, found in by_group.get(g, {}).items()}
            if self.covered(state[0], nodes, moved):
                pattern = {k: p for k, p in pattern.items() if k != key}
                knowledge = trial
            else:
                undo()
        return [self.make_edge(key, pattern[key], loop) for key in sorted(pattern, key=order)]

    def conflicts(self, nodes, last: int) -> dict[int, list]:
        """For each node of the last window iteration: the nearest conflicting node of each
        other pipe, with the access pair that conflicts and where in the bodies (see
        ``conflict``) — and earlier ones of that pipe that conflict with an earlier statement
        of v's loop body, which a chain of the loop's syncs ordering the nearest may miss."""
        by_key: dict[tuple, list] = {}  # each pipe's nodes in order: a node meets only other pipes'
        for x in nodes:
            by_key.setdefault(x.key, []).append(x)
        out: dict[int, list] = {}
        for v in (x for x in nodes if x.t == last):
            found_for = []
            for key, line in by_key.items():
                if key != v.key:
                    found = self.nearest_conflicts(v, line)
                    if found:
                        found_for.append(found)
            found_for.sort(key=lambda cs: -cs[0][0].seq)  # the order a backward scan meets them
            out[v.seq] = [c for cs in found_for for c in cs]
        return out

    def nearest_conflicts(self, v: Node, line: list) -> list:
        """The conflicts of v with one other pipe's nodes ``line``, nearest first (see
        ``conflicts``)."""
        found_for: list = []
        earliest = None  # once one is kept: the first statement of v the kept conflicts reach
        for u in reversed(line[: bisect.bisect_left(line, v.seq, key=lambda x: x.seq)]):
            if (u.t, u.j) == (v.t, v.j):
                continue
            if found_for and (earliest is None or earliest == 0):
                break  # ordering the later conflict orders this one (in-order pipe)
            found = self.conflict(u, v)
            if found is None:
                continue
            first = found[1]
            if found_for and first is not None and first >= earliest:
                continue  # a loop's syncs that order the later conflict order this one too
            earliest = first if not found_for or first is None else min(first, earliest)
            found_for.append((u, *found))
        return found_for

    def implied(self, nodes) -> list[tuple]:
        """(a, x, start, own) where a nested loop's own syncs make x's completion imply a's
        start — pipe A's work before the loop, when the loop's syncs lead from A to x's pipe
        (``entered``; with a body that may not run, only a prologue set from A drained on
        x's pipe after the loop does) — and/or A's own work in the loop, when it ends before
        syncs that lead to x's pipe within the last iteration (``exited``; chains through
        other pipes are followed there, not through their knowledge; a loop that does not
        run has no such work)."""
        out = []
        for x in nodes:
            edges = self.carried[x.j]
            if not edges:
                continue
            exited = self.exited(x.j, x.key)
            for a in self.groups[(x.t, x.j)]:
                if a.key == x.key:
                    continue
                mine = [k for _, _, k in a.accesses if k is not None]
                if self.runs[x.j]:
                    own = a.key in exited and all(k <= exited[a.key] for k in mine)
                    # Any set of a's that reaches x carries what a knew at the loop's start.
                    start = a.key in exited or x.key in self.entered(x.j, a.key)
                else:  # a prologue set from a drained after the loop: whether or not the body ran
                    sets = [e.u for e in edges if (e.src, e.dst) == (a.key, x.key)]
                    start, own = bool(sets), bool(sets) and all(k <= max(sets) for k in mine)
                if start or own:
                    out.append((a, x, start, own))
        return out

    def covered(self, known, nodes, conflicts) -> bool:
        return all(self.ordered(known, u, nodes[v], first, last_k)
                   for v, found in conflicts.items() for u, _, first, last_k in found)

    def ordered(self, known, u: Node, v: Node, first, last) -> bool:
        """Whether u's conflicting work has landed before v's: v knows u when it starts; or
        v is a loop, another pipe knows u at the loop's start, and the loop's own syncs
        carry that to v's pipe by body statement ``first`` (v's first in conflict); or u is
        a loop whose syncs pass u's work up to statement ``last`` (u's last in conflict) to
        another pipe within the last iteration, and v knows that pipe finished the loop."""
        if known[v.seq].get(u.key, -1) >= u.seq:
            return True
        if first is not None and self.runs[v.j]:
            for p in self.groups[(v.t, v.j)]:
                if p.key != v.key and known[p.seq].get(u.key, -1) >= u.seq:
                    reach = self.entered(v.j, p.key).get(v.key)
                    if reach is not None and first >= reach:
                        return True
        if last is not None and self.runs[u.j]:
            for p in self.groups[(u.t, u.j)]:
                if p.key != u.key and known[v.seq].get(("done", p.key), -1) >= p.seq:
                    reach = self.exited(u.j, p.key).get(u.key)
                    if reach is not None and last <= reach:
                        return True
        return False

    def conflict(self, u: Node, v: Node):
        """(The first conflicting access pair, as the body spells them, that nothing orders
        yet; the first of v's body statements in conflict and the last of u's, None where
        not in a loop body), or None. A loop's own syncs already order across it: a wait
        before body statement k (fed in the first iteration by a set after earlier work, or by a prologue set)
        orders what precedes the loop before statement k onwards, and the last such
        wait (or an epilogue wait) orders what follows the loop after the set's statement."""
        into = self.entered(v.j, u.key).get(v.key) if v.j != u.j else None
        out_of = self.exited(u.j, v.key).get(u.key) if v.j != u.j else None
        pair, first, last = None, float("inf"), -1
        for ia, (la, wa, ka) in enumerate(u.accesses):
            if out_of is not None and ka is not None and ka <= out_of:
                continue
            for ib, (lb, wb, kb) in enumerate(v.accesses):
                if into is not None and kb is not None and kb >= into:
                    continue
                if not (wa or wb):
                    continue
                if may_overlap(la, lb) or v.t - u.t == self.reach and beyond(
                        u.original[ia][0], v.original[ib][0], self.loop, self.reach, self.variant):
                    pair = pair or (u.original[ia][0], v.original[ib][0])
                    first = None if first is None or kb is None else min(first, kb)
                    last = None if last is None or ka is None else max(last, ka)
        return None if pair is None else (pair, first, last)

    def entered(self, j: int, pipe) -> dict:
        """``entered`` of statement j's loop, once per block (the analysis asks often)."""
        key = ("in", j, pipe)
        if key not in self._reach:
            self._reach[key] = entered(self.carried[j], pipe)
        return self._reach[key]

    def exited(self, j: int, pipe) -> dict:
        key = ("out", j, pipe)
        if key not in self._reach:
            self._reach[key] = exited(self.carried[j], pipe)
        return self._reach[key]

    def at(self, loc, loop: Loop | None, t: int):
        """``loc`` as seen in window iteration t: the loop variable advanced t steps, and each
        scalar the body assigns (a carried offset, ``row = i + n``) an unknown of that
        iteration's own, so no access of another iteration is proved apart from it."""
        if loop is None or t == 0:
            return loc
        shift = {loop.var: simplify(n.BinOp("+", n.Var(loop.var), n.BinOp("*", n.Const(t), loop.step)))}
        shift.update({name: n.Var(f"{name}@{t}") for name in self.variant})
        return map_exprs(loc, lambda e: simplify(substitute(e, shift)) if e is not UNKNOWN else e)

    def make_edge(self, key, value, loop) -> Edge:
        uj, ukey, vj, vkey, d = key
        _, _, (la, lb) = value
        region = None
        if d >= 1 and loop is not None and type(la) is type(lb) \
                and la.region is not None and d % la.region.slots == 0 and lb.region is not None and la.region.name == lb.region.name \
                and la.region.slot is not UNKNOWN and lb.region.slot is not UNKNOWN \
                and loop.var in n.expr_vars(la.region.slot) \
                and rotates(la.region.slot, loop, la.region.slots) and rotates(lb.region.slot, loop, lb.region.slots):
            region = la.region
        edge = Edge(next(self._ids), uj, vj, ukey, vkey, d, 0, region,
                    la.region.slot if region else None, lb.region.slot if region else None, self.block_id)
        self.edges.append(edge)
        return edge
