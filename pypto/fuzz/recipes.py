"""Fuzz programs as recipes: a small description of a tile program over row blocks, which
two interpreters turn into the IR (``build``) and into the torch oracle (``oracle``). A
family draws its recipe once; neither the program nor its expected result is written by
hand, so they cannot drift apart.

A recipe's values live in a pool, referred to by position: a load, an op and a loop's
results each append to it. In a loop body the pool is the enclosing one, then the loop's
carried values, then the body's own; after the loop, its results follow the enclosing
pool. Every tensor is ``rows`` x ``cols`` blocks of rows: a ``Row`` names one block by
the loop indices around it.

    Recipe("carried", D.FP32, rows=4, cols=64, inputs=(6,), outputs=(1,), body=(
        Load(0, Row(0)),                                   # 0: block 0 of input 0
        Loop(1, 6, inits=(0,), body=(                      # in the body: 1 = the carried tile
            Load(0, Row(0, (("i", 1),))),                  # 2: block i
            Op("add", (1, 2)),                             # 3
        ), yields=(3,)),                                   # 1 after the loop: its result
        Store(1, 0, Row(0)),
    ))

The oracle shares the product's rules only (``pypto.sim.ops.numerics``, through
``pypto.fuzz.data``'s op tables), never its code.
"""

from __future__ import annotations

import contextlib

import attrs
import torch

from pypto.backend import A2A3
from pypto.backend import MemorySpace as M
from pypto.fuzz.data import BINARY, REDUCE, SCALAR, UNARY, Case, sentinel
from pypto.ir import nodes as n
from pypto.ir.builder import FunctionBuilder
from pypto.ir.types import DataType, ForKind, FunctionType, MemRef, ParamDirection, TensorType, TileType
from pypto.sim.ops import numerics as num


@attrs.frozen
class Row:
    """Block ``const + sum(coeff * index)`` of a tensor, the indices named by their loops."""

    const: int = 0
    terms: tuple = ()  # (loop variable, coefficient)

    def at(self, env: dict) -> int:
        return self.const + sum(k * env[v] for v, k in self.terms)


@attrs.frozen
class Load:
    src: int  # which input
    row: Row
    # a declared slot: (region, slots, shift) — the load lands in slot (i + shift) % slots
    # of the region, i the innermost loop's index
    slot: tuple | None = None
    name: str = "x"


@attrs.frozen
class Op:
    """``tile.<op>`` on pool values. ``scalar``: the tile-scalar operand (``adds``, ...);
    ``options``: the op's keywords, as (name, value) pairs."""

    op: str
    args: tuple
    scalar: object = None
    options: tuple = ()
    name: str = "v"


@attrs.frozen
class Store:
    value: int
    out: int  # which output
    row: Row


@attrs.frozen
class Loop:
    start: int
    stop: int
    inits: tuple = ()
    body: tuple = ()
    yields: tuple = ()
    kind: ForKind = ForKind.Sequential
    stage: int | None = None
    var: str = "i"


@attrs.frozen
class If:
    """``if <loop var> == equals``: each branch's steps see the enclosing pool, then their
    own values; ``yields`` (then's value, else's value), when given, is the if's one result."""

    var: str
    equals: int
    then: tuple = ()
    orelse: tuple = ()
    yields: tuple = ()


@attrs.frozen
class Recipe:
    name: str
    dtype: DataType  # of the inputs
    rows: int
    cols: int
    inputs: tuple  # blocks of rows per input
    outputs: tuple  # (blocks of rows, dtype) per output
    body: tuple
    orchestrated: bool = False  # the body is a pl.at scope of an orchestration function
    text: str = ""  # the one-line description a failing case shows
    valid_rows: int | None = None  # every load's valid rows (a tail tile), when fewer than ``rows``


class Body:
    """A block's steps in order, each value's pool position handed back as it is added
    (``size``: the pool's length where the block starts)."""

    def __init__(self, size: int = 0):
        self.steps: list = []
        self.size = size

    def add(self, step) -> int | None:
        """Its value's position (a loop's first result's), or None (a store)."""
        self.steps.append(step)
        if isinstance(step, Store) or isinstance(step, If) and not step.yields:
            return None
        at = self.size
        self.size += len(step.inits) if isinstance(step, Loop) else 1
        return at


def case(recipe: Recipe, inputs, check: str = "exact", bounds: tuple = ()) -> Case:
    """The recipe's program, its inputs, the outputs as they start, and what they hold after."""
    starts = tuple(sentinel((count * recipe.rows, recipe.cols), dtype) for count, dtype in recipe.outputs)
    return Case(build(recipe), "kernel", tuple(inputs), starts, oracle(recipe, inputs), check, bounds,
                recipe=recipe.text)


# ----------------------------------------------------------------------------- the IR


def build(recipe: Recipe) -> n.Program:
    kind = FunctionType.Orchestration if recipe.orchestrated else FunctionType.InCore
    b = FunctionBuilder("kernel", kind, soc=A2A3)
    shape = (recipe.rows, recipe.cols)
    ins = [b.param(f"a{k}" if len(recipe.inputs) > 1 else "a", TensorType((blocks * recipe.rows, recipe.cols),
                                                                          recipe.dtype))
           for k, blocks in enumerate(recipe.inputs)]
    outs = [b.param(_out_name(k), TensorType((blocks * recipe.rows, recipe.cols), dtype), ParamDirection.Out)
            for k, (blocks, dtype) in enumerate(recipe.outputs)]
    with b.scope() if recipe.orchestrated else contextlib.nullcontext():
        _IR(b, recipe, ins, outs, shape).block(recipe.body, [], [])
    b.ret(outs[0])
    return n.Program(recipe.name, (b.build(),))


def _out_name(k: int) -> str:
    return "out" if k == 0 else f"out{k}"


class _IR:
    def __init__(self, b: FunctionBuilder, recipe: Recipe, ins, outs, shape):
        self.b, self.recipe, self.ins, self.outs, self.shape = b, recipe, ins, outs, shape
        self.dtypes: dict = {}  # pool value -> its dtype (a cast changes it)

    def row(self, row: Row, loops: list) -> object:
        """The first row of block ``row``: (its loop indices + const) * rows."""
        var = dict((name, loop.var) for name, loop in loops)
        index = None
        for v, k in row.terms:
            term = var[v] if k == 1 else var[v] * k
            index = term if index is None else index + term
        if index is None:
            return n.Const(row.const * self.recipe.rows)
        return (index + row.const if row.const else index) * self.recipe.rows

    def block(self, body, pool: list, loops: list) -> None:
        b = self.b
        for step in body:
            if isinstance(step, Load):
                t = None
                if step.slot is not None:
                    region, slots, shift = step.slot
                    index = (loops[-1][1].var + shift) % slots
                    t = TileType(shape=self.shape, dtype=self.recipe.dtype, space=M.Vec,
                                 memref=MemRef(name=region, slots=slots, index=index))
                valid = {} if self.recipe.valid_rows is None else {"valid_shape": [self.recipe.valid_rows,
                                                                                     self.shape[1]]}
                pool.append(b.op("tile.load", self.ins[step.src], [self.row(step.row, loops), 0], list(self.shape),
                                 name=step.name, type=t, **valid))
            elif isinstance(step, Op):
                args = [pool[a] for a in step.args] + ([step.scalar] if step.scalar is not None else [])
                pool.append(b.op(f"tile.{step.op}", *args, name=step.name, **dict(step.options)))
            elif isinstance(step, Store):
                b.eval("tile.store", pool[step.value], [self.row(step.row, loops), 0], self.outs[step.out])
            elif isinstance(step, If):
                var = dict(loops)[step.var].var
                with b.if_(n.BinOp("==", var, n.Const(step.equals))) as branch:
                    for k, steps in enumerate((step.then, step.orelse)):
                        if k:
                            branch.else_()
                        inner = list(pool)
                        self.block(steps, inner, loops)
                        if step.yields:
                            branch.yield_(inner[step.yields[k]])
                pool.extend(branch.results)
            else:
                with b.loop(step.start, step.stop, kind=step.kind, stage=step.stage,
                            carried=[pool[k] for k in step.inits], var=step.var) as loop:
                    inner = [*pool, *loop.iter_vars]
                    self.block(step.body, inner, [*loops, (step.var, loop)])
                    if step.yields:
                        loop.yield_(*(inner[k] for k in step.yields))
                pool.extend(loop.results)


# ----------------------------------------------------------------------------- the oracle


def oracle(recipe: Recipe, inputs) -> tuple:
    """What the outputs hold after the program runs on ``inputs`` (sentinels where nothing
    is stored), by plain torch calls."""
    r = recipe.rows
    v = r if recipe.valid_rows is None else recipe.valid_rows  # a tail tile's rows: what is loaded and stored
    blocks = [[x[k * r:k * r + v] for k in range(x.shape[0] // r)] for x in inputs]
    outs = [sentinel((count * r, recipe.cols), dtype) for count, dtype in recipe.outputs]

    def block(body, pool: list, env: dict) -> None:
        for step in body:
            if isinstance(step, Load):
                pool.append(blocks[step.src][step.row.at(env)])
            elif isinstance(step, Op):
                pool.append(_torch_op(step, [pool[a] for a in step.args]))
            elif isinstance(step, Store):
                k = step.row.at(env)
                outs[step.out][k * r:k * r + v] = pool[step.value]
            elif isinstance(step, If):
                taken = 0 if env[step.var] == step.equals else 1
                inner = list(pool)
                block((step.then, step.orelse)[taken], inner, env)
                if step.yields:
                    pool.append(inner[step.yields[taken]])
            else:
                carried = [pool[k] for k in step.inits]
                for i in range(step.start, step.stop):
                    inner = [*pool, *carried]
                    block(step.body, inner, {**env, step.var: i})
                    carried = [inner[k] for k in step.yields]
                pool.extend(carried)

    block(recipe.body, [], {})
    return tuple(outs)


def _torch_op(step: Op, args: list) -> torch.Tensor:
    name, options = step.op, dict(step.options)
    if name in UNARY:
        return UNARY[name][0](*args)
    if name in BINARY:
        return BINARY[name][0](*args)
    if name in SCALAR:
        return BINARY[SCALAR[name]][0](args[0], num.scalar(step.scalar, num.FROM_TORCH[args[0].dtype]))
    if name == "cmp":
        return num.CMP[options["cmp_type"]](*args)
    if name == "sel":  # moves bits: no NaN is made canonical
        return torch.where(*args)
    if name == "cast":
        return num.cast(args[0], options["target_type"], options["mode"])
    axis, what = name.split("_", 1)
    if what in ("max", "min", "sum"):  # a row or column reduction, in the product's order
        return REDUCE[axis](args[0], what)
    if what.startswith("expand_"):  # a row or column broadcast of a reduced vector
        f = what.removeprefix("expand_")
        return BINARY[{"max": "maximum", "min": "minimum"}.get(f, f)][0](*args)
    raise ValueError(f"no oracle for tile.{name}")
