"""Hypothesis strategies for tile programs, each with the result torch computes directly
(the loop families are ``pypto.fuzz.loops``; what they share, ``pypto.fuzz.data``).

Every strategy draws a ``Case``: a Program (built with ``pypto.ir.builder``), its input
tensors, the Out tensors as they start (``sentinel``: a value no op computes, so an
element a kernel fails to store shows), and the expected outputs computed from the same
recipe by plain torch calls. The oracle shares the product's *rules* and nothing else:
the rules that torch leaves open are written once in ``pypto.sim.ops.numerics`` and used from
there — min/max on signed zeros, the pairwise reduction order, the canonical NaN, the
scalar's conversion to the tile's dtype, the cast modes. ``Case.check`` says how to
compare: ``exact`` (bit for bit, NaNs included) or ``bounded`` (per-element error bounds,
for the reductions and matmuls checked against float64 results rather than in the
product's order).

    from hypothesis import given
    from pypto.fuzz import strategies as ps

    @given(ps.tile_programs())
    def test_mine(case): ...
"""

from __future__ import annotations

import torch

from pypto.fuzz.drawing import st
from pypto.ir import nodes as n
from pypto.ir.builder import FunctionBuilder
from pypto.ir.types import DataType as D
from pypto.ir.types import ForKind, FunctionType, ParamDirection, TensorType
from pypto.sim.ops import numerics as num
from pypto.sim.ops.numerics import TORCH
from pypto.backend import A2A3, MemorySpace as M
from pypto.fuzz.data import (BINARY, FLOATS, INTS, REDUCE, SCALAR, SHIFTS, UNARY, Case, bits_equal, random_tensor,  # noqa: F401
                             sentinel, within_bounds)
from pypto.fuzz.recipes import Body, Load, Loop, Op, Recipe, Row, Store, case
from pypto.fuzz.loops import carried_programs, loop_body_programs, nested_loop_programs, shuffled_carry_programs


# Tile-scalar operands: a few exact in every float dtype, more that fp16/bf16 must round
# (the op converts the scalar to the tile's dtype first: fp16 x 0.1 is x * fp16(0.1)).
EXACT_SCALARS = (0.5, 1.5, -2.0, 3.0, 0.25, -0.125, 7.0)
INEXACT_SCALARS = (0.1, -0.3, 1 / 3, 2.718281828459045, -1e-3, 3.14159, 1.0009765625 + 2**-14,
                   1 + 2**-11 + 2**-40)  # the last: torch's float64 -> fp16 would round it twice


def _float_scalar():
    return st.one_of(st.sampled_from(INEXACT_SCALARS), st.sampled_from(EXACT_SCALARS), st.sampled_from(INEXACT_SCALARS),
                     st.floats(-8, 8, allow_nan=False, allow_subnormal=False).filter(bool))


def _same(dtypes: list, dtype: D) -> list[int]:
    return [k for k, d in enumerate(dtypes) if d is dtype]


# Draw weights: tile-scalar steps twice as often as the other kinds, and the arithmetic
# ones (where a scalar kept wider than the tile changes the result) before max/min.
_KINDS = ("unary", "binary", "scalar", "scalar", "select", "broadcast", "cast")
_SCALAR_DRAWS = ("muls", "adds", "divs", "subs", "muls", "adds", "divs", "subs", "maximums", "minimums", "fmods", "ands",
                 "ors", "xors", "shls", "shrs")


@st.composite
def _plan(draw, dtypes: list, max_steps: int):
    """Steps with every choice drawn up front, over values of ``dtypes`` (the inputs'),
    each step's result appended to them."""
    dtypes, steps = list(dtypes), []
    for _ in range(draw(st.integers(1, max_steps))):
        cur = dtypes[-1]
        kind = draw(st.sampled_from(_KINDS))
        if kind == "unary":
            step = (kind, draw(st.sampled_from(sorted(k for k, (_, ds) in UNARY.items() if cur in ds))))
        elif kind == "binary":
            # (a tile of shift amounts would be out of range more often than not: shifts take scalars)
            name = draw(st.sampled_from(sorted(k for k, (_, ds) in BINARY.items() if cur in ds and k not in SHIFTS)))
            step = (kind, name, draw(st.sampled_from(_same(dtypes, cur))), draw(st.booleans()))
        elif kind == "scalar":
            name = draw(st.sampled_from([k for k in _SCALAR_DRAWS if cur in BINARY[SCALAR[k]][1]]))
            if SCALAR[name] in SHIFTS:
                value = draw(st.integers(0, cur.bits - 1))
            else:
                value = draw(_float_scalar()) if cur.is_float else draw(st.integers(-100, 100).filter(bool))
            step = (kind, name, value)
        elif kind == "select":
            step = (kind, draw(st.sampled_from(_same(dtypes, cur))), draw(st.integers(0, 5)))
        elif kind == "broadcast":
            # the oracle reduces in the product's order (num.reduce_*), so sums are bit-exact too
            fs = ["add", "sub", "mul", "max", "min"] + (["div"] if cur.is_float else [])
            step = (kind, draw(st.sampled_from(_same(dtypes, cur))), draw(st.sampled_from(["row", "col"])),
                    draw(st.sampled_from(["max", "min", "sum"])), draw(st.sampled_from(fs)))
        else:
            target = draw(st.sampled_from([d for d in FLOATS + INTS if d is not cur]))
            mode = "rint" if target.is_float else draw(st.sampled_from(["round", "rint", "floor", "ceil", "trunc"]))
            step = (kind, target, mode)
        steps.append(step)
        dtypes.append(step[1] if kind == "cast" else cur)
    return steps


def _result_dtype(dtype, steps):
    """The dtype of a plan's last value: its last cast's target, else the inputs'."""
    return next((step[1] for step in reversed(steps) if step[0] == "cast"), dtype)


def _chain(body: Body, steps, values: list) -> int:
    """The plan's ops added to ``body``; ``values`` starts with the pool positions of the
    loaded inputs and grows with each step's result. The last one's position."""
    for step in steps:
        kind, cur = step[0], values[-1]
        if kind == "unary":
            out = body.add(Op(step[1], (cur,)))
        elif kind == "binary":
            out = body.add(Op(step[1], (cur, values[step[2]]) if step[3] else (values[step[2]], cur)))
        elif kind == "scalar":
            out = body.add(Op(step[1], (cur,), scalar=step[2]))
        elif kind == "select":
            mask = body.add(Op("cmp", (cur, values[step[1]]), options=(("cmp_type", step[2]),)))
            out = body.add(Op("sel", (mask, cur, values[step[1]])))
        elif kind == "broadcast":
            _, other, axis, red, f = step
            vec = body.add(Op(f"{axis}_{red}", (values[other],)))
            out = body.add(Op(f"{axis}_expand_{f}", (cur, vec)))
        else:
            out = body.add(Op("cast", (cur,), options=(("target_type", step[1]), ("mode", step[2]))))
        values.append(out)
    return values[-1]


@st.composite
def elementwise_programs(draw, dtypes=FLOATS + INTS, max_steps: int = 6, trips=None):
    """A loop over row tiles of 1-3 input tensors applying a chain of elementwise ops
    (unary, binary, scalar, compare+select, row/col broadcasts of exact reductions, casts)
    and storing the last value. The loop is a range, a parallel or a pipeline whose trip
    count need not divide by its stage; the function is InCore or a pl.at scope; the tiles
    may be tails (fewer valid rows than the tile has: only those are loaded, computed and
    stored). Inputs may hold special values (signed zeros, infinities, NaNs, integer extremes)."""
    dtype = draw(st.sampled_from(dtypes))
    rows = draw(st.sampled_from([4, 8, 16, 2, 1]))
    cols = draw(st.sampled_from([16, 32, 64, 128, 8]))
    trips = draw(st.integers(1, 5) if trips is None else trips)
    kind = draw(st.sampled_from([ForKind.Sequential, ForKind.Parallel, ForKind.Pipeline]))
    stage = draw(st.integers(2, 4)) if kind is ForKind.Pipeline else None
    orchestrated = draw(st.booleans())
    n_in = draw(st.integers(1, 3))
    seed = draw(st.integers(0, 2**31 - 1))
    specials = draw(st.booleans())
    steps = draw(_plan([dtype] * n_in, max_steps))
    valid_rows = draw(st.integers(1, rows - 1)) if rows > 1 and draw(st.integers(0, 3)) == 0 else None
    out_dtype = _result_dtype(dtype, steps)
    shape = (rows * trips, cols)
    inputs = [random_tensor(shape, dtype, seed + k, specials) for k in range(n_in)]

    body = Body()
    loaded = [body.add(Load(k, Row(0, (("i", 1),)), name=f"x{k}")) for k in range(n_in)]
    body.add(Store(_chain(body, steps, loaded), 0, Row(0, (("i", 1),))))
    text = (f"{dtype.name}[{rows}x{cols}]{f' valid {valid_rows} rows' if valid_rows else ''} x{trips} "
            f"{kind.name}{'/' + str(stage) if stage else ''}{' specials' if specials else ''}: "
            + ", ".join(map(str, steps)))
    recipe = Recipe("elementwise", dtype, rows, cols, (trips,) * n_in, ((trips, out_dtype),),
                    (Loop(0, trips, body=tuple(body.steps), kind=kind, stage=stage),), orchestrated, text,
                    valid_rows)
    return case(recipe, inputs)


# ----------------------------------------------------------------------------- reductions


@st.composite
def reduction_programs(draw):
    """One reduction over a tile whose valid region may be smaller than the tile (a tail).
    Max/min inputs may hold special values (their ties between -0 and +0, NaNs)."""
    dtype = draw(st.sampled_from((D.FP32, D.FP16, D.BF16, D.INT32)))
    rows = draw(st.sampled_from([8, 16, 4, 32, 1]))
    cols = draw(st.sampled_from([64, 128, 16, 8]))
    vr, vc = draw(_extent(rows)), draw(_extent(cols))
    name = draw(st.sampled_from(["row_sum", "row_max", "row_min", "col_sum", "col_max", "col_min"]))
    specials = not name.endswith("sum") and draw(st.booleans())
    seed = draw(st.integers(0, 2**31 - 1))
    x = random_tensor((vr, vc), dtype, seed, specials)
    axis_last = name.startswith("row")
    b = FunctionBuilder("kernel", FunctionType.InCore, soc=A2A3)
    a = b.param("a", TensorType((vr, vc), dtype))
    out = b.param("out", TensorType((vr, 1) if axis_last else (1, vc), dtype), ParamDirection.Out)
    t = b.op("tile.load", a, [0, 0], [rows, cols], valid_shape=[vr, vc], name="x")
    r = b.op(f"tile.{name}", t)
    b.eval("tile.store", r, [0, 0], out)
    b.ret(out)
    dim = 1 if axis_last else 0
    kind = name.split("_")[1]
    x64 = x.to(torch.float64)
    if kind == "sum":
        want = x64.sum(dim=dim, keepdim=True)
        eps = torch.finfo(TORCH[dtype]).eps if dtype.is_float else 0.0
        bound = x64.abs().sum(dim=dim, keepdim=True) * eps * (x.shape[dim]) + (0 if dtype.is_int else 1e-30)
        check = "bounded" if dtype.is_float else "exact"
        want = want.to(TORCH[dtype]) if check == "exact" else want
    else:
        want = (num.reduce_last if axis_last else num.reduce_first)(x, kind)
        bound, check = None, "exact"
    return Case(n.Program("reduction", (b.build(),)), "kernel", (x,),
                (sentinel((vr, 1) if axis_last else (1, vc), dtype),), (want,), check,
                (bound,) if bound is not None else (),
                recipe=f"{name} {dtype.name}[{rows}x{cols}] valid {vr}x{vc}{' specials' if specials else ''}")


def _extent(full: int):
    """A valid extent within ``full``: all of it, or a tail of at least 2 (at least 1 when
    ``full`` is 2 or less) — a one-element reduction reduces nothing."""
    if full <= 2:
        return st.integers(1, full)
    return st.one_of(st.just(full), st.integers(2, full - 1))


# ----------------------------------------------------------------------------- matmul


@st.composite
def matmul_programs(draw, trips=None):
    """Mat -> Left/Right -> Acc, over a K loop that carries the accumulator (matmul, then
    matmul_acc), stored from Acc to GM."""
    dtype = draw(st.sampled_from((D.FP16, D.BF16)))
    m = draw(st.sampled_from([16, 32, 48]))
    k = draw(st.sampled_from([16, 32, 64]))
    nn = draw(st.sampled_from([16, 32, 64]))
    ksteps = draw(st.integers(1, 3) if trips is None else trips)
    seed = draw(st.integers(0, 2**31 - 1))
    a = random_tensor((m, k * ksteps), dtype, seed)
    w = random_tensor((k * ksteps, nn), dtype, seed + 1)
    b = FunctionBuilder("kernel", FunctionType.InCore, soc=A2A3)
    pa = b.param("a", TensorType((m, k * ksteps), dtype))
    pw = b.param("b", TensorType((k * ksteps, nn), dtype))
    out = b.param("out", TensorType((m, nn), D.FP32), ParamDirection.Out)

    def operands(kk):
        am = b.op("tile.load", pa, [0, kk * k], [m, k], target_memory=M.Mat, name="a_mat")
        bm = b.op("tile.load", pw, [kk * k, 0], [k, nn], target_memory=M.Mat, name="b_mat")
        return (b.op("tile.move", am, target_memory=M.Left, name="a_left"),
                b.op("tile.move", bm, target_memory=M.Right, name="b_right"))

    left, right = operands(0)
    acc = b.op("tile.matmul", left, right, name="acc")
    if ksteps > 1:
        with b.loop(1, ksteps, carried=[acc], var="kk") as loop:
            l2, r2 = operands(loop.var)
            loop.yield_(b.op("tile.matmul_acc", loop.iter_vars[0], l2, r2, name="acc"))
        acc = loop.results[0]
    b.eval("tile.store", acc, [0, 0], out)
    b.ret(out)
    a64, w64 = a.to(torch.float64), w.to(torch.float64)
    want = a64 @ w64
    bound = (a64.abs() @ w64.abs()) * torch.finfo(torch.float32).eps * (k * ksteps) + 1e-30
    return Case(n.Program("matmul", (b.build(),)), "kernel", (a, w), (sentinel((m, nn), D.FP32),), (want,),
                "bounded", (bound,), recipe=f"matmul {dtype.name} {m}x{k * ksteps}x{nn} in {ksteps} k-steps")


# ----------------------------------------------------------------------------- explicit slots


@st.composite
def slotted_programs(draw, colive: bool | None = None, trips=None):
    """A loop whose loads rotate through the slots of a declared ``pl.MemRef("ub",
    slots=F)[(i + c) % F]``, then an elementwise chain and a store. With ``colive``, a
    second load takes another slot of the same region in the same iteration (PYPTO only:
    PTOAS rejects it)."""

    dtype = draw(st.sampled_from(FLOATS + INTS))
    rows = draw(st.sampled_from([1, 4, 16]))
    cols = draw(st.sampled_from([16, 64, 128]))
    trips = draw(st.integers(1, 6) if trips is None else trips)
    slots = draw(st.integers(2, 3))
    shift = draw(st.integers(0, slots - 1))
    colive = draw(st.booleans()) if colive is None else colive
    seed = draw(st.integers(0, 2**31 - 1))
    specials = draw(st.booleans())
    n_in = 2 if colive else 1
    steps = draw(_plan([dtype], 3))  # with two inputs, the chain starts from their sum: both slots live at once
    out_dtype = _result_dtype(dtype, steps)
    shape = (rows * trips, cols)
    inputs = [random_tensor(shape, dtype, seed + k, specials) for k in range(n_in)]
    body = Body()
    tiles = [body.add(Load(k, Row(0, (("i", 1),)), slot=("ub", slots, shift + k), name=f"x{k}"))
             for k in range(n_in)]
    first = body.add(Op("add", tuple(tiles))) if colive else tiles[0]
    body.add(Store(_chain(body, steps, [first]), 0, Row(0, (("i", 1),))))
    text = f"slots={slots} shift={shift} colive={colive} {dtype.name}[{rows}x{cols}] x{trips}" \
        f"{' specials' if specials else ''}: " + ", ".join(map(str, steps))
    recipe = Recipe("slotted", dtype, rows, cols, (trips,) * n_in, ((trips, out_dtype),),
                    (Loop(0, trips, body=tuple(body.steps)),), text=text)
    return case(recipe, inputs)


def families() -> dict:
    """name -> strategy for each program family here (``Case.program.name`` is the name),
    explicit slots without co-live ones, so that every program compiles under both planners.
    A test that must see every family within a small budget takes them one by one."""
    return {"elementwise": elementwise_programs(), "reduction": reduction_programs(), "matmul": matmul_programs(),
            "carried": carried_programs(), "shuffled": shuffled_carry_programs(), "loop_body": loop_body_programs(),
            "loop_if": loop_body_programs(branch=True), "nested": nested_loop_programs(),
            "slotted": slotted_programs(colive=False)}


def tile_programs():
    """Any of the program families (``families``)."""
    return st.one_of(*families().values())


def steady_programs(trips=None):
    """The loop families with long loops (``trips``: 16 to 40 by default): what
    fast-forwarding a steady loop (``pypto.sim.fastforward.steady``) must leave exact."""
    trips = st.integers(16, 40) if trips is None else trips
    return st.one_of(elementwise_programs(trips=trips), matmul_programs(trips=trips), carried_programs(trips=trips),
                     shuffled_carry_programs(trips=trips), loop_body_programs(trips=trips),
                     slotted_programs(colive=False, trips=trips))
