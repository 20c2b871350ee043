"""A timeline's data effects, performed: every instruction reads its operands when it
starts and writes its result when it ends, in simulated-time order, on fresh
byte-addressed on-chip memories and on the GM tensors — with the op semantics the
interpreter uses (``semantics.IMPLS``), so a race-free program computes its bits.

This is the hardware's way (``apply``): reads at the start, writes at the end, anything
between sees the old bytes, so an ``unsafe`` run's races corrupt data as hardware would.
A race-free timeline needs less, and ``pypto.sim.data.steps`` performs it faster on the same
``Memories``.

An operand is read as a typed view of its memory, made once per buffer per run, not a
copy: the op computes at the read, so it sees the bytes as they are then; only a result
that still shares a memory's storage (an op that returned its input) is copied before
other effects can change the bytes under it.
"""

from __future__ import annotations

import math

import torch

from pypto.codegen.isa import TensorArg
from pypto.errors import ExecutionError
from pypto.ir.types import AtomicType
from pypto.sim.ops import numerics as num
from pypto.sim.ops import fresh
from pypto.sim.ops.elements import element_write
from pypto.sim.reports.prints import Print
from pypto.sim.ops.gathers import scatter_write
from pypto.sim.timing.issue import ConcreteBuf, Dyn
from pypto.sim.ops.semantics import IMPLS, OutOfRange, TileVal, window


# bytes per element of each dtype: torch views bytes as a dtype only at a multiple of it
_ITEMSIZE = {d: torch.empty((), dtype=t).element_size() for d, t in num.TORCH.items()}


class Memories:
    """The on-chip memories of one run: raw bytes per (core, space), with typed views —
    and where its atomic adds into GM go."""

    def __init__(self, sizes, atomic=None):
        """``sizes``: (core name, space, bytes) of each memory. ``atomic(tensor, index,
        data, start, end)``, when given, takes each atomic-add store (its data read at its
        start, ``start``/``end`` its cycles) to add when the chip says; else it adds now."""
        self.atomic_sink = atomic
        self.raw = {(core, space): fresh.memory(size) for core, space, size in sizes}
        # which bytes something wrote (RunConfig.check_uninitialized_reads): a read of others is an error
        self.written = {key: torch.zeros(m.numel(), dtype=torch.bool) for key, m in self.raw.items()} \
            if fresh.checking() else None
        self.bounds = [(m.data_ptr(), m.data_ptr() + m.numel()) for m in self.raw.values()]
        self.views: dict[tuple, torch.Tensor | None] = {}

    def view(self, core: str, b: ConcreteBuf) -> torch.Tensor | None:
        """The buffer's bytes as a tensor of its dtype and shape; None where its address is
        not a multiple of the element size (torch views need that)."""
        key = (core, b.space, b.addr, b.dtype, b.shape)
        try:
            return self.views[key]
        except KeyError:
            pass
        raw = self.raw[(core, b.space)][b.addr: b.addr + b.nbytes]
        v = raw.view(num.TORCH[b.dtype]).view(b.shape) if b.addr % _ITEMSIZE[b.dtype] == 0 else None
        self.views[key] = v
        return v

    def read(self, core: str, b: ConcreteBuf) -> TileVal:
        v = self.view(core, b)
        if v is None:  # unaligned: a copy of the bytes, reinterpreted
            raw = self.raw[(core, b.space)][b.addr: b.addr + b.nbytes].clone()
            v = raw.view(num.TORCH[b.dtype]).reshape(b.shape)
        return TileVal(v, b.valid)

    def owned(self, data: torch.Tensor) -> torch.Tensor:
        """``data``, copied if it still lies in one of the memories."""
        p = data.data_ptr()
        for lo, hi in self.bounds:
            if lo <= p < hi:
                return data.clone()
        return data

    def atomic(self, tensor, index, data: torch.Tensor, start: int, end: int) -> None:
        if self.atomic_sink is None:
            num.atomic_add(tensor, index, data)
        else:
            self.atomic_sink(tensor, index, data, start, end)

    def _valid_bytes(self, core: str, b: ConcreteBuf) -> torch.Tensor:
        """The written-flags of the bytes of ``b``'s valid region, shaped as its elements' bytes."""
        flags = self.written[(core, b.space)][b.addr: b.addr + b.nbytes]
        size = b.nbytes // max(1, math.prod(b.shape))
        rows = flags.view(*b.shape[:-1], b.shape[-1] * size) if b.shape else flags
        return rows[tuple(slice(0, v) for v in b.valid[:-1]) + (slice(0, b.valid[-1] * size),)] if b.shape else rows

    def check(self, core: str, b: ConcreteBuf, op: str, span) -> None:
        """A read of ``b``'s valid region: every byte of it written before (``written``)."""
        flags = self._valid_bytes(core, b)
        if bool(flags.all()):
            return
        size = b.nbytes // max(1, math.prod(b.shape))
        first = [int(i) for i in (~flags).nonzero()[0]]
        first[-1] //= size
        raise ExecutionError(
            f"{op} reads '{b.tile}' ({b.space.name} at {b.addr:#x}, valid shape {list(b.valid)}), whose element "
            f"{first} nothing has written (uninitialized memory)", span=span,
            hint="write the tile before reading it (its producer's valid shape covers less than this read), or "
                 "fill the padding with pl.fillpad")

    def write_window(self, core: str, b: ConcreteBuf, index: tuple, data: torch.Tensor) -> None:
        """``data`` into the elements ``index`` of ``b``, its other bytes untouched."""
        if self.written is not None:
            size = b.nbytes // max(1, math.prod(b.shape))
            flags = self.written[(core, b.space)][b.addr: b.addr + b.nbytes].view(*b.shape[:-1], b.shape[-1] * size)
            last = index[-1]
            flags[index[:-1] + (slice(last.start * size, last.stop * size),)] = True
        v = self.view(core, b)
        if v is not None:
            v[index] = data.to(v.dtype)
            return
        whole = self.read(core, b).data.clone()
        whole[index] = data.to(whole.dtype)
        self.write(core, b, whole, mark=False)

    def write(self, core: str, b: ConcreteBuf, data: torch.Tensor, mark: bool = True) -> None:
        """``data`` into ``b``; ``mark``: its valid region counts as written from now on."""
        if self.written is not None and mark:
            self._valid_bytes(core, b)[...] = True
        v = self.view(core, b)
        if v is not None and v.dtype == data.dtype and v.numel() == data.numel():
            v.copy_(data.reshape(v.shape))
            return
        # flattened first: torch calls an [N, 1] tensor with a long stride contiguous, and
        # will not reinterpret it as bytes
        raw = data.contiguous().reshape(-1).view(torch.uint8)
        if raw.numel() > b.nbytes:
            raise AssertionError(f"a {raw.numel()}-byte result does not fit its {b.nbytes}-byte buffer {b.tile!r}")
        self.raw[(core, b.space)][b.addr: b.addr + raw.numel()] = raw


def apply(effects, memory_sizes, tensors, atomic=None) -> None:
    """Perform ``effects`` — (time, 0 end / 1 begin, launch, order, Dyn), sorted — on fresh
    memories of ``memory_sizes`` and on ``tensors[launch]`` (GM, by parameter name);
    atomic adds as ``Memories`` says."""
    memories = Memories(memory_sizes, atomic)
    pending: dict[int, tuple] = {}
    for _, phase, launch, _, d in effects:
        if phase:
            pending[id(d)] = _begin(d, memories, tensors[launch])
        else:
            _commit(d, pending.pop(id(d)), memories)


def _begin(d: Dyn, memories: Memories, tensors):
    ins = d.node
    core = d.core.name
    if ins.op == "tile.gather_row":  # MTE2 writes the window alone: the rest of the tile is not read
        try:
            return _row_window(d.args, d.args["__dst__"], tensors)
        except OutOfRange as exc:
            raise ExecutionError(f"{ins.op}: {exc}", span=ins.span) from None
    kwargs = {}
    for name, v in d.args.items():
        if isinstance(v, ConcreteBuf):
            if name != "__dst__":
                if memories.written is not None:
                    memories.check(core, v, ins.op, ins.span)
                kwargs[name] = memories.read(core, v)
        elif isinstance(v, TensorArg):
            kwargs[name] = tensors[v.name]
        else:
            kwargs[name] = v
    try:
        if ins.op == "tile.store":
            return _store(kwargs)
        if ins.op == "tile.mscatter":  # read at its start, written to GM at its end, as a store
            return (kwargs["output_tensor"], *scatter_write(**kwargs), None)
        if ins.op == "tensor.write":  # the scalar unit's store of one element
            return (kwargs["tensor"], *element_write(**kwargs), None)
        if ins.op in ("tile.read", "tensor.read", "tile.debug_print"):  # to the scalar unit (``Live``): nothing written
            return None, None
        data = IMPLS[ins.op](**kwargs)
    except (OutOfRange, num.ArithmeticError_) as exc:
        raise ExecutionError(f"{ins.op}: {exc}", span=ins.span, hint=getattr(exc, "hint", None)) from None
    return None, memories.owned(data)


class Live:
    """A simulation's data computed as it goes: each record's effect performed at once as
    it starts (race-free, that is its data), on memories of their full sizes and on
    private copies of the GM tensors — so an element the scalar unit reads of a tile is
    the one the pipes wrote before it (``Dyn.value``). ``apply`` later does it again on
    the real tensors."""

    def __init__(self, sizes, tensors: list):
        self.memories = Memories(sizes)
        self.tensors = [_private(t) for t in tensors]
        self.prints: list = []  # what the kernel's pl.debug_prints saw (``pypto.sim.reports.prints``)

    def perform(self, d: Dyn) -> None:
        if d.node.op == "tensor.read":  # GM as the pipes have left it when the scalar unit reads
            t = self.tensors[d.launch][d.args["tensor"].name]
            value = t[tuple(d.args["indices"])].item()
            d.value = value if t.dtype.is_floating_point else int(value)
            return
        if d.node.op == "tile.debug_print":  # the tile as the scalar unit reads it, at this cycle
            tile = self.memories.read(d.core.name, d.args["tile"])
            self.prints.append(Print(d.args["label"], d.node.span, IMPLS["tile.debug_print"](tile), d.core.name,
                                     d.start))
            return
        if d.node.op == "tile.read":
            tile = self.memories.read(d.core.name, d.args["tile"])
            try:
                d.value = IMPLS["tile.read"](tile, d.args["indices"])
            except OutOfRange as exc:
                raise ExecutionError(f"tile.read: {exc}", span=d.node.span,
                                     hint="read inside the tile's valid shape") from None
            return
        _commit(d, _begin(d, self.memories, self.tensors[d.launch]), self.memories)


def _private(tensors: dict) -> dict:
    """Copies of GM tensors, views of one storage still views of one copy."""
    copies: dict = {}
    out = {}
    for name, t in tensors.items():
        storage = t.untyped_storage()
        copy = copies.get(storage.data_ptr())
        if copy is None:
            copy = copies[storage.data_ptr()] = storage.clone()
        out[name] = torch.empty(0, dtype=t.dtype).set_(copy, t.storage_offset(), t.shape, t.stride())
    return out


def _store(kwargs):
    """What a store writes to GM (the tensor, the index, the bytes), read at its start."""
    tile = kwargs["tile"]
    region = tile.region()
    out = kwargs["output_tensor"]
    if region.dtype != out.dtype:
        region = num.cast(region, num.FROM_TORCH[out.dtype], "rint")
    else:
        region = region.clone()
    return out, window(out.shape, kwargs["offsets"], region.shape, "store region"), region, kwargs.get("atomic")


def _row_window(args: dict, dst: ConcreteBuf, tensors) -> tuple:
    """(None, the rows, where in the tile they go) of a gather_row, read at its start."""
    shapes = tuple(args["shapes"])
    extents = shapes if args["valid_shape"] is None else tuple(args["valid_shape"])
    if any(v > e for v, e in zip(extents, shapes)):
        raise OutOfRange(f"valid shape {list(extents)} is outside the window's shapes {list(shapes)}")
    src = tensors[args["src"].name]
    rows = src[window(src.shape, args["src_offset"], extents, "src window")].clone()
    if args["transpose"]:
        rows = rows.T.contiguous()
    return None, rows, window(dst.shape, args["dst_offset"], rows.shape, "dst window", holder="tile")


def _commit(d: Dyn, write, memories: Memories) -> None:
    if write[0] is None and write[1] is None:  # nothing to write (an element read of a tile)
        return
    if len(write) == 3:  # part of a tile: a gather_row's window
        memories.write_window(d.core.name, d.args["__dst__"], write[2], write[1])
        return
    if write[0] is not None:
        tensor, index, data, atomic = write
        if atomic is AtomicType.Add:
            memories.atomic(tensor, index, data, d.start, d.end)
        else:
            tensor[index] = data
        return
    memories.write(d.core.name, d.args["__dst__"], write[1])


class Extents:
    """How far each on-chip memory is used: a run zeroes only that much."""

    def __init__(self):
        self.ends: dict[tuple, int] = {}  # (core name, space) -> the end of the last byte used

    def add(self, d: Dyn) -> None:
        ends, core = self.ends, d.core.name
        for v in d.args.values():
            if isinstance(v, ConcreteBuf):
                key = (core, v.space)
                end = v.addr + v.nbytes
                if end > ends.get(key, 0):
                    ends[key] = end

    def sizes(self) -> tuple:
        """(core name, space, bytes) of each memory used."""
        return tuple((core, space, end) for (core, space), end in self.ends.items())
