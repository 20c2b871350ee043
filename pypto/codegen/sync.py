"""Sync insertion: set_flag / wait_flag pairs that order every cross-pipe RAW, WAR and WAW
hazard on the bytes instructions touch, and nothing else.

Per block (a function body, a branch, a loop body), an edge u -> v means "v's pipe waits
until u's pipe has finished u". A loop body is analysed over a window of consecutive
iterations (as many as its deepest slot rotation, at least two), so an edge may cross
iterations (distance d >= 1): then the first d waits are fed by sets placed before the
loop (prologue) and the last d sets are drained after it (epilogue). An edge whose
conflict is one slot of a rotating region (``i % 2``) gets one event per slot, so the
other slots keep flowing. Edges are kept only where nothing else already orders the pair
(in-order pipes, other edges, transitively): each one is needed. Nested loops and
branches count as one statement to their parent, whose edges wait before them or set
after them.
"""

from __future__ import annotations

import collections
import itertools
import math

import attrs

from pypto.codegen.isa import (
    BufLoc,
    Cond,
    GmLoc,
    Instr,
    Loop,
    Region,
    ScalarAssign,
    SetFlag,
    WaitFlag,
    walk,
)
from pypto.ir import nodes as n
from pypto.ir.affine import linear, static_difference
from pypto.ir.rewrite import substitute
from pypto.ir.simplify import simplify
from pypto.backend import Pipe, SoC

UNKNOWN = object()  # an address or offset that depends on a name bound inside a compound


@attrs.frozen
class Edge:
    id: int
    u: int  # statement index of the producer in its block
    v: int  # statement index of the consumer
    src: tuple  # (core, pipe)
    dst: tuple
    distance: int
    base: int  # first event id
    region: Region | None = None  # set when the conflict is one slot of a rotating region
    slot_u: object = None  # the slot expressions, as the body spells them
    slot_v: object = None
    block: int = 0  # which block (function body, branch, loop body) u and v index
    passage: str | None = None  # "entry"/"exit": no sync, what a nested loop's syncs pass on (``_passages``)


@attrs.define
class _Node:
    t: int
    j: int
    key: tuple  # (core, pipe)
    accesses: list  # (loc, write), as seen in window iteration t
    original: list  # the same accesses as the body spells them
    seq: int = 0


class SyncInserter:
    def __init__(self, soc: SoC):
        self.soc = soc
        self.edges: list[Edge] = []
        self._ids = itertools.count()
        self._blocks = itertools.count()

    # ------------------------------------------------------------------ blocks

    def block(self, body, loop: Loop | None = None) -> tuple[list, list, list, list]:
        """(new body, prologue, epilogue, carried edges) with this block's syncs; nested
        blocks first."""
        groups = []  # each statement with what its children needed around it
        carried = []  # per statement: a loop's own edges, which also order what precedes and follows it
        runs = []  # per statement: whether it is a loop whose body surely runs
        for stmt in body:
            if isinstance(stmt, Loop):
                inner, pro, epi, inner_carried = self.block(stmt.body, stmt)
                groups.append([*pro, attrs.evolve(stmt, body=inner), *epi])
                # A loop's own syncs vouch for its parent when its body surely runs; else
                # only those set before it (prologue) and waited after it (epilogue) do.
                trip = _trip(stmt)
                runs.append(isinstance(trip, n.Const) and trip.value >= 1)
                carried.append(inner_carried if runs[-1] else [e for e in inner_carried if e.distance])
            elif isinstance(stmt, Cond):
                then_b, _, _, _ = self.block(stmt.then_body)
                else_b, _, _, _ = self.block(stmt.else_body)
                groups.append([attrs.evolve(stmt, then_body=then_b, else_body=else_b)])
                carried.append([])
                runs.append(False)
            else:
                groups.append([stmt])
                carried.append([])
                runs.append(False)
        summaries = [self.summary(g, original) for g, original in zip(groups, body)]
        self.runs = runs
        edges = self.analyse(summaries, loop, carried)
        before = [[] for _ in groups]
        after = [[] for _ in groups]
        prologue, epilogue = [], []
        for e in edges:
            set_ev, wait_ev = self.event_exprs(e)
            after[e.u].append(SetFlag(e.src[1], e.dst[1], set_ev, e.src[0], e.dst[0], e.id))
            before[e.v].append(WaitFlag(e.src[1], e.dst[1], wait_ev, e.src[0], e.dst[0], e.id))
            for k in range(e.distance):
                prologue.append(SetFlag(e.src[1], e.dst[1], self.boundary_event(e, loop, k, first=True),
                                        e.src[0], e.dst[0], e.id))
                epilogue.append(WaitFlag(e.src[1], e.dst[1], self.boundary_event(e, loop, k, first=False),
                                         e.src[0], e.dst[0], e.id))
        out = []
        for pre, group, post in zip(before, groups, after):
            out.extend(pre)
            out.extend(group)
            out.extend(post)
        return out, prologue, epilogue, edges + _passages(carried, runs)

    def summary(self, group, original) -> dict[tuple, list]:
        """key -> accesses (loc, write, index) of one statement: an instruction's own, or
        all the instructions of a compound, with addresses that depend on names bound
        inside it made unknown; ``index`` is the loop-body statement an access is in."""
        out: dict[tuple, list] = {}
        for node in group:  # a compound's syncs occupy pipes too, accessing nothing
            for x in walk([node]):
                if isinstance(x, (SetFlag, WaitFlag, Instr)):
                    out.setdefault((x.core, x.pipe), [])
        if isinstance(original, Instr):
            parts = [(None, [original])]
        elif isinstance(original, Loop):
            parts = [(k, [x for x in walk([child]) if isinstance(x, Instr)]) for k, child in enumerate(original.body)]
        elif isinstance(original, Cond):
            parts = [(None, [x for x in walk([original]) if isinstance(x, Instr)])]
        else:
            parts = []
        inner_names = set()
        if isinstance(original, (Loop, Cond)):
            for x in walk([original]):
                if isinstance(x, Loop):
                    inner_names.add(x.var)
                elif isinstance(x, ScalarAssign):
                    inner_names.add(x.name)
        for index, instrs in parts:
            for ins in instrs:
                for locs, write in ((ins.reads, False), (ins.writes, True)):
                    for loc in locs:
                        if isinstance(loc, BufLoc) and loc.region is not None and not loc.region.guarded:
                            continue  # ptoas does not see a second co-live slot (the unsafe switch let it through)
                        out[(ins.core, ins.pipe)].append((_blur(loc, inner_names), write, index))
        return out

    # ------------------------------------------------------------------ analysis

    def analyse(self, summaries, loop: Loop | None, carried) -> list[Edge]:
        self.block_id = next(self._blocks)
        window = 1
        if loop is not None:
            depth = max((a[0].region.slots for s in summaries for accs in s.values() for a in accs
                         if isinstance(a[0], BufLoc) and a[0].region is not None and a[0].addr is not UNKNOWN
                         and loop.var in n.expr_vars(a[0].region.slot)), default=1)
            window = depth + 1
            trip = _trip(loop)
            if isinstance(trip, n.Const):  # distances a loop never reaches need no sync
                window = max(1, min(window, trip.value))
        self.carried = carried
        self._reach: dict[tuple, dict] = {}
        self.loop, self.reach = loop, max(window - 1, 1) if loop is not None else -1
        self.variant = {x.name for x in walk(loop.body) if isinstance(x, ScalarAssign)} if loop is not None else set()
        nodes = []
        for t in range(window):
            for j, summary in enumerate(summaries):
                for key in sorted(summary, key=_rank):
                    accesses = [(self.at(loc, loop, t), w, k) for loc, w, k in summary[key]]
                    nodes.append(_Node(t, j, key, accesses, summary[key]))
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
        self.group_index = {(g[0].t, g[0].j): k for k, g in enumerate(self.groups_in_order)}
        by_place: dict[tuple, list] = {}  # (j, key) -> its node in each window iteration
        for x in nodes:
            by_place.setdefault((x.j, x.key), []).append(x)
        after: dict[int, list] = {}  # node -> what its completion implies of its compound's parts
        for a, x, at_start, own in self.implicit:
            after.setdefault(x.seq, []).append((a, at_start, own))
        self.places = ({(x.t, x.j, x.key): x for x in nodes}, by_place, after)
        state = self.known(nodes, pattern)
        while True:
            added = False
            for v in (x for x in nodes if x.t == last):
                for u, pair, first, last_k in sorted(conflicts.get(v.seq, []), key=lambda c: -c[0].seq):
                    if self.ordered(state[0], u, v, first, last_k):
                        continue
                    key = (u.j, u.key, v.j, v.key, v.t - u.t)
                    pattern[key] = (u, v, pair)
                    state = self.known(nodes, pattern, self.affected(key), state)
                    added = True
            if not added:
                break
        order = lambda k: (k[0], _rank(k[1]), k[2], _rank(k[3]), k[4])  # noqa: E731
        for key in sorted(pattern, key=lambda k: (-k[4], *order(k))):  # drop what others already order
            trial = {k: p for k, p in pattern.items() if k != key}
            tried = self.known(nodes, trial, self.affected(key), state)
            if self.covered(tried[0], nodes, conflicts):
                pattern, state = trial, tried
        return [self.make_edge(key, pattern[key], loop) for key in sorted(pattern, key=order)]

    def conflicts(self, nodes, last: int) -> dict[int, list]:
        """For each node of the last window iteration: the nearest conflicting node of each
        other pipe, with the access pair that conflicts and where in the bodies (see
        ``conflict``) — and earlier ones of that pipe that conflict with an earlier statement
        of v's loop body, which a chain of the loop's syncs ordering the nearest may miss."""
        out: dict[int, list] = {}
        for v in (x for x in nodes if x.t == last):
            found_for: dict[tuple, list] = {}
            earliest: dict[tuple, object] = {}  # per pipe: the first statement of v kept conflicts reach
            for u in reversed(nodes[: v.seq]):
                if u.key == v.key or (u.t, u.j) == (v.t, v.j):
                    continue
                if u.key in earliest and (earliest[u.key] is None or earliest[u.key] == 0):
                    continue  # ordering the later conflict orders this one (in-order pipe)
                found = self.conflict(u, v)
                if found is None:
                    continue
                first = found[1]
                if u.key in earliest and first is not None and first >= earliest[u.key]:
                    continue  # a loop's syncs that order the later conflict order this one too
                found_for.setdefault(u.key, []).append((u, *found))
                earliest[u.key] = first if u.key not in earliest or first is None else min(first, earliest[u.key])
            out[v.seq] = [c for cs in found_for.values() for c in cs]
        return out

    def implied(self, nodes) -> list[tuple]:
        """(a, x, start, own) where a nested loop's own syncs make x's completion imply a's
        start — pipe A's work before the loop, when the loop's syncs lead from A to x's pipe
        (``_entered``; with a body that may not run, only a prologue set from A drained on
        x's pipe after the loop does) — and/or A's own work in the loop, when it ends before
        syncs that lead to x's pipe within the last iteration (``_exited``; chains through
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

    def affected(self, key: tuple) -> int:
        """The first group (in node order) whose knowledge a pattern's edges can change:
        they end on (j, key) nodes from window iteration d on; the groups before keep theirs."""
        _, _, vj, _, d = key
        return self.group_index.get((d, vj), len(self.groups_in_order))

    def known(self, nodes, pattern, since: int = 0, base: tuple | None = None) -> tuple[dict, dict]:
        """(start, end): what each node knows has landed when it starts (key -> latest
        seq), and once it is done — its own work too and what ``implied`` adds. Under
        ``("done", key)``, the nodes known to have finished as a whole — a loop's waits
        included, which the landing of its work alone does not imply. Groups before group
        ``since`` are taken from ``base`` (an earlier result whose pattern differs only in
        edges that end at or after it): adding or dropping one pattern recomputes only what
        it can change."""
        by_pos, by_place, after = self.places
        preds: dict[int, list] = {}
        for (uj, ukey, vj, vkey, d) in pattern:
            for x in by_place.get((vj, vkey), ()):
                if x.t - d >= 0:
                    u = by_pos.get((x.t - d, uj, ukey))
                    if u is not None:
                        preds.setdefault(x.seq, []).append(u)
        groups = self.groups_in_order
        if base is None or since == 0:
            start, end = {}, {}
            since = 0
        else:
            start, end = dict(base[0]), dict(base[1])
        last_on: dict[tuple, _Node] = {}
        for group in groups[:since]:
            for x in group:
                last_on[x.key] = x
        for group in groups[since:]:
            for x in group:
                k: dict = {}
                sources = [last_on[x.key]] if x.key in last_on else []
                for u in sources + preds.get(x.seq, []):
                    _merge(k, end[u.seq])
                start[x.seq] = k
            for x in group:
                end[x.seq] = {**start[x.seq], x.key: x.seq, ("done", x.key): x.seq}
            for x in group:  # a compound's parts vouch for each other
                for a, at_start, own in after.get(x.seq, []):
                    # Never a's end: that holds what a learns after the body (its
                    # epilogue waits), which x's completion does not imply.
                    if at_start:
                        _merge(end[x.seq], start[a.seq])
                    if own:
                        _merge(end[x.seq], {a.key: a.seq})
            for x in group:
                last_on[x.key] = x
        return start, end

    def covered(self, known, nodes, conflicts) -> bool:
        return all(self.ordered(known, u, nodes[v], first, last_k)
                   for v, found in conflicts.items() for u, _, first, last_k in found)

    def ordered(self, known, u: _Node, v: _Node, first, last) -> bool:
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

    def conflict(self, u: _Node, v: _Node):
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
                if _may_overlap(la, lb) or v.t - u.t == self.reach and self.beyond(u.original[ia][0],
                                                                                   v.original[ib][0]):
                    pair = pair or (u.original[ia][0], v.original[ib][0])
                    first = None if first is None or kb is None else min(first, kb)
                    last = None if last is None or ka is None else max(last, ka)
        return None if pair is None else (pair, first, last)

    def entered(self, j: int, pipe) -> dict:
        """``_entered`` of statement j's loop, once per block (the analysis asks often)."""
        key = ("in", j, pipe)
        if key not in self._reach:
            self._reach[key] = _entered(self.carried[j], pipe)
        return self._reach[key]

    def exited(self, j: int, pipe) -> dict:
        key = ("out", j, pipe)
        if key not in self._reach:
            self._reach[key] = _exited(self.carried[j], pipe)
        return self._reach[key]

    def beyond(self, la, lb) -> bool:
        """Whether GM accesses ``la`` and then ``lb``, ``self.reach`` or more iterations
        later, can touch the same bytes (``out[(i + 2) * 8]`` stored, ``out[i * 8]`` loaded):
        dependences farther than the window are ordered at its widest distance, which in-order
        pipes carry on to every later iteration."""
        loop = self.loop
        if not (isinstance(la, GmLoc) and isinstance(lb, GmLoc) and la.tensor == lb.tensor
                and isinstance(loop.step, n.Const)):
            return False
        trip = _trip(loop)
        lo, hi = self.reach, trip.value - 1 if isinstance(trip, n.Const) else None
        for oa, ea, ob, eb in zip(la.offsets, la.extents, lb.offsets, lb.extents):
            a, b = linear(oa) if oa is not UNKNOWN else None, linear(ob) if ob is not UNKNOWN else None
            if a is None or b is None or self.variant & (set(a[1]) | set(b[1])):
                return False  # not provably apart at any distance: the window saw it
            ca, cb = a[1].pop(loop.var, 0), b[1].pop(loop.var, 0)
            if ca != cb or a[1] != b[1]:
                return False
            # lb's offset minus la's, k iterations later: d + slope * k, overlapping in (-eb, ea)
            d, slope = b[0] - a[0], ca * loop.step.value
            if slope == 0:
                if not -eb < d < ea:
                    return False
                continue
            first, last = sorted(((-eb - d) / slope, (ea - d) / slope))
            lo = max(lo, math.floor(first) + 1)
            hi = math.ceil(last) - 1 if hi is None else min(hi, math.ceil(last) - 1)
            if lo > hi:
                return False
        return True

    def at(self, loc, loop: Loop | None, t: int):
        """``loc`` as seen in window iteration t: the loop variable advanced t steps, and each
        scalar the body assigns (a carried offset, ``row = i + n``) an unknown of that
        iteration's own, so no access of another iteration is proved apart from it."""
        if loop is None or t == 0:
            return loc
        shift = {loop.var: simplify(n.BinOp("+", n.Var(loop.var), n.BinOp("*", n.Const(t), loop.step)))}
        shift.update({name: n.Var(f"{name}@{t}") for name in self.variant})
        return _map_exprs(loc, lambda e: simplify(substitute(e, shift)) if e is not UNKNOWN else e)

    # ------------------------------------------------------------------ events

    def make_edge(self, key, value, loop) -> Edge:
        uj, ukey, vj, vkey, d = key
        _, _, (la, lb) = value
        region = None
        if d >= 1 and loop is not None and isinstance(la, BufLoc) and isinstance(lb, BufLoc) \
                and la.region is not None and lb.region is not None and la.region.name == lb.region.name \
                and la.region.slot is not UNKNOWN and lb.region.slot is not UNKNOWN \
                and loop.var in n.expr_vars(la.region.slot) \
                and _rotates(la.region.slot, loop, la.region.slots) and _rotates(lb.region.slot, loop, lb.region.slots):
            region = la.region
        edge = Edge(next(self._ids), uj, vj, ukey, vkey, d, 0, region,
                    la.region.slot if region else None, lb.region.slot if region else None, self.block_id)
        self.edges.append(edge)
        return edge

    def event_exprs(self, e: Edge):
        """(set event, wait event): one id, or one per slot of a rotating region (relative
        to the edge's base, which ``assign_events`` fills in once the kernel is whole)."""
        if e.region is None:
            return n.Const(e.base), n.Const(e.base)
        return (simplify(n.BinOp("+", n.Const(e.base), e.slot_u)),
                simplify(n.BinOp("+", n.Const(e.base), e.slot_v)))

    def boundary_event(self, e: Edge, loop: Loop, k: int, *, first: bool):
        """The event of the k-th prologue set (feeding the waits of iterations 0..d-1) or
        epilogue wait (draining the sets of the last d iterations)."""
        if e.region is None:
            return n.Const(e.base)
        if first:
            at, slot = n.BinOp("+", loop.start, n.BinOp("*", n.Const(k), loop.step)), e.slot_v
        else:
            at = n.BinOp("+", loop.start, n.BinOp("*", n.BinOp("-", _trip(loop), n.Const(1 + k)), loop.step))
            slot = e.slot_u
        return simplify(n.BinOp("+", n.Const(e.base), substitute(slot, {loop.var: at})))


def _passages(carried, runs) -> list[Edge]:
    """What the nested loops of a body order on their own, as edges of the body for its
    parent's chains: when the loop at statement k surely runs and its syncs order pipe P's
    earlier work before pipe Q's work in it (``_entered``), P's work up to statement k - 1
    is ordered before Q's from statement k on, and P's from k before Q's from k + 1."""
    out = []
    for k, (edges, surely) in enumerate(zip(carried, runs)):
        if not (surely and edges):
            continue
        for p in dict.fromkeys(x for e in edges for x in (e.src, e.dst)):
            for q in _entered(edges, p):
                if q != p:
                    out.append(Edge(-1, k, k + 1, p, q, 0, 0, passage="entry"))
                    if k:
                        out.append(Edge(-1, k - 1, k, p, q, 0, 0, passage="exit"))
    return out


def _entered(edges, pipe) -> dict[tuple, int]:
    """For a loop whose body surely runs, with its own ``edges``: per pipe, the first body
    statement from which that pipe's work is ordered after everything ``pipe`` did before
    the loop — directly (a wait fed in the first iteration by a set after earlier work, or
    by a prologue set) or through a chain of same-iteration syncs."""
    first = {pipe: 0}
    changed = True
    while changed:
        changed = False
        for e in edges:
            if e.passage == "exit":
                continue
            fed = e.src == pipe if e.distance else e.src in first and e.u >= first[e.src]
            if fed and e.v < first.get(e.dst, e.v + 1):
                first[e.dst] = e.v
                changed = True
    return first


def _exited(edges, pipe) -> dict[tuple, int]:
    """The mirror of ``_entered``: per pipe, the last body statement up to which that
    pipe's work (of the last iteration, hence of all) is ordered before what ``pipe`` does
    after the loop — by an epilogue wait, or a chain of same-iteration syncs to a wait on
    ``pipe`` in the body."""
    last = {pipe: float("inf")}
    changed = True
    while changed:
        changed = False
        for e in edges:
            if e.passage == "entry":
                continue
            drains = e.dst == pipe if e.distance else e.dst in last and last[e.dst] >= e.v
            if drains and e.u > last.get(e.src, -1):
                last[e.src] = e.u
                changed = True
    return last


def _rotates(slot, loop: Loop, slots: int) -> bool:
    """Whether ``slot`` visits every slot once per ``slots`` iterations, in a fixed cycle
    (``i % 2`` with a constant step of 1 or 3; not ``(i // 2) % 2``, nor a runtime step):
    only then can each slot have its own event, set by one iteration and waited by the
    iteration that comes back to the slot."""
    if not (isinstance(loop.step, n.Const) and isinstance(slot, n.BinOp) and slot.op == "%"
            and slot.rhs == n.Const(slots)):
        return False
    inner = slot.lhs
    seen = set()
    for t in range(slots + 1):
        shifted = substitute(inner, {loop.var: n.BinOp("+", n.Var(loop.var), n.Const(t * loop.step.value))})
        d = static_difference(simplify(shifted), inner)
        if d is None:
            return False
        if t < slots:
            seen.add(d % slots)
    return len(seen) == slots and d % slots == 0


def _merge(into: dict, other: dict) -> None:
    for key, seq in other.items():
        if seq > into.get(key, -1):
            into[key] = seq


def _rank(key: tuple) -> tuple:
    core, pipe = key
    return core.value, list(Pipe).index(pipe)


def _too_many(pair, limit):
    from pypto.codegen.select import CodegenError

    (c1, p1), (c2, p2) = pair
    return CodegenError(f"more than {limit} syncs between {c1.name}.{p1.name} and {c2.name}.{p2.name} in one "
                        "kernel: the hardware has that many event ids per pipe pair",
                        hint="split the kernel, or use fewer live buffers per loop")


def _trip(loop: Loop):
    span = loop.stop if loop.start == n.Const(0) else n.BinOp("-", loop.stop, loop.start)
    if loop.step == n.Const(1):
        return simplify(span)
    return simplify(n.BinOp("//", n.BinOp("+", span, n.BinOp("-", loop.step, n.Const(1))), loop.step))


def _map_exprs(loc, f):
    if isinstance(loc, BufLoc):
        region = loc.region
        if region is not None and region.slot is not UNKNOWN:
            region = attrs.evolve(region, slot=f(region.slot))
        return attrs.evolve(loc, addr=f(loc.addr), region=region)
    return attrs.evolve(loc, offsets=tuple(f(o) for o in loc.offsets))


def _blur(loc, names: set):
    """Addresses and offsets that depend on ``names`` become UNKNOWN."""
    if not names:
        return loc
    return _map_exprs(loc, lambda e: UNKNOWN if e is UNKNOWN or n.expr_vars(e) & names else e)


def _same_value(a, b):
    """True / False when a == b is decidable for every value of the free names, else None."""
    if a is UNKNOWN or b is UNKNOWN:
        return None
    if a == b:
        return True
    if isinstance(a, n.Const) and isinstance(b, n.Const):
        return a.value == b.value
    if isinstance(a, n.BinOp) and isinstance(b, n.BinOp) and a.op == b.op == "%" and a.rhs == b.rhs \
            and isinstance(a.rhs, n.Const):
        d = static_difference(a.lhs, b.lhs)
        if d is not None:
            return d % a.rhs.value == 0
    d = static_difference(a, b)
    if d is not None:
        return d == 0
    return None


def _may_overlap(a, b) -> bool:
    if isinstance(a, BufLoc) and isinstance(b, BufLoc):
        if a.space is not b.space or a.core is not b.core:
            return False
        if a.region is not None and b.region is not None and a.region.name == b.region.name:
            same = _same_value(a.region.slot, b.region.slot)
            return same is not False
        ra, rb = _range(a), _range(b)
        if ra is None or rb is None:
            return True
        return ra[0] < rb[1] and rb[0] < ra[1]
    if isinstance(a, GmLoc) and isinstance(b, GmLoc):
        if a.tensor != b.tensor:
            return False
        for oa, ea, ob, eb in zip(a.offsets, a.extents, b.offsets, b.extents):
            if oa is UNKNOWN or ob is UNKNOWN:
                continue
            d = static_difference(ob, oa)
            if d is not None and (d >= ea or -d >= eb):
                return False
        return True
    return False


def _range(loc: BufLoc):
    if isinstance(loc.addr, n.Const):
        return loc.addr.value, loc.addr.value + loc.size
    if loc.region is not None:
        r = loc.region
        return r.base, r.base + r.slots * r.slot_size
    return None


def insert_syncs(body, soc: SoC) -> tuple[list, list[Edge]]:
    """``body`` with its syncs, and the edges they implement."""
    inserter = SyncInserter(soc)
    out, prologue, epilogue, _ = inserter.block(body)
    return assign_events([*prologue, *out, *epilogue], inserter.edges, soc.event_ids)


def assign_events(body, edges: list[Edge], limit: int) -> tuple[list, list[Edge]]:
    """Event ids per pipe pair by interval colouring: an edge holds its ids (one, or one per
    slot) from its first set or wait in program order to its last, so syncs of sequential
    loops or branches reuse ids that earlier ones have drained. When a pair runs out (a deep
    pipeline), edges whose sets and waits come in the same order share an id."""
    first: dict[int, int] = {}
    last: dict[int, int] = {}
    for pos, x in enumerate(walk(body)):
        if isinstance(x, (SetFlag, WaitFlag)):
            first.setdefault(x.edge, pos)
            last[x.edge] = pos
    try:
        bases, shared = _colour(edges, first, last, limit, {e.id: e.id for e in edges})
    except _OutOfIds:
        bases, shared = _colour(edges, first, last, limit, _chains(edges))

    def shifted(x):
        if not isinstance(x, (SetFlag, WaitFlag)):
            return x
        if x.edge in shared:
            return attrs.evolve(x, event=n.Const(bases[x.edge]))
        if bases[x.edge]:
            return attrs.evolve(x, event=simplify(n.BinOp("+", n.Const(bases[x.edge]), x.event)))
        return x

    out = [attrs.evolve(e, base=bases[e.id], region=None if e.id in shared else e.region) for e in edges]
    return _map_flags(body, shifted), out


class _OutOfIds(Exception):
    pass


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
        held = [(b, w) for stop, b, w in busy.get((e.src, e.dst), []) if stop >= start]
        base = width = None
        # One id per slot when the ids are there; else one id for all slots: flags pair
        # first in, first out, so each wait still meets its own set, only later.
        slots = e.region.slots if e.region is not None and size[e.id] == 1 else 1
        for want in dict.fromkeys((slots, 1)):
            base = next((b for b in range(limit - want + 1)
                         if not any(h < b + want and b < h + w for h, w in held)), None)
            if base is not None:
                width = want
                break
        if base is None:
            raise _OutOfIds() if len(set(leader.values())) == len(leader) else _too_many((e.src, e.dst), limit)
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
