"""The skipped trips of a fast-forwarded loop (``steady``) as one effect of a timeline.

Each skipped trip performs the last simulated trip's effects with their offsets moved on:
trip j's are the base trip's moved j steps (``drift.moved``), made as it runs, so nothing is
kept per trip. Where the trips share no data but what each computes for itself — every
on-chip buffer a trip reads it wrote earlier in the same trip, or no trip writes; no trip
stores GM another trip touches — each instruction runs for many trips at once (``plan``),
on a stacked copy of its buffers, one per trip, with GM windows as strided views; the
buffers end as the last trip leaves them. Where nothing moves from trip to trip, each trip
is one function of the memories again, so once a trip leaves what it writes as it found it
every later trip would too, and the rest are done (``settles``: a loop storing one tile to
one place, 2**40 times, takes a trip or two). Elsewhere the trips run one after the other.

Batches keep every op's bits: copies are exact whatever their shape, and an elementwise op
batches only where each tile is a whole number of torch's vector blocks and a batch stays
below torch's grain (so neither a scalar tail nor a thread split falls inside a tile)."""

from __future__ import annotations

import torch

from pypto.sim.fastforward import drift
from pypto.sim.reports import progress
from pypto.sim.ops.semantics import OutOfRange, window
from pypto.sim.accesses.views import span_of

_CHUNK_BYTES = 1 << 19  # the stacked buffers of one batch: a cache's worth
_GRAIN = 32768  # torch computes an elementwise op of fewer elements on one thread (the simulator runs on one: execute)
_VECTOR_BLOCK = 64  # elements: a multiple of torch's vector loop step, in every dtype and ISA
_LOOK = 64  # trips between two looks at whether a trip changed anything (and each of the first, by powers of two)


class Trips:
    """``entries``: (template, varying, step per trip) of the base trip, in its order;
    ``trips``: how many follow it; ``plan``: the batched form, if the trips batch
    (``plan``); ``settles``: what each trip writes, where nothing moves (``settles``);
    ``where``: the loop, as the progress line names it."""

    __slots__ = ("entries", "trips", "plan", "chunk", "settles", "where")

    def __init__(self, entries, trips: int, plan=None, chunk: tuple = (1, 1), settles=None, where: str = "a loop"):
        self.entries, self.trips, self.plan, self.chunk = entries, trips, plan, chunk
        self.settles, self.where = settles, where


def perform(views, tensors, memories, buffers, block: Trips) -> None:
    """A Steps template: the trips, batched where planned, until settled where nothing moves."""
    if block.plan is not None:
        _batched(views, tensors, memories, buffers, block)
    elif block.settles is not None:
        _until_settled(views, tensors, memories, buffers, block)
    else:
        _one_by_one(views, tensors, memories, buffers, block, 1, block.trips + 1)


def _one_by_one(views, tensors, memories, buffers, block: Trips, first: int, end: int) -> None:
    """Trips ``first`` .. ``end - 1``, each entry's varying moved on to the trip."""
    follow = progress.looping(f"the data of {block.where}", end - first)
    try:
        for j in range(first, end):
            for template, varying, delta in block.entries:
                template(views, tensors, memories, buffers, drift.moved(varying, delta, j))
            if follow is not None:
                follow.trip(j - first)
    finally:
        if follow is not None:
            follow.close()


def _until_settled(views, tensors, memories, buffers, block: Trips) -> None:
    """Trips that move nothing, one by one until one leaves what they write as it found it.
    A trip is then a function of the memories that writes only ``settles``: unchanged
    there, it is unchanged everywhere, and so is every trip after it."""
    steps = [(template, varying) for template, varying, _ in block.entries]
    written = _contents(block.settles, memories, tensors)
    if written is None:  # (a window out of its tensor: the trips say where, one by one)
        return _one_by_one(views, tensors, memories, buffers, block, 1, block.trips + 1)
    follow = progress.looping(f"the data of {block.where}", block.trips)
    try:
        for j in range(1, block.trips + 1):
            look = j % _LOOK == 0 or not j & (j - 1)
            before = [x.clone() for x in written] if look else None
            for template, varying in steps:
                template(views, tensors, memories, buffers, varying)
            if look and all(torch.equal(a, b) for a, b in zip(before, written)):
                return
            if follow is not None:
                follow.trip(j)
    finally:
        if follow is not None:
            follow.close()


def settles(entries, steps):
    """What the trips of ``entries`` write — (buffers, GM windows as (parameter, offsets,
    extents)) — where no entry moves and each one's writes are known; else None."""
    buffers, windows = [], []
    for template, varying, delta in entries:
        if delta is not None:
            return None
        kind = getattr(template, "batch", None)
        if kind is None:  # an op's own template: its result buffer, unless it writes GM
            if getattr(template, "writes_gm", True):
                return None
            if varying[2] is not None:
                buffers.append(varying[2])
        elif kind[0] == "store":
            windows.append((kind[1], varying[1], varying[2]))
        else:
            buffers.extend(_buffers(kind, varying)[1])
    return [steps.buffers[i] for i in dict.fromkeys(buffers)], list(dict.fromkeys(windows))


_BITS = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


def _contents(settles, memories, tensors):
    """The bytes ``settles`` names, as live views compared bit for bit (a NaN is itself,
    -0.0 is not 0.0); None where a window leaves its tensor."""
    buffers, windows = settles
    out = [memories.raw[(core, b.space)][b.addr: b.addr + b.nbytes] for core, b in buffers]
    for param, offsets, extents in windows:
        t = tensors[param]
        try:
            index = window(t.shape, offsets, extents, "window")
        except OutOfRange:
            return None
        bits = _BITS.get(t.element_size())
        if bits is None:
            return None
        out.append(t[index].view(bits))
    return out


def _batched(views, tensors, memories, buffers, block: Trips) -> None:
    stacks = _Stacks()
    # windows move affinely: all trips fit where the first and the last do
    every = all(fits(views, tensors, 1, block.trips) for fits, _ in block.plan)
    chunk = block.chunk[0] if torch.get_num_threads() == 1 else block.chunk[1]
    for j0 in range(1, block.trips + 1, chunk):
        count = min(chunk, block.trips + 1 - j0)
        stacks = _Stacks()
        if every or all(fits(views, tensors, j0, count) for fits, _ in block.plan):
            for _, run in block.plan:
                run(views, tensors, stacks, j0, count)
            continue
        # these trips cannot batch (a window out of range, a converting store): trip by
        # trip, nothing of them done yet, to fail where they fail
        _one_by_one(views, tensors, memories, buffers, block, j0, j0 + count)
        stacks = _Stacks()
    for i, stack in stacks.items():  # the buffers as the last trip leaves them
        views[i].copy_(stack[-1])


def plan(entries, steps, trips: int, tensors: dict):
    """(batched ops, trips per batch (on one thread, on more)) for ``entries`` over Steps ``steps`` and the launch's
    GM ``tensors``, or None where the trips cannot batch on-chip (GM is the caller's to
    show apart: ``steady``)."""
    ops, numel = [], 0
    stored = [span_of(tensors[t.batch[1]]) for t, _, _ in entries if getattr(t, "batch", ("",))[0] == "store"]
    for template, varying, delta in entries:
        kind = getattr(template, "batch", None)
        if kind is None:
            return None
        reads, writes = _buffers(kind, varying)
        if any(i in steps.unaligned for i in (*reads, *writes)):
            return None
        # a load of bytes no store of the trips writes: its readers may read the GM window
        # itself, until its buffer is written again
        lazy = kind[0] == "load" and not any(lo < b and a < hi for a, b in stored
                                             for lo, hi in [span_of(tensors[kind[1]])])
        op = _op(kind, varying, delta, lazy)
        if op is None:
            return None
        ops.append(op)
        if kind[0] == "into":
            sizes = [_numel(steps.buffers[i][1]) for i in (*reads, *writes)]
            if any(size % _VECTOR_BLOCK for size in sizes):
                return None  # a tile's scalar tail would fall elsewhere in a batch
            numel = max(numel, *sizes)
    written = {i for t, v, _ in entries for i in _buffers(t.batch, v)[1]}
    if not _private(entries, steps):
        return None
    per_trip = sum(steps.buffers[i][1].nbytes for i in written) or 1
    chunk = max(1, min(trips, _CHUNK_BYTES // per_trip))
    # on more than one thread torch splits an op at its grain, maybe inside a tile
    threaded = max(1, min(chunk, (_GRAIN - 1) // numel)) if numel else chunk
    return ops, (chunk, threaded)


def _numel(b) -> int:
    out = 1
    for s in b.shape:
        out *= s
    return out


def _buffers(kind, varying) -> tuple:
    """(buffers read, buffers written) of one step."""
    if kind[0] == "load":
        return (), (varying[0],)
    if kind[0] == "store":
        return (varying[0],), ()
    if kind[0] == "move":
        return (varying[0],), (varying[1],)
    _, _, kinds = kind
    operands, out = varying
    return tuple(x for k, x in zip(kinds, operands) if k), (out,)


def _private(entries, steps) -> bool:
    """Whether each trip reads on-chip only what it wrote before in the trip, or what no
    trip writes — and no two buffers it names share bytes, so a stacked copy per buffer
    is a trip's memory."""
    kinds = [(getattr(t, "batch"), v) for t, v, _ in entries]
    every_write = {i for kind, v in kinds for i in _buffers(kind, v)[1]}
    named = {i for kind, v in kinds for part in _buffers(kind, v) for i in part}
    written = set()
    for kind, v in kinds:
        reads, writes = _buffers(kind, v)
        if any(i in every_write and i not in written for i in reads):
            return False  # carried from the trip before
        written.update(writes)
    spans = sorted((core, b.space, b.addr, b.addr + b.nbytes) for core, b in (steps.buffers[i] for i in named))
    for (c1, s1, _, hi), (c2, s2, lo, _) in zip(spans, spans[1:]):
        if (c1, s1) == (c2, s2) and lo < hi:
            return False
    return True


def _op(kind, varying, delta, lazy: bool = False):
    """One step batched: (fits, run). ``fits(views, tensors, first trip, trips)``: whether
    these trips can run batched (their windows inside their tensors, moving forwards; no
    converting store) — asked of every step before any runs, so a batch that cannot is
    run trip by trip from its start; ``run(views, tensors, stacks, first trip, trips)``."""
    tag = kind[0]
    delta = delta or (None,) * len(varying)
    if tag == "load":
        _, param, shape, transpose = kind
        out, r0, c0 = varying
        if delta[0] is not None:
            return None
        dr, dc = delta[1] or 0, delta[2] or 0
        rows, cols = shape

        def fits(views, tensors, j0, count):
            t = tensors[param]
            s0, s1 = t.stride()
            return dr * s0 + dc * s1 >= 0 and _inside(t.shape, (r0 + j0 * dr, c0 + j0 * dc), shape) \
                and _inside(t.shape, (r0 + (j0 + count - 1) * dr, c0 + (j0 + count - 1) * dc), shape)

        def load(views, tensors, stacks, j0, count):
            t = tensors[param]
            s0, s1 = t.stride()
            src = t.as_strided((count, rows, cols), (dr * s0 + dc * s1, s0, s1),
                               t.storage_offset() + (r0 + j0 * dr) * s0 + (c0 + j0 * dc) * s1)
            if transpose:
                src = src.transpose(1, 2)
            if lazy and src.is_contiguous():  # read in place: the same elements in the same order
                stacks[out] = src
                stacks.lazy.add(out)
            else:
                _dest(views, stacks, out, count).copy_(src)

        return fits, load
    if tag == "store":
        _, param, whole = kind
        tile, offsets, valid = varying
        if delta[0] is not None or delta[2] is not None:
            return None
        steps = tuple(d or 0 for d in (delta[1] or (None,) * len(offsets)))

        def fits(views, tensors, j0, count):
            t = tensors[param]
            return views[tile].dtype == t.dtype and sum(d * s for d, s in zip(steps, t.stride())) >= 0 \
                and _inside(t.shape, tuple(o + j0 * d for o, d in zip(offsets, steps)), valid) \
                and _inside(t.shape, tuple(o + (j0 + count - 1) * d for o, d in zip(offsets, steps)), valid)

        def store(views, tensors, stacks, j0, count):
            t = tensors[param]
            data = _read(views, stacks, tile, count)
            if not whole:
                data = data[(slice(None), *(slice(0, v) for v in valid))]
            strides = t.stride()
            dst = t.as_strided((count, *valid), (sum(d * s for d, s in zip(steps, strides)), *strides),
                               t.storage_offset() + sum((o + j0 * d) * s for o, d, s in zip(offsets, steps, strides)))
            dst.copy_(data)

        return fits, store
    if any(d is not None for d in delta):
        return None
    if tag == "move":
        src, out = varying

        def move(views, tensors, stacks, j0, count):
            _dest(views, stacks, out, count).copy_(_read(views, stacks, src, count))

        return _always, move
    _, fn, kinds = kind
    operands, out = varying

    def into(views, tensors, stacks, j0, count):
        args = [_read(views, stacks, x, count) if k else x for k, x in zip(kinds, operands)]
        fn(_dest(views, stacks, out, count), *args)

    return _always, into


def _always(views, tensors, j0, count) -> bool:
    return True


def _inside(shape, offsets, extents) -> bool:
    try:
        window(shape, offsets, extents, "window")
    except OutOfRange:
        return False
    return True


def _read(views, stacks, i, count):
    got = stacks.get(i)
    if got is not None:
        return got
    v = views[i]  # what no trip writes: the same for every trip
    return v.unsqueeze(0).expand(count, *v.shape)


def _dest(views, stacks, i, count):
    got = stacks.get(i)
    if got is None or i in stacks.lazy:  # (a window of GM read in place is not written)
        stacks.lazy.discard(i)
        v = views[i]
        got = stacks[i] = torch.empty((count, *v.shape), dtype=v.dtype)
    return got


class _Stacks(dict):
    """Buffer -> its copy per trip of a batch; ``lazy``: those that are a GM window read in place."""

    def __init__(self):
        super().__init__()
        self.lazy: set = set()
