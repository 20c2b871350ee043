"""FuseCreateAssembleToSlice: an orchestration's buffer that a kernel fills and that is
then assembled, once, into a window of another tensor becomes a view of that window, so
the kernel writes the target in place and the host copies nothing — as the reference's
pass of the same name does.

    for b in pl.parallel(2):                               for b in pl.parallel(2):
        t_buf = pl.tensor.create([4, 64], dtype=pl.FP32)       t_buf_v = pl.tensor.slice(out, [1, 4, 64], [b, 0, 0])
        t = self.k(a, t_buf)                       ->          t_buf = pl.tensor.reshape(t_buf_v, [4, 64])
        out_1 = pl.tensor.assemble(out, t, [b, 0, 0])          t = self.k(a, t_buf)
                                                               out_1 = out

An orchestration's assemble is otherwise the host's copy, made once the kernel has
finished; the view lets the next trip's kernel start at once. The rewrite keeps what the
program computes, so it is made only where that is plain from the program:

- the buffer (a zero-filled ``pl.create_tensor``, tracked) is first used as a kernel's Out
  argument, and the kernel's first access of that parameter writes all of it (a whole
  store or assemble at offset 0, outside any loop or branch): the zeros are never seen;
- it is assembled once, in the block that creates it, and not used after the assemble;
- nothing between the creation and the assemble touches the target, and no task that may
  run before the kernel reads it (one earlier in the function, or later in a loop around
  both): the host's copy waited for such readers, a kernel writing the view would not.
"""

from __future__ import annotations

import attrs

from pypto.ir import nodes as n
from pypto.ir.directions import kernel_call
from pypto.ir.ops import argument, lookup, op_call
from pypto.ir.ops.tensor import assembled_shape
from pypto.ir.tensors import block_roots
from pypto.ir.types import AtomicType, FunctionType, ParamDirection, TensorType, TileType
from pypto.passes.context import PassContext, PassResult, result

VIEWS = ("tensor.slice", "tensor.reshape", "tensor.transpose", "tensor.set_validshape")


def fuse_create_assemble_to_slice(program: n.Program, ctx: PassContext) -> PassResult:
    out = []
    for fn in program.functions:
        if fn.type is FunctionType.Orchestration:
            fn = _Fuser(program, fn).run()
        out.append(fn)
    return result(n.Program(program.name, tuple(out)))


class _Fuser:
    def __init__(self, program: n.Program, fn: n.Function):
        self.program, self.fn = program, fn
        self.used = set(n.symbols(fn))
        self.order: dict[int, int] = {}  # id(stmt) -> its place in program order
        self.loops: dict[int, tuple] = {}  # id(stmt) -> the ids of the loops around it
        self._number(fn.body, ())
        self.roots = _roots(program, fn)

    def run(self) -> n.Function:
        body = self.fn.body
        while True:  # one fusion at a time: each changes what the others see
            changed = self.block(body)
            if changed is None:
                return attrs.evolve(self.fn, body=body)
            body = changed
            self.fn = attrs.evolve(self.fn, body=body)
            self.order.clear()
            self.loops.clear()
            self._number(body, ())
            self.roots = _roots(self.program, self.fn)

    def _number(self, body, loops: tuple) -> None:
        for stmt in body:
            self.order[id(stmt)] = len(self.order)
            self.loops[id(stmt)] = loops
            inner = (*loops, id(stmt)) if isinstance(stmt, n.For) else loops
            for block in n.stmt_children(stmt):
                self._number(block, inner)

    def block(self, body):
        """The block with one fusion made in it (or in a block inside it), or None."""
        for i, stmt in enumerate(body):
            fused = self.fuse(body, i) if _creates(stmt) else None
            if fused is not None:
                return fused
            if isinstance(stmt, n.For):
                inner = self.block(stmt.body)
                if inner is not None:
                    return (*body[:i], attrs.evolve(stmt, body=inner), *body[i + 1:])
            elif isinstance(stmt, n.If):
                for field in ("then_body", "else_body"):
                    inner = self.block(getattr(stmt, field))
                    if inner is not None:
                        return (*body[:i], attrs.evolve(stmt, **{field: inner}), *body[i + 1:])
            elif isinstance(stmt, n.BLOCKS):
                inner = self.block(stmt.body)
                if inner is not None:
                    return (*body[:i], attrs.evolve(stmt, body=inner), *body[i + 1:])
        return None

    def fuse(self, body, i: int):
        create = body[i]
        buf = create.target
        # the buffer's names: True where the name is all of it in its order (a copy, a kernel's
        # result, a reshape), False where it is part of it or reordered (a slice, a transpose)
        aliases, assemble, first_use = {buf: True}, None, None
        for k in range(i + 1, len(body)):
            stmt = body[k]
            mentioned = _mentions(stmt)
            if assemble is not None:
                if mentioned & set(aliases):
                    return None  # read after the assemble: the view would change under it
                continue
            if not mentioned & set(aliases):
                continue
            if first_use is None:
                first_use = stmt
            if _assembles(stmt) and isinstance(argument(stmt.value, "source"), n.Var) \
                    and argument(stmt.value, "source").name in aliases:
                if argument(stmt.value, "target").name in aliases or not aliases[argument(stmt.value, "source").name]:
                    return None
                assemble = k
                continue
            if _assembles(stmt) and argument(stmt.value, "target").name in aliases:
                return None  # the host writes into the buffer itself
            if isinstance(stmt, n.Assign) and isinstance(stmt.type, TensorType):
                whole = self.aliasing(stmt, aliases)
                if whole is not None:
                    aliases[stmt.target] = whole
        if assemble is None or not self.filled_by(first_use, aliases):
            return None
        a = body[assemble].value
        target = argument(a, "target")
        offset = argument(a, "offset")
        window = assembled_shape(n.symbols(self.fn)[target.name], n.symbols(self.fn)[argument(a, "source").name])
        if not _splits(window, create.type.shape):
            return None  # the window seen as the buffer would need a copy wherever its rows are apart
        between = body[i + 1:assemble]
        root = self.roots.get(target.name, target.name)
        if root is None:
            return None
        bound_between = {x for s in n.walk_stmts(between) for x in n.bound_names(s)}
        if any(self.same(x, root) for s in between for x in _mentions(s)) \
                or target.name in bound_between \
                or any(n.expr_vars(e) & bound_between for e in offset) \
                or self.read_before(root, body[assemble]):
            return None
        return self.rewrite(body, i, assemble, target, offset)

    def aliasing(self, stmt: n.Assign, aliases: dict) -> bool | None:
        """Whether a binding is the buffer under another name (a copy, a view, a kernel's
        result that is the argument it wrote): None if not, else whether it is all of it in
        its order."""
        value = stmt.value
        if isinstance(value, n.Var):
            return aliases.get(value.name)
        if isinstance(value, n.Call) and value.op in VIEWS:
            x = argument(value, "x")
            if not (isinstance(x, n.Var) and x.name in aliases):
                return None
            return aliases[x.name] and value.op in ("tensor.reshape", "tensor.set_validshape")
        call = kernel_call(stmt)
        if call is not None:
            returned = _returned_arg(self.program.function(call.callee), call)
            return aliases.get(returned.name) if isinstance(returned, n.Var) else None
        return None

    def filled_by(self, stmt, aliases: set) -> bool:
        """Whether the buffer's first use is a kernel that writes all of it first."""
        call = kernel_call(stmt) if stmt is not None else None
        if call is None:
            return False
        callee = self.program.function(call.callee)
        if not callee.type.is_kernel:
            return False
        passed = [k for k, a in enumerate(call.args) if isinstance(a, n.Var) and a.name in aliases]
        untracked = stmt.value.no_dep if isinstance(stmt.value, n.Submit) else call.no_dep
        if len(passed) != 1 or passed[0] in untracked:  # (an untracked write would order nothing)
            return False
        param = callee.params[passed[0]]
        return param.direction is ParamDirection.Out and _writes_first(callee, param)

    def same(self, name: str, root: str) -> bool:
        """Whether ``name`` may be the buffer ``root`` (a name of unknown buffer may be)."""
        found = self.roots.get(name, name)
        return found is None or found == root

    def read_before(self, root: str, assemble) -> bool:
        """Whether a task that may run before the assemble's kernel reads the target: a
        kernel call earlier in the function, or later in a loop around the assemble."""
        at, loops = self.order[id(assemble)], set(self.loops[id(assemble)])
        for stmt in n.walk_stmts(self.fn.body):
            call = kernel_call(stmt)
            if call is None:
                continue
            callee = self.program.function(call.callee)
            reads = any(isinstance(a, n.Var) and self.same(a.name, root) and p.direction is not ParamDirection.Out
                        for p, a in zip(callee.params, call.args) if isinstance(p.type, TensorType)) \
                if callee.type.is_kernel else any(isinstance(a, n.Var) and self.same(a.name, root) for a in call.args)
            if reads and (self.order[id(stmt)] < at or loops & set(self.loops[id(stmt)])):
                return True
        return False

    def rewrite(self, body, i: int, k: int, target: n.Var, offset) -> tuple:
        create = body[i]
        t: TensorType = create.type
        source = argument(body[k].value, "source")
        window = assembled_shape(n.symbols(self.fn)[target.name], n.symbols(self.fn)[source.name])
        consts = tuple(n.Const(d) for d in window)
        if tuple(window) == tuple(t.shape):
            views = [attrs.evolve(create, value=op_call("tensor.slice", x=target, shape=consts, offset=offset))]
        else:  # the window seen as the buffer (without its leading 1s, its axes split)
            flat = n.fresh_name(f"{create.target}_v", self.used)
            self.used.add(flat)
            views = [n.Assign(flat, TensorType(window, t.dtype),
                              op_call("tensor.slice", x=target, shape=consts, offset=offset), span=create.span),
                     attrs.evolve(create, value=op_call("tensor.reshape", x=n.Var(flat),
                                                        shape=tuple(n.Const(d) for d in t.shape)))]
        done = body[k]
        kept = [attrs.evolve(done, value=target)] if isinstance(done, n.Assign) else []
        return (*body[:i], *views, *body[i + 1:k], *kept, *body[k + 1:])


def _splits(window, shape) -> bool:
    """Whether ``shape`` is ``window`` with 1s dropped or added and axes split into
    consecutive ones (never two merged): a view of any window, whatever its strides."""
    window, shape = [d for d in window if d != 1], [d for d in shape if d != 1]
    k = 0
    for w in window:
        product = 1
        while k < len(shape) and product < w:
            product *= shape[k]
            k += 1
        if product != w:
            return False
    return k == len(shape)


def _creates(stmt) -> bool:
    """A tracked, zero-filled buffer of static extents the orchestration creates."""
    if not (isinstance(stmt, n.Assign) and isinstance(stmt.value, n.Call) and stmt.value.op == "tensor.create"):
        return False
    init = argument(stmt.value, "init_value")
    return not argument(stmt.value, "manual_dep") and (init is None or isinstance(init, n.Const) and init.value == 0) \
        and all(isinstance(d, int) for d in stmt.type.shape)


def _assembles(stmt) -> bool:
    value = getattr(stmt, "value", None)
    return isinstance(value, n.Call) and value.op == "tensor.assemble" \
        and argument(value, "atomic") in (None, AtomicType.None_) and isinstance(argument(value, "target"), n.Var)


def _mentions(stmt) -> set[str]:
    """Every name a statement (and the statements inside it) reads."""
    out: set[str] = set()
    for s in n.walk_stmts((stmt,)):
        exprs = []
        if isinstance(s, (n.Assign, n.Eval)):
            exprs.extend(n.value_exprs(s.value))
            if isinstance(s, n.Assign) and isinstance(s.type, TensorType):
                exprs.extend(d for d in s.type.shape if not isinstance(d, int))
        elif isinstance(s, n.For):
            exprs.extend((s.start, s.stop, s.step, *(a.init for a in s.iter_args)))
        elif isinstance(s, n.If):
            exprs.append(s.cond)
        elif isinstance(s, (n.Yield, n.Return)):
            exprs.extend(s.values)
        elif isinstance(s, n.Scope):
            exprs.extend(s.deps)
        elif isinstance(s, n.Cluster) and s.blocks is not None:
            exprs.append(s.blocks)
        for e in exprs:
            out |= n.expr_vars(e)
        if isinstance(s, n.Scope):
            out |= set(s.no_dep_args)
    return out


def _returned_arg(callee: n.Function, call: n.FuncCall):
    """The argument a kernel call's (first) result is: the parameter the kernel returns."""
    for s in reversed(callee.body):
        if isinstance(s, n.Return) and s.values and isinstance(s.values[0], n.Var):
            params = [p.name for p in callee.params if isinstance(p.type, TensorType)]
            root = block_roots(callee.body, {x: x for x in params}).get(s.values[0].name)
            for p, a in zip(callee.params, call.args):
                if p.name == root:
                    return a
    return None


def _writes_first(kernel: n.Function, param: n.Param) -> bool:
    """Whether the kernel's first statement that touches ``param`` writes all of it: a
    store of a whole tile, or an assemble of a whole tensor, at offset 0, in the body
    itself (not in a loop or a branch, which may skip it)."""
    shape = param.type.shape
    roots = block_roots(kernel.body, {param.name: param.name})
    for stmt in kernel.body:
        names = _mentions(stmt)
        if not any(roots.get(x) == param.name for x in names):
            continue
        value = getattr(stmt, "value", None)
        if not isinstance(value, n.Call) or value.op not in ("tensor.assemble", "tile.store"):
            return False
        op = lookup(value.op)
        written = argument(value, op.writes_operand)
        if not isinstance(written, n.Var) or roots.get(written.name) != param.name:
            return False
        offsets = argument(value, "offset" if value.op == "tensor.assemble" else "offsets")
        if not all(isinstance(o, n.Const) and o.value == 0 for o in offsets):
            return False
        source = argument(value, "source" if value.op == "tensor.assemble" else "tile")
        t = n.symbols(kernel).get(source.name) if isinstance(source, n.Var) else None
        if isinstance(t, TileType) and t.valid_shape is not None and not all(
                isinstance(v, n.Const) and v.value == d for v, d in zip(t.valid_shape, t.shape)):
            return False  # a partial tile writes its valid region only
        if value.op == "tensor.assemble" and (
                names - {written.name} & {x for x, r in roots.items() if r == param.name}):
            return False  # it reads the parameter too
        return t is not None and (1,) * (len(shape) - len(t.shape)) + tuple(t.shape) == tuple(shape)
    return False


def _roots(program: n.Program, fn: n.Function) -> dict[str, str]:
    """Tensor name -> the buffer it is (a parameter or a tensor the function creates): the
    same through copies, views, loops, in-place writes and kernel calls' results."""
    roots = {p.name: p.name for p in fn.params if isinstance(p.type, TensorType)}
    unstable: set[str] = set()  # loop-carried names a trip hands another buffer

    def root(e):
        return roots.get(e.name, e.name) if isinstance(e, n.Var) else None

    def walk(body):
        for stmt in body:
            if isinstance(stmt, n.Assign) and isinstance(stmt.type, TensorType):
                value, found = stmt.value, None
                if isinstance(value, n.Var):
                    found = root(value)
                elif isinstance(value, n.Call) and value.op in VIEWS:
                    found = root(argument(value, "x"))
                elif isinstance(value, n.Call) and lookup(value.op).writes_operand is not None:
                    found = root(argument(value, lookup(value.op).writes_operand))
                elif kernel_call(stmt) is not None:
                    call = kernel_call(stmt)
                    found = root(_returned_arg(program.function(call.callee), call))
                roots[stmt.target] = found or stmt.target
            elif isinstance(stmt, n.For):
                for a in stmt.iter_args:
                    if isinstance(a.type, TensorType):
                        roots[a.name] = None if a.name in unstable else root(a.init)
            for block in n.stmt_children(stmt):
                walk(block)
            if isinstance(stmt, n.For) and stmt.body and isinstance(stmt.body[-1], n.Yield):
                for a, y in zip(stmt.iter_args, stmt.body[-1].values):
                    if isinstance(a.type, TensorType) and root(y) != root(a.init):
                        unstable.add(a.name)
            if isinstance(stmt, (n.For, n.If)):  # a result is the buffer every way in agrees on
                ways = [[a.init for a in stmt.iter_args]] if isinstance(stmt, n.For) else []
                ways += [body[-1].values for body in n.stmt_children(stmt) if body and isinstance(body[-1], n.Yield)]
                for k, b in enumerate(stmt.results):
                    if isinstance(b.type, TensorType):
                        found = {root(w[k]) if k < len(w) else None for w in ways}
                        roots[b.name] = found.pop() if len(found) == 1 else None

    walk(fn.body)
    if unstable:
        roots = {p.name: p.name for p in fn.params if isinstance(p.type, TensorType)}
        walk(fn.body)
    return roots
