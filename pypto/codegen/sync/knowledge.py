"""What each node of a block's analysis knows has landed: when it starts, the latest work
of each pipe (by node order) that reaches it through its pipe's order, the pattern's edges
and a nested loop's own syncs; and once it is done. Immutable: adding or dropping one
pattern edge makes a new ``Knowledge`` and recomputes only the groups whose inputs change.
The state (what each node knows) is updated in place, so an update costs what it changes,
not the whole block: a trial that is turned down is undone from its log.

    knowledge = Knowledge(groups, by_pos, by_place, after)
    state = knowledge.full()                              # (start, end): node -> {key: seq}
    knowledge = knowledge.adding(key, state)              # one more pattern edge, settled lazily:
    knowledge.settle(state, g)                            # ... state up to date up to group g
    trial, undo = knowledge.dropping(key, state)          # one fewer; trial.moved: what moved
    undo()                                                # ... or not after all
"""

from __future__ import annotations

import copy
import heapq

from pypto.codegen.sync.edges import Node, merge


_ABSENT = object()  # a log entry's key had no value before


class Knowledge:
    def __init__(self, groups: list, by_pos: dict, by_place: dict, after: dict, preds: dict | None = None,
                 successors: dict | None = None):
        """``groups``: the nodes in order, by (iteration, statement); ``by_pos``: (t, j, key) ->
        node; ``by_place``: (j, key) -> its node in each iteration; ``after``: node -> what its
        completion implies of its compound's parts (``implied``). ``preds`` / ``successors``:
        the nodes the pattern's edges order each after / before."""
        self.groups, self.by_pos, self.by_place, self.after = groups, by_pos, by_place, after
        self.preds = preds if preds is not None else {}
        # (a dropped edge's source keeps its old target here: that one is recomputed anyway)
        self.successors = successors if successors is not None else {}
        self.moved: set = set()  # the groups whose starts the last update changed
        # groups whose inputs changed and are not yet recomputed (knowledge flows forward in
        # group order, so a group is settled once every pending group before it is)
        self.pending: list[int] = []
        self.queued: set[int] = set()
        self.prev_on: dict[int, Node] = {}  # each node's neighbours on its pipe, and its group
        self.next_on: dict[int, Node] = {}
        self.group_of: dict[int, int] = {}
        last_on: dict[tuple, Node] = {}
        for g, group in enumerate(groups):
            for x in group:
                self.group_of[x.seq] = g
                if x.key in last_on:
                    self.prev_on[x.seq] = last_on[x.key]
                    self.next_on[last_on[x.key].seq] = x
            for x in group:
                last_on[x.key] = x

    def _with(self, preds: dict, successors: dict) -> Knowledge:
        """The same block's knowledge over other edge tables (the chain is shared)."""
        out = copy.copy(self)
        out.preds, out.successors, out.moved = preds, successors, set()
        out.pending, out.queued = list(self.pending), set(self.queued)
        return out

    def instances(self, key: tuple) -> list[tuple]:
        """(u, x) for each window iteration a pattern's edge orders x after u in."""
        uj, ukey, vj, vkey, d = key
        out = []
        for x in self.by_place.get((vj, vkey), ()):
            if x.t - d >= 0:
                u = self.by_pos.get((x.t - d, uj, ukey))
                if u is not None:
                    out.append((u, x))
        return out

    def adding(self, key: tuple, state: tuple) -> Knowledge:
        """The knowledge with one more pattern edge. ``state`` is brought up to date as it is
        read (``settle``): a sweep adding edges in node order would otherwise carry each
        new edge's news to the end of the block, once per edge. (The edge tables are
        shared with this one, which is not to be used again.)"""
        pairs = self.instances(key)
        preds, successors = self.preds, self.successors
        for u, x in pairs:
            preds[x.seq] = (*preds.get(x.seq, ()), u)
            successors[u.seq] = (*successors.get(u.seq, ()), x)
        out = self._with(preds, successors)
        out.enqueue(pairs)
        return out

    def dropping(self, key: tuple, state: tuple):
        """(the knowledge without one pattern edge, a function that undoes the trial):
        ``state`` is brought up to date; undone, it is as it was and this knowledge holds."""
        pairs = self.instances(key)
        log: list = []
        preds = self.preds
        for u, x in pairs:
            log.append((preds, x.seq, preds[x.seq]))
            rest = list(preds[x.seq])
            rest.remove(u)
            preds[x.seq] = tuple(rest)
        out = self._with(preds, self.successors)
        out.enqueue(pairs)
        out.settle(state, log=log)

        def undo():
            for table, k, old in reversed(log):
                if old is _ABSENT:
                    del table[k]
                else:
                    table[k] = old
        return out, undo

    def full(self) -> tuple[dict, dict]:
        """(start, end): what each node knows has landed when it starts (key -> latest
        seq), and once it is done — its own work too and what ``implied`` adds. Under
        ``("done", key)``, the nodes known to have finished as a whole — a loop's waits
        included, which the landing of its work alone does not imply."""
        start: dict = {}
        end: dict = {}
        for group in self.groups:
            self.group(group, start, end)
        return start, end

    def enqueue(self, pairs: list) -> None:
        """The groups of the edges ``pairs`` end with are to be recomputed."""
        for _, x in pairs:
            self._queue(self.group_of[x.seq])

    def _queue(self, g: int) -> None:
        if g not in self.queued:
            self.queued.add(g)
            heapq.heappush(self.pending, g)

    def settle(self, state: tuple, upto: int | None = None, log: list | None = None) -> None:
        """``state`` made ``full()`` of this knowledge for the groups up to ``upto`` (all
        when None) — it is the state of a pattern that differs only in the edges whose
        groups are pending: only those are recomputed, in node order, then whoever reads a
        node whose knowledge changed (the next node on its pipe, the nodes it is a pred
        of). Each entry replaced goes to ``log`` first (a value is never changed in place
        once set)."""
        start, end = state
        todo = self.pending
        while todo and (upto is None or todo[0] <= upto):
            g = heapq.heappop(todo)
            self.queued.discard(g)
            group = self.groups[g]
            before = [(start.get(x.seq), end[x.seq]) for x in group]
            if log is not None:
                for x, (old_start, old) in zip(group, before):
                    log.append((start, x.seq, _ABSENT if old_start is None else old_start))
                    log.append((end, x.seq, old))
            self.group(group, start, end)
            for x, (old_start, old) in zip(group, before):
                if start[x.seq] != old_start:
                    self.moved.add(g)
                if end[x.seq] == old:
                    continue
                if x.seq in self.next_on:
                    self._queue(self.group_of[self.next_on[x.seq].seq])
                for y in self.successors.get(x.seq, ()):
                    self._queue(self.group_of[y.seq])

    def group(self, group: list, start: dict, end: dict) -> None:
        """One group's knowledge from what its nodes read: the node before each on its pipe,
        its preds, and — a compound's parts vouching for each other — its group's starts."""
        for x in group:
            prev = self.prev_on.get(x.seq)
            k = dict(end[prev.seq]) if prev is not None else {}  # (a copy: most nodes read only it)
            for u in self.preds.get(x.seq, ()):
                merge(k, end[u.seq])
            start[x.seq] = k
        for x in group:
            end[x.seq] = {**start[x.seq], x.key: x.seq, ("done", x.key): x.seq}
        for x in group:
            for a, at_start, own in self.after.get(x.seq, []):
                # Never a's end: that holds what a learns after the body (its epilogue
                # waits), which x's completion does not imply.
                if at_start:
                    merge(end[x.seq], start[a.seq])
                if own:
                    merge(end[x.seq], {a.key: a.seq})
