"""Dynamic storage allocation with reuse penalties (DSA-RP), the solver under
memory_planner=DSA_RP: buffers with sizes, alignments and lifetimes, placed at byte
offsets in one fixed-capacity pool so that

- no two buffers in conflict share a byte (hard: their lifetimes overlap, or a
  separation the caller names — a declared allocation, a pipeline's stages);
- nothing lies in a reserved range or past the capacity (hard);
- among the placements that fit, the one whose buffers sharing bytes carry the least
  penalty weight (soft: a reuse the recognizer found costly), then the lowest peak.

Pure data in, data out; no IR. The search is canonical greedy: for each buffer, in an
order, the candidate offsets are zero, the ends of the reserved ranges and the aligned
tops of the neighbours placed so far (those it conflicts with or has a penalty with);
it takes the candidate of least added penalty, then the lowest. Several deterministic
orders are tried, and a penalty-blind first fit is kept as an incumbent; the best result
is checked by ``validate``, which shares nothing with the search. A ``None`` from
``solve`` means the bounded search found no fit: not a proof that none exists.
"""

from __future__ import annotations

import attrs


@attrs.frozen
class Item:
    """One buffer: ``live`` is where it is in use, closed position intervals."""

    key: str
    size: int
    align: int
    live: tuple  # ((start, end), ...), sorted, disjoint

    @property
    def start(self) -> int:
        return self.live[0][0]

    @property
    def end(self) -> int:
        return self.live[-1][1]


@attrs.frozen
class Problem:
    capacity: int
    items: tuple  # Item, ...
    reserved: tuple = ()  # ((lo, hi), ...): byte ranges no buffer may touch
    separations: frozenset = frozenset()  # frozenset({key, key}): kept apart whatever their lifetimes
    penalties: tuple = ()  # ((key, key, weight), ...): cost of the two sharing a byte


@attrs.frozen
class Objective:
    reuse_cost: int  # penalty weight of the pairs that share bytes
    peak: int  # the highest byte in use


@attrs.frozen
class Solution:
    offsets: dict  # key -> byte offset
    objective: Objective
    order: str  # the search order that found it


class InvalidProblem(ValueError):
    """A problem no placement could mean: a penalty on a pair that may never share."""


def aligned(nbytes: int, align: int) -> int:
    return -(-nbytes // align) * align


def lives_overlap(a: Item, b: Item) -> bool:
    if a.end < b.start or b.end < a.start:
        return False
    return any(x <= v and u <= y for x, y in a.live for u, v in b.live)


def bytes_overlap(a: int, size_a: int, b: int, size_b: int) -> bool:
    return a < b + size_b and b < a + size_a


class _Graph:
    """Who conflicts with whom, and the penalties, as adjacency."""

    def __init__(self, problem: Problem):
        self.items = {it.key: it for it in problem.items}
        keys = sorted(self.items, key=lambda k: self.items[k].start)
        self.hard: dict[str, set] = {k: set() for k in self.items}
        # a sweep by start: only items whose lives began before this one ended can overlap it
        for i, a in enumerate(keys):
            ia = self.items[a]
            for b in keys[i + 1:]:
                ib = self.items[b]
                if ib.start > ia.end:
                    break
                if lives_overlap(ia, ib):
                    self.hard[a].add(b)
                    self.hard[b].add(a)
        for pair in problem.separations:
            a, b = tuple(pair)
            self.hard[a].add(b)
            self.hard[b].add(a)
        self.soft: dict[str, dict] = {k: {} for k in self.items}
        for a, b, w in problem.penalties:
            if b in self.hard[a]:
                raise InvalidProblem(f"a penalty on '{a}' and '{b}', which may never share a byte")
            self.soft[a][b] = self.soft[a].get(b, 0) + w
            self.soft[b][a] = self.soft[b].get(a, 0) + w


def _orders(problem: Problem, graph: _Graph) -> list[tuple[str, list]]:
    items = problem.items

    def weight(it):
        return sum(graph.soft[it.key].values())

    return [
        ("largest first", sorted(items, key=lambda it: (-it.size, it.start, it.key))),
        ("first used first", sorted(items, key=lambda it: (it.start, -it.size, it.key))),
        ("most conflicted first", sorted(items, key=lambda it: (-len(graph.hard[it.key]), -it.size, it.key))),
        ("most penalized first", sorted(items, key=lambda it: (-weight(it), -it.size, it.start, it.key))),
        ("longest lived first", sorted(items, key=lambda it: (-(it.end - it.start), -it.size, it.key))),
    ]


def _greedy(problem: Problem, graph: _Graph, order: list, penalties: bool) -> dict | None:
    placed: dict[str, int] = {}
    floors = [0] + [hi for _, hi in problem.reserved]
    for it in order:
        hard = [(placed[k], graph.items[k].size) for k in graph.hard[it.key] if k in placed]
        soft = [(placed[k], graph.items[k].size, w) for k, w in graph.soft[it.key].items() if k in placed]
        tops = {aligned(x, it.align) for x in floors}
        tops.update(aligned(at + size, it.align) for at, size in hard)
        if penalties:
            tops.update(aligned(at + size, it.align) for at, size, _ in soft)
        best = None
        for at in sorted(tops):
            if at + it.size > problem.capacity:
                break
            if any(bytes_overlap(at, it.size, lo, hi - lo) for lo, hi in problem.reserved):
                continue
            if any(bytes_overlap(at, it.size, x, size) for x, size in hard):
                continue
            if not penalties:
                best = (0, at)
                break
            cost = sum(w for x, size, w in soft if bytes_overlap(at, it.size, x, size))
            if best is None or cost < best[0]:
                best = (cost, at)
                if cost == 0:
                    break  # candidates ascend: none later is cheaper or lower
        if best is None:
            return None
        placed[it.key] = best[1]
    return placed


def evaluate(problem: Problem, offsets: dict) -> Objective:
    """The objective of a placement, computed from the problem alone."""
    size = {it.key: it.size for it in problem.items}
    cost = sum(w for a, b, w in problem.penalties if bytes_overlap(offsets[a], size[a], offsets[b], size[b]))
    peak = max((offsets[k] + size[k] for k in size), default=0)
    return Objective(cost, peak)


def solve(problem: Problem) -> Solution | None:
    """The best placement the bounded search finds, or None (no fit found)."""
    graph = _Graph(problem)
    best = None
    orders = _orders(problem, graph)
    for name, order in orders:
        offsets = _greedy(problem, graph, order, penalties=True)
        if offsets is not None:
            found = Solution(offsets, evaluate(problem, offsets), name)
            if best is None or _key(found) < _key(best):
                best = found
    incumbent = _greedy(problem, graph, orders[0][1], penalties=False)  # first fit, penalty-blind
    if incumbent is not None:
        found = Solution(incumbent, evaluate(problem, incumbent), "first fit")
        if best is None or _key(found) < _key(best):
            best = found
    if best is not None:
        problems = validate(problem, best.offsets)
        if problems:
            raise AssertionError("DSA-RP placed buffers against its own constraints: " + "; ".join(problems))
    return best


def _key(s: Solution) -> tuple:
    return s.objective.reuse_cost, s.objective.peak


def validate(problem: Problem, offsets: dict) -> list[str]:
    """What is wrong with a placement, checked pair by pair from the problem alone."""
    out = []
    items = {it.key: it for it in problem.items}
    for key, it in items.items():
        at = offsets.get(key)
        if at is None:
            out.append(f"'{key}' is not placed")
            continue
        if at < 0 or at % it.align:
            out.append(f"'{key}' at {at} is off its {it.align} B alignment")
        if at + it.size > problem.capacity:
            out.append(f"'{key}' ends at {at + it.size}, past the capacity {problem.capacity}")
        for lo, hi in problem.reserved:
            if bytes_overlap(at, it.size, lo, hi - lo):
                out.append(f"'{key}' at [{at}, {at + it.size}) touches the reserved [{lo}, {hi})")
    placed = [it for it in items.values() if it.key in offsets]
    clashes = set()
    for pair in problem.separations:
        a, b = sorted(pair)
        if a in offsets and b in offsets and bytes_overlap(offsets[a], items[a].size, offsets[b], items[b].size):
            clashes.add((a, b))
    # pairs whose lives may overlap: by start, each against those starting before it ends
    placed.sort(key=lambda it: (it.start, it.key))
    for i, x in enumerate(placed):
        for y in placed[i + 1:]:
            if y.start > x.end:
                break
            if lives_overlap(x, y) and bytes_overlap(offsets[x.key], x.size, offsets[y.key], y.size):
                clashes.add(tuple(sorted((x.key, y.key))))
    out.extend(f"'{a}' and '{b}' must not share a byte, and they do" for a, b in sorted(clashes))
    return out
