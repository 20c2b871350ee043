"""The meaning of the ``pld`` ops (``pypto.ir.ops.comm``) on one rank: what they do to the
peers' windows is the cluster's (``pypto.cluster``), reached through the ``CommPort`` the
cluster installs in the rank's thread before it runs the rank's program. Here: the
arithmetic of the data a rank moves (one definition, whatever runs the rank), and the
refusal of a pld op run where no cluster is.
"""

from __future__ import annotations

import contextvars
from typing import Protocol

import torch

from pypto.ir.types import AtomicType, NotifyOp, ReduceOp, WaitCmp
from pypto.sim.ops import numerics as num
from pypto.sim.ops.fresh import fresh
from pypto.sim.ops.semantics import OutOfRange, TileVal, impl, window

COMM_OPS = frozenset({"system.notify", "system.wait", "system.rank", "system.nranks", "tile.remote_load",
                      "tile.remote_store"})


class CommPort(Protocol):
    """A rank's side of the cluster: its index, the world, and each cross-rank act."""

    rank: int
    nranks: int

    def peer_view(self, tensor: torch.Tensor, peer: int, span) -> torch.Tensor: ...

    def notify(self, target: torch.Tensor, peer: int, index: tuple, value: int, op: NotifyOp, span) -> None: ...

    def wait(self, signal: torch.Tensor, index: tuple, expected: int, cmp: WaitCmp, span) -> None: ...

    def moved(self, peer: int, nbytes: int, load: bool, span) -> None: ...

    def access(self, tensor: torch.Tensor, owner: int, box: tuple, write: bool, what: str, span) -> None: ...


PORT: contextvars.ContextVar = contextvars.ContextVar("pypto_comm_port", default=None)


def _port(op: str) -> CommPort:
    port = PORT.get()
    if port is None:
        raise OutOfRange(f"pld.{op} runs on a rank of a cluster, and this program was run on one chip",
                         hint="dispatch it from a @pl.jit.host orchestrator run with "
                              "RunConfig(distributed_config=DistributedConfig(device_ids=[0, 1]))")
    return port


def _peer(port: CommPort, peer: int, op: str) -> int:
    if not 0 <= peer < port.nranks:
        raise OutOfRange(f"pld.{op}: peer {peer} is not a rank of the {port.nranks}-rank domain",
                         hint=f"a peer in 0..{port.nranks - 1}, e.g. (my_rank + 1) % nranks")
    return peer


def signal_update(cell: int, value: int, op: NotifyOp) -> int:
    """The cell after a notify: an INT32 add wraps, as the signal unit's does."""
    if op is NotifyOp.Set:
        return int(num.scalar(value, num.FROM_TORCH[torch.int32]))
    return int(torch.add(torch.tensor(cell, dtype=torch.int32), torch.tensor(value, dtype=torch.int32)))


# a rank's own kernel's accesses to GM: (the tensor's argument, where, the extents' argument or
# None: one element; whether it writes) — on a window, a peer's access may race with them
_LOCAL = {"tile.load": ("tensor", "offsets", "shapes", False), "tile.store": ("output_tensor", "offsets", None, True),
          "tensor.read": ("tensor", "indices", None, False), "tensor.write": ("tensor", "indices", None, True)}


def observe(op: str, kwargs: dict, span) -> None:
    """A rank's own access to one of its windows, told to the cluster (the interpreter calls
    this for every GM access while a cluster runs it)."""
    port = PORT.get()
    if port is None or op not in _LOCAL:
        return
    name, at, extents, write = _LOCAL[op]
    tensor = kwargs[name]
    tag = getattr(tensor, "_pypto_window", None)  # (pypto.cluster.windows marks a rank's view)
    if tag is None:
        return
    if op == "tile.store":
        shape = kwargs["tile"].region().shape
    elif extents is None:
        shape = (1,) * len(kwargs[at])
    else:
        shape = kwargs["valid_shape"] or kwargs[extents]
    what = {"tile.load": "load", "tile.store": "store", "tensor.read": "read", "tensor.write": "write"}[op]
    port.access(tensor, tag.rank, tuple(zip((int(o) for o in kwargs[at]), (int(e) for e in shape))), write, what,
                span)


def satisfied(cell: int, expected: int, cmp: WaitCmp) -> bool:
    return cell == expected if cmp is WaitCmp.Eq else cell >= expected


@impl("system.rank")
def comm_rank(ctx, span=None):
    return _port("system.rank").rank


@impl("system.nranks")
def comm_nranks(ctx, span=None):
    return _port("system.nranks").nranks


@impl("system.notify")
def notify(target, peer, offsets, value, op, span=None):
    port = _port("system.notify")
    index = tuple(int(o) for o in offsets)
    window(target.shape, index, (1,) * len(index), "notify cell", "signal")
    port.notify(target, _peer(port, int(peer), "system.notify"), index, int(value), NotifyOp(op), span)


@impl("system.wait")
def wait(signal, offsets, expected, cmp, span=None):
    port = _port("system.wait")
    index = tuple(int(o) for o in offsets)
    window(signal.shape, index, (1,) * len(index), "wait cell", "signal")
    port.wait(signal, index, int(expected), WaitCmp(cmp), span)


@impl("tile.remote_load")
def remote_load(target, peer, offsets, shape, valid_shape=None, span=None):
    port = _port("tile.remote_load")
    peer = _peer(port, int(peer), "tile.remote_load")
    extents = tuple(shape) if valid_shape is None else tuple(valid_shape)
    if any(e > s for e, s in zip(extents, shape)):
        raise OutOfRange(f"valid shape {list(extents)} is outside the tile's shape {list(shape)}")
    source = port.peer_view(target, peer, span)
    port.access(target, peer, tuple(zip(offsets, extents)), False, "remote_load", span)
    data = fresh(tuple(shape), target.dtype)
    data[tuple(slice(0, e) for e in extents)] = source[window(source.shape, offsets, extents, "remote_load region")]
    port.moved(peer, int(torch.Size(extents).numel()) * target.element_size(), True, span)
    return data


@impl("tile.remote_store")
def remote_store(tile: TileVal, target, peer, offsets, atomic=AtomicType.None_, span=None):
    port = _port("tile.remote_store")
    peer = _peer(port, int(peer), "tile.remote_store")
    region = tile.region()
    dest = port.peer_view(target, peer, span)
    index = window(dest.shape, offsets, region.shape, "remote_store region")
    port.access(target, peer, tuple(zip(offsets, region.shape)), True,
                "atomic remote_store" if atomic is AtomicType.Add else "remote_store", span)
    if atomic is AtomicType.Add:
        num.atomic_add(dest, index, region)
    else:
        dest[index] = region
    port.moved(peer, region.numel() * region.element_size(), False, span)
    return None


# ----------------------------------------------------------------------------- collectives

_COMBINE = {ReduceOp.Sum: num.arith(torch.add), ReduceOp.Prod: num.arith(torch.mul), ReduceOp.Max: num.maximum,
            ReduceOp.Min: num.minimum}
COMM_OPS = COMM_OPS | {f"system.{name}" for name in ("allreduce", "barrier", "broadcast", "allgather",
                                                     "reduce_scatter", "all_to_all", "all_to_all_v", "put", "get")}


def _cell_of(signal, rank: int) -> tuple:
    """Rank ``rank``'s cell of a [NR] or [NR, k] signal."""
    return (rank,) if signal.dim() == 1 else (rank, 0)


def _barrier(port: CommPort, signal, span, row: int | None = None) -> None:
    """A credit barrier: this rank adds 1 to its cell of every peer's signal, waits for each
    peer's cell of its own, and takes that credit back — the signal ends as it began, and a
    peer already at the next barrier has its credit kept. ``row``: the ring's round, whose
    row of a [rounds, NR] signal holds the cells."""
    cells = signal.shape[0] if row is None else signal.shape[1]
    if cells < port.nranks:
        raise OutOfRange(f"a collective's signal has a cell per rank: {cells} cells for {port.nranks} ranks",
                         hint="pld.window(sig_buf, [pld.world_size(), 1], dtype=pl.INT32)")
    cell_of = (lambda r: _cell_of(signal, r)) if row is None else (lambda r: (row, r))
    me = port.rank
    for p in range(port.nranks):
        if p != me:
            port.notify(signal, p, cell_of(me), 1, NotifyOp.AtomicAdd, span)
    for p in range(port.nranks):
        if p != me:
            cell = cell_of(p)
            port.wait(signal, cell, 1, WaitCmp.Ge, span)
            signal[cell] = signal_update(int(signal[cell]), -1, NotifyOp.AtomicAdd)


def _peers(port: CommPort):
    return (p for p in range(port.nranks) if p != port.rank)


def _box(tensor, index) -> tuple:
    """(offset, extent) per axis of ``tensor[index]``, index a row or all of it."""
    if index == ():
        return tuple((0, d) for d in tensor.shape)
    return ((index, 1), *((0, d) for d in tensor.shape[1:]))


def _read(port: CommPort, tensor, peer: int, span, index=(), what: str = "collective"):
    port.access(tensor, peer, _box(tensor, index), False, what, span)
    data = port.peer_view(tensor, peer, span)[index]
    port.moved(peer, data.numel() * data.element_size(), True, span)
    return data


def _push(port: CommPort, tensor, peer: int, index, data, span, what: str = "collective") -> None:
    port.access(tensor, peer, _box(tensor, index), True, what, span)
    dest = port.peer_view(tensor, peer, span)
    dest[index] = data.reshape(dest[index].shape)
    port.moved(peer, data.numel() * data.element_size(), False, span)


@impl("system.barrier")
def barrier(signal, span=None):
    _barrier(_port("tensor.barrier"), signal, span)
    return signal


def _ring(port: CommPort, target, signal, op, span) -> None:
    """Ring: the target's elements in NR balanced segments; 2(NR-1) rounds, each a barrier on
    its row of the [2(NR-1), NR] signal, a read of one segment from the previous rank, and a
    second barrier before any rank overwrites what a peer may still read. Reduce-scatter
    (round s: segment r-s-1 := the previous rank's partial combined with this rank's), then
    allgather (round s: segment r-s copied whole from the previous rank)."""
    n, me = port.nranks, port.rank
    if signal.dim() != 2 or signal.shape[0] < 2 * (n - 1) or signal.shape[1] < n:
        raise OutOfRange(f"a ring allreduce's signal is [2 * (NR - 1), NR] = [{2 * (n - 1)}, {n}], not "
                         f"{list(signal.shape)}", hint="pld.window(sig_buf, [2 * (nr - 1), nr], dtype=pl.INT32)")
    flat = target.view(-1)
    bounds = [k * flat.numel() // n for k in range(n + 1)]
    prev = (me - 1) % n
    for step in range(2 * (n - 1)):
        seg = (me - step - 1) % n if step < n - 1 else (me - (step - (n - 1))) % n
        lo, hi = bounds[seg], bounds[seg + 1]
        _barrier(port, signal, span, row=step)  # the previous rank's segment is ready
        port.access(target, prev, _box(target, ()), False, "collective", span)
        got = port.peer_view(target, prev, span).reshape(-1)[lo:hi].clone()
        port.moved(prev, got.numel() * got.element_size(), True, span)
        _barrier(port, signal, span, row=step)  # every rank has read: segments may be rewritten
        flat[lo:hi] = _COMBINE[ReduceOp(op)](got, flat[lo:hi]) if step < n - 1 else got


@impl("system.allreduce")
def allreduce(target, signal, op=ReduceOp.Sum, mode="mesh", core_num=1, span=None):
    """Mesh: each rank combines its own data with each peer's, in rank order. Ring: ``_ring``."""
    port = _port("tensor.allreduce")
    if mode == "ring":
        _ring(port, target, signal, op, span)
        return target
    _barrier(port, signal, span)  # every rank's data is in its window
    acc = target.clone()
    for p in _peers(port):
        acc = _COMBINE[ReduceOp(op)](acc, _read(port, target, p, span))
    _barrier(port, signal, span)  # every rank has read: the windows may be overwritten
    target.copy_(acc)
    return target


@impl("system.broadcast")
def broadcast(target, signal, root, span=None):
    port = _port("tensor.broadcast")
    root = _peer(port, int(root), "tensor.broadcast")
    _barrier(port, signal, span)
    if port.rank != root:
        target.copy_(_read(port, target, root, span))
    _barrier(port, signal, span)
    return target


@impl("system.allgather")
def allgather(input, target, signal, span=None):  # noqa: A002  (the reference's name)
    port = _port("tensor.allgather")
    _barrier(port, signal, span)
    for p in _peers(port):
        _push(port, target, p, port.rank, input, span)
    target[port.rank] = input.reshape(target[port.rank].shape)
    _barrier(port, signal, span)
    return target


@impl("system.reduce_scatter")
def reduce_scatter(target, signal, op=ReduceOp.Sum, span=None):
    port = _port("tensor.reduce_scatter")
    _barrier(port, signal, span)
    acc = target[port.rank].clone()
    for p in _peers(port):
        acc = _COMBINE[ReduceOp(op)](acc, _read(port, target, p, span, port.rank))
    _barrier(port, signal, span)
    target[port.rank] = acc
    return target


@impl("system.all_to_all")
def all_to_all(input, target, signal, span=None):  # noqa: A002
    port = _port("tensor.all_to_all")
    _barrier(port, signal, span)
    for p in _peers(port):
        _push(port, target, p, port.rank, input[p], span)
    target[port.rank] = input[port.rank]
    _barrier(port, signal, span)
    return target


@impl("system.all_to_all_v")
def all_to_all_v(input, target, signal, send_counts, recv_counts, span=None):  # noqa: A002
    """The variable all-to-all: the input and target are NR slots of MR rows; slot p of this
    rank's input goes to slot ``rank`` of rank p's target — the whole slot, as the reference's
    transfer of a static shape does — and ``send_counts[p]`` (clamped to 0..MR) to
    ``recv_counts[rank]`` of rank p, which tells it how many of the slot's rows are real."""
    port = _port("tensor.all_to_all_v")
    n, me = port.nranks, port.rank
    slot = target.shape[0] // n
    _barrier(port, signal, span)
    counts = send_counts.reshape(-1)
    for p in _peers(port):
        rows = slice(p * slot, (p + 1) * slot)
        port.access(target, p, ((me * slot, slot), *((0, d) for d in target.shape[1:])), True, "collective", span)
        dest = port.peer_view(target, p, span)
        dest[me * slot:(me + 1) * slot] = input[rows]
        port.moved(p, input[rows].numel() * input.element_size(), False, span)
        port.notify(recv_counts, p, _cell_of(recv_counts, me), min(max(int(counts[p]), 0), slot), NotifyOp.Set, span)
    target[me * slot:(me + 1) * slot] = input[me * slot:(me + 1) * slot]
    recv_counts[_cell_of(recv_counts, me)] = min(max(int(counts[me]), 0), slot)
    _barrier(port, signal, span)
    return target


# ----------------------------------------------------------------------------- put / get


def _region(tensor, offsets, shape) -> tuple:
    if offsets is None:
        return tuple((0, d) for d in tensor.shape)
    return tuple(zip((int(o) for o in offsets), (int(e) for e in shape)))


def _chunks(box: tuple, rows: int, cols: int):
    """The transfers a move is split into: chunk_rows x chunk_cols of the last two axes (0: all)."""
    *lead, (r0, re), (c0, ce) = box if len(box) >= 2 else ((0, 1), *box)
    rows, cols = rows or re, cols or ce
    for r in range(0, re, rows):
        for c in range(0, ce, cols):
            yield min(rows, re - r) * min(cols, ce - c)


def _move(port: CommPort, put: bool, dst, peer, src, dst_offsets, src_offsets, shape, atomic, chunk_rows,
          chunk_cols, span):
    op = "tensor.put" if put else "tensor.get"
    peer = _peer(port, int(peer), op)
    dbox, sbox = _region(dst, dst_offsets, shape), _region(src, src_offsets, shape)
    source = port.peer_view(src, peer, span) if not put else src
    target = port.peer_view(dst, peer, span) if put else dst
    sidx = window(source.shape, [o for o, _ in sbox], [e for _, e in sbox], "src region")
    didx = window(target.shape, [o for o, _ in dbox], [e for _, e in dbox], "dst region")
    if put:
        port.access(dst, peer, dbox, True, "atomic put" if atomic is AtomicType.Add else "put", span)
    else:
        port.access(src, peer, sbox, False, "get", span)
    data = source[sidx]
    if atomic is AtomicType.Add:
        num.atomic_add(target, didx, data)
    else:
        target[didx] = data
    for count in _chunks(sbox, chunk_rows, chunk_cols):
        port.moved(peer, count * data.element_size(), not put, span)


@impl("system.put")
def put(dst, peer, src, dst_offsets=None, src_offsets=None, shape=None, atomic=AtomicType.None_, chunk_rows=0,
        chunk_cols=0, pipeline=False, span=None):
    _move(_port("tensor.put"), True, dst, peer, src, dst_offsets, src_offsets, shape, atomic, chunk_rows,
          chunk_cols, span)


@impl("system.get")
def get(dst, peer, src, dst_offsets=None, src_offsets=None, shape=None, chunk_rows=0, chunk_cols=0, pipeline=False,
        span=None):
    _move(_port("tensor.get"), False, dst, peer, src, dst_offsets, src_offsets, shape, AtomicType.None_, chunk_rows,
          chunk_cols, span)
