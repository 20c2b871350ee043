"""Instruction selection: a lowered InCore function becomes one structured instruction
program for the core cluster, each instruction on its pipe and core, with the byte
ranges it reads and writes. Sync insertion and the split into per-core programs follow.

Tiles map to their MemRef's bytes: a fixed address, or ``base + slot * slot_size`` for a
slotted MemRef. Under PTOAS the modeled assembler plans addresses itself (the same
reuse and first-fit placement, ``assembler_plan``) and turns each slotted MemRef into a
multi-tile region, which it guards only at the first slot taken in an iteration. What it
cannot lower (a second slot live at the same time, tiles that do not fit) PlanPtoasMemory
has refused in the pass pipeline already; the rest of what is refused here (a tensor name
that is not one GM tensor, more syncs than event ids) is refused on ``ref`` too, which
compiles through codegen as well.
"""

from __future__ import annotations

from pypto.codegen import comm
from pypto.codegen.comm import COMM_OPS
from pypto.codegen.pipes import Pipes
from pypto.codegen.isa import (
    Alloc,
    Buf,
    BufLoc,
    Cond,
    GmLoc,
    Instr,
    Loop,
    Region,
    ScalarAssign,
    ScalarArray,
    ScalarLoad,
    TensorArg,
)
from pypto.errors import CodegenError
from pypto.ir import nodes as n
from pypto.ir.ops import Kind, argument, lookup
from pypto.ir.ops.spmd import CORE_REGISTERS, LANE_REGISTER, LANED
from pypto.ir.ops.pipes import FREES, INITS, POPS, PUSHES
from pypto.ir.ops.rings import reserved
from pypto.ir.rewrite import rewrite
from pypto.ir.simplify import simplify
from pypto.ir.tensors import tensor_roots
from pypto.ir.types import ArrayType, ForKind, FunctionType, ParamDirection, ScalarType, TensorType, TileType

_SCALARS = (ScalarType, ArrayType)  # what the scalar unit holds (an array on its stack)
from pypto.passes.context import PassContext, Planner
from pypto.passes.allocation.ptoas import assembler_plan, unguarded_slots
from pypto.backend import CoreKind, Pipe
from pypto.backend import MemorySpace as M


def select(fn: n.Function, ctx: PassContext):
    """(body, allocs, returned parameters, vector lanes, pipe rings) for ``fn``: structured
    instructions for the cluster, with the bytes each accesses, how many vector cores run
    its AIV program (2 with a ``pl.split_aiv`` region or ``dual_aiv_dispatch``), and the GM
    rings of the hand-written pipes it pushes or pops."""
    if ctx.planner is Planner.PTOAS:
        # PlanPtoasMemory has refused co-live slots unless the unsafe switch is on: then
        # they are what the sync inserter leaves unguarded, as ptoas does.
        unguarded = unguarded_slots(fn, ctx.unsafe_colive_slots)
        fn = assembler_plan(fn, ctx)
    else:
        unguarded = set()
    return _Selector(fn, unguarded, ctx.soc).run()


# ----------------------------------------------------------------------------- selection


class _Selector:
    def __init__(self, fn: n.Function, unguarded: set, soc):
        self.fn = fn
        self.soc = soc
        self.types = n.symbols(fn)
        self.unguarded = unguarded
        self.roots = tensor_roots(fn)
        self.tensor_params = {p.name for p in fn.params if isinstance(p.type, TensorType)}
        self.allocs: dict[str, Alloc] = {}
        self.reserved = reserved(fn.body)
        self.rings = {name: slots for name, (_, _, slots) in self.reserved.items()}
        # how many of the cluster's vector cores run the AIV program: 2 with a split region or dual dispatch
        self.lanes = 2 if fn.dual_aiv else 1
        side = {FunctionType.AIC: CoreKind.AIC, FunctionType.AIV: CoreKind.AIV}.get(fn.type)
        self.pipes = Pipes(fn, side)
        self.used = set(self.types) | {s.var for s in n.walk_stmts(fn.body) if isinstance(s, n.For)}

    def fresh_trip_counter(self) -> str:
        """A while loop's trip counter: a scalar no statement reads, which orders its trips."""
        return n.fresh_name("trip", self.used)

    def owner(self, space) -> CoreKind:
        """The core whose memory ``space`` is: the one that runs what writes or reads it."""
        return self.soc.spec(space).core

    def run(self):
        body = self.block(self.fn.body) + self.pipes.finish()
        ret = next((s for s in self.fn.body if isinstance(s, n.Return)), None)
        returns = tuple(self.tensor(v.name, ret.span) for v in ret.values) if ret is not None else ()
        allocs = tuple(self.allocs[k] for k in sorted(self.allocs, key=lambda k: (self.allocs[k].space.name,
                                                                                    self.allocs[k].addr or 0, k)))
        return body, allocs, returns, self.lanes, self.pipes.buffers()

    def tensor(self, name: str, span) -> str:
        """The GM tensor (a parameter) a tensor name stands for."""
        root = self.roots.get(name)
        if root is None or root not in self.tensor_params:
            raise CodegenError(f"'{name}' is not one GM tensor throughout this InCore function (a loop or an if "
                               "hands on different tensors under it)", span=span,
                               hint="store into each tensor by its own name")
        return root

    def scalar_load(self, s: n.Assign):
        """``x = pl.read(t, [i, ...])``: the scalar unit reads the element from GM — of an
        input, as the kernel starts (``ScalarLoad``); of a tensor the kernel writes, in its
        place among the pipes' work (``SLOADGM``, after the stores it depends on)."""
        tensor = self.roots.get(argument(s.value, "tensor").name)  # (a name a write rebound is the parameter)
        if tensor not in self.tensor_params:
            raise CodegenError("pl.read of a tensor in a kernel reads an element of a tensor the kernel is given; "
                               "this one is computed inside it", span=s.span,
                               hint="read the element of the tile it was computed from (pl.read(tile, [i, j])), or "
                                    "compute the tensor in an earlier task")
        indices = tuple(argument(s.value, "indices"))
        param = next(p for p in self.fn.params if p.name == tensor)
        if param.direction is ParamDirection.In:
            return ScalarLoad(s.target, tensor, indices, s.type.dtype.is_int, s.span)
        gm = GmLoc(tensor, indices, tuple(1 for _ in indices))
        return Instr("SLOADGM", Pipe.SCALAR, self.element_core(), "tensor.read", (TensorArg(tensor), indices),
                     (gm,), (), s.span, s.target, result=s.target)

    def element_core(self) -> CoreKind:
        """The core whose scalar unit writes an element of GM: the vector core, unless the
        function is the cube's own (or has no vector tile and cube tiles)."""
        spaces = {t.space for t in self.types.values() if isinstance(t, TileType)}
        if self.fn.type is FunctionType.AIC or M.Vec not in spaces and spaces & {M.Mat, M.Acc, M.Left, M.Right}:
            return CoreKind.AIC
        return CoreKind.AIV

    def gm_element(self, call: n.Call, span) -> Instr:
        """``pl.write(t, [i, ...], v)`` in a kernel: the scalar unit stores the element to GM."""
        tensor = self.tensor(argument(call, "tensor").name, span)
        indices = tuple(argument(call, "indices"))
        gm = GmLoc(tensor, indices, tuple(1 for _ in indices))
        return Instr("SSTOREGM", Pipe.SCALAR, self.element_core(), call.op,
                     (TensorArg(tensor), indices, argument(call, "value")), (), (gm,), span, "")

    def tile_element(self, call: n.Call, target: str, span):
        """``pl.read(tile, [i, j])`` / ``pl.write(tile, [i, j], v)``: the scalar unit reads or
        writes one element of a Vec tile in the unified buffer. A write whose result the
        planner put in another buffer (the tile lives on) copies the tile there first."""
        src = self.buf(argument(call, "tile").name)
        core = self.owner(src.space)
        indices = tuple(argument(call, "indices"))
        if call.op == "tile.read":
            return Instr("SGETVAL", Pipe.SCALAR, core, call.op, (src, indices), (self.loc(src, core),), (), span,
                         target, result=target)
        dst = self.buf(target)
        out = []
        if (dst.space, dst.addr) != (src.space, src.addr):
            out.append(Instr("VCOPY", Pipe.VECTOR, core, "tile.move", (src, M.Vec), (self.loc(src, core),),
                             (self.loc(dst, core),), span, target, dst))
        out.append(Instr("SSETVAL", Pipe.SCALAR, core, call.op, (dst, indices, argument(call, "value")),
                         (self.loc(dst, core),), (self.loc(dst, core),), span, target, dst))
        return out

    def gather_row(self, call: n.Call, values: dict, args: list, target: str, span) -> list:
        """MTE2 writes the window into the tile's own buffer; where the planner put the
        result elsewhere (the old tile lives on), the vector unit copies the tile there
        first (L1 has no such copy)."""
        old, dst = self.buf(values["dst"].name), self.buf(target)
        core = self.owner(dst.space)
        out = []
        if (dst.space, dst.addr) != (old.space, old.addr):
            if dst.space is not M.Vec:
                raise CodegenError(f"pl.gather_row into the Mat tile '{values['dst'].name}', which is read again "
                                   "after it: L1 has no copy to keep the old tile", span=span,
                                   hint="rebind the name (acc = pl.gather_row(acc, ...)) and read only the result")
            out.append(Instr("VCOPY", Pipe.VECTOR, core, "tile.move", (old, M.Vec), (self.loc(old, core),),
                             (self.loc(dst, core),), span, target, dst))
        shapes = tuple(c.value for c in values["shapes"])
        gm = self.gm(self.tensor(values["src"].name, span), values["src_offset"], shapes)
        args = [dst if isinstance(a, Buf) and a == old else a for a in args]  # it reads the copy, not the old tile
        out.append(Instr("TLOAD", Pipe.MTE2, core, call.op, tuple(args), (gm, self.loc(dst, core)),
                         (self.loc(dst, core),), span, target, dst))
        return out

    def buf(self, name: str) -> Buf:
        t: TileType = self.types[name]
        m = t.memref
        if m is None or m.addr is None:
            raise CodegenError(f"tile '{name}' has no address: run the memory passes first")
        slot = m.size // m.slots
        region = None
        addr = n.Const(m.addr)
        if m.slots > 1:
            region = Region(m.name, m.addr, slot, m.slots, m.index, guarded=name not in self.unguarded)
            addr = n.Const(m.addr) if m.index == n.Const(0) else \
                n.BinOp("+", n.Const(m.addr), n.BinOp("*", m.index, n.Const(slot)))
            addr = simplify(addr)
        self.allocs.setdefault(m.name, Alloc(m.name, t.space, m.addr, m.size, m.slots))
        return Buf(t.space, addr, t.shape, t.dtype, t.valid_shape, name, region)

    def gm(self, tensor: str, offsets, extents) -> GmLoc:
        """Where a transfer lands in GM; in a cross-core ring, the slot (the ``x % slot_num``
        term of its first offset, which the ring's builder wrote) apart from the rows in it."""
        slots = self.rings.get(tensor)
        if slots is not None and slots > 1:
            found = [e for e in _subterms(offsets[0]) if isinstance(e, n.BinOp) and e.op == "%"
                     and e.rhs == n.Const(slots)]
            if len(found) == 1:  # only then surely the ring's (a second could be the program's own)
                slot = found[0]
                inside = simplify(rewrite(offsets[0], {n.BinOp: lambda b: n.Const(0) if b == slot else None}))
                region = Region(tensor, 0, 0, slots, slot)
                return GmLoc(tensor, (inside, *offsets[1:]), extents, region)
        return GmLoc(tensor, offsets, extents)

    def loc(self, b: Buf, core: CoreKind) -> BufLoc:
        return BufLoc(b.space, core, b.addr, b.nbytes, b.region)

    def block(self, body) -> list:
        out = []
        for stmt in body:
            out.extend(self.stmt(stmt))
        return out

    def stmt(self, s) -> list:
        if isinstance(s.value if isinstance(s, (n.Assign, n.Eval)) else None, n.Call) \
                and s.value.op == "system.reserve_buffer":  # the ring's bytes: kept by the planners
            base = self.reserved[argument(s.value, "name")][0]
            return [ScalarAssign(s.target, n.Const(base))] if isinstance(s, n.Assign) else []
        if isinstance(s, n.Assign) and isinstance(s.value, n.Call) and s.value.op == "system.import_peer_buffer":
            return [ScalarAssign(s.target, n.Const(0))]  # the peer's buffer: its slots are the pipe's GM ring here
        if isinstance(s, n.Assign):
            if isinstance(s.value, n.Call) and s.value.op in CORE_REGISTERS:  # a read of one of the core's registers
                return [ScalarAssign(s.target, n.Var(CORE_REGISTERS[s.value.op]))]
            if isinstance(s.value, n.Call) and s.value.op == "tensor.read":
                return [self.scalar_load(s)]
            if isinstance(s.value, n.Call) and s.value.op.startswith("array."):  # on the scalar unit's stack
                return [ScalarArray(s.target, s.value.op.split(".")[1], tuple(s.value.args[:1]) if
                                    s.value.op == "array.create" else s.value.args, s.span)]
            if isinstance(s.value, n.Call) and s.value.op == "tile.read":
                return [self.tile_element(s.value, s.target, s.span)]
            if isinstance(s.value, n.Call):
                return self.call(s.value, s.target, s.span)
            if isinstance(s.type, TensorType) and isinstance(s.value, n.Var):
                return []  # another name of the same GM tensor
            if isinstance(s.type, ScalarType):
                return [ScalarAssign(s.target, s.value, span=s.span)]
            raise CodegenError(f"cannot lower '{s.target}' in an InCore function", span=s.span)
        if isinstance(s, n.Eval) and isinstance(s.value, n.Call):
            return self.call(s.value, None, s.span)
        if isinstance(s, n.For) and s.kind is ForKind.SplitAiv:  # each vector core runs it, as its lane
            self.lanes = 2
            return [ScalarAssign(s.var, n.Var(LANE_REGISTER)), *self.block(s.body)]
        if isinstance(s, n.For):
            if all(isinstance(x, n.Const) for x in (s.start, s.stop, s.step)) and \
                    not range(s.start.value, s.stop.value, s.step.value):
                # never runs: its results are its initial values (a carried tile stays in its buffer)
                return [ScalarAssign(b.name, a.init) for a, b in zip(s.iter_args, s.results)
                        if isinstance(a.type, _SCALARS)]
            pre, body, post = self._carried(s)
            return pre + [Loop(s.var, s.start, s.stop, s.step, body, span=s.span)] + post
        if isinstance(s, n.While):
            pre, body, post = self._carried(s)
            trips = self.fresh_trip_counter()
            return pre + [Loop(trips, n.Const(0), None, n.Const(1), body, span=s.span, cond=s.cond)] + post
        if isinstance(s, n.If):
            names = [b.name for b in s.results]
            branches = []
            for body in (s.then_body, s.else_body):
                lowered = self.block(body)
                if body and isinstance(body[-1], n.Yield):
                    self._same_buffers(zip(names, body[-1].values), s.span)
                    lowered += self._scalar_moves(names, body[-1].values)
                branches.append(lowered)
            return [Cond(s.cond, *branches, span=s.span)]
        if isinstance(s, (n.Yield, n.Return)):
            return []
        raise CodegenError(f"cannot lower {type(s).__name__} in an InCore function", span=getattr(s, "span", None))

    def _carried(self, s):
        """A for or while loop's body with its carried values: the scalars' moves in before it,
        at the end of each trip and out after it (a carried tile stays in one buffer)."""
        pre = [ScalarAssign(a.name, a.init) for a in s.iter_args if isinstance(a.type, _SCALARS)]
        self._same_buffers(((a.name, a.init) for a in s.iter_args), s.span)
        body = self.block(s.body)
        if s.iter_args:
            yielded = s.body[-1].values
            self._same_buffers(((a.name, v) for a, v in zip(s.iter_args, yielded)), s.span)
            body += self._scalar_moves([a.name for a in s.iter_args], yielded)
        post = [ScalarAssign(b.name, n.Var(a.name)) for a, b in zip(s.iter_args, s.results)
                if isinstance(a.type, _SCALARS)]
        return pre, body, post

    def _same_buffers(self, pairs, span) -> None:
        """A carried tile stays in one buffer (InitMemRef unified them): check it did."""
        for name, value in pairs:
            if isinstance(self.types.get(name), TileType) and isinstance(value, n.Var):
                if self.buf(name).addr != self.buf(value.name).addr:
                    raise CodegenError(f"loop-carried tile '{name}' and '{value.name}' are in different buffers",
                                       span=span)

    def _scalar_moves(self, names, values) -> list:
        """Parallel assignment of carried scalars (through temporaries when there are several)."""
        pairs = [(x, v) for x, v in zip(names, values) if isinstance(self.types.get(x), _SCALARS)]
        if len(pairs) <= 1:
            return [ScalarAssign(x, v) for x, v in pairs]
        temps = [(f"{x}__next", v) for x, v in pairs]
        return [ScalarAssign(t, v) for t, v in temps] + [ScalarAssign(x, n.Var(t)) for (x, _), (t, _) in
                                                         zip(pairs, temps)]

    def call(self, call: n.Call, target: str | None, span) -> list:
        if call.op in INITS:
            return self.pipes.init(call, span)
        if call.op in PUSHES:
            return self.pipes.push(call, self.buf(argument(call, "tile").name), span)
        if call.op in POPS:
            return self.pipes.pop(call, self.buf(target), target, span)
        if call.op in FREES:
            return self.pipes.free(call, span)
        if call.op in COMM_OPS:
            return comm.select(self, call, target, span)
        if call.op == "system.syncall":
            return syncall(self, call, span)
        if call.op == "tensor.write":
            return [self.gm_element(call, span)]
        if call.op == "tile.write":
            return self.tile_element(call, target, span)
        if call.op == "tile.debug_print":  # the scalar unit reads the tile once the pipes have written it
            src = self.buf(argument(call, "tile").name)
            core = self.owner(src.space)
            return [Instr("SPRINT", Pipe.SCALAR, core, call.op, (src, argument(call, "label")), (self.loc(src, core),),
                          (), span, argument(call, "label"))]
        op = lookup(call.op)
        if op.level != "tile":
            raise CodegenError(f"{call.op} is still tensor-level: ConvertTensorToTileOps should have lowered it",
                               span=span)
        if call.op in LANED:  # no instruction of its own: a GM ring's store and load
            raise CodegenError(f"{call.op} is a crossing the outliner stages through GM, and it reached the code "
                               "generator", span=span)
        values = dict(zip((p.name for p in op.params), call.args))
        args, reads = [], []
        for p, arg in zip(op.params, call.args):
            if p.kind is Kind.TILE and isinstance(arg, n.Var):
                args.append(self.buf(arg.name))
            elif p.kind is Kind.TENSOR:
                args.append(TensorArg(self.tensor(arg.name, span)) if arg is not None else None)
            else:
                args.append(arg)
        bufs = [a for a in args if isinstance(a, Buf)]
        short = op.short
        if call.op == "tile.load":
            dst = self.buf(target)
            core = self.owner(dst.space)
            gm = self.gm(self.tensor(values["tensor"].name, span), values["offsets"],
                         tuple(c.value for c in values["shapes"]))
            return [Instr("TLOAD", Pipe.MTE2, core, call.op, tuple(args), (gm,), (self.loc(dst, core),), span, target,
                          dst)]
        if call.op == "tile.gather_row":
            return self.gather_row(call, values, args, target, span)
        if call.op == "tile.store":
            src = bufs[0]
            core = self.owner(src.space)
            pipe, mnemonic = (Pipe.FIXPIPE, "FIXSTORE") if src.space is M.Acc else (Pipe.MTE3, "TSTORE")
            tensor = self.tensor(values["output_tensor"].name, span)
            extents = tuple(src.shape)
            gm = self.gm(tensor, values["offsets"], extents)
            return [Instr(mnemonic, pipe, core, call.op, tuple(args), (self.loc(src, core),), (gm,), span, "")]
        if call.op == "tile.mgather_mat":
            # the cube core's MTE2 reads the index tensor and gathers into L1 (the element form
            # through the GM scratch tensor, which it writes)
            dst = self.buf(target)
            core = self.owner(dst.space)
            whole = lambda name: self.gm(name, tuple(n.Const(0) for _ in self.types[name].shape),  # noqa: E731
                                         tuple(self.types[name].shape))
            mem, idx = (self.tensor(values[k].name, span) for k in ("mem", "idx"))
            scratch = (whole(self.tensor(values["scratch"].name, span)),) if values["scratch"] is not None else ()
            return [Instr("MGATHER", Pipe.MTE2, core, call.op, tuple(args), (whole(mem), whole(idx)),
                          (self.loc(dst, core), *scratch), span, target, dst)]
        if call.op in ("tile.mgather", "tile.mscatter"):
            # The vector unit walks the index tile and waits on each burst (so its own later
            # work sees the data); an index may name any element, so the whole tensor is
            # where it may go.
            gather = call.op == "tile.mgather"
            tensor = self.tensor(values["mem" if gather else "output_tensor"].name, span)
            shape = self.types[tensor].shape
            gm = self.gm(tensor, tuple(n.Const(0) for _ in shape), tuple(shape))
            if gather:
                dst = self.buf(target)
                core = self.owner(dst.space)
                return [Instr("MGATHER", Pipe.VECTOR, core, call.op, tuple(args), (gm, self.loc(bufs[0], core)),
                              (self.loc(dst, core),), span, target, dst)]
            core = self.owner(bufs[0].space)
            return [Instr("MSCATTER", Pipe.VECTOR, core, call.op, tuple(args), tuple(self.loc(b, core) for b in bufs),
                          (gm,), span, "")]
        dst = self.buf(target)
        if call.op == "tile.move":
            src = bufs[0]
            core = self.owner(src.space)
            if src.space is M.Acc:
                pipe, mnemonic = Pipe.FIXPIPE, "FIXMOV"
            elif src.space is M.Mat:
                pipe, mnemonic = Pipe.MTE1, "TMOV"
            elif src.space is M.Vec and dst.space is M.Vec:
                pipe, mnemonic = Pipe.VECTOR, "VCOPY"
            else:
                raise CodegenError(f"no pipe moves a tile from {src.space.name} to {dst.space.name}", span=span)
        elif call.op == "tile.extract" and bufs[0].space is not M.Vec:  # into L0 by MTE1, out of L0C by the fixpipe
            core = self.owner(bufs[0].space)
            pipe, mnemonic = (Pipe.FIXPIPE if bufs[0].space is M.Acc else Pipe.MTE1), "TEXTRACT"
        elif call.op == "tile.slice" and bufs[0].space is M.Acc:  # a window of L0C the fixpipe reads out
            core, pipe, mnemonic = self.owner(bufs[0].space), Pipe.FIXPIPE, "TEXTRACT"
        elif call.op == "tile.slice" and bufs[0].space is not M.Vec:
            raise CodegenError(f"a window of the {bufs[0].space.name} tile '{call.args[0].name}' is read here as a "
                               "tile of its own, which the cube cannot address: an L1 window reaches L0 only",
                               span=span, hint="pl.move the window to pl.Mem.Left or pl.Mem.Right (or "
                               "pl.tile.extract it there) where it is used")
        elif call.op == "tile.assemble" and dst.space is M.Mat:  # Acc -> Mat: the fixpipe writes into L1
            core, pipe, mnemonic = self.owner(dst.space), Pipe.FIXPIPE, "TINSERT"
        elif call.op == "tile.transpose_view":
            core, pipe, mnemonic = self.owner(dst.space), Pipe.MTE1, "TRANSVIEW"
        elif op.mnemonic in ("MMAD", "MMAD_MX"):  # the cube's ops
            core, pipe, mnemonic = self.owner(dst.space), Pipe.CUBE, op.mnemonic
        elif call.op == "tile.create" and dst.space is not M.Vec:
            # zeros written where the cube core keeps them: by the cube into Acc, by MTE1 into L1/L0
            core, pipe, mnemonic = self.owner(dst.space), Pipe.CUBE if dst.space is M.Acc else Pipe.MTE1, "TZERO"
        else:
            core, pipe = self.owner(dst.space), Pipe.VECTOR
            mnemonic = op.mnemonic or "V" + short.replace("_", "").upper()
            if short in ("set_validshape", "reshape", "reinterpret_view") and bufs[0].addr == dst.addr:
                return []  # a view of the same bytes: nothing moves
        reads = tuple(self.loc(b, core) for b in bufs)
        return [Instr(mnemonic, pipe, core, call.op, tuple(args), reads, (self.loc(dst, core),), span, target, dst)]


def _subterms(e):
    yield e
    if isinstance(e, n.BinOp):
        yield from _subterms(e.lhs)
        yield from _subterms(e.rhs)
    elif isinstance(e, n.UnaryOp):
        yield from _subterms(e.operand)


# the cores of the cluster each participant set arrives from
_SYNCALL_CORES = {"aiv_only": (CoreKind.AIV,), "aic_only": (CoreKind.AIC,), "mix": (CoreKind.AIC, CoreKind.AIV)}


def syncall(sel: _Selector, call: n.Call, span) -> list:
    """``system.syncall``: a SYNCALL on the scalar unit of each participating core, which
    issues nothing after it until the barrier releases (the chip model holds the block
    there). Its GM counter is the barrier's own: no load or store of the kernel's touches
    it, so it names no GM bytes (two blocks' arrivals are no race)."""
    args = tuple(TensorArg(sel.tensor(a.name, span)) if isinstance(a, n.Var) and isinstance(sel.types.get(a.name),
                                                                                                TensorType) else a
                 for a in call.args)
    return [Instr("SYNCALL", Pipe.SCALAR, core, call.op, args, (), (), span, argument(call, "core_type"))
            for core in _SYNCALL_CORES[argument(call, "core_type")]]
