"""Sync insertion over a kernel's body: each block (nested blocks first) analysed into its
edges (``analysis``), each edge placed as a set after its producer and a wait before its
consumer — and, across loop iterations, prologue sets and epilogue waits — then event ids
assigned (``events``)."""

from __future__ import annotations

import itertools

import attrs

from pypto.backend import SoC
from pypto.codegen.isa import BufLoc, Cond, Instr, Loop, ScalarArray, ScalarAssign, ScalarLoad, SetFlag, WaitFlag, walk
from pypto.codegen.sync.analysis import BlockAnalysis
from pypto.codegen.sync.edges import Edge
from pypto.codegen.sync.events import assign_events
from pypto.codegen.sync.locations import blur
from pypto.codegen.sync.passages import branch_passages, passages, trip_count
from pypto.ir import nodes as n
from pypto.ir.rewrite import substitute
from pypto.ir.simplify import simplify


class SyncInserter:
    def __init__(self, soc: SoC):
        self.soc = soc
        self.edges: list[Edge] = []
        self._ids = itertools.count()
        self._blocks = itertools.count()

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
                trip = trip_count(stmt)
                runs.append(isinstance(trip, n.Const) and trip.value >= 1)
                carried.append(inner_carried if runs[-1] else [e for e in inner_carried if e.distance])
            elif isinstance(stmt, Cond):
                then_b, _, _, then_edges = self.block(stmt.then_body)
                else_b, _, _, else_edges = self.block(stmt.else_body)
                groups.append([attrs.evolve(stmt, then_body=then_b, else_body=else_b)])
                # What both branches' own syncs order, as edges of a one-statement body
                # that surely runs (either branch does): none when a branch lacks the chain.
                both = branch_passages((then_edges, stmt.then_body), (else_edges, stmt.else_body))
                carried.append(both)
                runs.append(bool(both))
            else:
                groups.append([stmt])
                carried.append([])
                runs.append(False)
        summaries = [self.summary(g, original) for g, original in zip(groups, body)]
        edges = BlockAnalysis(summaries, loop, carried, runs, next(self._blocks), self._ids,
                              self.edges).analyse()
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
        return out, prologue, epilogue, edges + passages(carried, runs, summaries)

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
        elif isinstance(original, Cond):  # one statement of a body of one: what branch_passages says of it
            parts = [(0, [x for x in walk([original]) if isinstance(x, Instr)])]
        else:
            parts = []
        inner_names = set()
        if isinstance(original, (Loop, Cond)):
            for x in walk([original]):
                if isinstance(x, Loop):
                    inner_names.add(x.var)
                elif isinstance(x, (ScalarAssign, ScalarLoad, ScalarArray)):
                    inner_names.add(x.name)
                elif isinstance(x, Instr) and x.result is not None:
                    inner_names.add(x.result)
        for index, instrs in parts:
            for ins in instrs:
                for locs, write in ((ins.reads, False), (ins.writes, True)):
                    for loc in locs:
                        if isinstance(loc, BufLoc) and loc.region is not None and not loc.region.guarded:
                            continue  # ptoas does not see a second co-live slot (the unsafe switch let it through)
                        out[(ins.core, ins.pipe)].append((blur(loc, inner_names), write, index))
        return out

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
            at = n.BinOp("+", loop.start, n.BinOp("*", n.BinOp("-", trip_count(loop), n.Const(1 + k)), loop.step))
            slot = e.slot_u
        return simplify(n.BinOp("+", n.Const(e.base), substitute(slot, {loop.var: at})))


def insert_syncs(body, soc: SoC) -> tuple[list, list[Edge]]:
    """``body`` with its syncs, and the edges they implement."""
    inserter = SyncInserter(soc)
    out, prologue, epilogue, _ = inserter.block(body)
    return assign_events([*prologue, *out, *epilogue], inserter.edges, soc.event_ids)
