"""The instructions of the ``pld`` ops: the comm context's fields (SLOADCTX), the signal unit's
TNOTIFY / TWAIT on the scalar pipe, and the RMA transfers TGET (a peer's window into a Vec
tile, on MTE2) and TPUT (a Vec tile into a peer's window, on MTE3). Each names the GM
window it touches on this rank's side; which rank's copy moves is the peer operand, read
by the scalar unit."""

from __future__ import annotations

from pypto.codegen.isa import Instr, TensorArg
from pypto.ir import nodes as n
from pypto.ir.ops import Kind, argument, lookup
from pypto.backend import CoreKind, Pipe

# the comm context's fields (``CommContext::rankId`` / ``rankNum``)
COMM_REGISTERS = ("system.rank", "system.nranks")
COLLECTIVES = frozenset(f"system.{name}" for name in ("allreduce", "barrier", "broadcast", "allgather",
                                                      "reduce_scatter", "all_to_all", "all_to_all_v", "put", "get"))
# the instructions a rank's launch performs with its peers (``pypto.sim.data.ranks``); those of the
# signal unit are fenced behind everything its core issued before them
CROSS_RANK = frozenset({"SLOADCTX", "TNOTIFY", "TWAIT", "TGET", "TPUT", "TCOLL"})
FENCED = frozenset({"TNOTIFY", "TWAIT", "TCOLL"})
COMM_OPS = frozenset({"system.notify", "system.wait", "tile.remote_load", "tile.remote_store", *COMM_REGISTERS,
                      *COLLECTIVES})


def select(sel, call: n.Call, target: str | None, span) -> list:
    """``sel``: the function's ``Selector`` (its buffers, GM tensors and owning cores)."""
    if call.op in COMM_REGISTERS:  # the scalar unit reads the field of the rank's CommContext
        ctx = sel.tensor(argument(call, "ctx").name, span)
        return [Instr("SLOADCTX", Pipe.SCALAR, CoreKind.AIV, call.op, (TensorArg(ctx),), (), (), span, target,
                      result=target)]
    if call.op in COLLECTIVES:  # the composite's protocol, as one instruction of the signal unit
        op = lookup(call.op)
        args, touched = [], []
        for p, arg in zip(op.params, call.args):
            if p.kind is Kind.TENSOR:
                tensor = sel.tensor(arg.name, span)
                shape = sel.types[tensor].shape
                touched.append(sel.gm(tensor, tuple(n.Const(0) for _ in shape), tuple(shape)))
                args.append(TensorArg(tensor))
            else:
                args.append(arg)
        return [Instr("TCOLL", Pipe.SCALAR, CoreKind.AIV, call.op, tuple(args), tuple(touched), tuple(touched), span,
                      target or "")]
    if call.op in ("system.notify", "system.wait"):
        name = "target" if call.op == "system.notify" else "signal"
        tensor = sel.tensor(argument(call, name).name, span)
        offsets = tuple(argument(call, "offsets"))
        gm = sel.gm(tensor, offsets, tuple(1 for _ in offsets))
        args = (TensorArg(tensor), *call.args[1:])
        if call.op == "system.notify":  # the peer's cell: this rank's own GM is not written
            return [Instr("TNOTIFY", Pipe.SCALAR, CoreKind.AIV, call.op, args, (), (), span, "")]
        return [Instr("TWAIT", Pipe.SCALAR, CoreKind.AIV, call.op, args, (gm,), (), span, "")]
    tensor = sel.tensor(argument(call, "target").name, span)
    if call.op == "tile.remote_load":
        dst = sel.buf(target)
        args = (TensorArg(tensor), *call.args[1:])
        return [Instr("TGET", Pipe.MTE2, CoreKind.AIV, call.op, args, (), (sel.loc(dst, CoreKind.AIV),), span,
                      target, dst)]
    src = sel.buf(argument(call, "tile").name)
    args = (src, TensorArg(tensor), *call.args[2:])
    return [Instr("TPUT", Pipe.MTE3, CoreKind.AIV, call.op, args, (sel.loc(src, CoreKind.AIV),), (), span, "")]
