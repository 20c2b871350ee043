"""Which reuses of bytes cost a cross-pipe sync: the recognizer under memory_planner=DSA_RP.

Two buffers whose lives do not overlap may share bytes. When the later one is first
written by one pipe and the earlier one was last touched by another, the writer must
wait for the other pipe to finish (a WAR or WAW hazard the sync inserter orders with a
flag): a stall the placement could avoid by putting the later buffer elsewhere. Each
such pair is a unit penalty for the solver (``passes.dsa``), which keeps them apart
while the space has room.

Each tile op's pipe is the one the code generator issues it on (``pipe_of``; a test
holds the two together). Recognition is conservative — a missed penalty costs time,
never correctness: a buffer touched by an op of no known pipe, split into slots, or
first touched by anything but a whole write gets no penalty; only the handoffs nearest
in program order are looked at (``NEAREST``: syncs in between most likely order a
farther one already); a pair in the two branches of an if never hands over.
"""

from __future__ import annotations

import bisect

import attrs

from pypto.backend import MemorySpace as M
from pypto.backend import Pipe
from pypto.ir import nodes as n
from pypto.ir.liveness import Liveness
from pypto.ir.ops import lookup
from pypto.ir.ops.pipes import FREES, INITS, POPS, PUSHES
from pypto.ir.ops.spmd import LANED
from pypto.ir.types import TileType

NEAREST = 8  # earlier buffers looked at per buffer, nearest first

_CROSS_CORE = frozenset({*PUSHES, *POPS, *FREES, *INITS, *LANED})


@attrs.frozen
class Access:
    pos: int  # the statement's position (``Liveness``)
    pipe: Pipe
    write: bool
    whole: bool  # a write of all of the tile (not one element or a window of it)


def pipe_of(call: n.Call, dst: TileType | None, types: dict) -> Pipe | None:
    """The pipe the code generator issues ``call`` on, or None where it is not one known pipe."""
    op = lookup(call.op)
    if op is None or op.level != "tile" or call.op in _CROSS_CORE:
        return None
    tiles = [types[a.name] for a in call.args if isinstance(a, n.Var) and isinstance(types.get(a.name), TileType)]
    if call.op in ("tile.load", "tile.gather_row"):
        return Pipe.MTE2
    if call.op == "tile.store":
        return Pipe.FIXPIPE if tiles and tiles[0].space is M.Acc else Pipe.MTE3
    if call.op in ("tile.read", "tile.write", "tile.debug_print"):
        return Pipe.SCALAR
    if call.op in ("tile.mgather", "tile.mscatter"):
        return Pipe.VECTOR
    if dst is None:
        return None
    if call.op == "tile.move":
        src = tiles[0].space if tiles else None
        if src is M.Acc:
            return Pipe.FIXPIPE
        if src is M.Mat:
            return Pipe.MTE1
        return Pipe.VECTOR if src is M.Vec and dst.space is M.Vec else None
    if call.op == "tile.assemble" and dst.space is M.Mat:
        return Pipe.FIXPIPE
    if call.op == "tile.transpose_view":
        return Pipe.MTE1
    if op.mnemonic == "MMAD":
        return Pipe.CUBE
    if call.op == "tile.create" and dst.space is not M.Vec:
        return Pipe.CUBE if dst.space is M.Acc else Pipe.MTE1
    return Pipe.VECTOR if dst.space is M.Vec else None


def accesses(fn: n.Function, walker: Liveness) -> tuple[dict, set]:
    """MemRef name -> its accesses in program order, and the MemRefs of uncertain ones
    (an op of no known pipe, a tile bound other than by an op)."""
    types = n.symbols(fn)
    out: dict[str, list[Access]] = {}
    uncertain: set[str] = set()

    def memref(name):
        t = types.get(name)
        return t.memref.name if isinstance(t, TileType) and t.memref is not None else None

    for pos, stmt in walker.stmts.items():
        if isinstance(stmt, (n.Assign, n.Eval)):
            value = stmt.value
            target = stmt.target if isinstance(stmt, n.Assign) else None
            read = [m for m in (memref(x) for e in n.value_exprs(value) for x in sorted(n.expr_vars(e))) if m]
            written = memref(target) if target is not None else None
            dst = types.get(target)
            dst = dst if isinstance(dst, TileType) else None
            pipe = pipe_of(value, dst, types) if isinstance(value, n.Call) else None
            if pipe is None:
                uncertain.update(read + ([written] if written else []))
                continue
            for m in read:
                out.setdefault(m, []).append(Access(pos, pipe, False, False))
            if written:
                whole = lookup(value.op).updates is None
                out.setdefault(written, []).append(Access(pos, pipe, True, whole))
    return out, uncertain


def _initial_write(acc: list[Access]) -> Pipe | None:
    first = min(acc, key=lambda a: (a.pos, not a.write))
    return first.pipe if first.write and first.whole and not any(a.pos == first.pos and not a.write for a in acc) \
        else None


def _stalls(before: list[Access], pipe: Pipe) -> bool:
    """Whether a write on ``pipe`` over a buffer accessed as ``before`` must wait for
    another pipe: an access on another pipe, unless it is a write that a later read on
    ``pipe`` has waited for already."""
    for a in before:
        if a.pipe is pipe:
            continue
        if a.write and any(r.pos > a.pos and not r.write and r.pipe is pipe for r in before):
            continue
        return True
    return False


def penalties(fn: n.Function, bufs: dict, walker: Liveness, separated) -> list[tuple[str, str, int]]:
    """(earlier, later, 1) for each pair of buffers in one space whose sharing of bytes
    makes a write wait for another pipe (at the handoff, or at the next iteration's
    handoff back when both live within one loop's body)."""
    acc, uncertain = accesses(fn, walker)
    known = {name: b for name, b in bufs.items()
             if name in acc and name not in uncertain and b.slots == 1}
    firsts = {name: _initial_write(acc[name]) for name in known}
    by_end: dict = {}  # space -> its buffers by where their lives end
    for b in sorted(known.values(), key=lambda b: (b.end, b.name)):
        by_end.setdefault(b.space, []).append(b)
    ends = {space: [b.end for b in group] for space, group in by_end.items()}
    out = []
    for name, later in known.items():
        pipe = firsts[name]
        if pipe is None:
            continue
        group = by_end[later.space]
        nearest = []
        for k in range(bisect.bisect_left(ends[later.space], later.start) - 1, -1, -1):  # ends before it starts
            b = group[k]
            if frozenset((b.name, name)) in separated or walker.exclusive(b.end, later.start):
                continue
            nearest.append(b)
            if len(nearest) == NEAREST:
                break
        for b in nearest:
            back = firsts[b.name]
            again = back is not None and any(loop.start < b.start and later.end <= loop.end
                                             for loop in walker.loops_at(b.start))
            if _stalls(acc[b.name], pipe) or again and _stalls(acc[name], back):
                out.append((b.name, name, 1))
    return out
