"""Building IR in Python: fresh SSA names, result types from the op registry, nested blocks
as ``with`` statements. For generators, tests and passes that synthesize code.

    b = FunctionBuilder("k", FunctionType.InCore, soc=A2A3)
    a = b.param("a", TensorType((64, 128), DataType.FP32))
    out = b.param("out", TensorType((64, 128), DataType.FP32), ParamDirection.Out)
    with b.loop(0, 4) as loop:
        t = b.op("tile.load", a, [loop.var * 16, 0], [16, 128])
        b.eval("tile.store", b.op("tile.exp", t), [loop.var * 16, 0], out)
    b.ret(out)
    fn = b.build()
"""

from __future__ import annotations

import contextlib

from pypto.ir import nodes as n
from pypto.ir.infer import call_type, scalar_type
from pypto.ir.ops import Kind, lookup
from pypto.ir.types import INDEX, ForKind, FunctionType, Level, ParamDirection
from pypto.backend import SoC


class Loop:
    def __init__(self, var: n.Var, iter_vars: tuple):
        self.var = var
        self.iter_vars = iter_vars
        self.results: tuple = ()
        self.yielded: tuple | None = None

    def yield_(self, *values) -> None:
        self.yielded = tuple(n.as_expr(v) for v in values)


class Branch:
    def __init__(self, builder: FunctionBuilder):
        self.builder = builder
        self.yielded: list = [None, None]
        self.part = 0
        self.results: tuple = ()

    def yield_(self, *values) -> None:
        """What the branch being built yields (one value per result, alike on both)."""
        self.yielded[self.part] = tuple(n.as_expr(v) for v in values)

    def else_(self) -> None:
        """Build the else branch from here on."""
        self.builder.blocks.append([])
        self.part = 1


class FunctionBuilder:
    def __init__(self, name: str, type: FunctionType = FunctionType.InCore, *, soc: SoC):
        self.name = name
        self.soc = soc  # the backend whose rules infer the ops' types
        self.type = type
        self.params: list[n.Param] = []
        self.types: dict[str, object] = {}
        self.used: set[str] = set()
        self.blocks: list[list] = [[]]
        self.returns: tuple = ()

    def fresh(self, base: str) -> str:
        return n.fresh_name(base, self.used)

    def param(self, name: str, type, direction: ParamDirection = ParamDirection.In) -> n.Var:
        name = self.fresh(name)
        self.types[name] = type
        self.params.append(n.Param(name, type, direction))
        return n.Var(name)

    def emit(self, stmt) -> None:
        self.blocks[-1].append(stmt)

    def call(self, opname: str, *args, **kwargs) -> n.Call:
        op = lookup(opname)
        if op is None:
            raise KeyError(opname)
        values = dict(zip((p.name for p in op.params), args))
        values.update(kwargs)
        out = []
        for p in op.params:
            v = values.get(p.name, p.default)
            if p.kind in (Kind.INDEX_LIST, Kind.SHAPE) and v is not None:
                v = tuple(n.as_expr(x) for x in v)
            elif p.kind in (Kind.TILE, Kind.TENSOR, Kind.SCALAR) and v is not None:
                v = n.as_expr(v)
            out.append(v)
        return n.Call(opname, tuple(out))

    def op(self, opname: str, *args, name: str | None = None, type=None, **kwargs) -> n.Var:
        """Bind the result of an op to a fresh name (its type inferred unless given)."""
        call = self.call(opname, *args, **kwargs)
        t = type if type is not None else call_type(call, self.types, self.soc)
        return self.assign(name or opname.split(".")[-1], call, t)

    def assign(self, base: str, value, type=None) -> n.Var:
        value = value if isinstance(value, (n.Call, n.FuncCall)) else n.as_expr(value)
        t = type if type is not None else scalar_type(value, self.types)
        target = self.fresh(base)
        self.types[target] = t
        self.emit(n.Assign(target, t, value))
        return n.Var(target)

    def eval(self, opname: str, *args, **kwargs) -> None:
        self.emit(n.Eval(self.call(opname, *args, **kwargs)))

    @contextlib.contextmanager
    def loop(self, start, stop, step=1, *, kind: ForKind = ForKind.Sequential, stage: int | None = None,
             carried=(), var: str = "i"):
        """A for loop; ``carried`` are initial values, read in the body as ``loop.iter_vars``
        and updated with ``loop.yield_(...)``; after the block, ``loop.results``."""
        iv = self.fresh(var)
        self.types[iv] = INDEX
        iter_args = []
        for init in carried:
            init = n.as_expr(init)
            t = self.types[init.name] if isinstance(init, n.Var) else scalar_type(init, self.types)
            name = self.fresh((init.name if isinstance(init, n.Var) else "c") + "_iter")
            self.types[name] = t
            iter_args.append(n.IterArg(name, t, init))
        loop = Loop(n.Var(iv), tuple(n.Var(a.name) for a in iter_args))
        self.blocks.append([])
        yield loop
        body = self.blocks.pop()
        results = []
        if iter_args:
            if loop.yielded is None or len(loop.yielded) != len(iter_args):
                raise ValueError("a loop with carried values must yield one value per carried value")
            body.append(n.Yield(loop.yielded))
            for a in iter_args:
                name = self.fresh(a.name.removesuffix("_iter") + "_out")
                self.types[name] = a.type
                results.append(n.Binding(name, a.type))
        loop.results = tuple(n.Var(b.name) for b in results)
        self.emit(n.For(iv, n.as_expr(start), n.as_expr(stop), n.as_expr(step), body, kind, stage,
                        iter_args, results))

    @contextlib.contextmanager
    def if_(self, cond):
        """An if: build the then branch in the block, call ``branch.else_()`` to build the
        else branch; ``branch.yield_(...)`` in each gives its results, ``branch.results``
        after the block."""
        branch = Branch(self)
        self.blocks.append([])
        yield branch
        else_body = self.blocks.pop() if branch.part == 1 else []
        then_body = self.blocks.pop()
        results = []
        if branch.yielded[0] is not None:
            then_body.append(n.Yield(branch.yielded[0]))
            else_body.append(n.Yield(branch.yielded[1]))
            for v in branch.yielded[0]:
                t = self.types[v.name] if isinstance(v, n.Var) else scalar_type(v, self.types)
                name = self.fresh((v.name if isinstance(v, n.Var) else "c") + "_if")
                self.types[name] = t
                results.append(n.Binding(name, t))
        branch.results = tuple(n.Var(b.name) for b in results)
        self.emit(n.If(n.as_expr(cond), then_body, else_body, results))

    @contextlib.contextmanager
    def scope(self, name_hint: str = ""):
        self.blocks.append([])
        yield
        body = self.blocks.pop()
        self.emit(n.Scope(body, Level.CORE_GROUP, name_hint))

    def ret(self, *values) -> None:
        values = tuple(n.as_expr(v) for v in values)
        self.returns = tuple(self.types[v.name] for v in values)
        self.emit(n.Return(values))

    def build(self) -> n.Function:
        if len(self.blocks) != 1:
            raise ValueError("unclosed block")
        return n.Function(self.name, self.params, self.blocks[0], self.returns, self.type)
