"""Hypothesis strategies for tile programs, each with the result torch computes directly.

Every strategy draws a ``Case``: a Program (built with ``pypto.ir.builder``), its input
tensors, the Out tensors as they start (``sentinel``: a value no op computes, so an
element a kernel fails to store shows), and the expected outputs computed from the same
recipe by plain torch calls. The oracle shares the product's *rules* and nothing else:
the rules that torch leaves open are written once in ``pypto.sim.numerics`` and used from
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

import contextlib

import attrs
import torch
from hypothesis import strategies as st

from pypto.ir import nodes as n
from pypto.ir.builder import FunctionBuilder
from pypto.ir.types import DataType as D
from pypto.ir.types import ForKind, FunctionType, ParamDirection, TensorType
from pypto.sim import numerics as num
from pypto.sim.numerics import TORCH
from pypto.backend import A2A3, MemorySpace as M

FLOATS = (D.FP32, D.FP16, D.BF16)
INTS = (D.INT32, D.INT16, D.INT8)


@attrs.frozen
class Case:
    program: n.Program
    entry: str
    inputs: tuple  # tensors for the In parameters, in order
    outputs: tuple  # the Out parameters as they start (``sentinel`` tensors), in order
    expected: tuple  # what the Out tensors must hold afterwards (sentinels where nothing is stored)
    check: str = "exact"  # or "bounded"
    bounds: tuple = ()  # per-output absolute error bounds (tensors) when bounded
    recipe: str = ""  # a one-line description, shown when a case fails

    def args(self) -> tuple:
        """Fresh copies: inputs, then the outputs as they start (runs write into them)."""
        return tuple(t.clone() for t in self.inputs) + tuple(t.clone() for t in self.outputs)


# ----------------------------------------------------------------------------- data

# Bit patterns no op computes: a quiet NaN with a payload (computed NaNs are canonical, see
# pypto.sim.numerics) and, for integers, bytes of 0xA5.
_SENTINEL_BITS = {torch.float32: 0x7FE5A5A5, torch.float16: 0x7EA5, torch.bfloat16: 0x7FE5,
                  torch.float64: 0x7FFCA5A5A5A5A5A5, torch.int64: -0x5A5A5A5A5A5A5A5B,
                  torch.int32: -0x5A5A5A5B, torch.int16: -0x5A5B, torch.int8: -0x5B, torch.uint8: 0xA5}
_BITS_OF = {torch.float32: torch.int32, torch.float16: torch.int16, torch.bfloat16: torch.int16,
            torch.float64: torch.int64}


def sentinel(shape, dtype=torch.float32) -> torch.Tensor:
    """A tensor for an Out parameter to start as (``dtype``: a torch dtype or a DataType):
    an element still holding it after a run was never stored, which zeros cannot show."""
    dtype = TORCH[dtype] if isinstance(dtype, D) else dtype
    if dtype is torch.bool:
        return torch.ones(shape, dtype=torch.bool)
    bits = _SENTINEL_BITS[dtype]
    if dtype.is_floating_point:
        return torch.full(shape, bits, dtype=_BITS_OF[dtype]).view(dtype)
    return torch.full(shape, bits, dtype=dtype)


def _raw_nan(dtype) -> torch.Tensor:
    """A NaN that is not the canonical one (sign set, payload 1): loads and stores must keep
    its bits, every op that computes must turn it canonical."""
    bits = {torch.float32: -0x3FFFFF, torch.float16: -0x1FF, torch.bfloat16: -0x3F}[dtype]
    return torch.tensor([bits], dtype=_BITS_OF[dtype]).view(dtype)[0]


def random_tensor(shape, dtype: D, seed: int, specials: bool = False) -> torch.Tensor:
    """Values that exercise the dtype: mostly moderate, some exact small integers, a few zeros.
    With ``specials``, about one element in eight is a special value instead: +0, -0, +-inf,
    the canonical NaN or another NaN for floats; 0, -1 and the extremes for integers."""
    g = torch.Generator().manual_seed(seed)
    if dtype.is_float:
        base = torch.randn(shape, generator=g, dtype=torch.float64) * 4
        small = torch.randint(-4, 5, shape, generator=g).to(torch.float64)
        pick = torch.rand(shape, generator=g)
        values = torch.where(pick < 0.25, small, base).to(TORCH[dtype])
        if specials:
            dt = TORCH[dtype]
            table = torch.stack([torch.tensor(v, dtype=dt) for v in (0.0, -0.0, float("inf"), float("-inf"))]
                                + [num.canonical_nan(torch.tensor(float("nan"), dtype=dt)), _raw_nan(dt)])
            which = torch.randint(0, len(table), shape, generator=g)
            values = torch.where(torch.rand(shape, generator=g) < 0.125, table[which], values)
        return values
    info = torch.iinfo(TORCH[dtype])
    lo, hi = max(info.min, -1000), min(info.max, 1000)
    values = torch.randint(lo, hi + 1, shape, generator=g).to(TORCH[dtype])
    if specials:
        table = torch.tensor([0, -1, info.min, info.max], dtype=TORCH[dtype])
        which = torch.randint(0, len(table), shape, generator=g)
        values = torch.where(torch.rand(shape, generator=g) < 0.125, table[which], values)
    return values


def bits_equal(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Bit-for-bit equality (NaNs included, +0 and -0 told apart)."""
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.dtype.is_floating_point:
        view = {2: torch.int16, 4: torch.int32, 8: torch.int64}[a.element_size()]
        return torch.equal(a.contiguous().view(view), b.contiguous().view(view))
    return torch.equal(a, b)


def within_bounds(got: torch.Tensor, want: torch.Tensor, bound: torch.Tensor) -> bool:
    err = (got.to(torch.float64) - want.to(torch.float64)).abs()
    both_nan = torch.isnan(got.to(torch.float64)) & torch.isnan(want.to(torch.float64))
    same_inf = torch.isinf(want.to(torch.float64)) & (got.to(torch.float64) == want.to(torch.float64))
    return bool(((err <= bound) | both_nan | same_inf).all())


# ----------------------------------------------------------------------------- elementwise

def _rsqrt(x: torch.Tensor) -> torch.Tensor:
    """The rule: in fp16/bf16, 1 / sqrt computed in fp32 and rounded once."""
    if x.dtype == torch.float32:
        return torch.rsqrt(x)
    return (1.0 / torch.sqrt(x.to(torch.float32))).to(x.dtype)


# name -> (torch oracle, dtypes it takes). Each computes, so its NaNs are made canonical
# (num.arith); min/max take the product's signed-zero rule (num.minimum / num.maximum).
UNARY = {name: (num.arith(fn), dtypes) for name, (fn, dtypes) in {
    "neg": (torch.neg, FLOATS + INTS), "abs": (torch.abs, FLOATS + INTS),
    "relu": (lambda x: torch.clamp_min(x, 0), FLOATS + INTS), "exp": (torch.exp, FLOATS),
    "log": (torch.log, FLOATS), "sqrt": (torch.sqrt, FLOATS), "rsqrt": (_rsqrt, FLOATS),
    "recip": (torch.reciprocal, FLOATS),
}.items()}
BINARY = {
    "add": (num.arith(torch.add), FLOATS + INTS), "sub": (num.arith(torch.sub), FLOATS + INTS),
    "mul": (num.arith(torch.mul), FLOATS + INTS), "div": (num.arith(torch.div), FLOATS),
    "maximum": (num.maximum, FLOATS + INTS), "minimum": (num.minimum, FLOATS + INTS),
}
SCALAR = {"adds": "add", "subs": "sub", "muls": "mul", "divs": "div", "maximums": "maximum", "minimums": "minimum"}
REDUCE = {"row": num.reduce_last, "col": num.reduce_first}

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
_SCALAR_DRAWS = ("muls", "adds", "divs", "subs", "muls", "adds", "divs", "subs", "maximums", "minimums")


@st.composite
def _plan(draw, dtypes: list, max_steps: int):
    """Steps with every choice drawn up front; ``dtypes`` grows with each step's result."""
    steps = []
    for _ in range(draw(st.integers(1, max_steps))):
        cur = dtypes[-1]
        kind = draw(st.sampled_from(_KINDS))
        if kind == "unary":
            step = (kind, draw(st.sampled_from(sorted(k for k, (_, ds) in UNARY.items() if cur in ds))))
        elif kind == "binary":
            name = draw(st.sampled_from(sorted(k for k, (_, ds) in BINARY.items() if cur in ds)))
            step = (kind, name, draw(st.sampled_from(_same(dtypes, cur))), draw(st.booleans()))
        elif kind == "scalar":
            name = draw(st.sampled_from([k for k in _SCALAR_DRAWS if cur in BINARY[SCALAR[k]][1]]))
            value = draw(_float_scalar()) if cur.is_float else draw(st.integers(-100, 100).filter(bool))
            step = (kind, name, value)
        elif kind == "select":
            step = (kind, draw(st.sampled_from(_same(dtypes, cur))), draw(st.integers(0, 5)))
        elif kind == "broadcast":
            # the oracle reduces in the product's order (num.reduce_*), so sums are bit-exact too
            fs = ["add", "sub", "mul"] + (["div"] if cur.is_float else [])
            step = (kind, draw(st.sampled_from(_same(dtypes, cur))), draw(st.sampled_from(["row", "col"])),
                    draw(st.sampled_from(["max", "min", "sum"])), draw(st.sampled_from(fs)))
        else:
            target = draw(st.sampled_from([d for d in FLOATS + INTS if d is not cur]))
            mode = "rint" if target.is_float else draw(st.sampled_from(["round", "rint", "floor", "ceil", "trunc"]))
            step = (kind, target, mode)
        steps.append(step)
        dtypes.append(step[1] if kind == "cast" else cur)
    return steps


def _run_ir(b: FunctionBuilder, steps, values: list) -> n.Var:
    """The plan as IR ops on Vars; ``values`` starts with the loaded inputs."""
    for step in steps:
        kind, cur = step[0], values[-1]
        if kind == "unary":
            out = b.op(f"tile.{step[1]}", cur)
        elif kind == "binary":
            lhs, rhs = (cur, values[step[2]]) if step[3] else (values[step[2]], cur)
            out = b.op(f"tile.{step[1]}", lhs, rhs)
        elif kind == "scalar":
            out = b.op(f"tile.{step[1]}", cur, step[2])
        elif kind == "select":
            mask = b.op("tile.cmp", cur, values[step[1]], cmp_type=step[2])
            out = b.op("tile.sel", mask, cur, values[step[1]])
        elif kind == "broadcast":
            _, other, axis, red, f = step
            vec = b.op(f"tile.{axis}_{red}", values[other])
            out = b.op(f"tile.{axis}_expand_{f}", cur, vec)
        else:
            out = b.op("tile.cast", cur, target_type=step[1], mode=step[2])
        values.append(out)
    return values[-1]


def _run_torch(steps, values: list) -> torch.Tensor:
    """The same plan with plain torch calls on one loop tile's tensors."""
    for step in steps:
        kind, cur = step[0], values[-1]
        if kind == "unary":
            out = UNARY[step[1]][0](cur)
        elif kind == "binary":
            lhs, rhs = (cur, values[step[2]]) if step[3] else (values[step[2]], cur)
            out = BINARY[step[1]][0](lhs, rhs)
        elif kind == "scalar":
            out = BINARY[SCALAR[step[1]]][0](cur, num.scalar(step[2], num.FROM_TORCH[cur.dtype]))
        elif kind == "select":  # moves bits: no NaN is made canonical
            out = torch.where(num.CMP[step[2]](cur, values[step[1]]), cur, values[step[1]])
        elif kind == "broadcast":
            _, other, axis, red, f = step
            out = BINARY[f][0](cur, REDUCE[axis](values[other], red))
        else:
            out = num.cast(cur, step[1], step[2])
        values.append(out)
    return values[-1]


@st.composite
def elementwise_programs(draw, dtypes=FLOATS + INTS, max_steps: int = 6):
    """A loop over row tiles of 1-3 input tensors applying a chain of elementwise ops
    (unary, binary, scalar, compare+select, row/col broadcasts of exact reductions, casts)
    and storing the last value. The loop is a range, a parallel or a pipeline whose trip
    count need not divide by its stage; the function is InCore or a pl.at scope. Inputs may
    hold special values (signed zeros, infinities, NaNs, integer extremes)."""
    dtype = draw(st.sampled_from(dtypes))
    rows = draw(st.sampled_from([4, 8, 16, 2, 1]))
    cols = draw(st.sampled_from([16, 32, 64, 128, 8]))
    trips = draw(st.integers(1, 5))
    kind = draw(st.sampled_from([ForKind.Sequential, ForKind.Parallel, ForKind.Pipeline]))
    stage = draw(st.integers(2, 4)) if kind is ForKind.Pipeline else None
    orchestrated = draw(st.booleans())
    n_in = draw(st.integers(1, 3))
    seed = draw(st.integers(0, 2**31 - 1))
    specials = draw(st.booleans())
    value_dtypes = [dtype] * n_in
    steps = draw(_plan(value_dtypes, max_steps))
    out_dtype = value_dtypes[-1]
    shape = (rows * trips, cols)
    inputs = [random_tensor(shape, dtype, seed + k, specials) for k in range(n_in)]

    b = FunctionBuilder("kernel", FunctionType.Orchestration if orchestrated else FunctionType.InCore, soc=A2A3)
    params = [b.param(f"a{k}", TensorType(shape, dtype)) for k in range(n_in)]
    out = b.param("out", TensorType(shape, out_dtype), ParamDirection.Out)
    with b.scope() if orchestrated else contextlib.nullcontext():
        with b.loop(0, trips, kind=kind, stage=stage) as loop:
            loaded = [b.op("tile.load", p, [loop.var * rows, 0], [rows, cols], name=f"x{k}")
                      for k, p in enumerate(params)]
            b.eval("tile.store", _run_ir(b, steps, loaded), [loop.var * rows, 0], out)
    b.ret(out)
    tiles = [_run_torch(steps, [x[i * rows:(i + 1) * rows] for x in inputs]) for i in range(trips)]
    recipe = (f"{dtype.name}[{rows}x{cols}] x{trips} {kind.name}{'/' + str(stage) if stage else ''}"
              f"{' specials' if specials else ''}: " + ", ".join(map(str, steps)))
    return Case(n.Program("elementwise", (b.build(),)), "kernel", tuple(inputs),
                (sentinel(shape, out_dtype),), (torch.cat(tiles),), recipe=recipe)


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
def matmul_programs(draw):
    """Mat -> Left/Right -> Acc, over a K loop that carries the accumulator (matmul, then
    matmul_acc), stored from Acc to GM."""
    dtype = draw(st.sampled_from((D.FP16, D.BF16)))
    m = draw(st.sampled_from([16, 32, 48]))
    k = draw(st.sampled_from([16, 32, 64]))
    nn = draw(st.sampled_from([16, 32, 64]))
    ksteps = draw(st.integers(1, 3))
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


# ----------------------------------------------------------------------------- carried values


@st.composite
def carried_programs(draw):
    """acc = f(acc, tile_i) over a loop: the loop-carried value and its order are exact."""
    dtype = draw(st.sampled_from(FLOATS + INTS))
    rows = draw(st.sampled_from([1, 4, 8]))
    cols = draw(st.sampled_from([16, 64, 128]))
    trips = draw(st.integers(2, 6))
    f = draw(st.sampled_from(["add", "maximum", "minimum", "mul"]))
    seed = draw(st.integers(0, 2**31 - 1))
    specials = draw(st.booleans())
    x = random_tensor((rows * trips, cols), dtype, seed, specials)
    b = FunctionBuilder("kernel", FunctionType.InCore, soc=A2A3)
    a = b.param("a", TensorType(x.shape, dtype))
    out = b.param("out", TensorType((rows, cols), dtype), ParamDirection.Out)
    acc = b.op("tile.load", a, [0, 0], [rows, cols], name="acc")
    with b.loop(1, trips, carried=[acc]) as loop:
        t = b.op("tile.load", a, [loop.var * rows, 0], [rows, cols], name="t")
        loop.yield_(b.op(f"tile.{f}", loop.iter_vars[0], t, name="acc"))
    b.eval("tile.store", loop.results[0], [0, 0], out)
    b.ret(out)
    want = x[:rows]
    for i in range(1, trips):
        want = BINARY[f][0](want, x[i * rows:(i + 1) * rows])
    return Case(n.Program("carried", (b.build(),)), "kernel", (x,), (sentinel((rows, cols), dtype),),
                (want,), recipe=f"carried {f} {dtype.name}[{rows}x{cols}] x{trips}{' specials' if specials else ''}")


@st.composite
def shuffled_carry_programs(draw):
    """A loop carrying several tiles that trade places, start from one shared tile, or
    whose initial tiles are read again after the loop: one buffer per carried value is
    InitMemRef's plan, and each live value must still keep bytes of its own."""
    dtype = draw(st.sampled_from([D.FP32, D.INT32, D.FP16]))
    rows, cols = draw(st.sampled_from([(1, 64), (4, 64), (8, 128)]))
    k = draw(st.integers(2, 3))
    trips = draw(st.integers(0, 4))
    n_init = draw(st.integers(1, k))
    init_of = [draw(st.integers(0, n_init - 1)) for _ in range(k)]
    ops = st.sampled_from(["add", "sub", "maximum", "minimum"])
    slot = st.integers(0, k - 1)
    recipe = [draw(st.one_of(st.tuples(st.just("keep"), slot), st.tuples(st.just("op"), ops, slot, slot),
                             st.tuples(st.just("load"), ops, slot))) for _ in range(k)]
    reread = draw(st.booleans())  # the first initial tile is read again after the loop
    stage = draw(st.sampled_from([None, 2, 3]))  # a pl.pipeline: its stages thread the carried tiles
    seed = draw(st.integers(0, 2**31 - 1))
    x = random_tensor((rows * (n_init + max(trips, 1)), cols), dtype, seed)
    if dtype is D.FP16:  # keep sums of a few steps finite and exact-comparable
        x = (x * 4).round() / 4

    b = FunctionBuilder("kernel", FunctionType.InCore, soc=A2A3)
    a = b.param("a", TensorType(x.shape, dtype))
    out = b.param("out", TensorType((rows * k, cols), dtype), ParamDirection.Out)
    inits = [b.op("tile.load", a, [j * rows, 0], [rows, cols], name=f"i{j}") for j in range(n_init)]
    kind = ForKind.Pipeline if stage else ForKind.Sequential
    with b.loop(0, trips, kind=kind, stage=stage, carried=[inits[init_of[j]] for j in range(k)]) as loop:
        cur = loop.iter_vars
        new = []
        for j, step in enumerate(recipe):
            if step[0] == "keep":
                new.append(cur[step[1]])
            elif step[0] == "op":
                new.append(b.op(f"tile.{step[1]}", cur[step[2]], cur[step[3]], name=f"v{j}"))
            else:
                t = b.op("tile.load", a, [(loop.var + n_init) * rows, 0], [rows, cols], name=f"t{j}")
                new.append(b.op(f"tile.{step[1]}", cur[step[2]], t, name=f"v{j}"))
        loop.yield_(*new)
    for j, r in enumerate(loop.results):
        value = b.op("tile.add", r, inits[0], name=f"o{j}") if reread else r
        b.eval("tile.store", value, [j * rows, 0], out)
    b.ret(out)

    blocks = [x[j * rows:(j + 1) * rows] for j in range(x.shape[0] // rows)]
    vals = [blocks[init_of[j]] for j in range(k)]
    for i in range(trips):
        nxt = []
        for step in recipe:
            if step[0] == "keep":
                nxt.append(vals[step[1]])
            elif step[0] == "op":
                nxt.append(BINARY[step[1]][0](vals[step[2]], vals[step[3]]))
            else:
                nxt.append(BINARY[step[1]][0](vals[step[2]], blocks[n_init + i]))
        vals = nxt
    want = torch.cat([v + blocks[0] if reread else v for v in vals])
    text = " ".join(":".join(map(str, s)) for s in recipe)
    return Case(n.Program("shuffled", (b.build(),)), "kernel", (x,), (sentinel((rows * k, cols), dtype),),
                (want,), recipe=f"shuffled carry {dtype.name}[{rows}x{cols}] x{trips}{f' stage {stage}' if stage else ''} "
                f"inits {init_of} [{text}]"
                + (" reread" if reread else ""))


@st.composite
def loop_body_programs(draw):
    """A loop whose body mixes tiles loaded before it (read by every iteration), tiles it
    loads, and values it computes — some stored mid-body, some never read again, one
    carried out and used after the loop: the lifetimes MemoryReuse packs, with a back edge
    through them, and the syncs at the loop's ends."""
    dtype = draw(st.sampled_from([D.FP32, D.INT32, D.FP16]))
    rows, cols = draw(st.sampled_from([(1, 64), (4, 64), (8, 128)]))
    n_inv = draw(st.integers(1, 3))
    trips = draw(st.integers(0, 4))
    stage = draw(st.sampled_from([None, 2, 3]))
    ops = st.sampled_from(["add", "sub", "maximum", "minimum"])
    steps = []  # ("load",) or (op, a, b) over the pool: invariants, then this body's values
    for k in range(draw(st.integers(1, 5))):
        pool = n_inv + k
        steps.append(draw(st.one_of(st.just(("load",)),
                                    st.tuples(ops, st.integers(0, pool - 1), st.integers(0, pool - 1)))))
    stored = draw(st.integers(0, n_inv + len(steps) - 1))
    at = draw(st.integers(max(stored - n_inv, -1) + 1, len(steps)))  # store after that many steps
    carried = draw(st.integers(n_inv, n_inv + len(steps) - 1))  # a body value the loop passes out
    init = draw(st.integers(0, n_inv - 1))  # ... starting from an invariant
    post = draw(st.tuples(ops, st.integers(0, n_inv)))  # then op(result, invariant or result) after the loop
    seed = draw(st.integers(0, 2**31 - 1))
    x = random_tensor((rows * (n_inv + max(trips, 1)), cols), dtype, seed)
    if dtype is D.FP16:  # keep a few sums finite and exact-comparable
        x = (x * 4).round() / 4

    b = FunctionBuilder("kernel", FunctionType.InCore, soc=A2A3)
    a = b.param("a", TensorType(x.shape, dtype))
    out = b.param("out", TensorType((rows * max(trips, 1), cols), dtype), ParamDirection.Out)
    keep = b.param("keep", TensorType((rows * n_inv, cols), dtype), ParamDirection.Out)
    after = b.param("after", TensorType((rows * 2, cols), dtype), ParamDirection.Out)
    pool = [b.op("tile.load", a, [j * rows, 0], [rows, cols], name=f"c{j}") for j in range(n_inv)]
    kind = ForKind.Pipeline if stage else ForKind.Sequential
    with b.loop(0, trips, kind=kind, stage=stage, carried=[pool[init]]) as loop:
        body = list(pool)
        for k, step in enumerate([*steps, None]):
            if k == at:
                b.eval("tile.store", body[stored], [loop.var * rows, 0], out)
            if step is None:
                break
            if step[0] == "load":
                body.append(b.op("tile.load", a, [(loop.var + n_inv) * rows, 0], [rows, cols], name=f"t{k}"))
            else:
                body.append(b.op(f"tile.{step[0]}", body[step[1]], body[step[2]], name=f"v{k}"))
        loop.yield_(body[carried])
    result = loop.results[0]
    b.eval("tile.store", result, [0, 0], after)
    other = pool[post[1]] if post[1] < n_inv else result
    b.eval("tile.store", b.op(f"tile.{post[0]}", result, other, name="p"), [rows, 0], after)
    for j, c in enumerate(pool):
        b.eval("tile.store", c, [j * rows, 0], keep)
    b.ret(out)

    blocks = [x[j * rows:(j + 1) * rows] for j in range(x.shape[0] // rows)]
    want = sentinel((rows * max(trips, 1), cols), dtype)  # stays so when the loop never runs
    last = blocks[init]
    for i in range(trips):
        vals = blocks[:n_inv]
        for step in steps:
            vals = vals + [blocks[n_inv + i] if step[0] == "load" else BINARY[step[0]][0](vals[step[1]], vals[step[2]])]
        want[i * rows:(i + 1) * rows] = vals[stored]
        last = vals[carried]
    then = BINARY[post[0]][0](last, blocks[post[1]] if post[1] < n_inv else last)
    text = " ".join(":".join(map(str, s)) for s in steps)
    starts = [sentinel((rows * k, cols), dtype) for k in (max(trips, 1), n_inv, 2)]
    return Case(n.Program("loop_body", (b.build(),)), "kernel", (x,), tuple(starts),
                (want, torch.cat(blocks[:n_inv]), torch.cat([last, then])),
                recipe=f"loop body {dtype.name}[{rows}x{cols}] x{trips}{f' stage {stage}' if stage else ''} "
                f"{n_inv} invariant [{text}] store {stored} after {at}; carry {carried} from {init}, then "
                f"{post[0]}:{post[1]}")


@st.composite
def nested_loop_programs(draw):
    """A loop nest: tiles loaded before the outer loop read deep inside it, an inner loop
    (range or pipeline, possibly empty) storing per iteration and passing a value out, and
    the outer loop carrying a tile through each of its iterations and out — the syncs that
    enter and leave loops through the loops' own syncs."""
    dtype = draw(st.sampled_from([D.FP32, D.INT32, D.FP16]))
    rows, cols = draw(st.sampled_from([(1, 64), (4, 64), (8, 128)]))
    n_inv = draw(st.integers(1, 2))
    outer, inner = draw(st.integers(0, 3)), draw(st.integers(0, 3))
    kinds = st.sampled_from([None, 2, 3])  # None: pl.range, else pl.pipeline(stage=...)
    outer_stage, inner_stage = draw(kinds), draw(kinds)
    ops = st.sampled_from(["add", "sub", "maximum", "minimum"])
    # Values: 0..n_inv-1 invariants, n_inv the outer carried tile, then the outer body's own.
    pre = [draw(st.one_of(st.just(("load",)), st.tuples(ops, st.integers(0, n_inv + k), st.integers(0, n_inv + k))))
           for k in range(draw(st.integers(0, 2)))]
    outer_pool = n_inv + 1 + len(pre)
    # The inner body sees the outer pool, then its carried tile, then its own values.
    body = [draw(st.one_of(st.just(("load",)), st.tuples(ops, st.integers(0, outer_pool + k),
                                                          st.integers(0, outer_pool + k))))
            for k in range(draw(st.integers(1, 3)))]
    inner_pool = outer_pool + 1 + len(body)
    stored = draw(st.integers(0, inner_pool - 1))  # stored every inner iteration
    carried_in = draw(st.integers(outer_pool + 1, inner_pool - 1))  # the inner loop passes this on
    inner_init = draw(st.integers(0, outer_pool - 1))
    post = draw(st.tuples(ops, st.integers(0, outer_pool)))  # op(inner result, outer value or itself)
    seed = draw(st.integers(0, 2**31 - 1))
    width = max(outer, 1) * max(inner, 1)
    x = random_tensor((rows * (n_inv + 2 * width), cols), dtype, seed)
    if dtype is D.FP16:  # keep a few sums finite and exact-comparable
        x = (x * 4).round() / 4

    b = FunctionBuilder("kernel", FunctionType.InCore, soc=A2A3)
    a = b.param("a", TensorType(x.shape, dtype))
    out = b.param("out", TensorType((rows * width, cols), dtype), ParamDirection.Out)
    last = b.param("last", TensorType((rows * 2, cols), dtype), ParamDirection.Out)
    invariants = [b.op("tile.load", a, [j * rows, 0], [rows, cols], name=f"c{j}") for j in range(n_inv)]

    def loop(trips, stage, carried, var):
        kind = ForKind.Pipeline if stage else ForKind.Sequential
        return b.loop(0, trips, kind=kind, stage=stage, carried=carried, var=var)

    def step(pool, s, k, row):
        if s[0] == "load":
            return b.op("tile.load", a, [row, 0], [rows, cols], name=f"t{k}")
        return b.op(f"tile.{s[0]}", pool[s[1]], pool[s[2]], name=f"v{k}")

    with loop(outer, outer_stage, [invariants[0]], "i") as lo:
        pool = [*invariants, lo.iter_vars[0]]
        for k, s in enumerate(pre):
            pool.append(step(pool, s, k, (lo.var + n_inv) * rows))
        with loop(inner, inner_stage, [pool[inner_init]], "j") as li:
            ipool = [*pool, li.iter_vars[0]]
            for k, s in enumerate(body):
                ipool.append(step(ipool, s, 10 + k, (lo.var * max(inner, 1) + li.var + n_inv + width) * rows))
            b.eval("tile.store", ipool[stored], [(lo.var * max(inner, 1) + li.var) * rows, 0], out)
            li.yield_(ipool[carried_in])
        got = li.results[0]
        other = pool[post[1]] if post[1] < outer_pool else got
        lo.yield_(b.op(f"tile.{post[0]}", got, other, name="p"))
    b.eval("tile.store", lo.results[0], [0, 0], last)
    b.eval("tile.store", invariants[-1], [rows, 0], last)
    b.ret(out)

    blocks = [x[j * rows:(j + 1) * rows] for j in range(x.shape[0] // rows)]
    f = {name: BINARY[name][0] for name in ("add", "sub", "maximum", "minimum")}
    want = sentinel((rows * width, cols), dtype)  # rows of iterations that never run stay so
    acc = blocks[0]
    for i in range(outer):
        vals = [*blocks[:n_inv], acc]
        for s in pre:
            vals.append(blocks[n_inv + i] if s[0] == "load" else f[s[0]](vals[s[1]], vals[s[2]]))
        carry = vals[inner_init]
        for j in range(inner):
            ivals = [*vals, carry]
            for s in body:
                ivals.append(blocks[n_inv + width + i * max(inner, 1) + j] if s[0] == "load"
                             else f[s[0]](ivals[s[1]], ivals[s[2]]))
            want[(i * max(inner, 1) + j) * rows:(i * max(inner, 1) + j + 1) * rows] = ivals[stored]
            carry = ivals[carried_in]
        acc = f[post[0]](carry, vals[post[1]] if post[1] < outer_pool else carry)
    text = lambda steps: " ".join(":".join(map(str, s)) for s in steps)  # noqa: E731
    loops = [f"{'pipeline' if k else 'range'}({t}{f', stage={k}' if k else ''})"
             for t, k in ((outer, outer_stage), (inner, inner_stage))]
    return Case(n.Program("nested", (b.build(),)), "kernel", (x,),
                (sentinel(want.shape, dtype), sentinel((rows * 2, cols), dtype)),
                (want, torch.cat([acc, blocks[n_inv - 1]])),
                recipe=f"nested {dtype.name}[{rows}x{cols}] {n_inv} invariant; {loops[0]} [{text(pre)}] "
                f"{loops[1]} [{text(body)}] store {stored}, carry {carried_in} from {inner_init}; "
                f"then {post[0]}:{post[1]}")


# ----------------------------------------------------------------------------- explicit slots


@st.composite
def slotted_programs(draw, colive: bool | None = None):
    """A loop whose loads rotate through the slots of a declared ``pl.MemRef("ub",
    slots=F)[(i + c) % F]``, then an elementwise chain and a store. With ``colive``, a
    second load takes another slot of the same region in the same iteration (PYPTO only:
    PTOAS rejects it)."""
    from pypto.ir.types import MemRef, TileType

    dtype = draw(st.sampled_from(FLOATS + INTS))
    rows = draw(st.sampled_from([1, 4, 16]))
    cols = draw(st.sampled_from([16, 64, 128]))
    trips = draw(st.integers(1, 6))
    slots = draw(st.integers(2, 3))
    shift = draw(st.integers(0, slots - 1))
    colive = draw(st.booleans()) if colive is None else colive
    seed = draw(st.integers(0, 2**31 - 1))
    specials = draw(st.booleans())
    n_in = 2 if colive else 1
    value_dtypes = [dtype]  # with two inputs, the chain starts from their sum: both slots live at once
    steps = draw(_plan(value_dtypes, 3))
    out_dtype = value_dtypes[-1]
    shape = (rows * trips, cols)
    inputs = [random_tensor(shape, dtype, seed + k, specials) for k in range(n_in)]
    b = FunctionBuilder("kernel", FunctionType.InCore, soc=A2A3)
    params = [b.param(f"a{k}", TensorType(shape, dtype)) for k in range(n_in)]
    out = b.param("out", TensorType(shape, out_dtype), ParamDirection.Out)
    with b.loop(0, trips) as loop:
        tiles = []
        for k, p in enumerate(params):
            index = (loop.var + (shift + k)) % slots
            t = TileType(shape=(rows, cols), dtype=dtype, space=M.Vec, memref=MemRef(name="ub", slots=slots, index=index))
            tiles.append(b.op("tile.load", p, [loop.var * rows, 0], [rows, cols], name=f"x{k}", type=t))
        first = b.op("tile.add", *tiles) if colive else tiles[0]
        b.eval("tile.store", _run_ir(b, steps, [first]), [loop.var * rows, 0], out)
    b.ret(out)

    def per_tile(i):
        xs = [x[i * rows:(i + 1) * rows] for x in inputs]
        return _run_torch(steps, [BINARY["add"][0](*xs) if colive else xs[0]])

    tiles = [per_tile(i) for i in range(trips)]
    recipe = f"slots={slots} shift={shift} colive={colive} {dtype.name}[{rows}x{cols}] x{trips}" \
        f"{' specials' if specials else ''}: " + ", ".join(map(str, steps))
    return Case(n.Program("slotted", (b.build(),)), "kernel", tuple(inputs),
                (sentinel(shape, out_dtype),), (torch.cat(tiles),), recipe=recipe)


def families() -> dict:
    """name -> strategy for each program family here (``Case.program.name`` is the name),
    explicit slots without co-live ones, so that every program compiles under both planners.
    A test that must see every family within a small budget takes them one by one."""
    return {"elementwise": elementwise_programs(), "reduction": reduction_programs(), "matmul": matmul_programs(),
            "carried": carried_programs(), "shuffled": shuffled_carry_programs(), "loop_body": loop_body_programs(),
            "nested": nested_loop_programs(), "slotted": slotted_programs(colive=False)}


def tile_programs():
    """Any of the program families (``families``)."""
    return st.one_of(*families().values())
