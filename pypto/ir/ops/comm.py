"""The ``pld`` ops a rank's InCore kernel runs against its peers (``pld.system.notify`` /
``wait``, ``pld.tile.remote_load`` / ``remote_store``, the comm context's ``rank`` and
``nranks``), and the host's window management, refused anywhere else.

Every operand a peer addresses is a window-bound ``pld.DistributedTensor``: each rank
allocated the window alike, so the same offsets name the same bytes on every rank. The
refusals are the reference's: host-only vs InCore-only, the signal's dtype, the dtypes a
remote atomic add takes, a region inside its window.
"""

from __future__ import annotations

from pypto.backend import MemorySpace as M
from pypto.backend import SoC
from pypto.errors import TypeCheckError
from pypto.ir.nodes import Const
from pypto.ir.ops.registry import TENSOR_OPERAND_FORMS, Kind, OpArgs, register
from pypto.ir.ops.type_rules import check_valid, fail, fmt_shape, static_ints
from pypto.ir.ops.registry import ParamSpec as P
from pypto.ir.ops.transfers import SHAPE_HINT, check_region
from pypto.ir.types import (ATOMIC_ADD_DTYPES, AtomicType, DataType, ReduceOp, ScalarType, TensorType, TileType,
                             type_name)

PLD = "distributed."  # spelled ``pl.distributed.<op>``, which is ``pld.<op>``
WINDOW_HINT = ("pass a window-bound tensor: pld.window(buf, shape, dtype=...) in the host orchestrator, "
               "received as a pld.DistributedTensor[...] parameter")


def window_operand(op: str, a: OpArgs, name: str, role: str) -> TensorType:
    """The op's window-bound operand, or the reference's refusal."""
    t = a.type(name)
    if not isinstance(t, TensorType) or not t.window:
        raise fail(f"pld.{op}", f"a DistributedTensor {role} (window-bound)", type_name(t) if t else "a constant",
                   WINDOW_HINT)
    return t


def _peer(op: str, a: OpArgs) -> None:
    peer, t = a["peer"], a.type("peer")
    if isinstance(peer, Const) and (not isinstance(peer.value, int) or isinstance(peer.value, bool)
                                    or peer.value < 0) \
            or isinstance(t, ScalarType) and not t.dtype.is_int:
        raise fail(f"pld.{op}", "a non-negative integer peer rank", type_name(t) if t else repr(peer.value),
                   "peer=(my_rank + 1) % nranks, with my_rank = pld.rank(pld.get_comm_ctx(dt))")


def _cell(op: str, t: TensorType, offsets) -> None:
    """One offset per axis of the signal, each constant one inside it."""
    if len(offsets) != len(t.shape):
        raise fail(f"pld.{op}", f"one offset per axis of the signal ({len(t.shape)})", f"{len(offsets)}",
                   f"offsets=[{', '.join('0' for _ in t.shape)}]")
    for axis, (o, extent) in enumerate(zip(offsets, t.shape)):
        if isinstance(o, Const) and isinstance(extent, int) and not 0 <= o.value < extent:
            raise fail(f"pld.{op}", f"an offset inside the signal's extent {extent} on axis {axis}", str(o.value),
                       f"an offset in 0..{extent - 1}")


def _signal(op: str, a: OpArgs, name: str) -> TensorType:
    t = window_operand(op, a, name, "signal")
    if t.dtype is not DataType.INT32:
        raise fail(f"pld.{op}", "an INT32 signal", f"a {t.dtype.name} one",
                   "allocate the signal window with dtype=pl.INT32")
    return t


def _integer(op: str, a: OpArgs, name: str) -> None:
    v, t = a[name], a.type(name)
    if isinstance(v, Const) and (isinstance(v.value, float) or isinstance(v.value, bool)) \
            or isinstance(t, ScalarType) and not t.dtype.is_int:
        raise fail(f"pld.{op}", f"an integer {name}", type_name(t) if t else repr(v.value),
                   f"pass an int for {name}= (the signal cell is INT32)")


def _infer_notify(a: OpArgs, soc: SoC):
    t = _signal("system.notify", a, "target")
    _peer("system.notify", a)
    _cell("system.notify", t, a["offsets"])
    _integer("system.notify", a, "value")
    return None


def _infer_wait(a: OpArgs, soc: SoC):
    t = _signal("system.wait", a, "signal")
    _cell("system.wait", t, a["offsets"])
    _integer("system.wait", a, "expected")
    return None


def _infer_ctx(a: OpArgs, soc: SoC) -> ScalarType:
    op = a.op.split(".", 1)[1]
    t = a.type("ctx")
    if not isinstance(t, TensorType) or not t.window:
        raise fail(f"pld.system.{op}", "a CommCtx", type_name(t) if t else "a constant",
                   "ctx = pld.get_comm_ctx(dt), dt a pld.DistributedTensor parameter")
    return ScalarType(DataType.INT32)


def _infer_remote_load(a: OpArgs, soc: SoC) -> TileType:
    t = window_operand("tile.remote_load", a, "target", "target")
    _peer("tile.remote_load", a)
    shape = static_ints(a["shape"])
    if shape is None or any(s <= 0 for s in shape):
        raise fail("pld.tile.remote_load", "static positive tile shapes", fmt_shape(a["shape"]), SHAPE_HINT)
    valid = a["valid_shape"]
    if valid is not None:
        check_valid("pld.tile.remote_load", valid, shape, "a valid shape inside the tile shape")
    check_region("pld.tile.remote_load", t, a["offsets"], shape, what="region", valid=valid)
    return TileType(shape=tuple(shape), dtype=t.dtype, space=M.Vec, valid_shape=None if valid is None else tuple(valid))


def _infer_remote_store(a: OpArgs, soc: SoC):
    tile: TileType = a.tile("tile")
    t = window_operand("tile.remote_store", a, "target", "target")
    _peer("tile.remote_store", a)
    if tile.dtype is not t.dtype:
        raise fail("pld.tile.remote_store", f"a {t.dtype.name} tile for the {t.dtype.name} window",
                   f"a {tile.dtype.name} tile", f"pl.cast(tile, target_type=pl.{t.dtype.name}) first")
    if a["atomic"] is AtomicType.Add:
        if t.dtype not in ATOMIC_ADD_DTYPES:
            raise fail("pld.tile.remote_store", "an fp32/bf16/fp16/int32/int16/int8 destination for atomic=Add",
                       f"a {t.dtype.name} one", "store with atomic=pl.AtomicType.None_, or widen the window's dtype")
        if t.dtype is DataType.BF16 and soc.name != "Ascend910B":
            raise fail("pld.tile.remote_store", "the Ascend910B (A2/A3) profile for a bf16 atomic add",
                       soc.name, "accumulate in an fp32 window")
    check_region("pld.tile.remote_store", t, a["offsets"], tile.shape, what="region", valid=tile.valid_shape)
    return None


def _infer_tensor_remote_store(a: OpArgs, soc: SoC):
    src = a.type("src")
    if not isinstance(src, TensorType):
        raise fail("pld.tensor.remote_store", "a tensor value to push", type_name(src) if src else "a constant",
                   "in a tile-level kernel push the tile: pld.tile.remote_store(tile, win, peer, offsets)")
    t = window_operand("tensor.remote_store", a, "target", "target")
    _peer("tensor.remote_store", a)
    if src.dtype is not t.dtype:
        raise fail("pld.tensor.remote_store", f"a {t.dtype.name} value for the {t.dtype.name} window",
                   f"a {src.dtype.name} one", f"pl.cast(value, target_type=pl.{t.dtype.name}) first")
    if a["atomic"] is AtomicType.Add and t.dtype not in ATOMIC_ADD_DTYPES:
        raise fail("pld.tensor.remote_store", "an fp32/bf16/fp16/int32/int16/int8 destination for atomic=Add",
                   f"a {t.dtype.name} one", "store with atomic=pl.AtomicType.None_, or widen the window's dtype")
    check_region("pld.tensor.remote_store", t, a["offsets"], src.shape, what="region")
    return None


def _host_only(a: OpArgs, soc: SoC):
    op = a.op.split(".", 1)[1]
    raise TypeCheckError(f"pld.{op} is host-only: it runs in the @pl.jit.host orchestrator, which holds the world",
                         hint="call it in the @pl.jit.host function and pass what it gives down as arguments "
                              "(a rank as a scalar, a window as a pld.DistributedTensor)")


_TARGET = P("target", Kind.TENSOR)
_PEER = P("peer", Kind.SCALAR, integer=True)
_OFFSETS = P("offsets", Kind.INDEX_LIST)

register("system.notify", [_TARGET, _PEER, _OFFSETS, P("value", Kind.SCALAR), P("op", Kind.NOTIFY)], _infer_notify,
         doc="deposit value in the peer rank's signal cell at offsets (op: AtomicAdd adds, Set overwrites); "
             "side effect only", effect=True, module=PLD)
register("system.wait", [P("signal", Kind.TENSOR), _OFFSETS, P("expected", Kind.SCALAR), P("cmp", Kind.WAIT_CMP)],
         _infer_wait, doc="block until this rank's signal cell at offsets compares (Eq / Ge) with expected",
         effect=True, module=PLD)
register("system.rank", [P("ctx", Kind.TENSOR)], _infer_ctx, doc="this rank's index in the comm domain (INT32)",
         scalar=True, module=PLD)
register("system.nranks", [P("ctx", Kind.TENSOR)], _infer_ctx, doc="the number of ranks in the comm domain (INT32)",
         scalar=True, module=PLD)
register("tile.remote_load", [_TARGET, _PEER, _OFFSETS, P("shape", Kind.SHAPE),
                              P("valid_shape", Kind.INDEX_LIST, default=None, optional=True)], _infer_remote_load,
         doc="a Vec tile of the peer rank's copy of the window at offsets (valid_shape: the real part of a ragged "
             "tail)", mnemonic="TGET", module=PLD)
register("tile.remote_store", [P("tile", Kind.TILE, spaces=(M.Vec,)), _TARGET, _PEER, _OFFSETS,
                               P("atomic", Kind.ATOMIC, AtomicType.None_)], _infer_remote_store,
         doc="write the tile into the peer rank's copy of the window at offsets (atomic=Add accumulates there); "
             "side effect only", effect=True, mnemonic="TPUT", module=PLD)
# (a tensor-level kernel's push of a value it computed: lowered to the tile push of that value
# where the kernel's tensor ops become tiles, so the value goes from on-chip memory to the peer)
register("tensor.remote_store", [P("src", Kind.TENSOR), _TARGET, _PEER, _OFFSETS,
                                 P("atomic", Kind.ATOMIC, AtomicType.None_)], _infer_tensor_remote_store,
         doc="write a tensor value into the peer rank's copy of the window at offsets (atomic=Add accumulates "
             "there); side effect only", effect=True, module=PLD)
# ``pld.remote_store(value, ...)`` (and the tile spelling) given a tensor is the tensor-level push
TENSOR_OPERAND_FORMS["tile.remote_store"] = ("tile", "tensor.remote_store")
for _name in ("world_size", "alloc_window_buffer", "window"):
    register(f"{'system' if _name == 'world_size' else 'tensor'}.{_name}", [], _host_only,
             doc="host-only: the @pl.jit.host orchestrator's", plane="both", module=PLD)


# ----------------------------------------------------------------------------- collectives
# The InCore composites (``pld.tensor.allreduce(data, signal, ...)`` and the five others): one
# op each, whose meaning on a rank (``pypto.sim.ops.comm``) is the reference's protocol over the
# same primitives — a credit barrier on the signal (each rank adds 1 to its cell of every
# peer's signal and waits for its peers' cells, which it then takes back, so the signal is
# reusable), the remote reads or writes, a second barrier before a rank overwrites what its
# peers read. Filed under ``system`` (a kernel's tensor ops are otherwise lowered to tiles);
# spelled ``pld.tensor.<name>`` as the reference does.

COLLECTIVES = ("allreduce", "barrier", "broadcast", "allgather", "reduce_scatter", "all_to_all", "all_to_all_v")
MESH_DTYPES = (DataType.FP16, DataType.FP32)


def _collective_signal(op: str, a: OpArgs) -> TensorType:
    t = _signal(op, a, "signal")
    if len(t.shape) not in (1, 2):
        raise fail(f"pld.{op}", "a [NR] or [NR, k] signal", type_name(t), "pld.window(sig_buf, [NR, 1], dtype=pl.INT32)")
    return t


def _infer_allreduce(a: OpArgs, soc: SoC) -> TensorType:
    t = window_operand("tensor.allreduce", a, "target", "target")
    signal = _collective_signal("tensor.allreduce", a)
    if a["mode"] not in ("mesh", "ring"):
        raise fail("pld.tensor.allreduce", "mode='mesh' or mode='ring'", repr(a["mode"]))
    if a["mode"] == "ring" and len(signal.shape) != 2:  # a row of cells per round
        raise fail("pld.tensor.allreduce", "a [2 * (NR - 1), NR] signal (mode='ring')", type_name(signal),
                   "pld.window(sig_buf, [2 * (nr - 1), nr], dtype=pl.INT32)")
    if t.dtype not in MESH_DTYPES:
        raise fail("pld.tensor.allreduce", "an FP16 or FP32 target (mesh)", f"a {t.dtype.name} one",
                   "reduce in an FP32 window")
    if a["core_num"] != 1:
        raise fail("pld.tensor.allreduce", "core_num=1 in an InCore kernel", str(a["core_num"]),
                   "spread the work with an enclosing pl.spmd(...) instead")
    return t


def _infer_barrier(a: OpArgs, soc: SoC) -> TensorType:
    return _collective_signal("tensor.barrier", a)


def _infer_broadcast(a: OpArgs, soc: SoC) -> TensorType:
    t = window_operand("tensor.broadcast", a, "target", "target")
    _collective_signal("tensor.broadcast", a)
    root = a["root"]
    if isinstance(root, Const) and (not isinstance(root.value, int) or root.value < 0):
        raise fail("pld.tensor.broadcast", "a non-negative root rank", repr(root.value))
    return t


def _infer_gathers(a: OpArgs, soc: SoC) -> TensorType:
    op = "tensor." + a.op.split(".", 1)[1]
    src = a.type("input")  # this rank's own data: a window (staged) or any tensor, read locally
    if not isinstance(src, TensorType):
        raise fail(f"pld.{op}", "a tensor input", type_name(src) if src else "a constant")
    t = window_operand(op, a, "target", "target")
    if src.dtype is not t.dtype:
        raise fail(f"pld.{op}", "'input' and 'target' of one dtype", f"{src.dtype.name} and {t.dtype.name}")
    _collective_signal(op, a)
    if op == "tensor.allgather" and tuple(src.shape[1:]) != tuple(t.shape[1:]) or \
            op == "tensor.all_to_all" and tuple(src.shape) != tuple(t.shape):
        want = "[NR, *input's row]" if op == "tensor.allgather" else "the input's shape"
        raise fail(f"pld.{op}", f"a target of {want}", f"{type_name(src)} into {type_name(t)}")
    return t


def _infer_reduce_scatter(a: OpArgs, soc: SoC) -> TensorType:
    t = window_operand("tensor.reduce_scatter", a, "target", "target")
    _collective_signal("tensor.reduce_scatter", a)
    if a["op"] is not ReduceOp.Sum:
        raise fail("pld.tensor.reduce_scatter", "op=pld.ReduceOp.Sum", f"op={a['op']!r}",
                   "reduce_scatter sums; use allreduce for Max / Min / Prod")
    return t


def _infer_all_to_all_v(a: OpArgs, soc: SoC) -> TensorType:
    op = "tensor.all_to_all_v"
    src = a.type("input")
    if not isinstance(src, TensorType):
        raise fail(f"pld.{op}", "a tensor input", type_name(src) if src else "a constant")
    t = window_operand(op, a, "target", "target")
    if src.dtype is not t.dtype or tuple(src.shape) != tuple(t.shape):
        raise fail(f"pld.{op}", "an input and a target of one shape and dtype ([NR * MAX_RECV, ...])",
                   f"{type_name(src)} into {type_name(t)}")
    _collective_signal(op, a)
    counts = a.type("send_counts")
    if not isinstance(counts, TensorType) or counts.dtype is not DataType.INT32:
        raise fail(f"pld.{op}", "INT32 send_counts ([NR, 1])", type_name(counts) if counts else "a constant")
    recv = window_operand(op, a, "recv_counts", "recv_counts")
    if recv.dtype is not DataType.INT32 or len(recv.shape) not in (1, 2):
        raise fail(f"pld.{op}", "an INT32 [NR, 1] recv_counts window", type_name(recv),
                   "pld.window(recv_buf, [nr, 1], dtype=pl.INT32)")
    return t


_SIGNAL = P("signal", Kind.TENSOR)
register("system.all_to_all_v", [P("input", Kind.TENSOR), _TARGET, _SIGNAL, P("send_counts", Kind.TENSOR),
                                  P("recv_counts", Kind.TENSOR)], _infer_all_to_all_v,
         doc="slot dest (MAX_RECV rows) of each rank's input into slot src of rank dest's target, "
             "send_counts[dest] into recv_counts[src] of rank dest (an InCore composite)",
         writes_operand="target", module=PLD)
for _name, _params, _infer, _doc in (
        ("allreduce", [_TARGET, _SIGNAL, P("op", Kind.REDUCE, ReduceOp.Sum), P("mode", Kind.STR, "mesh"),
                       P("core_num", Kind.INT, 1)], _infer_allreduce,
         "every rank's target combined by op (mesh: each rank reads every peer's), into every rank's target"),
        ("barrier", [_SIGNAL], _infer_barrier, "return once every rank of the domain has arrived"),
        ("broadcast", [_TARGET, _SIGNAL, P("root", Kind.SCALAR, integer=True)], _infer_broadcast,
         "the root rank's target into every rank's target"),
        ("allgather", [P("input", Kind.TENSOR), _TARGET, _SIGNAL], _infer_gathers,
         "each rank's input into row src (of rank src) of every rank's target"),
        ("reduce_scatter", [_TARGET, _SIGNAL, P("op", Kind.REDUCE, ReduceOp.Sum)], _infer_reduce_scatter,
         "row r of every rank's target summed into row r of rank r's target"),
        ("all_to_all", [P("input", Kind.TENSOR), _TARGET, _SIGNAL], _infer_gathers,
         "row dest of each rank's input into row src (of rank src) of rank dest's target")):
    register(f"system.{_name}", _params, _infer, doc=_doc + " (an InCore composite)",
             writes_operand="signal" if _name == "barrier" else "target", module=PLD)


# ----------------------------------------------------------------------------- put / get
# One-sided bulk moves between GM and a peer's window (``pld.tensor.put`` / ``get``): the whole
# views, or the matching regions three arguments name; ``chunk_rows`` / ``chunk_cols`` split the
# move into transfers (``pipeline=True`` overlaps their staging, and needs both).


def _infer_move(a: OpArgs, soc: SoC):
    put = a.op == "system.put"
    op = "tensor.put" if put else "tensor.get"
    remote, local = ("dst", "src") if put else ("src", "dst")
    rt = window_operand(op, a, remote, remote)
    lt = a.type(local)
    if not isinstance(lt, TensorType):
        raise fail(f"pld.{op}", f"a tensor {local}", type_name(lt) if lt else "a constant")
    _peer(op, a)
    if rt.dtype is not lt.dtype:
        raise fail(f"pld.{op}", "src and dst of one dtype", f"{a.type('src').dtype.name} and {a.type('dst').dtype.name}")
    given = [a[k] is not None for k in ("dst_offsets", "src_offsets", "shape")]
    if any(given) and not all(given):
        raise fail(f"pld.{op}", "dst_offsets, src_offsets and shape together (or none of them)",
                   ", ".join(k for k, g in zip(("dst_offsets", "src_offsets", "shape"), given) if g) + " alone",
                   "give all three to move a region, or none to move the whole views")
    if all(given):
        shape = static_ints(a["shape"])
        if shape is None or any(s <= 0 for s in shape):
            raise fail(f"pld.{op}", "a static positive shape", fmt_shape(a["shape"]), SHAPE_HINT)
        check_region(f"pld.{op}", a.type("dst"), a["dst_offsets"], shape, what="dst region")
        check_region(f"pld.{op}", a.type("src"), a["src_offsets"], shape, what="src region")
    elif tuple(a.type("dst").shape) != tuple(a.type("src").shape):
        raise fail(f"pld.{op}", "src and dst of one shape (or dst_offsets, src_offsets and shape)",
                   f"{type_name(a.type('src'))} and {type_name(a.type('dst'))}")
    if put and a["atomic"] is AtomicType.Add and rt.dtype not in ATOMIC_ADD_DTYPES:
        raise fail("pld.tensor.put", "an fp32/bf16/fp16/int32/int16/int8 destination for atomic=Add",
                   f"a {rt.dtype.name} one")
    for k in ("chunk_rows", "chunk_cols"):
        if a[k] < 0:
            raise fail(f"pld.{op}", f"{k} >= 0 (0: the whole extent)", str(a[k]))
    if a["pipeline"] and not (a["chunk_rows"] > 0 and a["chunk_cols"] > 0):
        raise fail(f"pld.{op}", "both chunk_rows > 0 and chunk_cols > 0 with pipeline=True",
                   f"chunk_rows={a['chunk_rows']}, chunk_cols={a['chunk_cols']}",
                   "the staging tile is sized statically: give both chunk extents")
    return None


def _move_params(put: bool):
    return [P("dst", Kind.TENSOR), _PEER, P("src", Kind.TENSOR),
            P("dst_offsets", Kind.INDEX_LIST, default=None, optional=True),
            P("src_offsets", Kind.INDEX_LIST, default=None, optional=True),
            P("shape", Kind.SHAPE, default=None, optional=True),
            *([P("atomic", Kind.ATOMIC, AtomicType.None_)] if put else []),
            P("chunk_rows", Kind.INT, 0), P("chunk_cols", Kind.INT, 0), P("pipeline", Kind.BOOL, False)]


register("system.put", _move_params(True), _infer_move, effect=True, module=PLD,
         doc="write this rank's src (a window or a tensor) into the peer rank's copy of the window dst")
register("system.get", _move_params(False), _infer_move, effect=True, module=PLD,
         doc="read the peer rank's copy of the window src into this rank's dst")
