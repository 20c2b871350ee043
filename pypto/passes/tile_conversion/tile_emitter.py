"""Tile code for windows of tensor values: the back half of ConvertTensorToTileOps.

``Emitter.value(name, region)`` is a tile holding ``region`` of the tensor ``name``, and
the statements computing it: GM storage is loaded; an op takes its operands' windows
(``operand_regions``); a slice only moves the window; a pure loop or if is emitted with
tiles as its carried values; a reduction whose operand does not fit in Vec is folded over
blocks of the reduced axis; a matmul is the cube's K chain (``cube_chain``).

    out[:] = pl.col_expand_sub(a, pl.col_max(a))        # a: [2048, 128] FP32
->  col_max_1 = pl.tile.col_max(a_tile_1)               # rows 0..255, then folded
    for r_1, (col_max_acc,) in pl.range(256, 2048, 256, init_values=(col_max_1,)): ...
    for r in pl.range(0, 2048, 256):                    # the sink's row blocks
        a_tile = pl.tile.load(a, [r, 0], [256, 128], target_memory=pl.Mem.Vec)
        col_expand_sub_1 = pl.tile.col_expand_sub(a_tile, col_max_total)
        pl.tile.store(col_expand_sub_1, [r, 0], out)

Frames are the blocks statements go into: a sink's own (``sink``); the block loops and
fold loops this pass makes (``block``, ``fold``: they always run, so a tile that does not
depend on their index is emitted outside them) and a fold's first block (``first``); the
bodies of the user's loops and branches (``body``: nothing moves out of those). Each tile
is emitted once per sink, in the outermost frame its dependences allow, and found again
by (value, window). The emitter also counts the bytes its tiles may hold at once (a
fold's tiles are dead when it ends), for the block planner (``sink_plan``).
"""

from __future__ import annotations

import math

import contextlib

import attrs

from pypto.errors import UnsupportedSyntaxError
from pypto.ir import nodes as n
from pypto.ir.infer import call_type
from pypto.ir.ops import argument, lookup, op_call
from pypto.ir.rewrite import substitute
from pypto.ir.simplify import simplify
from pypto.ir.types import ScalarType, TileType
from pypto.passes.tile_conversion import cube_chain
from pypto.passes.tile_conversion.carried_emitter import CarriedValues
from pypto.passes.tile_conversion.reduction_emitter import Reductions
from pypto.passes.tile_conversion.regions import extents, operand_regions, plus, whole
from pypto.passes.tile_conversion.tensor_graph import Carried, Op, TensorGraph, Unblockable
from pypto.backend import MemorySpace as M
from pypto.backend import SoC


@attrs.define(eq=False)
class Frame:
    kind: str  # "sink" | "piece" (a sink's outermost block loop) | "block" | "fold" | "first" | "body"
    stmts: list = attrs.Factory(list)
    names: set = attrs.Factory(set)
    memo: dict = attrs.Factory(dict)
    bytes: int = 0  # of the tiles bound here


@attrs.frozen
class Load:
    """A GM window the current sink reads, and the sink or block frame it is read in."""

    root: str
    offsets: tuple
    extents: tuple
    frame: Frame = attrs.field(eq=False)


class Emitter(Reductions, CarriedValues):
    def __init__(self, graph: TensorGraph, soc: SoC, types: dict, used: set, materialized: dict,
                 env: dict | None = None):
        self.g = graph
        self.soc = soc
        self.types = types
        self.used = used
        self.mat = materialized  # computed tensor -> its whole tile (carried by a loop that stores)
        self.env: dict = dict(env or {})  # source scalar names -> their names where a loop body is emitted again
        self.frames: list[Frame] = []
        self.home: dict[str, Frame] = {}  # emitted name -> the frame it is bound in
        self.sink_stmt = None  # the statement whose sink is being emitted
        self.loads: list[Load] = []  # what the current sink reads from GM
        self.live = 0  # bytes of the tiles that may be live now
        self.peak = 0  # the most bytes live at once, since the sink began
        self.ranges: dict[str, tuple[int, int]] = {}  # block and fold loop index -> its first and last value
        self.fold_budget = 0  # bytes a fold may take (0: reductions must fit whole); the planner sets it
        self.wanted_fold = False  # a reduction did not fit whole, and folds were not allowed
        self.budget_bound = False  # a fold took a shorter block for its budget than Vec allowed
        self.folds: dict = {}  # fold decisions by (value, window extents, axis, live bytes, budget)
        self.reserved = 0  # Vec bytes the kernel's cross-core rings hold (system.reserve_buffer)
        # Vec bytes of the whole tiles live around the sink: what the storing loops it is in
        # carry, and the results of those before it that are read after it
        self.carried = 0

    def scratch(self) -> Emitter:
        """A throwaway copy, to measure what emitting would take."""
        e = Emitter(self.g, self.soc, dict(self.types), set(self.used), self.mat, self.env)
        e.sink_stmt, e.fold_budget, e.folds, e.reserved = self.sink_stmt, self.fold_budget, self.folds, self.reserved
        e.carried = self.carried
        return e

    @property
    def capacity(self) -> int:
        """What Vec holds for a sink's tiles: its capacity above the rings the kernel reserves
        and the whole tiles live around the sink."""
        return max(0, self.soc.spec(M.Vec).capacity - self.reserved - self.carried)

    @property
    def span(self):
        return getattr(self.sink_stmt, "span", None)

    # ------------------------------------------------------------------ frames

    def push(self, kind: str, names=()) -> Frame:
        f = Frame(kind, names=set(names))
        for x in names:
            self.home[x] = f
        self.frames.append(f)
        return f

    def pop(self) -> Frame:
        """Close the innermost frame. A fold's tiles (and its first block's) die with it:
        only its result, bound outside, stays live."""
        f = self.frames.pop()
        if f.kind in ("fold", "first", "piece"):
            self.live -= f.bytes
        elif self.frames:
            self.frames[-1].bytes += f.bytes
        return f

    def level(self, deps) -> int:
        """The outermost open frame a statement reading ``deps`` may go into."""
        best = max(i for i, f in enumerate(self.frames) if f.kind in ("sink", "body", "first"))
        index = {id(f): i for i, f in enumerate(self.frames)}
        for name in deps:
            f = self.home.get(name)
            if f is not None and id(f) in index:
                best = max(best, index[id(f)])
        return best

    @contextlib.contextmanager
    def at(self, level: int):
        """Emit into frame ``level`` as if it were innermost (the frames inside are open
        blocks that come after whatever is emitted here)."""
        hidden = self.frames[level + 1:]
        del self.frames[level + 1:]
        try:
            yield self.frames[level]
        finally:
            self.frames.extend(hidden)

    def fresh(self, base: str, t) -> str:
        name = n.fresh_name(base, self.used)
        self.types[name] = t
        return name

    def bind(self, base: str, call: n.Call, span, frame: Frame | None = None) -> n.Var:
        """``call`` bound to a fresh name, in the outermost frame it may go into."""
        t = call_type(call, self.types, self.soc)
        name = self.fresh(base, t)
        f = frame or self.frames[self.level(_call_vars(call))]
        f.stmts.append(n.Assign(name, t, call, span=span))
        self.adopt(f, name)
        return n.Var(name)

    def adopt(self, f: Frame, name: str, counted: bool = True) -> None:
        """``name`` is bound in ``f``; ``counted``: it takes bytes of its own (a carried
        value takes its initial value's)."""
        f.names.add(name)
        self.home[name] = f
        if counted and isinstance(self.types[name], TileType):
            size = self.tile_bytes(name)
            f.bytes += size
            self.live += size
            self.peak = max(self.peak, self.live)

    def tile_bytes(self, name: str) -> int:
        """The bytes the tile ``name`` takes in its space (rounded up to its alignment)."""
        t = self.types[name]
        align = self.soc.spec(t.space).align if t.space is not None else 1
        return -(-t.nbytes // align) * align

    def emit_loop(self, frame: Frame, var: str, start, stop, step, body: Frame, *, kind=None, stage=None,
                  iter_args=(), results=(), span=None) -> None:
        frame.stmts.append(n.For(var=var, start=start, stop=stop, step=step, body=tuple(body.stmts),
                                 **({} if kind is None else {"kind": kind}), stage=stage,
                                 iter_args=tuple(iter_args), results=tuple(results), span=span))

    # ------------------------------------------------------------------ values

    def value(self, name: str, region: tuple, reader=None, hint: str | None = None) -> n.Var:
        """The tile of ``region`` of tensor ``name``. ``reader``: the statement whose
        operand it is (where the program reads it); ``hint``: a name for a load."""
        name = self.g.resolve(name)
        if name in self.mat:
            if region != whole(self.g.types[name].shape):
                raise Unblockable("a tensor carried through a loop or if that also stores stays whole on chip, "
                                  "and a window of it is read here (tiles have no slices yet)",
                                  hint="store the whole tensor, or carry only the window: slice it before the loop")
            return self.mat[name]
        if name in self.g.roots:
            return self.load(name, region, reader, hint or name, M.Vec)
        held = self.g.types.get(name)
        if isinstance(held, TileType):  # a tensor held whole on chip (pypto.passes.tile_conversion.expand_l1)
            return self.held(name, held, region, reader)
        d = self.g.defs.get(name)
        if isinstance(d, Op) and getattr(lookup(d.call.op).windows, "kind", None) == "source":
            # A creation is made where it is read, and for that reader alone: a loop that
            # starts from it updates its buffer in place (an accumulator cannot be copied).
            return self.apply(name, substitute(d.call, self.env), region, {}, d, frame=self.frames[-1])
        if isinstance(d, Op) and d.call.op == "tensor.cast" and self.g.side(name) is M.Acc:
            # a fixpipe narrowing (tensor_graph's sides): the accumulator's tile, which the store
            # out of Acc narrows to its tensor's dtype, rounding to nearest even
            return self.value(argument(d.call, "x").name, region, reader, hint)
        if isinstance(d, Op) and d.call.op == "tensor.slice" and self.g.valid_ends(name, self.env) is not None:
            # a window of GM whose producer filled only its valid region: one load moves that
            gm, base = self.g.window(name, self.env)
            return self.load(gm, tuple((plus(b, o), e) for b, (o, e) in zip(base, region)), reader, hint or name,
                             M.Vec, ends=self.g.valid_ends(name, self.env))
        key = (name, region)
        for f in reversed(self.frames):
            if key in f.memo:
                return f.memo[key]
        var = self._compute(name, region, hint or name)
        home = self.home.get(var.name)
        if home is not None:  # not when it is a load another name of the same window already made
            home.memo[key] = var
        return var

    def held(self, name: str, t: TileType, region: tuple, reader) -> n.Var:
        """A window of a tensor the kernel holds whole on chip: the tile itself, or a Vec
        slice of it (Mat has no slices: the cube reads a Mat one whole, a store all of it)."""
        op = getattr(getattr(reader, "value", None), "op", None)
        if t.space is M.Mat and op != "tensor.assemble":
            raise UnsupportedSyntaxError(
                f"'{name}' is held in Mat (L1), where the cube reads it; vector ops read Vec",
                span=getattr(reader, "span", None),
                hint="gather into pl.Mem.Vec (pl.paged_gather(..., space=pl.Mem.Vec)) for vector ops, or feed it "
                     "whole to pl.matmul")
        if region == whole(t.shape):
            return n.Var(name)
        if t.space is not M.Vec:
            raise Unblockable(f"'{name}' is held whole in {t.space.name}, and only a window of it is read here",
                              hint="read all of it (pl.matmul takes it whole), or gather into pl.Mem.Vec")
        offsets = tuple(o for o, _ in region)
        shape = tuple(map(n.Const, extents(region)))
        return self.bind(f"{name}_win", op_call("tile.slice", tile=n.Var(name), shape=shape, offset=offsets),
                         self.span)

    def load(self, name: str, region: tuple, reader, hint: str, target, transpose: bool = False,
             ends: tuple | None = None) -> n.Var:
        """A GM window as a tile (``transpose``: of the window's transpose, into Mat);
        ``ends``: where the valid region of GM it reads ends on each axis (``valid_ends``),
        past which the load moves nothing. Refused where the program read the tensor before
        a store into it that comes before the sink, which would read the new values."""
        root = self.g.roots[name]
        if reader is not None and self.g.written_between(root, reader, self.sink_stmt):
            raise UnsupportedSyntaxError(
                f"'{name}' is read here before it is stored into, and what is read is used only after that "
                "store: tensor code is computed where it is stored, which would read the new values",
                span=getattr(reader, "span", None),
                hint="store the value that reads it first, or read the tensor after the store")
        key = ("load", name, region, target, transpose, ends)
        for f in reversed(self.frames):
            if key in f.memo:
                return f.memo[key]
        offsets, shape = tuple(o for o, _ in region), extents(region)
        valid = None
        if ends is not None:  # each axis: what of [o, o + e) lies before the valid region's end
            valid = tuple(simplify(n.BinOp("min", n.BinOp("max", n.BinOp("-", end, o), n.Const(0)), n.Const(e)))
                          for end, (o, e) in zip(ends, region))
            if all(v == n.Const(e) for v, e in zip(valid, shape)):
                valid = None
        var = self.bind(f"{hint}_tile", op_call("tile.load", tensor=n.Var(name), offsets=offsets,
                                                shapes=tuple(map(n.Const, shape)), valid_shape=valid,
                                                target_memory=target, transpose=transpose), self.span)
        # the sink or block loop whose iteration it is read in (a fold's, or a user loop's,
        # is inside one of those)
        at = self.frames.index(self.home[var.name])
        self.loads.append(Load(root, offsets, shape, next(f for f in reversed(self.frames[:at + 1])
                                                            if f.kind in ("sink", "piece", "block"))))
        self.home[var.name].memo[key] = var
        return var

    def _compute(self, name: str, region: tuple, hint: str) -> n.Var:
        d = self.g.defs.get(name)
        if isinstance(d, Carried):
            if d.inside or not d.pure:  # an iter arg is found in its loop's frame, at the window it carries
                raise Unblockable(f"the loop carrying '{name}' reads it at another window than it carries")
            if isinstance(d.stmt, n.For):
                return self.loop(d.stmt, d.index, region)
            return self.branch(d.stmt, d.index, region)
        if not isinstance(d, Op):
            raise UnsupportedSyntaxError(f"'{name}' has no value on chip here", span=self.span)
        call = substitute(d.call, self.env)
        if call.op == "tensor.assemble":
            return self.assembled(call, region, d, hint)
        windows = lookup(call.op).windows
        if windows.kind == "cube":
            return cube_chain.emit(self, name, call, region, d)
        if windows.kind in ("row_reduce", "col_reduce"):
            return self.reduce(name, call, region, d)
        regions = operand_regions(call, region, self.g.types, self.g.types[name].shape)
        if regions is None:
            if windows.kind in ("rows", "row"):
                raise Unblockable(f"a {call.op.removeprefix('tensor.')} is computed in whole rows"
                                  + (", one at a time" if windows.kind == "row" else ""), d.span,
                                  hint="slice whole rows of its result, or store all of it")
            raise Unblockable(f"a window of a {call.op.removeprefix('tensor.')} is computed from all of its "
                              "operand, so it cannot be computed alone", d.span,
                              hint="slice the operand before the reshape, or store the whole reshaped tensor")
        if windows.kind == "slice":
            return self.value(argument(call, "x").name, regions["x"], d.stmt, hint)
        return self.apply(name, call, region, regions, d)

    def assembled(self, call: n.Call, region, d: Op, hint: str) -> n.Var:
        """A window of a tensor computed on chip with another assembled into it: of the
        source where the window lies in what it wrote, of the target where it lies outside
        (known when compiling; a window partly in each would need the two joined: refused)."""
        target, source, offset = (argument(call, x) for x in ("target", "source", "offset"))
        sshape = tuple(self.g.types[self.g.resolve(source.name)].shape)
        lead = len(region) - len(sshape)  # a source of lower rank is the window led by 1s
        sshape = (1,) * lead + sshape
        if all(at == n.Const(0) for at in offset) and sshape == tuple(self.g.types[self.g.resolve(target.name)].shape):
            return self.value(source.name, region[lead:], d.stmt, hint)  # it wrote all of the target
        refused = Unblockable(
            f"a window of the tensor '{target.name}' is assembled into here, and a window of the result is read "
            "that is not known to lie wholly inside what this assemble writes nor wholly outside it", d.span,
            hint="read the assembled part and the rest as separate constant windows, or assemble into an output "
                 "tensor")
        if not all(isinstance(o, n.Const) for o in offset) or not all(isinstance(o, n.Const) for o, _ in region):
            raise refused
        spans = [(max(o.value, at.value), min(o.value + e, at.value + s))
                 for (o, e), at, s in zip(region, offset, sshape)]
        if any(lo >= hi for lo, hi in spans):
            return self.value(target.name, region, d.stmt, hint)
        if all(lo == o.value and hi == o.value + e for (lo, hi), (o, e) in zip(spans, region)):
            inner = tuple((n.Const(o.value - at.value), e) for (o, e), at in zip(region, offset))
            return self.value(source.name, inner[lead:], d.stmt, hint)
        raise refused

    def apply(self, name: str, call: n.Call, region, regions: dict, d: Op, frame: Frame | None = None) -> n.Var:
        """The tile op of a tensor op, on its operands' tiles (a creation on the cube side
        is a zero accumulator), in ``frame`` or the outermost it may go into."""
        op = lookup(call.op)
        args = {}
        for p, arg in zip(op.params, call.args):
            if p.name in regions:
                args[p.name] = self.value(arg.name, regions[p.name], d.stmt)
            elif p.name == "shape":
                args[p.name] = tuple(n.Const(e) for e in extents(region))
            else:
                args[p.name] = arg
        if op.windows.shifts is not None:  # the window's part of the sequence starts where it sits
            shifts = (op.windows.shifts,) if isinstance(op.windows.shifts, str) else op.windows.shifts
            back = any(p.name == "descending" for p in op.params) and argument(call, "descending")
            for param, (first, _) in zip(reversed(shifts), reversed(region)):
                args[param] = simplify(n.BinOp("-" if back else "+", args[param], first))
        if op.windows.lower is not None:
            return self.bind(name, op.windows.lower(args, Lowering(self, name, d.span, frame)), d.span, frame)
        tile = lookup(op.windows.tile or "tile." + op.short)
        if op.windows.kind == "source" and self.g.side(name) is M.Acc:
            if args.get("value", n.Const(0)) not in (n.Const(0), n.Const(0.0)):
                raise UnsupportedSyntaxError(
                    "an accumulator cannot start from a value other than zero: the cube writes Acc only by "
                    "multiplying", span=d.span, hint="start it with pl.create_tensor (zeros) or pl.matmul")
            return self.bind(name, op_call("tile.create", shape=args["shape"], dtype=args["dtype"],
                                           target_memory=M.Acc), d.span, frame)
        if tile.name == "tile.create":  # the orchestration's options are not a tile's
            return self.bind(name, op_call("tile.create", shape=args["shape"], dtype=args["dtype"],
                                           target_memory=M.Vec), d.span, frame)
        # the tile form names its first operand "tile"; the rest by position, the same
        values = dict(zip((q.name for q in tile.params), args.values()))
        return self.bind(name, op_call(tile.name, **values), d.span, frame)


class Lowering:
    """What an op's ``Windows.lower`` builds its tile call with: fresh Vec workspace
    tiles, the tiles' types, and calls bound ahead of it."""

    def __init__(self, em: Emitter, name: str, span, frame):
        self.em, self.name, self.span, self.frame = em, name, span, frame

    def type_of(self, v: n.Var):
        return self.em.types[v.name]

    def bind(self, call: n.Call) -> n.Var:
        return self.em.bind(f"{self.name}_in", call, self.span, self.frame)

    def scalar(self, e, dtype) -> n.Var:
        """An index expression bound as a scalar of ``dtype`` (a word the tile op takes in it)."""
        em = self.em
        name = em.fresh(f"{self.name}_word", ScalarType(dtype))
        f = self.frame or em.frames[em.level(n.expr_vars(e))]
        f.stmts.append(n.Assign(name, ScalarType(dtype), e, span=self.span))
        em.adopt(f, name)
        return n.Var(name)

    def scratch(self, shape, dtype) -> n.Var:
        return self.em.bind(f"{self.name}_tmp", op_call("tile.create", shape=tuple(n.Const(e) for e in shape),
                                                         dtype=dtype, target_memory=M.Vec), self.span, self.frame)

    def rows(self, v: n.Var) -> n.Var:
        """A tile of a window of whole rows as 2D: its leading axes folded into one."""
        shape = self.type_of(v).shape
        if len(shape) == 2:
            return v
        return self.bind(op_call("tile.reshape", tile=v, shape=(n.Const(math.prod(shape[:-1])), n.Const(shape[-1]))))

    def unfold(self, call: n.Call, like: tuple) -> n.Call:
        """``call`` (a 2D tile) as a tile of ``like``'s leading axes again."""
        if len(like) == 2:
            return call
        flat = self.bind(call)
        last = self.type_of(flat).shape[-1]
        return op_call("tile.reshape", tile=flat, shape=tuple(n.Const(e) for e in (*like[:-1], last)))


def _call_vars(call: n.Call) -> set[str]:
    return set().union(*(n.expr_vars(e) for e in n.value_exprs(call))) if call.args else set()
