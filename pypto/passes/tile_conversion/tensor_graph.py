"""The tensor values of an InCore function as a graph that ConvertTensorToTileOps computes
on chip, one window at a time.

    e = pl.tensor.exp(a)                          a: GM storage (a parameter)
    f = pl.tensor.slice(e, [4, 64], [4, 0])       e, f: Op — computed where they are read
    for i, (t,) in pl.range(3, init_values=(f,)):     t: Carried(loop, 0, inside=True)
        t_1 = pl.tensor.add(t, f)
        t_2 = pl.yield_(t_1)                      t_2: Carried(loop, 0, inside=False)
    pl.tensor.assemble(out, t_2, [0, 0])          a sink: it reads t_2 into GM

A tensor name is GM storage — a parameter, or another SSA name of one — or a value
computed on chip: a tensor op's result, or what a loop or if carries. A loop or if is
*pure* when it only computes tensors (nothing it does is seen but its results): it is
computed where its results are read, like an op. One that also stores is a statement;
the computed tensors it carries stay whole on chip.

A *region* is the window of a value a reader needs: (offset Expr, extent) per axis
(``pypto.passes.tile_conversion.regions``, with ``operand_regions``: which window of each operand a window
of an op's result reads). Each computed value is on one side of the
cube/vector divide (``side``): Vec for vector results, Acc for matmul accumulators.
"""

from __future__ import annotations

import collections

import attrs

from pypto.errors import Span, UnsupportedSyntaxError
from pypto.ir import nodes as n
from pypto.ir.ops import argument, lookup
from pypto.ir.ops.cube import fixpipe_cast
from pypto.ir.simplify import simplify
from pypto.ir.tensors import tensor_roots
from pypto.ir.types import ScalarType, TensorType, TileType
from pypto.backend import MemorySpace as M

from pypto.passes.tile_conversion.regions import Region, substituted, operand_regions, plus, region_vars, substitute_expr, whole


@attrs.frozen(eq=False)
class Op:
    """The result of a tensor op."""

    call: n.Call
    stmt: n.Assign

    @property
    def span(self) -> Span | None:
        return self.stmt.span


@attrs.frozen(eq=False)
class Carried:
    """What a loop (or if) carries: its iter arg inside the body, its result after it."""

    stmt: object  # n.For | n.If
    index: int
    inside: bool
    pure: bool


@attrs.frozen
class Write:
    """A store into GM storage: where it is, and the loops around it."""

    root: str
    pos: int
    loops: frozenset


class TensorGraph:
    def __init__(self, fn: n.Function):
        self.fn = fn
        self.types = n.symbols(fn)
        params = {p.name for p in fn.params if isinstance(p.type, TensorType)}
        roots = tensor_roots(fn)
        self.roots = {x: r for x, r in roots.items() if r in params}  # GM storage: name -> parameter
        self.defs: dict[str, Op | Carried] = {}
        self.aliases: dict[str, str] = {}  # x = y of a computed tensor
        self.writes: list[Write] = []
        self.stmt_pos: dict[int, tuple[int, frozenset]] = {}  # id(stmt) -> (position, enclosing loops)
        self.pure_ids: set[int] = set()
        self.read = _names_read(fn.body)
        self._walk(fn.body, frozenset(), [0])
        self._sides = _sides(self)

    # ------------------------------------------------------------------ building

    def computed(self, name: str) -> bool:
        return isinstance(self.types.get(name), TensorType) and name not in self.roots

    def _walk(self, body, loops: frozenset, counter: list) -> None:
        for stmt in body:
            pos = counter[0]
            counter[0] += 1
            self.stmt_pos[id(stmt)] = (pos, loops)
            value = getattr(stmt, "value", None)
            if isinstance(stmt, n.Assign) and isinstance(stmt.type, TensorType) and stmt.target not in self.roots:
                if isinstance(value, n.Var):
                    self.aliases[stmt.target] = value.name
                elif isinstance(value, n.Call) and value.op.startswith("tensor."):
                    self.defs[stmt.target] = Op(value, stmt)
            if isinstance(value, n.Call):
                op = lookup(value.op)
                if op is not None and op.writes_operand is not None:
                    target = dict(zip((p.name for p in op.params), value.args))[op.writes_operand]
                    root = self.gm_root(target.name) if isinstance(target, n.Var) else None
                    if root is not None:
                        self.writes.append(Write(root, pos, loops))
            if isinstance(stmt, n.LOOPS):
                self._walk(stmt.body, loops | {id(stmt)}, counter)
                pure = self._pure(stmt)
                for k, (a, b) in enumerate(zip(stmt.iter_args, stmt.results)):
                    if self.computed(a.name):
                        self.defs[a.name] = Carried(stmt, k, True, pure)
                        self.defs[b.name] = Carried(stmt, k, False, pure)
            elif isinstance(stmt, n.If):
                self._walk(stmt.then_body, loops, counter)
                self._walk(stmt.else_body, loops, counter)
                pure = self._pure(stmt)
                for k, b in enumerate(stmt.results):
                    if self.computed(b.name):
                        self.defs[b.name] = Carried(stmt, k, False, pure)
            if isinstance(stmt, (n.For, n.If)) and self._pure(stmt):
                self.pure_ids.add(id(stmt))

    def _pure(self, stmt) -> bool:
        """A loop or if that only computes tensors: what it carries is computed tensors
        (a loop may carry scalars beside them, if nothing after it reads them), and its body
        holds nothing but tensor ops, scalars and pure control flow."""
        if isinstance(stmt, n.While):  # computed on demand a window at a time, a loop needs its trips known
            return False
        carried = [a.name for a in stmt.iter_args] if isinstance(stmt, n.For) else [b.name for b in stmt.results]
        tensors = [x for x in carried if self.computed(x)]
        if not tensors:
            return False
        for k, x in enumerate(carried):
            if x in tensors:
                continue
            if not (isinstance(stmt, n.For) and isinstance(self.types.get(x), ScalarType)
                    and stmt.results[k].name not in self.read):
                return False
        blocks = (stmt.body,) if isinstance(stmt, n.For) else (stmt.then_body, stmt.else_body)
        return all(self._pure_stmt(s) for block in blocks for s in block)

    def _pure_stmt(self, stmt) -> bool:
        if isinstance(stmt, n.Yield):
            return True
        if isinstance(stmt, n.Assign):
            if isinstance(stmt.type, ScalarType):
                return not isinstance(stmt.value, (n.Call, n.FuncCall))
            if isinstance(stmt.type, TensorType) and stmt.target not in self.roots:
                return isinstance(stmt.value, n.Var) or (
                    isinstance(stmt.value, n.Call) and stmt.value.op.startswith("tensor.")
                    and lookup(stmt.value.op).writes_operand is None)
            return False
        if isinstance(stmt, (n.For, n.While, n.If)):
            return id(stmt) in self.pure_ids or self._pure(stmt)
        return False

    # ------------------------------------------------------------------ queries

    def resolve(self, name: str) -> str:
        while name in self.aliases:
            name = self.aliases[name]
        return name

    def gm_root(self, name: str) -> str | None:
        return self.roots.get(self.resolve(name))

    def read_once(self, name: str) -> bool:
        """Whether one statement alone reads this computed value (under any of its names)."""
        root = self.resolve(name)
        if not self.computed(root):
            return False
        names = [x for x in self.read if self.resolve(x) == root]
        aliasing = sum(1 for x, y in self.aliases.items() if self.resolve(y) == root)  # the x = y statements
        return sum(self.read[x] for x in names) - aliasing == 1

    def pure(self, stmt) -> bool:
        return id(stmt) in self.pure_ids

    def side(self, name: str) -> M:
        return self._sides.get(self.resolve(name), M.Vec)

    def window(self, name: str, env: dict) -> tuple[str, tuple] | None:
        """(GM name, offsets) of a tensor that is GM storage or a chain of slices of it."""
        name = self.resolve(name)
        offsets = None
        while name not in self.roots:
            d = self.defs.get(name)
            if not (isinstance(d, Op) and d.call.op == "tensor.slice"):
                return None
            x, off = argument(d.call, "x"), argument(d.call, "offset")
            off = tuple(substitute_expr(o, env) for o in off)
            offsets = off if offsets is None else tuple(plus(a, b) for a, b in zip(off, offsets))
            name = self.resolve(x.name)
        if offsets is None:
            offsets = tuple(n.Const(0) for _ in self.types[name].shape)
        return name, offsets

    def valid_ends(self, name: str, env: dict) -> tuple | None:
        """Where, per axis of GM, the valid region of a tensor that is a chain of slices of
        GM storage ends: a slice's ``valid_shape=`` says its producer filled only that much
        of the window (past it a kernel's load moves nothing). None when no slice of the
        chain says so, or the tensor is not such a chain."""
        chain, name = [], self.resolve(name)
        while name not in self.roots:
            d = self.defs.get(name)
            if not (isinstance(d, Op) and d.call.op == "tensor.slice"):
                return None
            chain.append(d.call)
            name = self.resolve(argument(d.call, "x").name)
        base, ends = None, None
        for call in reversed(chain):  # from GM outward, each slice's offset adds to the base
            off = tuple(substitute_expr(o, env) for o in argument(call, "offset"))
            base = off if base is None else tuple(plus(a, b) for a, b in zip(base, off))
            valid = argument(call, "valid_shape")
            if valid is not None:
                end = tuple(plus(b, substitute_expr(v, env)) for b, v in zip(base, valid))
                ends = end if ends is None else tuple(simplify(n.BinOp("min", a, b)) for a, b in zip(ends, end))
        return ends

    def source_window(self, name: str, env: dict):
        """(GM name, offsets, reader) of a tensor that is GM storage or a chain of slices of
        it; ``reader`` is the slice taken from GM itself (where the program reads it), None
        for GM storage. None when the tensor is computed on chip."""
        chain = self.resolve(name)
        reader = None
        while chain not in self.roots:
            d = self.defs.get(chain)
            if not (isinstance(d, Op) and d.call.op == "tensor.slice"):
                return None
            reader = d.stmt
            chain = self.resolve(argument(d.call, "x").name)
        gm, offsets = self.window(name, env)
        return gm, offsets, reader

    def written_between(self, root: str, reader, sink) -> bool:
        """Whether GM ``root`` is stored into after ``reader`` (a def: it read the root
        there) and before ``sink`` (where it is computed) runs — so computing it at the
        sink would read the store, not what the program read."""
        pd, ld = self.stmt_pos[id(reader)]
        pr, lr = self.stmt_pos[id(sink)]
        for w in self.writes:
            if w.root != root or w.pos == pr:
                continue
            if pd < w.pos < pr or (w.loops & (lr - ld)):
                return True
        return False


def _names_read(body) -> collections.Counter:
    """Every name some statement of ``body`` reads (types, bounds and carries included),
    with how many statements read it."""
    from pypto.ir.rewrite import rewrite

    names: collections.Counter = collections.Counter()
    for stmt in n.walk_stmts(body):
        shallow = attrs.evolve(stmt, **{f: () for f in ("body", "then_body", "else_body") if hasattr(stmt, f)})
        seen: set[str] = set()
        rewrite(shallow, {n.Var: lambda v: seen.add(v.name)})
        names.update(seen)
    return names


# ----------------------------------------------------------------------------- sides


def _sides(g: TensorGraph) -> dict[str, M]:
    """Vec or Acc for each computed value: matmul results and what they flow into through
    slices, carries and accumulation are Acc; vector results are Vec; a creation takes the
    side of what it meets. A value on both sides is an error."""
    parent: dict[str, str] = {}
    fixed: dict[str, tuple] = {}  # set root -> (side, span that fixed it)

    def find(x):
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    def fix(x, side, span):
        r = find(x)
        if r in fixed and fixed[r][0] is not side:
            raise _crossing(fixed[r], (side, span))
        fixed.setdefault(r, (side, span))

    def union(x, y, span):
        if not (g.computed(x) and g.computed(y)):
            return
        a, b = find(g.resolve(x)), find(g.resolve(y))
        if a == b:
            return
        parent[a] = b
        if a in fixed:
            fa = fixed.pop(a)
            if b in fixed and fixed[b][0] is not fa[0]:
                raise _crossing(fixed[b], (fa[0], span))
            fixed.setdefault(b, fa)

    for name, d in g.defs.items():
        if isinstance(d, Op):
            op = lookup(d.call.op)
            args = dict(zip((p.name for p in op.params), d.call.args))
            if op.windows is None:  # an assemble's result: the tensor it wrote, on neither side
                continue
            if op.windows.kind == "cube":
                fix(name, M.Acc, d.span)
                if "acc" in args:
                    union(name, args["acc"].name, d.span)
                for p in ("lhs", "rhs"):
                    x = g.resolve(args[p].name)
                    if g.computed(x) and g.window(x, {}) is None:
                        held = _held_root(g, x)
                        if held is not None:
                            raise UnsupportedSyntaxError(
                                f"the {p} of this matmul is a window of '{held}', which is held whole in Mat: the "
                                "cube reads a held tensor whole", span=d.span,
                                hint="gather just the rows the matmul needs (a smaller buffer), and pass it whole")
                        what = "a matmul's result" if _from_cube(g, x) else "a vector result"
                        raise UnsupportedSyntaxError(
                            f"the {p} of this matmul is computed on chip; on a2a3 {what} reaches the cube only "
                            "through GM", span=d.span,
                            hint="end the scope with the value assembled into a tensor, and read it in a second "
                                 "pl.at scope (or kernel)")
            elif op.windows.kind == "slice":
                union(name, args["x"].name, d.span)
            elif d.call.op == "tensor.cast" and isinstance(args["x"], n.Var) and g.computed(g.resolve(args["x"].name)) \
                    and fixpipe_cast(d.call, g.types[g.resolve(args["x"].name)].dtype) \
                    and _from_cube(g, g.resolve(args["x"].name)):  # the fixpipe narrows the accumulator: the cube's
                union(name, args["x"].name, d.span)
            elif op.windows.kind != "source":
                fix(name, M.Vec, d.span)
                for p in op.params:
                    v = args.get(p.name)
                    if isinstance(v, n.Var) and g.computed(g.resolve(v.name)):
                        union(name, v.name, d.span)
        elif d.inside:
            loop = d.stmt
            init = loop.iter_args[d.index].init
            yielded = loop.body[-1].values[d.index]
            for other in (init, yielded):
                if isinstance(other, n.Var):
                    union(name, other.name, loop.span)
            union(name, loop.results[d.index].name, loop.span)
        elif isinstance(d.stmt, n.If):
            for body in (d.stmt.then_body, d.stmt.else_body):
                if body and isinstance(body[-1], n.Yield) and isinstance(body[-1].values[d.index], n.Var):
                    union(name, body[-1].values[d.index].name, d.stmt.span)
    return {x: fixed[find(x)][0] for x in list(parent) if find(x) in fixed}


def _from_cube(g: TensorGraph, name: str) -> bool:
    """Whether a computed value is (a slice of) a matmul's or an accumulation's result."""
    d = g.defs.get(name)
    while isinstance(d, Op) and d.call.op == "tensor.slice":
        d = g.defs.get(g.resolve(argument(d.call, "x").name))
    if isinstance(d, Carried):
        return any(_from_cube(g, g.resolve(v.name)) for v in _carried_values(d) if isinstance(v, n.Var))
    return isinstance(d, Op) and getattr(lookup(d.call.op).windows, "kind", None) == "cube"


def _held_root(g: TensorGraph, name: str) -> str | None:
    """The tensor held whole on chip (a tile since ``expand_l1``) that ``name`` slices."""
    d = g.defs.get(name)
    while isinstance(d, Op) and d.call.op == "tensor.slice":
        x = g.resolve(argument(d.call, "x").name)
        if isinstance(g.types.get(x), TileType):
            return x
        d = g.defs.get(x)
    return None


def _carried_values(d: Carried):
    if isinstance(d.stmt, n.LOOPS):
        return (d.stmt.iter_args[d.index].init, d.stmt.body[-1].values[d.index])
    return tuple(body[-1].values[d.index] for body in (d.stmt.then_body, d.stmt.else_body) if body)


def _crossing(first, second) -> UnsupportedSyntaxError:
    acc_span = first[1] if first[0] is M.Acc else second[1]
    vec_span = second[1] if first[0] is M.Acc else first[1]
    return UnsupportedSyntaxError(
        "on a2a3 a matmul's result reaches vector ops only through GM", span=vec_span or acc_span,
        hint="compute it in a pl.at scope of the orchestration (a mixed scope stages the matmul's result through "
             "GM for the vector cores), or assemble the matmul into an output tensor and load it back")


# ----------------------------------------------------------------------------- loop carries


class Unblockable(Exception):
    """This window of a value cannot be computed on its own (an internal signal: the
    block planner tries another block, or reports the message). ``need``: where it is
    for want of Vec, the fewest bytes of it computing the window would take (as far as
    known when it gave up: at least that many)."""

    def __init__(self, message: str, span=None, hint: str | None = None, need: int | None = None):
        super().__init__(message)
        self.message, self.span, self.hint, self.need = message, span, hint, need


def carried_regions(g: TensorGraph, stmt: n.For, index: int, region: Region, env: dict) -> dict[int, Region]:
    """For a pure loop asked for ``region`` of its result ``index``: the window each of its
    carried values must carry so that the body computes those windows from themselves.
    Unblockable when the body reads a carried value at another window than it carries."""
    want = {index: region}
    work = [index]
    inside = {a.name: k for k, a in enumerate(stmt.iter_args)}
    body_names = {stmt.var} | {x for s in n.walk_stmts(stmt.body) for x in n.bound_names(s)}
    env = {k: v for k, v in env.items() if k not in body_names}  # a copy emitted before renamed them
    while work:
        k = work.pop()
        for name, reg in demands(g, stmt.body[-1].values[k], want[k], env).items():
            if name not in inside:
                continue
            j = inside[name]
            for r in reg:
                if region_vars(r) & body_names:
                    raise Unblockable("this loop reads a window of a tensor it carries that moves with the "
                                      "iteration, so a block of it cannot be computed alone", stmt.span,
                                      hint="carry the tensor whole (it must then fit Vec), or slice it before the "
                                           "loop and carry only the window")
                if j not in want:
                    want[j] = r
                    work.append(j)
                elif want[j] != r:
                    raise Unblockable("this loop reads a tensor it carries at another window than the one it "
                                      "carries (a reduction across it, say), so a block of it cannot be computed "
                                      "alone", stmt.span,
                                      hint="carry the tensor whole (it must then fit Vec), or store the part you "
                                           "need after the loop")
    return want


def demands(g: TensorGraph, value, region: Region, env: dict) -> dict[str, set]:
    """The windows of carried values (iter args) that computing ``region`` of ``value`` reads."""
    out: dict[str, set] = {}
    seen: set = set()

    def visit(name: str, reg: Region):
        name = g.resolve(name)
        if (name, reg) in seen or name in g.roots:
            return
        seen.add((name, reg))
        d = g.defs.get(name)
        if isinstance(d, Carried):
            if d.inside:
                out.setdefault(name, set()).add(reg)
                return
            if isinstance(d.stmt, n.For):
                regs = carried_regions(g, d.stmt, d.index, reg, env)
                for k, r in regs.items():
                    init = d.stmt.iter_args[k].init
                    if isinstance(init, n.Var):
                        visit(init.name, r)
                    # what the body reads from outside, through the yields
                    for name2, rs in demands(g, d.stmt.body[-1].values[k], r, env).items():
                        if name2 not in {a.name for a in d.stmt.iter_args}:
                            out.setdefault(name2, set()).update(rs)
            else:
                for body in (d.stmt.then_body, d.stmt.else_body):
                    y = body[-1].values[d.index]
                    if isinstance(y, n.Var):
                        visit(y.name, reg)
            return
        if isinstance(d, Op):
            call = substituted(d.call, env) if env else d.call
            shape = g.types[name].shape
            regs = operand_regions(call, reg, g.types, shape)
            if regs is None:
                regs = operand_regions(call, whole(shape), g.types, shape) or {}
            args = dict(zip((p.name for p in lookup(call.op).params), call.args))
            for p, r in regs.items():
                visit(args[p].name, r)

    if isinstance(value, n.Var):
        visit(value.name, region)
    return out
