"""ConvertTensorToTileOps: tensor-level code inside InCore functions becomes loads, tile ops
and stores, computed in blocks whose tiles fit in Vec.

    out[:] = pl.add(a, b)       for r in pl.range(0, 512, 128):          # [512, 128] fp32
                          ->        a_tile = pl.tile.load(a, [r, 0], [128, 128], target_memory=pl.Mem.Vec)
                                    b_tile = pl.tile.load(b, [r, 0], [128, 128], target_memory=pl.Mem.Vec)
                                    add = pl.tile.add(a_tile, b_tile)
                                    pl.tile.store(add, [r, 0], out)

Each ``tensor.assemble`` (``out[...] = x``) is a sink: the tensor code feeding it is
computed there, window by window (``tile_emitter``); an intermediate feeding two sinks is
computed in both. A sink is blocked along rows, then columns, so that one block's tiles
fit in Vec. A slice of a computed tensor computes just the slice; a reduction whose
operand does not fit folds over blocks of it; what every block reads alike (a column
reduction under row blocks) is computed once, before them; a pure loop or if carrying
tensors is computed per block with tiles as its carried values; a matmul (or an
accumulation into one) is the cube chain over M/N blocks with a K loop. A loop or if that
also stores keeps the computed tensors it carries whole on chip. Loads for the vector
core land in Vec; loads for the cube leave their space to InferTileMemorySpace.
"""

from __future__ import annotations

import attrs

from pypto.errors import MemorySpaceError, UnsupportedSyntaxError
from pypto.ir import nodes as n
from pypto.ir.ops import argument, with_args
from pypto.ir.rewrite import rewrite
from pypto.ir.types import AtomicType, PadValue, TensorType, type_name
from pypto.passes.context import PassContext, PassResult, result
from pypto.passes.tile_conversion.regions import plus, whole
from pypto.passes.tile_conversion.tensor_graph import Carried, Op, TensorGraph, Unblockable
from pypto.passes.tile_conversion.sink_plan import emit_sink, plan_sink
from pypto.passes.allocation.memory import ring_overflow, ring_reserve
from pypto.passes.tile_conversion.ring_slots import convert_fitting_rings
from pypto.passes.tile_conversion.tile_emitter import Emitter
from pypto.passes.tile_conversion.expand_clones import expand_clones
from pypto.passes.tile_conversion.padded_assembles import pad_assembles
from pypto.passes.tile_conversion.expand_l1 import expand_l1, user_name
from pypto.passes.tile_conversion.return_outputs import return_outputs
from pypto.backend import MemorySpace as M

def convert_tensor_to_tile_ops(program: n.Program, ctx: PassContext) -> PassResult:
    kernels = {fn.name for fn in program.functions
               if fn.type.may_be_incore and any(_tensor_call(s) for s in n.walk_stmts(fn.body))}
    program = return_outputs(program, kernels)
    out = []
    for fn in program.functions:
        if fn.name in kernels:
            fn, buffers = expand_l1(expand_clones(pad_assembles(fn)), ctx.soc)
            ring = ring_reserve(fn.body)
            held = _held_vec(buffers, ctx.soc)
            try:
                fn = convert_fitting_rings(fn, lambda f: _Converter(f, ctx, held).run())
            except MemorySpaceError as err:
                if not ring or getattr(err, "need", None) is None:
                    raise
                raise ring_overflow(fn, ctx.soc.spec(M.Vec).capacity, ring, err.need) from None
        out.append(fn)
    return result(n.Program(program.name, tuple(out)))


def _held_vec(buffers, soc) -> int:
    """The Vec bytes the kernel's held tensors take throughout; refused past Vec's capacity."""
    spec = soc.spec(M.Vec)
    vec = [(name, t, span) for name, t, span in buffers if t.space is M.Vec]
    total = sum(-(-t.nbytes // spec.align) * spec.align for _, t, _ in vec)
    if total > spec.capacity:
        sizes = ", ".join(f"'{user_name(name)}' {t.nbytes} B" for name, t, _ in vec)
        raise MemorySpaceError(f"the tensors this kernel holds in Vec take {total} B ({sizes}), more than Vec's "
                               f"{spec.capacity} B", span=vec[0][2],
                               hint="gather fewer rows (a smaller max_indices), or into pl.Mem.Mat for the cube")
    return total


def _computed_from(g: TensorGraph, body) -> set[str]:
    """The names ``body`` reads, and what the tensors among them are computed from (a
    computed tensor is computed where it is read)."""
    names: set[str] = set()
    todo = list(body)
    while todo:
        node = todo.pop()
        found: set[str] = set()
        rewrite(node, {n.Var: lambda v: found.add(v.name)})
        for x in found - names:
            names.add(x)
            d = g.defs.get(x)
            if isinstance(d, Op):
                todo.append(d.stmt)
            elif isinstance(d, Carried) and not d.inside:
                todo.append(d.stmt)
            elif x in g.aliases:
                todo.append(n.Var(g.aliases[x]))
    return names


# ops that address a GM tensor at offsets: (the tensor's parameter, the offsets')
_WINDOWED = {"tile.load": ("tensor", "offsets"), "tile.store": ("output_tensor", "offsets"),
             "tensor.read": ("tensor", "indices"), "tensor.write": ("tensor", "indices"),
             "tile.gather_row": ("src", "src_offset")}


def _tensor_call(stmt):
    value = getattr(stmt, "value", None)
    return value if isinstance(value, n.Call) and value.op.startswith("tensor.") else None


class _Converter:
    """Walks the statements in order: sinks are emitted where they are, computed values
    where they are read; loops and ifs that store keep their place."""

    def __init__(self, fn: n.Function, ctx: PassContext, held: int = 0):
        self.fn = fn
        self.g = TensorGraph(fn)
        types = n.symbols(fn)
        # Names bound inside pure loops and ifs are bound again where those are emitted.
        freed = set()
        for s in n.walk_stmts(fn.body):
            if isinstance(s, (n.For, n.If)) and self.g.pure(s):
                freed.update(n.bound_names(s))
                for block in n.stmt_children(s):
                    freed.update(x for inner in n.walk_stmts(block) for x in n.bound_names(inner))
        self.mat: dict[str, n.Var] = {}
        self.em = Emitter(self.g, ctx.soc, types, set(types) - freed, self.mat)
        self.em.reserved = ring_reserve(fn.body) + held  # and the Vec a held tensor takes
        # per storing loop or if being walked: which of the values it carries are tiles
        self.carrying: list[tuple[bool, ...]] = []

    def run(self) -> n.Function:
        return attrs.evolve(self.fn, body=self.block(self.fn.body))

    def block(self, body) -> tuple:
        out = []
        around = self.em.carried
        for k, stmt in enumerate(body):
            out.extend(self.stmt(stmt))
            if isinstance(stmt, (*n.LOOPS, n.If)) and not self.g.pure(stmt):
                # the whole tiles it gives are live beside the sinks after it while those read them
                later = _computed_from(self.g, body[k + 1:])
                self.em.carried += sum(self.vec_bytes(b.name) for b in stmt.results
                                       if b.name in self.mat and b.name in later)
        self.em.carried = around
        return tuple(out)

    def stmt(self, stmt) -> list:
        value = getattr(stmt, "value", None)
        if isinstance(value, n.Call) and value.op == "tensor.assemble":
            if isinstance(stmt, n.Assign) and self.g.window(argument(value, "target").name, {}) is None \
                    and argument(value, "atomic") is not AtomicType.Add:
                return []  # into a tensor computed on chip: a value, computed where it is read (Emitter.assembled)
            return self.assemble(stmt, value)
        if isinstance(value, n.Call) and value.op == "tensor.remote_store":  # the value's tile, pushed
            tile, pre = self.whole(stmt, value.args[0].name)
            return pre + [attrs.evolve(stmt, value=n.Call("tile.remote_store", (tile, *value.args[1:]),
                                                          span=value.span))]
        if isinstance(value, n.Call) and value.op == "tensor.slice" and (
                (argument(value, "valid_shape") is not None and self.g.window(stmt.target, {}) is None)
                or argument(value, "clamp") or argument(value, "pad_value") not in (None, PadValue.null)):
            raise UnsupportedSyntaxError("in a kernel a slice of a tensor is a window, and a window's valid region "
                                         "is its load's", span=stmt.span,
                                         hint="load the window with pl.load(x, offsets, shapes, valid_shape=[...]) "
                                              "(then pl.fillpad for pad values)")
        if isinstance(stmt, n.Assign) and (isinstance(self.g.defs.get(stmt.target), Op)
                                           or stmt.target in self.g.aliases):
            return []  # computed where it is read
        if isinstance(stmt, (*n.LOOPS, n.If)):
            if self.g.pure(stmt):
                return []
            return self.loop(stmt) if isinstance(stmt, n.LOOPS) else self.branch(stmt)
        if isinstance(stmt, n.Yield):
            pre, values, around = [], [], self.em.carried
            for v, tile in zip(stmt.values, self.carrying[-1]):
                if tile:  # computed on this path or another: the whole value as a tile (GM is loaded)
                    v, stmts = self.whole(stmt, v.name)
                    pre += stmts
                    self.em.carried += self.vec_bytes(v.name)  # live while the next are computed
                values.append(v)
            self.em.carried = around
            return pre + [attrs.evolve(stmt, values=tuple(values))]
        self.check_reads(stmt)
        return [self.through_slices(stmt)]

    # ------------------------------------------------------------------ sinks

    def assemble(self, stmt, call: n.Call) -> list:
        target, source, offset = (argument(call, x) for x in ("target", "source", "offset"))
        window = self.g.window(target.name, {})
        if window is None:
            raise UnsupportedSyntaxError(
                f"'{target.name}' is a tensor computed on chip; assembling into it is not supported",
                span=stmt.span, hint="assemble into an output tensor (a parameter), or compute the whole value "
                                     "with tensor ops")
        gm, base = window
        offsets = tuple(plus(b, o) for b, o in zip(base, offset))
        if argument(call, "atomic") is AtomicType.Add and not self.g.computed(self.g.resolve(source.name)):
            raise UnsupportedSyntaxError(
                "tensor.assemble with atomic=AtomicType.Add requires a tile source stored into a global-memory "
                "target: the source must be an on-chip compute result (the split-K partial product), not a plain "
                "tensor. This assemble copies one tensor into another, so there is no store to carry the atomic "
                "combine.", span=stmt.span,
                hint="assemble the result of a computation (pl.matmul, pl.add, ...) atomically, not a tensor as it is")
        try:
            plan = plan_sink(self.em, stmt, gm, offsets, source.name)
            out = list(emit_sink(self.em, stmt, gm, offsets, source.name, plan).stmts)
        except Unblockable as err:
            raise UnsupportedSyntaxError(err.message, span=err.span or stmt.span, hint=err.hint) from None
        if isinstance(stmt, n.Assign):  # out_1 = (out[...] = x): the same tensor
            if self.g.resolve(target.name) != gm:
                raise UnsupportedSyntaxError("the result of assembling into a slice is a view, which cannot be "
                                             "named here", span=stmt.span,
                                             hint="assemble into the tensor itself at the slice's offset")
            out.append(n.Assign(stmt.target, stmt.type, n.Var(gm), span=stmt.span))
        return out

    def whole(self, stmt, name: str) -> tuple[n.Var, list]:
        """All of a computed value as one tile, computed here (a value a storing loop carries)."""
        em = self.em
        em.sink_stmt, em.fold_budget, em.loads, em.live, em.peak = stmt, em.capacity // 2, [], 0, 0
        frame = em.push("sink")
        try:
            tile = em.value(name, whole(self.g.types[self.g.resolve(name)].shape), stmt)
        except Unblockable as err:
            raise UnsupportedSyntaxError(err.message, span=err.span or stmt.span, hint=err.hint) from None
        finally:
            em.pop()
        t = em.types[tile.name]
        space = M.Acc if t.space is M.Acc else M.Vec
        capacity = em.soc.spec(space).capacity
        if t.nbytes > capacity:
            raise MemorySpaceError(
                f"'{name}' ({type_name(self.g.types[self.g.resolve(name)])}) is carried through a loop or if that "
                f"also stores, so it stays whole on chip: {t.nbytes} B, more than {space.name}'s {capacity} B",
                span=stmt.span, hint="store outside the loop, or carry a smaller tensor")
        return tile, frame.stmts

    # ------------------------------------------------------------------ control flow that stores

    def loop(self, stmt) -> list:
        pre, iter_args, around = [], [], self.em.carried
        for a in stmt.iter_args:
            if self.g.computed(a.name):
                tile, stmts = self.whole(stmt, a.init.name)
                pre += stmts
                # live from here through the loop: beside the next initial values and the body's sinks
                self.em.carried += self.vec_bytes(tile.name)
                a = self.carry(a.name, tile, n.IterArg(a.name, self.em.types[tile.name], tile))
            iter_args.append(a)
        self.carrying.append(tuple(self.g.computed(a.name) for a in stmt.iter_args))
        body = self.block(stmt.body)
        self.carrying.pop()
        self.em.carried = around
        results = [self.carry(b.name, None, n.Binding(b.name, it.type)) if self.g.computed(b.name) else b
                   for b, it in zip(stmt.results, iter_args)]
        return pre + [attrs.evolve(stmt, iter_args=tuple(iter_args), body=body, results=tuple(results))]

    def branch(self, stmt: n.If) -> list:
        self.carrying.append(tuple(self.g.computed(b.name) for b in stmt.results))
        then_b, else_b = self.block(stmt.then_body), self.block(stmt.else_body)
        self.carrying.pop()
        results = []
        for k, b in enumerate(stmt.results):
            if self.g.computed(b.name):
                t = self.em.types[then_b[-1].values[k].name]
                b = self.carry(b.name, None, n.Binding(b.name, t))
            results.append(b)
        return [attrs.evolve(stmt, then_body=then_b, else_body=else_b, results=tuple(results))]

    def vec_bytes(self, name: str) -> int:
        """The Vec bytes the whole tile ``name`` takes (an accumulator's are Acc's)."""
        return 0 if self.em.types[name].space is M.Acc else self.em.tile_bytes(name)

    def carry(self, name: str, tile, node):
        """A computed tensor a storing loop or if carries: from here on, its whole tile."""
        self.em.types[name] = node.type
        self.mat[name] = n.Var(name)
        return node

    # ------------------------------------------------------------------ other statements

    def check_reads(self, stmt) -> None:
        """Computed tensors have no GM storage: nothing but tensor ops and sinks reads them
        (a tile load of a slice of GM addresses the GM itself)."""
        value = getattr(stmt, "value", None)
        if isinstance(value, n.Call):
            reads = [a for a in value.args if isinstance(a, n.Var) and isinstance(self.g.types.get(a.name),
                                                                                  TensorType)]
        elif isinstance(value, n.FuncCall) or isinstance(stmt, n.Return):
            reads = [a for a in (value.args if value is not None else stmt.values) if isinstance(a, n.Var)]
        else:
            reads = []
        for v in reads:
            name = self.g.resolve(v.name)
            if self.g.computed(name) and self.g.window(name, {}) is None:
                d = self.g.defs.get(name)
                what = f"computed by {d.call.op}" if isinstance(d, Op) else "computed on chip"
                raise UnsupportedSyntaxError(
                    f"the tensor '{v.name}' {what} has no GM storage to be read from here", span=stmt.span,
                    hint="assemble it into an output tensor first (out[...] = value)")

    def through_slices(self, stmt):
        """A tile load from (or store into) a slice addresses the sliced tensor itself, at
        the slice's offset plus its own: slices have no storage of their own."""
        call = getattr(stmt, "value", None)
        if isinstance(call, n.Call) and call.op in ("tile.mgather", "tile.mscatter"):
            x = argument(call, "mem" if call.op == "tile.mgather" else "output_tensor")
            if isinstance(x, n.Var) and self.g.computed(self.g.resolve(x.name)):
                raise UnsupportedSyntaxError(
                    f"{call.op.removeprefix('tile.')} addresses a tensor by the positions its index tile holds, "
                    f"and '{x.name}' is a slice, with no positions of its own", span=stmt.span,
                    hint="pass the whole tensor and add the slice's offset to the indices")
            return stmt
        if not (isinstance(call, n.Call) and call.op in _WINDOWED):
            return stmt
        tensor, at = _WINDOWED[call.op]
        x = argument(call, tensor)
        if not (isinstance(x, n.Var) and self.g.computed(self.g.resolve(x.name))):
            return stmt
        base, base_off = self.g.window(x.name, {})
        offsets = tuple(plus(b, o) for b, o in zip(base_off, argument(call, at)))
        stmt = attrs.evolve(stmt, value=with_args(call, **{tensor: n.Var(base), at: offsets}))
        if isinstance(stmt, n.Assign) and call.op in ("tile.store", "tensor.write"):  # the result is the tensor written
            self.em.types[stmt.target] = self.g.types[base]
            stmt = attrs.evolve(stmt, type=self.g.types[base])
        return stmt

