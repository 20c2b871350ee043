"""Where a sink's blocks come from (ConvertTensorToTileOps): ``plan_sink`` chooses how to
block ``target[...] = source`` so that one block's tiles fit in Vec, ``emit_sink`` emits
it with ``tile_emitter``.

    out[:] = pl.exp(a)        # a: [2048, 128] FP32     Plan(blocks=(256, 128), order=(0, 1))
->  for r in pl.range(0, 2048, 256):
        a_tile = pl.tile.load(a, [r, 0], [256, 128], target_memory=pl.Mem.Vec)
        exp_1 = pl.tile.exp(a_tile)
        pl.tile.store(exp_1, [r, 0], out)

Plans are tried by emitting them into throwaway copies of the emitter and summing the
bytes of their tiles (what may be live at once, counted conservatively, so that the
memory planner can always place them); of those that fit, the one that moves the fewest
GM bytes wins. The cube side (a matmul's accumulator) blocks by the SoC table's cube
block instead.
"""

from __future__ import annotations

import itertools
import math

import attrs

from pypto.errors import MemorySpaceError, UnsupportedSyntaxError
from pypto.ir import nodes as n
from pypto.ir.affine import interval, linear
from pypto.ir.ops import argument, op_call
from pypto.ir.types import INDEX, DataType, TileType
from pypto.passes.tile_conversion.regions import block_sizes, extents, plus
from pypto.passes.tile_conversion.tensor_graph import Unblockable
from pypto.passes.tile_conversion.tile_emitter import Emitter
from pypto.backend import MemorySpace as M
from pypto.backend import SoC


@attrs.frozen
class Plan:
    blocks: tuple  # elements per block, per axis
    order: tuple  # the axes' block loops, outermost first
    fold_budget: int = 0  # bytes of Vec a reduction's fold may take (0: no folds)


@attrs.frozen
class Emitted:
    stmts: tuple
    peak: int  # the most bytes of Vec its tiles hold at once
    # whether every read of the stored tensor is safe in blocks: of the window its own
    # block stores, or of bytes the sink never stores
    self_reads_safe: bool
    reads_target: bool


def emit_sink(em: Emitter, stmt, target: str, offsets: tuple, source: str, plan: Plan) -> Emitted:
    """``target[offsets...] = source``, computed in blocks of ``plan.blocks`` elements per
    axis: a block loop for each axis not taken whole, nested in ``plan.order``; where a
    block does not divide its axis, what is left over is a block of its own (so the value
    is computed in pieces: the loops, then each remainder)."""
    em.sink_stmt, em.loads, em.live, em.peak, em.ranges = stmt, [], 0, 0, {}
    atomic = argument(stmt.value, "atomic")
    em.fold_budget = plan.fold_budget
    shape = em.g.types[em.g.resolve(source)].shape
    root = em.g.gm_root(target)
    sink = em.push("sink")
    names = ("mi", "ni") if em.g.side(source) is M.Acc else ("r", "c")
    per_axis = [(axis, _parts(shape[axis], plan.blocks[axis])) for axis in plan.order]
    safe = True
    for k, piece in enumerate(itertools.product(*(parts for _, parts in per_axis))):
        region = [(n.Const(0), dim) for dim in shape]
        loops = []
        for (axis, _), (start, stop, block) in zip(per_axis, piece):
            if stop - start > block:
                var = em.fresh(names[0] if axis == 0 and len(shape) > 1 else names[1], INDEX)
                em.push("piece" if not loops else "block", (var,))
                em.ranges[var] = (start, stop - block)
                loops.append((var, start, stop, block))
                region[axis] = (n.Var(var), block)
            else:
                region[axis] = (n.Const(start), block)
        first_load = len(em.loads)
        tile = em.value(source, tuple(region), stmt)
        store_at = tuple(plus(o, r) for o, (r, _) in zip(offsets, region))
        em.frames[-1].stmts.append(n.Eval(op_call("tile.store", tile=tile, offsets=store_at,
                                                  output_tensor=n.Var(target), atomic=atomic), span=stmt.span))
        loop_frames = em.frames[len(em.frames) - len(loops):]
        for x in em.loads[first_load:]:
            if x.root != root or _outside(x, offsets, shape, em.ranges):
                continue
            # read before the loops inside its frame store, in this piece (the sink's own
            # frame comes after the pieces before)
            depth = loop_frames.index(x.frame) + 1 if x.frame in loop_frames else 0
            outer = {v for v, *_ in loops[:depth]}
            safe = safe and (k == 0 or x.frame is not sink) and _read_first(x, store_at, extents(region),
                                                                              outer, em.ranges)
        for var, start, stop, block in reversed(loops):
            body = em.pop()
            em.emit_loop(em.frames[-1], var, n.Const(start), n.Const(stop), n.Const(block), body, span=stmt.span)
    em.pop()
    own = [x for x in em.loads if x.root == root]
    return Emitted(tuple(sink.stmts), em.peak, safe, bool(own))


def _parts(extent: int, block: int) -> list[tuple[int, int, int]]:
    """(start, stop, block) of the pieces an axis is computed in: the blocks that fit
    whole, then the remainder."""
    whole_blocks = extent // block * block
    parts = [(0, whole_blocks, block)]
    if whole_blocks < extent:
        parts.append((whole_blocks, extent, extent - whole_blocks))
    return parts


def _read_first(load, store_at, window, outer: set, ranges) -> bool:
    """Whether a load reads only what is stored after it, in the same iteration of the
    block loops ``outer`` around its frame: inside the window the store covers as the
    loops inside run (and as the load's own fold indices run), for each value of theirs."""
    for o, e, so, se in zip(load.offsets, load.extents, store_at, window):
        lo, ls = linear(o), linear(so)
        if lo is None or ls is None:
            return False
        if {v: c for v, c in lo[1].items() if v in outer} != {v: c for v, c in ls[1].items() if v in outer}:
            return False
        read = interval(sum((n.Var(v) * c for v, c in lo[1].items() if v not in outer), n.Const(lo[0])), ranges)
        stored = interval(sum((n.Var(v) * c for v, c in ls[1].items() if v not in outer), n.Const(ls[0])), ranges)
        if read is None or stored is None or read[0] < stored[0] or read[1] + e > stored[1] + se:
            return False
    return True


def _outside(load, offsets, shape, ranges) -> bool:
    """Whether a load reads, on some axis, only what the sink never stores."""
    for o, e, so, extent in zip(load.offsets, load.extents, offsets, shape):
        lo, base = interval(o, ranges), interval(so, {})
        if lo is not None and base is not None and (lo[1] + e <= base[0] or lo[0] >= base[1] + extent):
            return True
    return False


def plan_sink(em: Emitter, stmt, target: str, offsets: tuple, source: str) -> Plan:
    """How to block a sink. For each share of Vec a fold may take (none first): every
    block of whole rows that fits (the whole value first), else rows of the widest column
    block that fits, its loops nested either way (``block_sizes``: a block need not
    divide its axis). Of those, the one estimated fastest (``_cost``). A block that reads a window of the stored tensor
    other than its own would read what earlier blocks stored: then only the whole value
    is a candidate."""
    shape = tuple(em.g.types[em.g.resolve(source)].shape)
    order = tuple(range(len(shape)))
    if em.g.side(source) is M.Acc:
        return _cube_plan(em, stmt, target, offsets, source, shape)
    tried: list = []
    in_place_only = wanted_fold = budget_bound = False

    def attempt(plan: Plan):
        nonlocal in_place_only, wanted_fold, budget_bound
        e = em.scratch()
        try:
            out = emit_sink(e, stmt, target, offsets, source, plan)
        except Unblockable as err:
            tried.append((plan.blocks, err))
            return None
        finally:
            wanted_fold = wanted_fold or e.wanted_fold
            budget_bound = budget_bound or e.budget_bound
        tried.append((plan.blocks, out.peak))
        blocked = plan.blocks != shape
        if blocked and not out.self_reads_safe:
            in_place_only = True
            return None
        return _cost(out.stmts, em.soc) if out.peak <= em.capacity else None

    found = {}
    for k, budget in enumerate((0, em.capacity, em.capacity // 2, em.capacity // 4, em.capacity // 8)):
        if k >= 2 and not budget_bound:
            break  # no fold was held back by its budget: a smaller one changes nothing
        budget_bound = False
        for blocks in _row_blocks(shape):
            plan = Plan(blocks, order, budget)
            cost = attempt(plan)
            if cost is not None:
                found.setdefault(plan, cost)
        if not found and len(shape) > 1:
            for nesting in (order, order[::-1]):
                for blocks in _column_blocks(shape):
                    plan = Plan(blocks, nesting, budget)
                    cost = attempt(plan)
                    if cost is not None:
                        found[plan] = cost
                        break
        if not wanted_fold:
            break  # every reduction fit whole: folds would change nothing
    if not found:
        raise _too_large(stmt, shape, tried, em.capacity, in_place_only, em.reserved, em.carried)
    return min(found, key=lambda p: found[p])


def _cube_plan(em: Emitter, stmt, target: str, offsets: tuple, source: str, shape) -> Plan:
    """An accumulator's blocks: the SoC table's cube block (the largest M and N extents
    within it that fit Acc). A matmul that reads the tensor it stores is computed in one
    block, or refused."""
    order = tuple(range(len(shape)))
    acc_bytes = DataType.FP32.nbytes  # FP32 or INT32 accumulation
    fits, whole_m, whole_n = _held_fits(em, source)
    # a held operand's side of the result is one block, whatever the table's cube block
    rows = [shape[-2]] if whole_m else [b for b in block_sizes(shape[-2]) if b <= em.soc.cube_block_m]
    mb = next((b for b in rows if fits(b, None)), rows[0])
    cols = [shape[-1]] if whole_n else [b for b in block_sizes(shape[-1]) if b <= em.soc.cube_block_n]
    in_acc = [b for b in cols if mb * b * acc_bytes <= em.soc.spec(M.Acc).capacity] or cols[-1:]
    nb = next((b for b in in_acc if fits(mb, b)), in_acc[0])
    plan = Plan((*(1,) * (len(shape) - 2), mb, nb), order)  # past rank 2, a page at a time
    if plan.blocks != shape:
        out = emit_sink(em.scratch(), stmt, target, offsets, source, plan)
        if out.reads_target:
            raise UnsupportedSyntaxError(
                f"this matmul reads the tensor it stores into, and is computed in blocks of "
                f"{'x'.join(map(str, plan.blocks))}: a block "
                "would read what an earlier block stored", span=stmt.span,
                hint="store the product into another tensor")
    return plan


def _held_fits(em: Emitter, source: str):
    """For a matmul with an operand held whole in Mat (``expand_l1``): (whether result blocks
    of mb x nb — nb None: any — leave room for all of K beside the other operand's block in
    Left, Right and Mat; whether the rows, the columns must be one block)."""
    d = em.g.defs.get(em.g.resolve(source))
    call = getattr(d, "call", None)
    if call is None or call.op not in ("tensor.matmul", "tensor.matmul_acc"):
        return (lambda mb, nb: True), False, False
    lt, rt = (em.g.types.get(em.g.resolve(argument(call, p).name)) for p in ("lhs", "rhs"))
    if not (isinstance(lt, TileType) or isinstance(rt, TileType)) or len(lt.shape) != 2 or len(rt.shape) != 2:
        return (lambda mb, nb: True), False, False
    k, size = lt.shape[-1], lt.dtype.nbytes

    def fits(mb, nb):
        nb = nb or 1
        return (mb * k * size <= em.soc.spec(M.Left).capacity and k * nb * size <= em.soc.spec(M.Right).capacity
                and (mb * k + k * nb) * size <= em.soc.spec(M.Mat).capacity)
    return fits, isinstance(lt, TileType), isinstance(rt, TileType)


def _cost(stmts, soc: SoC) -> tuple:
    """(estimated cycles, statements run) of emitted code, its loops running their static
    trip counts: GM bytes at the transfer rate (a row shorter than the L2 line costing as
    the simulator says), and an issue and start-up cost per statement run."""
    costs = soc.costs
    moved = run = 0

    def walk(body, times):
        nonlocal moved, run
        for s in body:
            run += times
            if isinstance(s, n.For):
                bounds = [x.value if isinstance(x, n.Const) else None for x in (s.start, s.stop, s.step)]
                trips = len(range(*bounds)) if None not in bounds else 1
                walk(s.body, times * trips)
            elif isinstance(s, n.While):  # trips not known: counted once, as a loop of runtime bounds
                walk(s.body, times)
            elif isinstance(s, n.If):
                walk(s.then_body, times)
                walk(s.else_body, times)
            elif isinstance(s, n.Assign) and isinstance(s.value, n.Call) and s.value.op == "tile.load":
                t = s.type
                rows = math.prod(t.shape[:-1])
                row_bytes = t.shape[-1] * t.dtype.nbytes
                line = soc.gm_access_granularity
                moved += times * rows * (row_bytes if row_bytes >= line else max(row_bytes, costs.short_row_bytes))

    walk(stmts, 1)
    return moved / costs.gm_bytes_per_cycle + run * (costs.scalar_issue + costs.vector_startup), run


def _whole_too_large(stmt, shape, tried, its: str) -> MemorySpaceError:
    """A sink that reads the tensor it stores at other windows than it stores is computed
    whole (blocks of it would read what earlier blocks stored), and that does not fit: what
    the whole took where it was emitted, else the fewest bytes the reduction that gave up
    found it would take, else why it cannot be computed at once."""
    whole = [got for blocks, got in tried if tuple(blocks) == tuple(shape)]
    peaks = [got for got in whole if isinstance(got, int)]
    least = [got.need for got in whole if isinstance(got, Unblockable) and got.need is not None]
    if peaks:
        why = f"that needs {min(peaks)} B of Vec, more than {its}"
    elif least:
        why = f"that needs at least {min(least)} B of Vec, more than {its}"
    else:
        reason = next((got.message for got in whole if isinstance(got, Unblockable)), "it does not fit")
        why = f"it cannot be at once in {its}: {reason}"
    return MemorySpaceError(f"this sink reads the tensor it stores into at other windows than it stores, so it is "
                            f"computed whole, and {why}", span=stmt.span,
                            hint="store into another tensor, or compute smaller windows yourself (slices)")


def _row_axis(shape) -> int:
    """The axis blocked first: the outermost (but the last) longer than one."""
    return next((k for k in range(len(shape) - 1) if shape[k] > 1), 0)


def _row_blocks(shape):
    """Blocks of whole rows (the whole value first), largest first; for a vector, its
    column blocks. Past rank 2, then one row of the row axis blocked along the next
    leading axis (a [1, r, n] block of a rank-3 value: what an op computed a row at a
    time needs)."""
    axis = _row_axis(shape)
    out = [(*shape[:axis], r, *shape[axis + 1:]) for r in block_sizes(shape[axis])]
    for k in range(axis + 1, len(shape) - 1):
        out += [(*(1,) * k, r, *shape[k + 1:]) for r in block_sizes(shape[k])]
    return out


def _column_blocks(shape):
    """Rows of column blocks narrower than the value, widest first."""
    if len(shape) < 2:
        return
    axis = _row_axis(shape)
    for c in block_sizes(shape[-1])[1:]:
        for r in block_sizes(shape[axis]):
            blocks = list(shape)
            blocks[axis], blocks[-1] = r, c
            yield tuple(blocks)


def _too_large(stmt, shape, tried, capacity, in_place_only, reserved=0, carried=0):
    # Vec less what the kernel keeps there throughout (held tensors, cross-core rings) and
    # the whole tiles live around the sink (what storing loops carry)
    beside = ([f"the {reserved} B the kernel's held tensors and rings take"] if reserved else []) + (
        [f"the {carried} B of the tensors kept whole on chip around it (carried by a loop that stores)"]
        if carried else [])
    its = f"the {capacity} B Vec has beside {' and '.join(beside)}" if beside else f"its {capacity} B"
    blocked = [err for _, err in tried if isinstance(err, Unblockable)]
    sized = [(b, need) for b, need in tried if isinstance(need, int)]
    if in_place_only:
        return _whole_too_large(stmt, shape, tried, its)
    if blocked and not sized:
        err = blocked[-1]
        return UnsupportedSyntaxError(err.message, span=err.span or stmt.span, hint=err.hint)
    if sized:
        b, need = min(sized, key=lambda x: x[1])
        block = "x".join(map(str, b))
        why = f"; larger blocks: {blocked[-1].message}" if blocked else ""
        err = MemorySpaceError(f"this tensor expression needs {need} B of Vec even in blocks of {block}, more than "
                               f"{its}{why}", span=stmt.span,
                               hint="use smaller tensors or fewer live intermediates, or block it yourself with "
                                    "slices in a loop")
        err.need = need  # what the smallest blocks take (a ring's overflow reports it above the ring)
        return err
    return MemorySpaceError(f"this tensor expression does not fit Vec's {capacity} B", span=stmt.span)
