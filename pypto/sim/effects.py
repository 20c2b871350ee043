"""A timeline's data effects, performed: every instruction reads its operands when it
starts and writes its result when it ends, in simulated-time order, on fresh
byte-addressed on-chip memories and on the GM tensors — with the op semantics the
interpreter uses (``semantics.IMPLS``), so a race-free program computes its bits.

Two ways to perform them. ``apply`` is the hardware's way: reads at the start, writes at
the end, anything between sees the old bytes (an ``unsafe`` run's races corrupt data as
hardware would). A race-free timeline — every one the hazard check passed — needs less:
nothing touches an instruction's bytes between its start and its end (that would be an
unordered access), so each instruction may read, compute and write at once, in the order
the scheduler starts them (which extends happens-before). ``Steps`` holds such a timeline
as a closure template per program instruction and a small tuple per issue, its buffers
resolved (``run_steps``); a copy or a load writes straight into its destination, an
elementwise op computes into it (``semantics.INTO``).

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
from pypto.sim import numerics as num
from pypto.sim import fresh, progress
from pypto.sim.elements import element_write
from pypto.sim.prints import Print
from pypto.sim.gathers import scatter_write
from pypto.sim.issue import ConcreteBuf, Dyn
from pypto.sim.semantics import IMPLS, INTO, OutOfRange, TileVal, window


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
        self.prints: list = []  # what the kernel's pl.debug_prints saw (``pypto.sim.prints``)

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


# ----------------------------------------------------------------------------- atomic steps


class Steps:
    """A race-free timeline's effects in an order that extends happens-before, each
    (template, launch, varying): a template is made once per instruction of the program
    and holds what every issue of it shares; ``varying`` is what this issue has of its own
    (buffer numbers, offsets, valid extents), so a long loop keeps a small tuple per
    instruction. ``buffers`` are the distinct (core name, ConcreteBuf) read or written,
    numbered."""

    def __init__(self, tensors):
        """``tensors``: each launch's GM tensors by parameter name (their dtypes and ranks
        are part of the timeline's key, so they choose the templates)."""
        self.tensors = tensors
        self.buffers: list[tuple] = []
        self.steps: list[tuple] = []
        self.unaligned: set[int] = set()  # buffers torch cannot view as their dtype
        self._number: dict[tuple, int] = {}
        self._templates: dict[tuple, object] = {}
        self._shared: dict = {}  # equal varying parts, one object

    def add(self, d: Dyn) -> None:
        self.steps.append(_step(d, self, self.tensors[d.launch]))

    def index(self, core: str, b: ConcreteBuf) -> int:
        key = (core, b.space, b.addr, b.dtype, b.shape)
        got = self._number.get(key)
        if got is None:
            got = self._number[key] = len(self.buffers)
            self.buffers.append((core, b))
            if b.addr % _ITEMSIZE[b.dtype]:  # torch views bytes as a dtype only at a multiple of its size
                self.unaligned.add(got)
        return got

    def intern(self, x):
        return self._shared.setdefault(x, x) if shareable(x) else x

    def ints(self, x: tuple) -> tuple:
        """``intern`` for a flat tuple (offsets, extents), quicker."""
        for v in x:
            if type(v) is not int:
                return x
        return self._shared.setdefault(x, x)

    def template(self, key: tuple, make):
        got = self._templates.get(key)
        if got is None:
            got = self._templates[key] = make()
            got.template_key = key  # what it is made of: another simulation's equal template has it too
        return got


_ITEMSIZE = {d: torch.empty((), dtype=t).element_size() for d, t in num.TORCH.items()}


def shareable(x) -> bool:
    """Whether equal tuples like ``x`` may be one object: tuples of ints, strings, None and
    such tuples only — 0 == 0.0 == False and -0.0 == 0.0 would merge values that differ."""
    return all(v is None or type(v) in (int, str) or (type(v) is tuple and shareable(v)) for v in x)


def run_steps(steps: Steps, memory_sizes, tensors, atomic=None) -> None:
    """Perform compiled steps on fresh memories and ``tensors[launch]`` (atomic adds as
    ``Memories`` says)."""
    memories = Memories(memory_sizes, atomic)
    views = [memories.view(core, b) for core, b in steps.buffers]
    buffers = steps.buffers
    for template, launch, varying in progress.counted(steps.steps, "applied", len(steps.steps)):  # (a long run's line)
        template(views, tensors[launch], memories, buffers, varying)


def _step(d: Dyn, steps: Steps, tensors: dict) -> tuple:
    ins = d.node
    core = d.core.name
    op = ins.op
    values, reads, gm = [], [], []
    for name, v in d.args.items():
        if name == "__dst__":
            continue
        if isinstance(v, ConcreteBuf):
            reads.append((name, steps.index(core, v), v.valid, v))
        elif isinstance(v, TensorArg):
            gm.append((name, v.name))
        else:
            values.append((name, v))
    dst = d.args.get("__dst__")
    out = steps.index(core, dst) if dst is not None else None
    raw = out in steps.unaligned or any(i in steps.unaligned for _, i, _, _ in reads)
    arg = dict(values)
    if op == "tile.store" and arg.get("atomic") is AtomicType.Add:
        (_, tile, valid, _), = reads
        param = gm[0][1]
        template = steps.template((id(ins), core, "atomic", param, raw),
                                  lambda: _atomic_template(param, raw, ins.span))
        return template, d.launch, (tile, steps.ints(tuple(arg["offsets"])), steps.ints(tuple(valid)), d.start, d.end)
    if op == "tile.store" and not raw:
        (_, tile, valid, buf), = reads
        param = gm[0][1]
        whole = tuple(valid) == tuple(buf.shape)
        template = steps.template((id(ins), core, "store", param, whole),
                                  lambda: _store_template(param, whole, ins.span))
        return template, d.launch, (tile, steps.ints(tuple(arg["offsets"])), steps.ints(tuple(valid)))
    if op == "tile.load" and not raw and len(dst.shape) == 2 and len(arg["offsets"]) == 2 \
            and tuple(arg["valid_shape"] or arg["shapes"]) == tuple(arg["shapes"]) \
            == (tuple(dst.shape)[::-1] if arg["transpose"] else tuple(dst.shape)):
        param, transpose = gm[0][1], bool(arg["transpose"])
        t = tensors[param]
        if t.dtype == num.TORCH[dst.dtype] and t.dim() == 2:
            shape = tuple(arg["shapes"])
            template = steps.template((id(ins), core, "load", param, shape, transpose),
                                      lambda: _load_template(param, shape, transpose, ins.span))
            r0, c0 = arg["offsets"]
            return template, d.launch, (out, r0, c0)
    if op == "tile.move" and not raw:
        src = reads[0][3]  # another memory (copy_ may not overlap), the same layout
        if src.space != dst.space and (src.dtype, src.shape) == (dst.dtype, dst.shape):
            return _move, d.launch, (reads[0][1], out)
    if op in INTO and not raw and not gm and dst is not None and _into_fits(INTO[op][1], dst, reads):
        kinds = tuple(isinstance(v, ConcreteBuf) for name, v in d.args.items() if name != "__dst__")
        operands = tuple(steps.index(core, v) if isinstance(v, ConcreteBuf) else v
                         for name, v in d.args.items() if name != "__dst__")
        template = steps.template((id(ins), core, "into", kinds), lambda: _into_template(INTO[op][0], kinds))
        return template, d.launch, (steps.intern(operands), out)
    names = (tuple(name for name, _ in values), tuple(name for name, *_ in reads), tuple(gm))
    template = steps.template((id(ins), core, "op", raw) + names,
                              lambda: _op_template(IMPLS[op], *names, op, ins.span, raw))
    varying = (steps.intern(tuple(v for _, v in values)),
               tuple((i, steps.ints(tuple(valid))) for _, i, valid, _ in reads), out)
    return template, d.launch, varying


def _into_fits(floats_only: bool, dst: ConcreteBuf, reads) -> bool:
    """Whether an elementwise op may write its result straight into ``dst``: its tiles of
    the destination's dtype and shape, each the destination's very bytes or none of them
    (torch refuses a partial overlap)."""
    if floats_only and not dst.dtype.is_float:
        return False
    for _, _, _, b in reads:
        if (b.dtype, b.shape) != (dst.dtype, dst.shape):
            return False
        if b.space == dst.space and b.addr != dst.addr and b.addr < dst.addr + dst.nbytes and dst.addr < b.addr + b.nbytes:
            return False
    return True


def _into_template(fn, kinds: tuple):
    """An elementwise op computed into its destination's view (``INTO``)."""
    if kinds == (True,):
        def step(views, tensors, memories, buffers, varying):
            (x,), out = varying
            fn(views[out], views[x])
    elif kinds == (True, True):
        def step(views, tensors, memories, buffers, varying):
            (x, y), out = varying
            fn(views[out], views[x], views[y])
    else:
        def step(views, tensors, memories, buffers, varying):
            operands, out = varying
            fn(views[out], *[views[x] if k else x for k, x in zip(kinds, operands)])
    step.batch = ("into", fn, kinds)
    return step


def _op_template(impl, value_names, read_names, gm, op, span, raw: bool):
    """The op's semantics on views of its operands (``raw``: on copies of their bytes,
    where one cannot be viewed); the result copied into its buffer."""

    def step(views, tensors, memories, buffers, varying):
        values, reads, out = varying
        kwargs = dict(zip(value_names, values))
        for name, (i, valid) in zip(read_names, reads):
            kwargs[name] = TileVal(memories.read(*buffers[i]).data if raw else views[i], valid)
        for name, param in gm:
            kwargs[name] = tensors[param]
        try:
            data = impl(**kwargs)
        except (OutOfRange, num.ArithmeticError_) as exc:
            raise ExecutionError(f"{op}: {exc}", span=span, hint=getattr(exc, "hint", None)) from None
        v = views[out] if out is not None else None
        if v is not None and v.dtype == data.dtype and v.shape == data.shape:
            v.copy_(memories.owned(data))
        elif out is not None:
            memories.write(*buffers[out], memories.owned(data))

    return step


def _load_template(param: str, shape: tuple, transpose: bool, span):
    """A whole [rows, cols] window of GM, of the buffer's dtype, copied into it (as its
    transpose: the buffer is [cols, rows])."""
    rows, cols = shape

    def step(views, tensors, memories, buffers, varying):
        out, r0, c0 = varying
        t = tensors[param]
        if r0 < 0 or c0 < 0 or r0 + rows > t.shape[0] or c0 + cols > t.shape[1]:
            _gm_window("tile.load", t, (r0, c0), shape, "load region", span)  # raises
        region = t[r0:r0 + rows, c0:c0 + cols]
        views[out].copy_(region.T if transpose else region)

    step.batch = ("load", param, shape, transpose)  # how many trips of it run at once (``trips``)
    return step


def _store_template(param: str, whole: bool, span):
    """A tile's valid part copied into GM (converted where GM's dtype differs: the fixpipe)."""

    def step(views, tensors, memories, buffers, varying):
        tile, offsets, valid = varying
        t = tensors[param]
        index = _gm_window("tile.store", t, offsets, valid, "store region", span)
        data = views[tile] if whole else views[tile][tuple(slice(0, v) for v in valid)]
        if data.dtype != t.dtype:
            data = num.cast(data, num.FROM_TORCH[t.dtype], "rint")
        t[index] = data

    step.batch = ("store", param, whole)
    return step


def _atomic_template(param: str, raw: bool, span):
    """A tile's valid part, read at the store's start (converted like a store), added into
    GM atomically — when the chip says (``Memories.atomic``)."""

    def step(views, tensors, memories, buffers, varying):
        tile, offsets, valid, start, end = varying
        t = tensors[param]
        index = _gm_window("tile.store", t, offsets, valid, "store region", span)
        source = memories.read(*buffers[tile]).data if raw else views[tile]
        data = source[tuple(slice(0, v) for v in valid)]
        data = num.cast(data, num.FROM_TORCH[t.dtype], "rint") if data.dtype != t.dtype else data.clone()
        memories.atomic(t, index, data, start, end)

    return step


def _move(views, tensors, memories, buffers, varying):
    src, out = varying
    views[out].copy_(views[src])


_move.batch = ("move",)


def _gm_window(op: str, t, offsets, extents, what: str, span):
    """``semantics.window`` of a GM tensor, its refusal located at the instruction."""
    try:
        return window(t.shape, offsets, extents, what)
    except OutOfRange as exc:
        raise ExecutionError(f"{op}: {exc}", span=span) from None
