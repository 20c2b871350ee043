"""What a nested loop's own syncs already order, seen from outside it: from which body
statement a pipe's work follows what another pipe did before the loop (``entered``), up to
which statement it precedes what follows the loop (``exited``), and the edges a body's
parent may count on (``passages``); a loop's trip count; whether a slot rotates."""

from __future__ import annotations

from pypto.codegen.isa import Instr, Loop, walk
from pypto.codegen.sync.edges import Edge
from pypto.ir import nodes as n
from pypto.ir.affine import static_difference
from pypto.ir.rewrite import substitute
from pypto.ir.simplify import simplify


def passages(carried, runs, summaries=None) -> list[Edge]:
    """What the nested loops of a body order on their own, as edges of the body for its
    parent's chains: when the loop at statement k surely runs and its syncs order pipe P's
    earlier work before pipe Q's work in it (``entered``), P's work up to statement k - 1
    is ordered before Q's from statement k on, and P's from k before Q's from k + 1. Where
    the loop's ``summaries`` (per pipe, its accesses with their body statements) show that
    all of Q's work in it comes after the wait — or, mirrored, all of P's before the set
    (``exited``) — the order holds from statement k itself: a chain through a loop nested
    two deep is seen from the outermost."""
    out = []
    for k, (edges, surely) in enumerate(zip(carried, runs)):
        if not (surely and edges):
            continue
        body = summaries[k] if summaries is not None else {}
        first = {key: min((i for _, _, i in accs if i is not None), default=float("inf")) for key, accs in body.items()}
        last = {key: max((i for _, _, i in accs if i is not None), default=-1) for key, accs in body.items()}
        for p in dict.fromkeys(x for e in edges for x in (e.src, e.dst)):
            for q, reach in entered(edges, p).items():
                if q != p:
                    whole = summaries is not None and reach <= first.get(q, float("inf"))
                    out.append(Edge(-1, k, k if whole else k + 1, p, q, 0, 0, passage="entry"))
                    if k:
                        out.append(Edge(-1, k - 1, k, p, q, 0, 0, passage="exit"))
            for q, reach in exited(edges, p).items():  # here p waits after the loop
                if q != p and summaries is not None and last.get(q, -1) <= reach:
                    out.append(Edge(-1, k, k + 1, q, p, 0, 0, passage="exit"))
    return out


def branch_passages(*branches) -> list[Edge]:
    """What an if's branches order on their own, seen from outside it as a body of one
    statement: P's earlier work before all of Q's work in it when, in each branch, Q's work
    all comes after a wait a chain from P feeds (``entered``); all of P's work in it
    before Q's later work when, in each, P's work all comes before a set whose chain Q
    waits on (``exited``). ``branches``: (its edges, its statements) each; a branch
    without such a chain (an empty else) gives nothing."""
    reach = []
    for edges, body in branches:
        first, last = {}, {}
        for k, child in enumerate(body):
            for x in walk([child]):
                if isinstance(x, Instr) and (x.reads or x.writes):
                    first.setdefault((x.core, x.pipe), k)
                    last[(x.core, x.pipe)] = k
        reach.append((edges, first, last))
    pipes = set.intersection(*({x for e in edges for x in (e.src, e.dst)} for edges, _, _ in reach))
    out = []
    for p in sorted(pipes, key=str):
        ins = [entered(edges, p) for edges, _, _ in reach]
        for q in sorted(set.intersection(*(set(i) for i in ins)) - {p}, key=str):
            if all(i[q] <= first.get(q, float("inf")) for i, (_, first, _) in zip(ins, reach)):
                out.append(Edge(-1, 0, 0, p, q, 0, 0, passage="entry"))
        outs = [exited(edges, p) for edges, _, _ in reach]
        for q in sorted(set.intersection(*(set(o) for o in outs)) - {p}, key=str):
            if all(last.get(q, -1) <= o[q] for o, (_, _, last) in zip(outs, reach)):
                out.append(Edge(-1, 0, 1, q, p, 0, 0, passage="exit"))
    return out


def entered(edges, pipe) -> dict[tuple, int]:
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
            if e.distance:
                fed = e.src == pipe
            elif e.passage == "entry" and e.u == e.v:
                # a nested loop's entry passage orders only what its source did before that
                # loop (statement u - 1 and earlier): the source's work inside it is not fed
                fed = e.src == pipe or e.src in first and e.u > first[e.src]
            else:
                fed = e.src in first and e.u >= first[e.src]
            if fed and e.v < first.get(e.dst, e.v + 1):
                first[e.dst] = e.v
                changed = True
    return first


def exited(edges, pipe) -> dict[tuple, int]:
    """The mirror of ``entered``: per pipe, the last body statement up to which that
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


def rotates(slot, loop: Loop, slots: int) -> bool:
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


def trip_count(loop: Loop):
    """The loop's trips as an expression of its bounds; None for a while loop (known only as it runs)."""
    if not loop.bounded:
        return None
    span = loop.stop if loop.start == n.Const(0) else n.BinOp("-", loop.stop, loop.start)
    if loop.step == n.Const(1):
        return simplify(span)
    return simplify(n.BinOp("//", n.BinOp("+", span, n.BinOp("-", loop.step, n.Const(1))), loop.step))
