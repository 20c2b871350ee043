"""A mixed scope's crossings: cube work whose result vector work reads, and vector work a
matmul reads, inside one ``pl.at``. On a2a3 a matmul's result reaches the vector cores only
through GM (and a vector result the cube), so each crossing value is assembled into a GM
buffer the orchestration creates for the scope, and the other side reads that buffer instead. The scope stays one kernel — its cube and
vector programs run together on one cluster, ordered by the cross-core flags sync
insertion places for the GM dependence — and one task.

    acc = pl.matmul(a, b)                  acc = pl.matmul(a, b)
    out[:] = pl.add(acc, bias)     ->      acc_gm_1 = pl.assemble(acc_gm, acc, [0, 0])
                                           out[:] = pl.add(acc_gm_1, bias)

``stage(body, types, fresh, blocks, slots, soc) -> (body, [(buffer name, TensorType, crossing
type, unringed)])``; the outliner makes each buffer an Out parameter of the kernel, creates it
in the orchestration and, unless ``unringed`` (the cube reads it from GM, or it is a tile
the user moved, which lands in a tile of the consumer's own), reserves its ring in the
vector cores' UB. A tile-level ``pl.move`` between the cube and the vector cores
(``SoC.crosses``: Acc or Mat to Vec, Vec to Mat on a2a3) is a store into the ring and a
load from it. The buffer is the
cross-core ring: a value staged on each trip of a unit-step loop takes slot ``trip %
slots`` of ``slots`` (``pl.cross_core_slot(slot_num=N)``, default 2), so the cube can run
that many tiles ahead of the vector cores; the blocks of an SPMD scope each take a window
of their own (the buffer stacks ``blocks`` rings along its first axis), so they do not
share bytes.
"""

from __future__ import annotations

import attrs

from pypto.errors import UnsupportedSyntaxError
from pypto.ir import nodes as n
from pypto.ir.ops import argument, lookup, op_call, with_args
from pypto.ir.ops.registry import with_article
from pypto.ir.ops.cube import fixpipe_cast
from pypto.ir.ops.spmd import LANED, SPLITS, lane_window
from pypto.ir.simplify import simplify
from pypto.ir.types import INDEX, ForKind, SplitMode, TensorType, TileType
from pypto.passes.tile_conversion.expand_l1 import user_name

# where a cube value may go without leaving the cube: into GM, on into the accumulator,
# or viewed (a slice of it is as much the cube's)
# (a matmul's own operands are not among them: on a2a3 an Acc result reaches L0A/L0B only
# through GM, so a matmul of a matmul's result reads the GM copy)
_STAYS = {("tensor.assemble", "source"), ("tensor.matmul_acc", "acc"), ("tensor.slice", "x")}


def _stays(call: n.Call, param: str, types: dict) -> bool:
    """Whether the cube value passed as ``param`` stays on the cube: the uses above, and the
    narrowing the fixpipe makes on the accumulator's way out (``fixpipe_cast``)."""
    if (call.op, param) in _STAYS:
        return True
    x = argument(call, "x") if call.op == "tensor.cast" and param == "x" else None
    return isinstance(x, n.Var) and x.name in types and fixpipe_cast(call, types[x.name].dtype)


def stage(body: tuple, types: dict, fresh, blocks: int | None = None, slots: int = 2, soc=None) -> tuple[tuple, list]:
    """``types``: the type of every name; ``fresh(base)``: a new name; ``blocks``: the
    block count of an SPMD scope; ``slots``: the ring's depth. The body with its crossings
    through GM, and the GM buffers they need."""
    buffers: list = []
    stager = _Stager(types, fresh, buffers, blocks, slots, soc)
    out = _block(stager, body, set(), {})
    if stager.block_index is not None:  # where each block's window starts
        out.insert(0, n.Assign(stager.block_index, INDEX, op_call("tile.get_block_idx")))
    for copy, k in stager.copies.items():  # a copy only matmuls read stays the cube's: no vector ring holds it
        if copy not in stager.vector_reads:
            buffers[k] = (*buffers[k][:3], True)
    return tuple(out), buffers


def cube_values(body: tuple, types: dict, soc=None) -> set:
    """The values the cube computes and keeps: matmul results, the loops and branches that
    carry them, their views and the fixpipe's narrowing of them (``_stays``). Whatever reads
    one of them elsewhere is a crossing; the lane split (passes/lanes) takes the statements
    that compute them for the cube's by this same rule, so no lane region holds one."""
    cube: set = set()
    _block(_Finder([], types, soc), body, cube, {})
    return cube


def crosses(body: tuple, types: dict, soc=None) -> bool:
    """Whether any value of the body crosses between the cube and the vector cores."""
    found = []
    _block(_Finder(found, types, soc), body, set(), {})
    return bool(found)


class _Stager:
    def __init__(self, types: dict, fresh, buffers: list, blocks: int | None, slots: int, soc=None):
        self.types, self.fresh, self.buffers, self.blocks, self.slots = types, fresh, buffers, blocks, slots
        self.soc = soc
        self.block_index = None
        self.vector: set = set()  # values the vector cores compute
        self.loops: list = []  # the loops around the statement being staged, innermost last
        self.gathered: list = []  # the cube's views of what the region being staged gathers (pl.aic_gather)
        self.copies: dict = {}  # the GM copy of a cube value -> its buffer's index in ``buffers``
        self.vector_reads: set = set()  # the copies vector work reads

    def ring(self, name: str, t, unringed: bool = False):
        """A GM ring for a crossing of value ``name`` (of type ``t``): its buffer's name and type,
        and the offset of this crossing's slot in it."""
        buf = self.fresh(f"{name}_gm")
        loops = [x for x in self.loops if getattr(x, "kind", None) is not ForKind.SplitAiv]  # a lane region is no trip
        loop = loops[-1] if loops else None
        # (a while loop's trips have no index to rotate by: its crossings take turns in one slot)
        rotating = isinstance(loop, n.For) and isinstance(loop.start, n.Const) and loop.step == n.Const(1) \
            and self.slots > 1
        depth = self.slots if rotating else 1  # one crossing per launch needs one slot
        rows = t.shape[0]
        first = n.Const(0)
        if rotating:  # this trip's slot
            trip = n.Var(loop.var) if loop.start == n.Const(0) else n.BinOp("-", n.Var(loop.var), loop.start)
            first = n.BinOp("*", n.BinOp("%", trip, n.Const(depth)), n.Const(rows))
        if self.blocks is not None:  # this block's ring
            first = simplify(n.BinOp("+", self.block_start(depth * rows), first))
        ring = TensorType((depth * rows * (self.blocks or 1), *t.shape[1:]), t.dtype)
        self.buffers.append((buf, ring, t, unringed))
        return buf, ring, (first, *(n.Const(0) for _ in t.shape[1:]))

    def through_gm(self, name: str, at):
        """A GM ring for cube value ``name`` and the statements that fill its slot."""
        t = self.types[name]
        buf, ring, offset = self.ring(name, t)
        staged = self.fresh(f"{name}_gm")
        self.copies[staged] = len(self.buffers) - 1
        if ring.shape == t.shape:
            return staged, [n.Assign(staged, t, op_call("tensor.assemble", target=n.Var(buf), source=n.Var(name),
                                                         offset=offset), span=at.span)]
        whole = self.fresh(f"{name}_gm")
        return staged, [
            n.Assign(whole, ring, op_call("tensor.assemble", target=n.Var(buf), source=n.Var(name), offset=offset),
                     span=at.span),
            n.Assign(staged, t, op_call("tensor.slice", x=n.Var(whole), shape=tuple(n.Const(d) for d in t.shape),
                                        offset=offset), span=at.span)]

    def tile_across(self, stmt: n.Assign, name: str, t: TileType, space):
        """A tile-level move between the cube and the vector cores, as the hardware makes it:
        the producer stores the tile into its slot of a GM ring, the consumer loads it into
        ``space`` (the cross-core flags sync insertion places order the two)."""
        # (no UB ring either way: the tile the load lands in is the consumer's own)
        buf, _, offset = self.ring(name, t, unringed=True)
        shapes = tuple(n.Const(d) for d in t.shape)
        valid = None if t.valid_shape is None else tuple(v if isinstance(v, n.Expr) else n.Const(v)
                                                          for v in t.valid_shape)
        return [n.Eval(op_call("tile.store", tile=n.Var(name), offsets=offset, output_tensor=n.Var(buf)),
                       span=stmt.span),
                n.Assign(stmt.target, stmt.type, op_call("tile.load", tensor=n.Var(buf), offsets=offset, shapes=shapes,
                                                         valid_shape=valid, target_memory=space), span=stmt.span)]

    def lane_crossing(self, stmt: n.Assign, call: n.Call) -> list:
        """A tile crossing a pl.split_aiv region's edge, as a tile.move does: through a GM ring.
        Into the region (``tile.aiv_shard``) the cube stores its tile and each lane loads its
        half; out of it (``tile.aic_gather``) each lane stores its half (under NONE lane 0 the
        whole) and the cube loads the whole into L1 after the region."""
        region = next(x for x in reversed(self.loops) if getattr(x, "kind", None) is ForKind.SplitAiv)
        x = argument(call, "x")
        mode = SPLITS[argument(call, "split")]
        whole = self.types[x.name] if call.op == "tile.aiv_shard" else stmt.type
        buf, _, offset = self.ring(x.name if call.op == "tile.aiv_shard" else stmt.target, whole, unringed=True)
        step, extents = lane_window(whole.shape, mode, 1)  # where lane 1's half starts: lane k's is k times it
        lane = tuple(simplify(n.BinOp("+", o, n.BinOp("*", n.Var(region.var), n.Const(d)))) if d else o
                     for o, d in zip(offset, step))
        shapes = tuple(n.Const(d) for d in extents)
        if call.op == "tile.aiv_shard":
            valid = None if whole.valid_shape is None else tuple(whole.valid_shape)
            return [n.Eval(op_call("tile.store", tile=x, offsets=offset, output_tensor=n.Var(buf)), span=stmt.span),
                    n.Assign(stmt.target, stmt.type, op_call("tile.load", tensor=n.Var(buf), offsets=lane,
                                                             shapes=shapes, valid_shape=valid,
                                                             target_memory=stmt.type.space), span=stmt.span)]
        store = n.Eval(op_call("tile.store", tile=x, offsets=lane, output_tensor=n.Var(buf)), span=stmt.span)
        if mode is SplitMode.NONE:  # both lanes hold all of it: one of them hands it on
            store = n.If(n.BinOp("==", n.Var(region.var), n.Const(0)), (store,), span=stmt.span)
        valid = None if stmt.type.valid_shape is None else tuple(stmt.type.valid_shape)
        self.gathered.append(n.Assign(stmt.target, stmt.type, op_call(
            "tile.load", tensor=n.Var(buf), offsets=offset, shapes=tuple(n.Const(d) for d in whole.shape),
            valid_shape=valid, target_memory=stmt.type.space), span=stmt.span))
        return [store]

    def crossing(self, call: n.Call) -> bool:
        """Whether a tile.move goes between the cube and the vector cores."""
        t = self.types.get(getattr(argument(call, "tile"), "name", None))
        return self.soc is not None and isinstance(t, TileType) and t.space is not None \
            and self.soc.crosses(t.space, argument(call, "target_memory"))

    def block_start(self, rows: int):
        """Where this SPMD block's window of ``rows`` rows starts (its index read once, at the top)."""
        if self.block_index is None:
            self.block_index = self.fresh("block")
        return n.BinOp("*", n.Var(self.block_index), n.Const(rows))

    def to_cube(self, name: str, at):
        """A GM buffer for vector value ``name`` a matmul reads, the vector work's store into
        it, and the cube's view of it — of the buffer itself, so the view may follow the
        vector work wherever that is (a lane region)."""
        t = self.types[name]
        buf, staged = self.fresh(f"{name}_gm"), self.fresh(f"{name}_gm")
        first = self.block_start(t.shape[0]) if self.blocks is not None else n.Const(0)  # this block's window
        self.buffers.append((buf, TensorType((t.shape[0] * (self.blocks or 1), *t.shape[1:]), t.dtype), t, True))
        offset = (first, *(n.Const(0) for _ in t.shape[1:]))
        return staged, [
            n.Eval(op_call("tensor.assemble", target=n.Var(buf), source=n.Var(name), offset=offset), span=at.span),
            n.Assign(staged, t, op_call("tensor.slice", x=n.Var(buf), shape=tuple(n.Const(d) for d in t.shape),
                                        offset=offset), span=at.span)]


class _Finder:
    """A stager that only notes the crossings."""

    def __init__(self, found: list, types: dict, soc):
        self.found = found
        self.types, self.soc = types, soc
        self.vector: set = set()
        self.loops: list = []
        self.gathered: list = []
        self.vector_reads: set = set()

    def through_gm(self, name: str, at):
        self.found.append(name)
        return name, []

    to_cube = through_gm

    def tile_across(self, stmt, name: str, t, space):
        self.found.append(name)
        return [stmt]

    def lane_crossing(self, stmt, call):
        self.found.append(stmt.target)
        return [stmt]

    crossing = _Stager.crossing


def _block(st, body, cube: set, staged: dict, before_loop: frozenset = frozenset()) -> list:
    """``staged``: cube value -> its GM copy, made earlier in this block or around it; a
    copy serves every later crossing use, and only those: the cube's own uses keep the value.
    ``before_loop``: the values staged before an enclosing loop, whose slices in it are
    views of the copy (a slice's crossing would stage it again on every trip)."""
    staged = dict(staged)
    out = []
    for stmt in body:
        if isinstance(stmt, n.LOOPS):
            hoisted = _crossing_uses(stmt.body, cube, st.types)  # the same each trip: staged once, before the loop
            for name in hoisted:
                if name not in staged:
                    copy, filling = st.through_gm(name, stmt)
                    out.extend(filling)
                    staged[name] = copy
            for a in stmt.iter_args:
                if _named(a.init) in cube:
                    cube.add(a.name)
            loops = st.loops
            loops.append(stmt)
            try:
                stmt = attrs.evolve(stmt, body=tuple(_block(st, stmt.body, cube, staged, before_loop | set(hoisted))))
            finally:
                loops.pop()
            yields = stmt.body[-1].values if stmt.body and isinstance(stmt.body[-1], n.Yield) else ()
            for a, b, v in zip(stmt.iter_args, stmt.results, yields):
                if {_named(a.init), _named(v)} & cube and {_named(a.init), _named(v)} & st.vector:
                    raise _merged(stmt, a.name)  # the cube's on entry, the vector's on the back edge (or back)
                if _named(v) in cube:
                    cube.add(a.name)
                    cube.add(b.name)
            out.append(stmt)
            if getattr(stmt, "kind", None) is ForKind.SplitAiv:  # the cube's views of what the region gathered, after it
                out.extend(st.gathered)
                st.gathered = []
            continue
        if isinstance(stmt, n.If):
            for name in _crossing_uses((*stmt.then_body, *stmt.else_body), cube, st.types):  # staged once, before the branch
                if name not in staged:
                    copy, filling = st.through_gm(name, stmt)
                    out.extend(filling)
                    staged[name] = copy
            stmt = attrs.evolve(stmt, then_body=tuple(_block(st, stmt.then_body, cube, staged, before_loop)),
                                else_body=tuple(_block(st, stmt.else_body, cube, staged, before_loop)))
            for k, b in enumerate(stmt.results):
                names = {_named(body[-1].values[k]) for body in (stmt.then_body, stmt.else_body)
                         if body and isinstance(body[-1], n.Yield)}
                if names & cube and names & st.vector:
                    raise _merged(stmt, b.name)
                if names & cube:
                    cube.add(b.name)
            out.append(stmt)
            continue
        call = getattr(stmt, "value", None)
        if isinstance(call, n.Call):
            op = lookup(call.op)
            args = list(call.args)
            if op.name in LANED:
                out.extend(st.lane_crossing(stmt, call))
                continue
            if op.name == "tile.move" and st.crossing(call):
                out.extend(st.tile_across(stmt, argument(call, "tile").name, st.types[argument(call, "tile").name],
                                          argument(call, "target_memory")))
                continue
            if op.name == "tensor.slice" and argument(call, "x").name in before_loop:  # a view of the GM copy
                st.vector_reads.add(staged[argument(call, "x").name])  # (whoever reads the view)
                stmt = attrs.evolve(stmt, value=with_args(call, x=n.Var(staged[argument(call, "x").name])))
                out.append(stmt)
                continue
            views = []  # the cube's views of what the vector work stores for this matmul: after all the stores
            for k, (p, a) in enumerate(zip(op.params, call.args)):
                if isinstance(a, n.Var) and a.name in st.vector and op.windows is not None \
                        and op.windows.kind == "cube" and p.name in ("lhs", "rhs"):  # vector work a matmul reads
                    if a.name not in staged:
                        copy, filling = st.to_cube(a.name, stmt)
                        out.extend(x for x in filling if isinstance(x, n.Eval))
                        views.extend(x for x in filling if not isinstance(x, n.Eval))
                        staged[a.name] = copy
                    args[k] = n.Var(staged[a.name])
                    continue
                if isinstance(a, n.Var) and a.name in cube and not _stays(call, p.name, st.types):
                    if a.name not in staged:
                        copy, filling = st.through_gm(a.name, stmt)
                        out.extend(filling)
                        staged[a.name] = copy
                    if op.windows is None or op.windows.kind != "cube":
                        st.vector_reads.add(staged[a.name])
                    args[k] = n.Var(staged[a.name])
            out.extend(views)  # (so the vector work is one run, its stores in it, before the cube reads)
            if op.name == "tensor.aic_gather":  # each lane stores its half of the cube's copy; the cube views it after
                copy, filling = st.to_cube(args[0].name, stmt)
                stores = [x for x in filling if isinstance(x, n.Eval)]
                region = next((x for x in reversed(st.loops) if getattr(x, "kind", None) is ForKind.SplitAiv), None)
                if stores and region is not None and region.split is SplitMode.NONE:  # both lanes hold it whole
                    stores = [n.If(n.BinOp("==", n.Var(region.var), n.Const(0)), tuple(stores), span=stmt.span)]
                out.extend(stores)
                views = [attrs.evolve(x, target=stmt.target) for x in filling if not isinstance(x, n.Eval)]
                st.gathered.extend(views)
                continue
            if op.name == "tensor.aiv_shard":  # the named crossing: the staged copy, under the name it gave
                out.append(n.Assign(stmt.target, stmt.type, args[0], span=stmt.span))
                continue
            if args != list(call.args):
                stmt = attrs.evolve(stmt, value=attrs.evolve(call, args=tuple(args)))
            target = getattr(stmt, "target", None)
            if target is not None and (op.windows is not None and op.windows.kind == "cube"
                                       or op.name in ("tensor.slice", "tensor.cast") and argument(call, "x").name
                                       in cube and _stays(call, "x", st.types)):
                cube.add(target)
            elif target is not None and op.windows is not None and op.windows.kind not in ("cube", "source", "slice"):
                st.vector.add(target)  # computed by the vector cores
        out.append(stmt)
    return out


def unstaged_crossing(fn: n.Function, soc) -> None:
    """Refuse a tile-level move between the cube and the vector cores in a kernel written by
    hand: only a pl.at scope has an orchestration to create the GM ring it goes through."""
    types = n.symbols(fn)
    for stmt in n.walk_stmts(fn.body):
        call = getattr(stmt, "value", None)
        if isinstance(call, n.Call) and call.op in LANED:
            way = "into" if call.op == "tile.aiv_shard" else "out of"
            raise UnsupportedSyntaxError(
                f"pl.{call.op.split('.')[1]} in '{fn.name}' moves a tile {way} a pl.split_aiv region between the cube "
                "and the vector cores, through GM; only a pl.at scope stages such a crossing (its orchestration "
                "creates the GM buffer)", span=stmt.span,
                hint="write the kernel as a `with pl.at(level=pl.Level.CORE_GROUP):` scope around the region, or "
                     "store the tile to a GM tensor parameter and load it on the other side")
        if isinstance(call, n.Call) and call.op == "tile.move" and _Stager.crossing(_Finder([], types, soc), call):
            src, dst = types[argument(call, "tile").name].space, argument(call, "target_memory")
            way = "from the cube to the vector cores" if dst.name == "Vec" else "from the vector cores to the cube"
            raise UnsupportedSyntaxError(
                f"tile.move of {with_article(src.name)} tile to {dst.name} in '{fn.name}' crosses {way}, through GM; only "
                "a pl.at scope stages such a move (its orchestration creates the GM buffer)", span=stmt.span,
                hint="write the kernel as a `with pl.at(level=pl.Level.CORE_GROUP):` scope, or store the tile to "
                     "a GM tensor parameter and load it on the other side")


def _crossing_uses(body, cube: set, types: dict) -> list:
    """The values of ``cube`` (defined before ``body``) that ``body`` reads where they cross."""
    out = []
    for stmt in n.walk_stmts(body):
        call = getattr(stmt, "value", None)
        if isinstance(call, n.Call):
            op = lookup(call.op)
            out += [a.name for p, a in zip(op.params, call.args)  # a slice of it crosses in its stead
                    if isinstance(a, n.Var) and a.name in cube
                    and (not _stays(call, p.name, types) or (op.name, p.name) == ("tensor.slice", "x"))]
    return list(dict.fromkeys(out))


def _named(e) -> str | None:
    return e.name if isinstance(e, n.Var) else None


def _merged(stmt, name: str) -> UnsupportedSyntaxError:
    return UnsupportedSyntaxError(
        f"'{user_name(name)}' is a matmul's result on one path and vector work on another; a mixed scope moves "
        "only what the cube computes to the vector cores", span=stmt.span,
        hint="compute the value on one side on every path (e.g. a matmul on both branches), or move the vector "
             "path into a scope of its own")
