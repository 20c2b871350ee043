"""Window buffers: ``pld.alloc_window_buffer`` gives every rank a zeroed buffer of the same
bytes, and ``pld.window(buf, shape, dtype=...)`` a typed view of it. A rank's view is a
torch tensor of that rank's buffer marked with its ``WindowTag``, by which a peer's copy of
the same bytes is found (``peer_view``) and by which the argument binds a
``pld.DistributedTensor`` parameter."""

from __future__ import annotations

import math

import attrs
import torch

from pypto.ir.types import DataType
from pypto.sim.ops import numerics as num


@attrs.frozen
class WindowBuffer:
    name: str  # the host's variable: what reports name
    nbytes: int
    ranks: tuple = attrs.field(eq=False, repr=False)  # one uint8 torch buffer per rank

    @classmethod
    def allocate(cls, name: str, nbytes: int, nranks: int) -> WindowBuffer:
        return cls(name, nbytes, tuple(torch.zeros(nbytes, dtype=torch.uint8) for _ in range(nranks)))


@attrs.frozen
class WindowTag:
    buffer: WindowBuffer
    rank: int
    shape: tuple
    dtype: DataType


@attrs.frozen
class WindowView:
    """``pld.window(buf, shape, dtype=...)`` in the host: the same view on every rank,
    made a tensor of one rank's buffer when a dispatch passes it to that rank."""

    buffer: WindowBuffer
    shape: tuple
    dtype: DataType

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * self.dtype.nbytes

    def on(self, rank: int) -> torch.Tensor:
        return view(WindowTag(self.buffer, rank, self.shape, self.dtype))


def view(tag: WindowTag) -> torch.Tensor:
    nbytes = math.prod(tag.shape) * tag.dtype.nbytes
    t = tag.buffer.ranks[tag.rank][:nbytes].view(num.TORCH[tag.dtype]).view(tag.shape)
    t._pypto_window = tag
    return t


def tag_of(tensor: torch.Tensor) -> WindowTag | None:
    return getattr(tensor, "_pypto_window", None)


def peer_view(tensor: torch.Tensor, peer: int) -> torch.Tensor:
    """The peer's copy of the window bytes ``tensor`` views on this rank."""
    tag = tag_of(tensor)
    return view(attrs.evolve(tag, rank=peer))
