"""A split mixed scope's vector work, shared by its cluster's two vector cores
(``pl.at(optimizations=[pl.split(pl.SplitMode.UP_DOWN | LEFT_RIGHT)])``).

The vector statements of each block go into a ``pl.split_aiv`` region — a loop over the
two lanes that both vector cores run at once, the loop variable each one's lane — after
the cube and scalar statements they do not depend on, and the region is halved: every
value it computes keeps half of its rows (UP_DOWN) or columns (LEFT_RIGHT), the lane's
half, so what it reads from GM is sliced at ``lane * half`` and what it stores lands
there. The cube side stays whole; the crossing values it stages in GM are read by each
lane in halves.

    acc = pl.matmul(a, b)                   acc = pl.matmul(a, b)
    acc_gm_1 = pl.assemble(acc_gm, acc)     acc_gm_1 = pl.assemble(acc_gm, acc)
    y = pl.add(acc_gm_1, bias)       ->     for lane in pl.split_aiv(2, mode=pl.SplitMode.NONE):
    pl.assemble(out, y, [0, 0])                 acc_h = pl.slice(acc_gm_1, [64, 128], [lane * 64, 0])
                                                bias_h = pl.slice(bias, [64, 128], [lane * 64, 0])
                                                y = pl.add(acc_h, bias_h)            # [64, 128]
                                                pl.assemble(out, y, [lane * 64, 0])

A value one element wide on the split axis (a row vector under UP_DOWN) is the same on
both lanes and is not sliced. What halving cannot express is refused where it is
written: a reduction across the split axis, a transpose or reshape, a store both lanes
would make to the same bytes, a view of a halved value.
"""

from __future__ import annotations

import attrs

from pypto.errors import UnsupportedSyntaxError
from pypto.ir import nodes as n
from pypto.ir.ops import argument, lookup, op_call
from pypto.ir.rewrite import rename
from pypto.ir.simplify import simplify
from pypto.ir.types import INDEX, ForKind, SplitMode, TensorType
from pypto.passes.outlining.crossings import cube_values
from pypto.passes.outlining.lane_rules import check_lanes, is_region

_HALVED = ("elementwise", "row_reduce", "col_reduce", "row_broadcast", "col_broadcast", "source", "rows", "row")
_WHOLE_ROWS = ("rows", "row")  # a sort or a gather by column: each row needs all of its columns


def share_lanes(body: tuple, split, types: dict, fresh) -> tuple[tuple, int]:
    """A kernel body, its crossings staged, with its vector work shared between the
    cluster's vector cores as its regions or its ``pl.split`` say; and how many run it."""
    if any(is_region(s) for s in n.walk_stmts(body)):
        body = halve_regions(body, types, fresh)
    elif split in (SplitMode.UP_DOWN, SplitMode.LEFT_RIGHT):
        body = split_lanes(body, split, types, fresh)
    else:
        return body, 1
    check_lanes(body)
    return body, 2


def split_lanes(body: tuple, mode: SplitMode, types: dict, fresh) -> tuple:
    """``body``: a kernel's, its crossings staged; ``types``: every name's (the names the
    halving makes are added); ``fresh(base)``: a new name."""
    _name_types(body, types)
    cube = cube_values(body, types)
    # and the tensors the cube accumulates into: what a matmul reads, where a loop's accumulator starts
    for s in n.walk_stmts(body):
        if isinstance(getattr(s, "value", None), n.Call) and (w := lookup(s.value.op).windows) is not None \
                and w.kind == "cube":
            cube |= {a.name for a in s.value.args if isinstance(a, n.Var)}
        if isinstance(s, n.For):
            cube |= {a.init.name for a in s.iter_args if a.name in cube and isinstance(a.init, n.Var)}
    return tuple(_Splitter(mode, types, cube, fresh).block(body))


def halve_regions(body: tuple, types: dict, fresh) -> tuple:
    """The hand-written ``pl.split_aiv(2, mode=UP_DOWN | LEFT_RIGHT)`` regions of a kernel
    body halved as the split's own are (``NONE`` regions run as written, on both lanes)."""
    _name_types(body, types)

    def block(stmts):
        out = []
        for stmt in stmts:
            if is_region(stmt) and stmt.split in (SplitMode.UP_DOWN, SplitMode.LEFT_RIGHT):
                halver = _Halver(_Splitter(stmt.split, types, set(), fresh), stmt.var)
                stmt = attrs.evolve(stmt, body=tuple(halver.block(stmt.body, set())), split=SplitMode.NONE)
            elif isinstance(stmt, (*n.LOOPS, *n.BLOCKS)):
                stmt = attrs.evolve(stmt, body=tuple(block(stmt.body)))
            elif isinstance(stmt, n.If):
                stmt = attrs.evolve(stmt, then_body=tuple(block(stmt.then_body)), else_body=tuple(block(stmt.else_body)))
            out.append(stmt)
        return out

    return tuple(block(body))


def _writes_in_place(stmt) -> bool:
    """Whether a statement names a GM tensor after writing into it (an assemble, a store)."""
    call = getattr(stmt, "value", None)
    return isinstance(stmt, n.Assign) and isinstance(call, n.Call) and lookup(call.op).writes_operand is not None


def _name_types(body, types: dict) -> None:
    """The types of the names staging made (the outliner's table has the program's)."""
    for s in n.walk_stmts(body):
        if isinstance(s, n.Assign):
            types.setdefault(s.target, s.type)


class _Splitter:
    def __init__(self, mode: SplitMode, types: dict, cube: set, fresh):
        """``cube``: the values the cube computes (crossings' ``cube_values``: a matmul's
        result, what carries or views it, its fixpipe narrowing) and the accumulators it
        creates; a statement computing one is the cube's."""
        self.mode, self.types, self.cube, self.fresh = mode, types, cube, fresh
        self.vector: set = set()  # the tensor values vector work computes

    # ------------------------------------------------------------------ regions

    def block(self, body) -> list:
        """The block with each run of vector statements in a region, after the cube and
        scalar statements between them (none of which reads what the run computes)."""
        out, run, hoisted = [], [], []
        defined_in_run: set = set()

        def close():
            if run:
                out.extend(hoisted)
                out.extend(self.region(run))
                hoisted.clear()
                run.clear()

        for stmt in body:
            side = self.side(stmt)
            if isinstance(stmt, (n.Yield, n.Return)):
                self.escaping(stmt, defined_in_run)
                close()
                out.append(stmt)
            elif side == "vector":
                if not run:  # a region's values stay in it
                    self.escaping(stmt, defined_in_run)
                run.append(stmt)
                if not _writes_in_place(stmt):  # (a GM tensor written in place is the tensor: whole, after it)
                    defined_in_run.update(_defined(stmt))
            elif side == "both":
                self.escaping(stmt, defined_in_run)
                close()
                out.append(self.compound(stmt))
            elif run and (stored := _reads(stmt) & set().union(*(_gm_written(v) for v in run))):
                if isinstance(getattr(stmt, "value", None), n.Call) and stmt.value.op == "tensor.read":
                    name = min(stored)
                    name = next((argument(s.value, "target").name for v in run for s in n.walk_stmts((v,))
                                 if isinstance(s, n.Assign) and s.target == name), name)  # the name it assembled into
                    raise UnsupportedSyntaxError(
                        f"pl.read of '{name}', which the split scope's two vector cores each store half of: the "
                        "scalar unit that reads it waits for its own core's stores, not the other's",
                        span=stmt.span, hint="read it in a later task (after this scope), or use "
                                             "pl.split(pl.SplitMode.NONE)")
                close()  # cube work reading what the vector work stored (its operand, through GM): after it
                out.append(stmt)
            elif run:  # cube or scalar work between vector statements: it goes first
                self.escaping(stmt, defined_in_run)
                self.conflicts(stmt, run)
                hoisted.append(stmt)
            else:
                out.append(stmt)
        close()
        return out

    def side(self, stmt) -> str:
        """"vector", "cube" (or scalar: either way not the vector cores'), or "both" (a
        loop or branch holding each); the vector values it computes join ``self.vector``
        (statements are asked in program order)."""
        if isinstance(stmt, (*n.LOOPS, n.If)):
            bodies = (stmt.body,) if isinstance(stmt, n.LOOPS) else (stmt.then_body, stmt.else_body)
            sides = {self.side(s) for b in bodies for s in b if not isinstance(s, n.Yield)}
            if "both" in sides or {"vector", "cube"} <= sides:
                return "both"
            if "vector" in sides:
                for r in stmt.results:
                    self.vector.add(r.name)
                return "vector"
            return "cube"
        call = getattr(stmt, "value", None)
        target = getattr(stmt, "target", None)
        if isinstance(call, n.Call):
            op = lookup(call.op)
            reads_vector = any(isinstance(a, n.Var) and a.name in self.vector for a in call.args)
            if op.windows is not None and op.windows.kind == "cube" or target in self.cube:
                return "cube"  # a matmul, what one reads (a created accumulator), a view or narrowing of its result
            if call.op == "tensor.assemble":
                return "vector" if reads_vector else "cube"
            if call.op == "tensor.slice" and not reads_vector:
                return "cube"  # a view of GM: whoever reads it slices it further
            computes = op.windows is not None and op.windows.kind not in ("slice",)
            if reads_vector or computes and isinstance(self.types.get(target), TensorType):
                if target is not None:
                    self.vector.add(target)
                return "vector"
            return "cube"
        if isinstance(stmt, n.Assign) and n.expr_vars(stmt.value) & self.vector:
            self.vector.add(stmt.target)
            return "vector"
        return "cube"

    def escaping(self, stmt, defined: set) -> None:
        """A statement after a run (or moved before it) may not read what the run computes."""
        read = _reads(stmt) & defined
        if read:
            name = sorted(read)[0]
            raise UnsupportedSyntaxError(
                f"'{name}' is vector work the split scope's vector cores each compute half of, and cube or "
                "control work after it reads it whole", span=getattr(stmt, "span", None),
                hint="keep the vector work after the cube work it needs (a mixed scope moves values from the cube "
                     "to the vector cores), or use pl.split(pl.SplitMode.NONE)")

    def conflicts(self, stmt, run: list) -> None:
        """Cube work moved before vector work must not touch GM the vector work touches."""
        written = _gm_written(stmt)
        for v in run:
            if written & (_gm_written(v) | _reads(v)):
                raise UnsupportedSyntaxError(
                    f"cube work writes '{sorted(written)[0]}', which vector work before it in the split scope uses",
                    span=getattr(stmt, "span", None),
                    hint="order the scope cube work first, then the vector work that reads its result")

    def compound(self, stmt):
        """A loop or branch holding cube and vector work: its bodies split in turn."""
        if isinstance(stmt, n.LOOPS):
            for a in stmt.iter_args:
                if _named(a.init) in self.vector:
                    raise UnsupportedSyntaxError(
                        f"the loop carries vector value '{a.name}' around cube work; each vector core holds half of it",
                        span=stmt.span, hint="carry it in a loop of its own, or use pl.split(pl.SplitMode.NONE)")
            body = self.block(stmt.body)
            yields = [s for s in stmt.body if isinstance(s, n.Yield)]
            if yields and set(map(_named, yields[-1].values)) & self.vector:
                raise UnsupportedSyntaxError(
                    "a loop holding cube and vector work hands a vector value on to its next trip",
                    span=stmt.span, hint="use pl.split(pl.SplitMode.NONE)")
            return attrs.evolve(stmt, body=tuple(body))
        if stmt.results and any(set(map(_named, b[-1].values)) & self.vector
                                for b in (stmt.then_body, stmt.else_body) if b and isinstance(b[-1], n.Yield)):
            raise UnsupportedSyntaxError("a branch holding cube and vector work yields a vector value",
                                         span=stmt.span, hint="use pl.split(pl.SplitMode.NONE)")
        return attrs.evolve(stmt, then_body=tuple(self.block(stmt.then_body)),
                            else_body=tuple(self.block(stmt.else_body)))

    def region(self, run: list) -> list:
        """The run in a region, and after it the GM tensors it wrote in place under the names
        the statements after it read (the tensor itself: a region's own names stay in it)."""
        lane = self.fresh("aiv_id")
        self.types[lane] = INDEX
        inside, after, root = {}, [], {}
        for stmt in run:
            if _writes_in_place(stmt):
                written = argument(stmt.value, lookup(stmt.value.op).writes_operand)
                root[stmt.target] = root.get(written.name, written.name)
                inside[stmt.target] = self.fresh(stmt.target)
                self.types[inside[stmt.target]] = stmt.type
                after.append(n.Assign(stmt.target, stmt.type, n.Var(root[stmt.target]), span=stmt.span))
        body = _Halver(self, lane).block([rename(s, inside) for s in run], set())
        span = next((s.span for s in run if getattr(s, "span", None) is not None), None)
        return [n.For(lane, n.Const(0), n.Const(2), n.Const(1), tuple(body), ForKind.SplitAiv, span=span,
                      split=SplitMode.NONE), *after]


class _Halver:
    """One region's vector statements rewritten for the lane ``lane`` runs them on."""

    def __init__(self, splitter: _Splitter, lane: str):
        self.s, self.lane = splitter, lane
        self.types = splitter.types
        self.sliced: dict = {}  # GM tensor -> the lane's half of it, sliced once per block
        self.halved: set = set()  # the values that are a lane's half (even one element wide, of two)

    def axis(self, t: TensorType, at) -> int:
        rank = len(t.shape)
        if self.s.mode is SplitMode.UP_DOWN:
            if rank < 2:
                raise self.refuse(at, f"a {rank}-D value has no rows to halve", "pl.SplitMode.LEFT_RIGHT")
            return rank - 2
        return rank - 1

    def refuse(self, at, what: str, other: str = "pl.SplitMode.NONE") -> UnsupportedSyntaxError:
        return UnsupportedSyntaxError(f"pl.split(pl.SplitMode.{self.s.mode.name}) halves the scope's vector work "
                                      f"between the two vector cores, and {what}", span=getattr(at, "span", None),
                                      hint=f"use {other}, or move this work into a scope of its own")

    def offset(self, o, half: int):
        return simplify(n.BinOp("+", o, n.BinOp("*", n.Var(self.lane), n.Const(half))))

    def halves(self, extent: int, at) -> int:
        if extent % 2:
            raise self.refuse(at, f"{extent} is odd: the lanes would not get equal halves")
        return extent // 2

    def block(self, body, local: set) -> list:
        """``local``: the tensor values computed in the region (halved, unless one element
        wide on the split axis), which its statements read as they are."""
        outer = dict(self.sliced)  # a half sliced in a nested block is not visible after it
        out = []
        for stmt in body:
            out.extend(self.stmt(stmt, local))
        self.sliced = outer
        return out

    def stmt(self, stmt, local: set) -> list:
        if isinstance(stmt, n.LOOPS):
            before, iter_args = [], []
            for a in stmt.iter_args:
                init = a.init
                if isinstance(a.type, TensorType):
                    init, pre = self.operand(init, a.type, local, stmt)
                    before += pre
                    a = attrs.evolve(a, type=self.bind(a.name, a.type, local, stmt), init=init)
                iter_args.append(a)
            body = self.block(stmt.body, local)
            return before + [attrs.evolve(stmt, body=tuple(body), iter_args=tuple(iter_args),
                                          results=self.bindings(stmt.results, local, stmt))]
        if isinstance(stmt, n.If):
            then_b, else_b = self.block(stmt.then_body, local), self.block(stmt.else_body, local)
            return [attrs.evolve(stmt, then_body=tuple(then_b), else_body=tuple(else_b),
                                 results=self.bindings(stmt.results, local, stmt))]
        call = getattr(stmt, "value", None)
        if not isinstance(call, n.Call):
            return [stmt]
        op = lookup(call.op)
        args = dict(zip((p.name for p in op.params), call.args))
        target = getattr(stmt, "target", None)
        if call.op == "tensor.assemble":
            return self.assemble(stmt, call, args, local)
        if call.op == "tensor.slice":
            return self.view(stmt, call, args, local)
        kind = op.windows.kind if op.windows is not None else None
        if kind not in _HALVED:
            if any(isinstance(a, n.Var) and a.name in local for a in call.args):
                what = {"transpose": "a transpose moves the split axis", "whole": "a reshape moves the split axis"}
                raise self.refuse(stmt, what.get(kind, f"{call.op} reads a lane's half as if it were whole"))
            return [stmt]
        t = self.types[target]
        ax = self.axis(t, stmt)
        if kind in _WHOLE_ROWS and ax == len(t.shape) - 1 and t.shape[ax] > 1:
            raise self.refuse(stmt, f"{call.op} needs whole rows, which halving the columns would cut",
                              "pl.SplitMode.UP_DOWN (which halves the rows)")
        before, new_args = [], dict(args)
        if t.shape[ax] == 1:
            for name, a in args.items():
                at = self.types.get(a.name) if isinstance(a, n.Var) else None
                if isinstance(at, TensorType) and (a.name in self.halved or a.name not in local
                                                   and at.shape[self.axis(at, stmt)] > 1):
                    other = "LEFT_RIGHT" if self.s.mode is SplitMode.UP_DOWN else "UP_DOWN"
                    raise self.refuse(stmt, f"{call.op} reduces '{a.name}' across the split axis",
                                      f"pl.SplitMode.{other} (which halves the other axis) or pl.SplitMode.NONE")
            local.add(target)
            return [stmt]
        half = self.halves(t.shape[ax], stmt)
        for name, a in args.items():
            if isinstance(a, n.Var) and isinstance(self.types.get(a.name), TensorType):
                new_args[name], pre = self.operand(a, t, local, stmt)
                before += pre
        if kind == "source":  # a created tile: half the shape
            shape = list(args["shape"])
            shape[ax] = n.Const(half)
            new_args["shape"] = tuple(shape)
        ht = self.bind(target, t, local, stmt)
        new = attrs.evolve(call, args=tuple(new_args[p.name] for p in op.params[:len(call.args)]))
        return before + [attrs.evolve(stmt, type=ht, value=new)]

    def bind(self, name: str, full: TensorType, local: set, at) -> TensorType:
        """``name``, of type ``full`` before halving, computed in the region: its type now
        (a lane's half, unless one element wide on the split axis)."""
        t = self.half_type(full, at)
        self.types[name] = t
        local.add(name)
        if full.shape[self.axis(full, at)] > 1:
            self.halved.add(name)
        return t

    def bindings(self, results, local: set, at) -> tuple:
        """A loop's or branch's result bindings, their tensors halved."""
        return tuple(attrs.evolve(r, type=self.bind(r.name, r.type, local, at)) if isinstance(r.type, TensorType)
                     else r for r in results)

    def half_type(self, t: TensorType, at) -> TensorType:
        ax = self.axis(t, at)
        if t.shape[ax] == 1:
            return t
        shape = list(t.shape)
        shape[ax] = self.halves(shape[ax], at)
        return attrs.evolve(t, shape=tuple(shape))

    def operand(self, a, full: TensorType, local: set, at):
        """Operand ``a`` of a value of type ``full`` (before halving): as it is, or the
        lane's half of a GM tensor (with the statement that slices it)."""
        if not isinstance(a, n.Var):
            return a, []
        t = self.types[a.name]
        ax, fax = self.axis(t, at), self.axis(full, at)
        extent, want = t.shape[ax], full.shape[fax]
        if a.name in local or extent == 1:
            return a, []
        if extent != want:
            raise self.refuse(at, f"'{a.name}' is {extent} wide on the split axis where the result is {want}")
        if a.name in self.sliced:
            return self.sliced[a.name], []
        half = self.halves(extent, at)
        shape = tuple(n.Const(half if k == ax else d) for k, d in enumerate(t.shape))
        offset = tuple(self.offset(n.Const(0), half) if k == ax else n.Const(0) for k in range(len(t.shape)))
        name = self.s.fresh(f"{a.name}_half")
        ht = attrs.evolve(t, shape=tuple(c.value for c in shape))
        self.types[name] = ht
        self.sliced[a.name] = n.Var(name)
        self.halved.add(name)
        return n.Var(name), [n.Assign(name, ht, op_call("tensor.slice", x=a, shape=shape, offset=offset),
                                      span=getattr(at, "span", None))]

    def view(self, stmt, call, args, local) -> list:
        x = args["x"]
        if x.name in local:
            raise self.refuse(stmt, f"a slice of '{x.name}' names whole-value coordinates of a lane's half")
        t = self.types[stmt.target]
        ax = self.axis(t, stmt)
        ht = self.bind(stmt.target, t, local, stmt)
        if t.shape[ax] == 1:
            return [stmt]
        shape, offset = list(args["shape"]), list(args["offset"])
        shape[ax] = n.Const(ht.shape[ax])
        offset[ax] = self.offset(offset[ax], ht.shape[ax])
        new = attrs.evolve(call, args=(x, tuple(shape), tuple(offset), *call.args[3:]))
        return [attrs.evolve(stmt, type=ht, value=new)]

    def assemble(self, stmt, call, args, local) -> list:
        source, target = args["source"], args["target"]
        if isinstance(target, n.Var) and target.name in local:
            raise self.refuse(stmt, f"assembling into '{target.name}', a lane's half, names whole-value coordinates")
        if not isinstance(source, n.Var) or source.name not in local:
            return [stmt]  # a GM value into GM: the vector side does not copy it
        t = self.types[source.name]
        ax = self.axis(t, stmt)
        if source.name not in self.halved:
            raise self.refuse(stmt, f"both vector cores would store '{source.name}' (one element wide on the split "
                                    "axis, the same on each) to the same bytes")
        offset = list(args["offset"])
        offset[ax] = self.offset(offset[ax], t.shape[ax])
        new = attrs.evolve(call, args=(target, source, tuple(offset), *call.args[3:]))
        return [attrs.evolve(stmt, value=new)]


def _named(e):
    return e.name if isinstance(e, n.Var) else None


def _defined(stmt) -> set:
    out = set()
    for s in n.walk_stmts((stmt,)):
        if getattr(s, "target", None) is not None:
            out.add(s.target)
        for r in getattr(s, "results", ()):
            out.add(r.name)
    return out


def _reads(stmt) -> set:
    out = set()
    for s in n.walk_stmts((stmt,)):
        for e in _exprs(s):
            out |= n.expr_vars(e)
    return out


def _exprs(s):
    v = getattr(s, "value", None)
    if isinstance(v, n.Call):
        for a in v.args:
            if isinstance(a, tuple):
                yield from a
            elif isinstance(a, (n.Var, n.Const, n.BinOp, n.UnaryOp)):
                yield a
    elif v is not None and not isinstance(v, (n.FuncCall, n.Submit)):
        yield v
    for name in ("values",):
        yield from getattr(s, name, ())
    if isinstance(s, n.For):
        yield from (s.start, s.stop, s.step, *(a.init for a in s.iter_args))
    if isinstance(s, n.While):
        yield from (s.cond, *(a.init for a in s.iter_args))
    if isinstance(s, n.If):
        yield s.cond


def _gm_written(stmt) -> set:
    """The tensors a statement assembles into, by their names before and after."""
    found = [s for s in n.walk_stmts((stmt,))
             if isinstance(getattr(s, "value", None), n.Call) and s.value.op == "tensor.assemble"]
    names = {argument(s.value, "target").name for s in found if isinstance(argument(s.value, "target"), n.Var)}
    return names | {s.target for s in found if isinstance(s, n.Assign)}
