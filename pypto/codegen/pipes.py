"""One side of a Group's hand-written cross-core pipes, as instruction selection lowers
their ops. A pipe's slots are GM (as on a2a3): ``slot_num`` slots of one tile each, the
two vector cores' halves side by side in a slot. A push waits for a free slot once the
ring is full, stores the tile into slot ``pushes % slot_num`` and sets "ready"; a pop
waits for "ready" and loads the slot; a free sets "free". The producer's program ends
waiting for every slot it filled to be freed — so a pop without its free stalls the
producer (a deadlock naming the pipe), never overwriting a slot still in use.

    pipes = Pipes(fn, core, lanes)        # core: the function's (AIC or AIV)
    pipes.init(call) / push(call, buf) / pop(call, buf) / free(call) -> nodes
    pipes.finish() -> the drain; pipes.buffers() -> PipeBuffer per GM ring
"""

from __future__ import annotations

import attrs

from pypto.backend import CoreKind, MemorySpace as M, Pipe
from pypto.codegen.isa import BufLoc, Buf, Cond, GmLoc, Instr, Loop, ScalarAssign, SetFlag, TensorArg, WaitFlag
from pypto.errors import CodegenError
from pypto.ir import nodes as n
from pypto.ir.ops import argument
from pypto.ir.ops.pipes import C2V, DEFAULT_SLOTS, FREES, V2C, direction
from pypto.ir.ops.spmd import LANE_REGISTER
from pypto.ir.types import AtomicType, DataType

_NAMES = {C2V: "cube to vector", V2C: "vector to cube"}
_TAGS = {C2V: "c2v", V2C: "v2c"}


@attrs.frozen
class PipeBuffer:
    """The GM ring of pipe ``id`` in one direction: ``slots`` slots of ``slot_rows`` rows."""

    name: str
    pipe: int
    direction: int
    slots: int
    slot_size: int
    shape: tuple  # the whole ring, as a [slots * slot_rows, cols] tensor
    dtype: DataType
    split: int


def ring_name(pipe: int, d: int) -> str:
    # '%' keeps it apart from every parameter name (it is no identifier)
    return f"%pipe{pipe}.{_TAGS[d]}"


def is_ring(tensor: str) -> bool:
    """Whether a GM tensor name is a pipe's ring (the launch's own, no tensor of the program)."""
    return tensor.startswith("%pipe")


def describe(pipe: int, d: int) -> str:
    return f"cross-core pipe {pipe} ({_NAMES[d]})"


class Pipes:
    def __init__(self, fn: n.Function, core: CoreKind | None):
        self.fn = fn
        self.core = core
        self.inits: dict[tuple, tuple] = {}  # (pipe, direction) -> (slots, slot size)
        self.rings: dict[str, PipeBuffer] = {}
        self.pushed: list[tuple] = []  # (pipe, direction) this side produces into
        self.popped: dict[str, tuple] = {}  # tile -> (op, pipe, split) of the pop that made it

    # ------------------------------------------------------------------ the ops

    def init(self, call: n.Call, span) -> list:
        self._side(call.op, span)
        mask, pipe = argument(call, "dir_mask"), argument(call, "id") or 0
        slots = argument(call, "slot_num") or DEFAULT_SLOTS[mask]
        out = []
        for d in (C2V, V2C):
            if mask & d:
                self.inits[(pipe, d)] = (slots, argument(call, "slot_size"))
                out.append(ScalarAssign(_counter(pipe, d), n.Const(0)))
        return out

    def push(self, call: n.Call, buf: Buf, span) -> list:
        d, pipe, split = self._op(call, span)
        producer, consumer = _ends(d)
        rows, cols = buf.shape
        lane = n.Var(LANE_REGISTER)
        if d == C2V:
            if buf.space is not M.Acc:
                raise CodegenError(f"tpush_to_aiv sends a {buf.space.name} tile; the cube pushes its Acc tiles (a "
                                   "matmul's result) through the fixpipe", span=span,
                                   hint="push the pl.matmul result itself")
            full, at = (rows, cols), (n.Const(0), n.Const(0))
        else:
            full, at = _lane_part(split, rows, cols, lane, stacked=True)
        ring = self._ring(pipe, d, full, buf.dtype, split, span)
        count = n.Var(_counter(pipe, d))
        offsets = _slot_offsets(ring, count, at)
        extents = tuple(buf.shape)
        if (pipe, d) not in self.pushed:
            self.pushed.append((pipe, d))
        return [
            Cond(n.BinOp(">=", count, n.Const(ring.slots)), (_flag(WaitFlag, "free", pipe, d),)),
            Instr("TPUSH", _push_pipe(d), producer, "tile.store",
                  (buf, offsets, TensorArg(ring.name), AtomicType.None_),
                  (BufLoc(buf.space, producer, buf.addr, buf.nbytes, buf.region),),
                  (GmLoc(ring.name, offsets, extents),), span, f"pipe {pipe}"),
            _flag(SetFlag, "ready", pipe, d),
            ScalarAssign(count.name, n.BinOp("+", count, n.Const(1))),
        ]

    def pop(self, call: n.Call, dst: Buf, target: str, span) -> list:
        d, pipe, split = self._op(call, span)
        producer, consumer = _ends(d)
        rows, cols = dst.shape
        lane = n.Var(LANE_REGISTER)
        if d == C2V:
            full, at = _lane_part(split, rows, cols, lane, stacked=False)
        else:  # the cube takes the whole tile (lane 0's, when each lane sent one)
            full, at = (rows, cols), (n.Const(0), n.Const(0))
        ring = self._ring(pipe, d, full, dst.dtype, split, span)
        count = n.Var(_counter(pipe, d))
        offsets = _slot_offsets(ring, count, at)
        self.popped[target] = (call.op, pipe, split)
        shapes = (n.Const(rows), n.Const(cols))
        return [
            _flag(WaitFlag, "ready", pipe, d),
            Instr("TPOP", Pipe.MTE2, consumer, "tile.load",
                  (TensorArg(ring.name), offsets, shapes, None, dst.space, False),
                  (GmLoc(ring.name, offsets, (rows, cols)),), (BufLoc(dst.space, consumer, dst.addr, dst.nbytes,
                                                                      dst.region),), span, target, dst),
            ScalarAssign(count.name, n.BinOp("+", count, n.Const(1))),
        ]

    def free(self, call: n.Call, span) -> list:
        tile = argument(call, "tile")
        origin = self.popped.get(tile.name) if isinstance(tile, n.Var) else None
        want = FREES[call.op]
        if origin is None:
            raise CodegenError(f"{call.op} requires its tile argument to come from a matching tile.tpop_from_ai"
                               "{c,v}, but no originating tpop was found", span=span,
                               hint=f"free the tile a pl.{want.split('.')[1]}(...) returned")
        if origin[0] != want:
            other = next(f for f, pop in FREES.items() if pop == origin[0])
            raise CodegenError(f"{call.op} requires its tile argument to come from {want}, got {origin[0]}",
                               span=span, hint=f"free it with pl.{other.split('.')[1]}")
        pipe = argument(call, "id")
        if pipe is not None and pipe != origin[1]:
            raise CodegenError(f"{call.op} pipe id {pipe} does not match originating {origin[0]} pipe id "
                               f"{origin[1]}", span=span, hint="leave id= out: the free inherits its pop's")
        return [_flag(SetFlag, "free", origin[1], direction(call.op))]

    def finish(self) -> list:
        """The producer's last wait: every slot it filled freed again."""
        out = []
        for pipe, d in self.pushed:
            slots = self.rings[ring_name(pipe, d)].slots
            count = n.Var(_counter(pipe, d))
            out.append(Loop(f"{_counter(pipe, d)}.drain", n.Const(0), n.BinOp("min", count, n.Const(slots)),
                            n.Const(1), (_flag(WaitFlag, "free", pipe, d),)))
        return out

    def buffers(self) -> tuple:
        return tuple(self.rings[k] for k in sorted(self.rings))

    # ------------------------------------------------------------------ checks

    def _side(self, op: str, span) -> None:
        want = _CORE[op]
        if self.core is not want:
            kind = "AIC" if want is CoreKind.AIC else "AIV"
            raise CodegenError(f"{op} runs on the {'cube' if want is CoreKind.AIC else 'vector'} core: it belongs in "
                               f"an {kind} function of a Group, not in '{self.fn.name}'", span=span,
                               hint=f"@pl.function(type=pl.FunctionType.{kind}), called from a "
                                    "@pl.function(type=pl.FunctionType.Group)")

    def _op(self, call: n.Call, span) -> tuple:
        self._side(call.op, span)
        d = direction(call.op)
        pipe = argument(call, "id") or 0
        if (pipe, d) not in self.inits:
            init = "aic_initialize_pipe" if self.core is CoreKind.AIC else "aiv_initialize_pipe"
            raise CodegenError(f"{call.op} uses {describe(pipe, d)}, which this function has not set up",
                               span=span, hint=f"pl.{init}(..., dir_mask={d}, slot_size=..., id={pipe}) first")
        return d, pipe, argument(call, "split")

    def _ring(self, pipe: int, d: int, full: tuple, dtype: DataType, split: int, span) -> PipeBuffer:
        slots, slot_size = self.inits[(pipe, d)]
        rows, cols = full
        if split == 0 and d == V2C:
            rows *= 2  # each vector core's whole tile, side by side: the cube takes lane 0's
        need = full[0] * full[1] * dtype.nbytes
        if need > slot_size:
            raise CodegenError(f"{describe(pipe, d)} has slots of {slot_size} bytes, and a {list(full)} {dtype.name} "
                               f"tile is {need}", span=span, hint=f"slot_size={need} (or more) in its initialize_pipe")
        ring = PipeBuffer(ring_name(pipe, d), pipe, d, slots, slot_size, (slots * rows, cols), dtype, split)
        old = self.rings.setdefault(ring.name, ring)
        if old != ring:
            raise CodegenError(f"{describe(pipe, d)} moves one tile shape, dtype and split: here "
                               f"{list(full)} {dtype.name} split={split}, before {list(old.shape)} ...",
                               span=span, hint="give each kind of tile a pipe id of its own")
        return ring


# the core each pipe op runs on
_CORE = {"system.aic_initialize_pipe": CoreKind.AIC, "tile.tpush_to_aiv": CoreKind.AIC,
         "tile.tpop_from_aiv": CoreKind.AIC, "system.tfree_to_aiv": CoreKind.AIC,
         "system.aiv_initialize_pipe": CoreKind.AIV, "tile.tpush_to_aic": CoreKind.AIV,
         "tile.tpop_from_aic": CoreKind.AIV, "system.tfree_to_aic": CoreKind.AIV}


def _push_pipe(d: int) -> Pipe:
    """The producer's pipe: the cube pushes Acc tiles through the fixpipe, a vector core by MTE3."""
    return Pipe.FIXPIPE if d == C2V else Pipe.MTE3


def _flag(cls, slot: str, pipe: int, d: int):
    """One of a pipe's flags: "ready" (the producer's push pipe to the consumer's MTE2) or "free"
    (back), set or waited for (``cls``), its note what the deadlock message names."""
    producer, consumer = _ends(d)
    ends = (_push_pipe(d), Pipe.MTE2, producer, consumer) if slot == "ready" else \
        (Pipe.MTE2, _push_pipe(d), consumer, producer)
    src, dst, src_core, dst_core = ends
    return cls(src, dst, n.Const(pipe), src_core, dst_core, note=(slot, describe(pipe, d)))


def _counter(pipe: int, d: int) -> str:
    return f"%pipe{pipe}.{_TAGS[d]}.n"


def _ends(d: int) -> tuple:
    """(producer, consumer) of a direction."""
    return (CoreKind.AIC, CoreKind.AIV) if d == C2V else (CoreKind.AIV, CoreKind.AIC)


def _lane_part(split: int, rows: int, cols: int, lane, *, stacked: bool) -> tuple:
    """(the whole tile, where one lane's [rows, cols] part of it begins): split 1 stacks the
    lanes' rows, 2 their columns; 0 is the whole tile — each lane's own copy below the
    other's when ``stacked`` (vector cores pushing), else the one copy both read."""
    zero = n.Const(0)
    if split == 1:
        return (2 * rows, cols), (n.BinOp("*", lane, n.Const(rows)), zero)
    if split == 2:
        return (rows, 2 * cols), (zero, n.BinOp("*", lane, n.Const(cols)))
    return (rows, cols), ((n.BinOp("*", lane, n.Const(rows)), zero) if stacked else (zero, zero))


def _slot_offsets(ring: PipeBuffer, count, at: tuple) -> tuple:
    slot_rows = ring.shape[0] // ring.slots
    row = n.BinOp("+", n.BinOp("*", n.BinOp("%", count, n.Const(ring.slots)), n.Const(slot_rows)), at[0])
    return row, at[1]
