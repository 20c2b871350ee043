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

from pypto.ir.types import AtomicType, NotifyOp, WaitCmp
from pypto.sim import numerics as num
from pypto.sim.fresh import fresh
from pypto.sim.semantics import OutOfRange, TileVal, impl, window

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
    if atomic is AtomicType.Add:
        num.atomic_add(dest, index, region)
    else:
        dest[index] = region
    port.moved(peer, region.numel() * region.element_size(), False, span)
    return None
