"""A race-free timeline's effects, compiled: nothing touches an instruction's bytes
between its start and its end (that would be an unordered access, which the hazard check
refuses), so each instruction may read, compute and write at once, in the order the
scheduler starts them (which extends happens-before). ``Steps`` holds such a timeline as
a closure template per program instruction and a small tuple per issue, its buffers
resolved; ``run_steps`` performs it on fresh ``effects.Memories``. A copy or a load writes
straight into its destination, an elementwise op computes into it (``semantics.INTO``); a
chain of MMADs accumulating into one tile is computed as one (``mmad_chain``).
"""

from __future__ import annotations



from pypto.codegen.isa import TensorArg
from pypto.errors import ExecutionError
from pypto.ir.ops import lookup
from pypto.ir.types import AtomicType
from pypto.sim.ops import mmad_chain
from pypto.sim.ops import numerics as num
from pypto.sim.reports import progress
from pypto.sim.data.effects import _ITEMSIZE, Memories
from pypto.sim.timing.issue import ConcreteBuf, Dyn
from pypto.sim.ops.semantics import IMPLS, INDEX_HINT, INTO, OutOfRange, TileVal, window

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
    chain = None  # MMADs held back to be computed as one (``mmad_chain``)
    for template, launch, varying in progress.counted(steps.steps, "applied", len(steps.steps)):  # (a long run's line)
        if chain is not None:
            if getattr(template, "chain", None) is not None and chain.extend(template, varying, views):
                continue
            if not chain.spares(template, varying, buffers):
                chain.compute(views)
                chain = None
        if getattr(template, "chain", None) is not None:
            chain = mmad_chain.start(template, varying, views)
            if chain is not None:
                continue
        template(views, tensors[launch], memories, buffers, varying)
    if chain is not None:
        chain.compute(views)


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
        except (OutOfRange, num.ArithmeticError_) as exc:  # (the interpreter's words)
            hint = (exc.hint or INDEX_HINT) if isinstance(exc, OutOfRange) else getattr(exc, "hint", None)
            raise ExecutionError(f"{op}: {exc}", span=span, hint=hint) from None
        v = views[out] if out is not None else None
        if v is not None and v.dtype == data.dtype and v.shape == data.shape:
            v.copy_(memories.owned(data))
        elif out is not None:
            memories.write(*buffers[out], memories.owned(data))

    step.writes_gm = bool(gm) and lookup(op).has_effect  # (then more than its result buffer: ``trips``)
    if op in mmad_chain.CHAINED and not raw:  # (``run_steps`` may hold it back, knowing its operands' names)
        step.chain, step.value_names, step.read_names = op, value_names, read_names
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
    step.copies = _load_copies  # (what it writes: a chain of MMADs apart from it may wait)
    return step


def _load_copies(varying):
    return varying[:1]


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


_move.copies = lambda varying: varying  # (what it reads and writes: a chain of MMADs apart from both may wait)


_move.batch = ("move",)


def _gm_window(op: str, t, offsets, extents, what: str, span):
    """``semantics.window`` of a GM tensor, its refusal located at the instruction."""
    try:
        return window(t.shape, offsets, extents, what)
    except OutOfRange as exc:
        raise ExecutionError(f"{op}: {exc}", span=span, hint=exc.hint or INDEX_HINT) from None
