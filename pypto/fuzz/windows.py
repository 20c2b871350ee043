"""Hypothesis strategies for tensor-level kernels over windows: ``out[...] = expr`` inside
an InCore function, where ``expr`` slices tensors it computed, broadcasts reductions,
carries tensors through loops, and may be far larger than Vec — each with the result
torch computes on whole tensors.

    @given(windows.window_programs())
    def test_mine(case): ...        # a pypto.fuzz.strategies.Case, checked bit for bit

Only ops whose blocked forms compute the same bits as the whole are drawn (max and min
fold exactly; sums do not), so every case is ``exact``.
"""

from __future__ import annotations

import math

import torch

from pypto.backend import A2A3
from pypto.fuzz.drawing import st
from pypto.fuzz.strategies import BINARY, REDUCE, UNARY, Case, random_tensor, sentinel
from pypto.ir import nodes as n
from pypto.ir.builder import FunctionBuilder
from pypto.ir.types import DataType as D
from pypto.ir.types import FunctionType, ParamDirection, TensorType
from pypto.sim.ops import numerics as num

DTYPES = (D.FP32, D.FP16, D.BF16)
SMALL = ((4, 16), (8, 32), (16, 64), (24, 128), (64, 32), (6, 48))
# More than Vec holds at once: blocked by rows, by columns, and folded reductions.
LARGE = ((1024, 128), (512, 256), (4, 32768), (2048, 64))
_UNARY = ("exp", "neg", "abs")
_BINARY = ("add", "sub", "mul", "maximum", "minimum")
_KINDS = ("unary", "binary", "binary", "scalar", "slice", "slice", "row_bcast", "col_bcast", "row_red", "col_red",
          "loop")


class _Values:
    """The values a kernel computes: IR names beside the tensors torch computes for them."""

    def __init__(self, b: FunctionBuilder):
        self.b = b
        self.pool: list[tuple[n.Var, torch.Tensor]] = []
        self.steps: list[str] = []

    def add(self, var, value, step: str):
        self.pool.append((var, value))
        self.steps.append(step)
        return var, value


def _window(draw, shape):
    """(offsets, extents) of a window inside ``shape``."""
    ext = [draw(st.integers(1, s)) for s in shape]
    off = [draw(st.integers(0, s - e)) for s, e in zip(shape, ext)]
    return off, ext


def _step(draw, v: _Values, params, inputs, dtype):
    b = v.b
    kind = draw(st.sampled_from(_KINDS))
    x, xt = draw(st.sampled_from(v.pool))
    shape = tuple(xt.shape)
    if kind == "unary":
        name = draw(st.sampled_from(_UNARY))
        return v.add(b.op(f"tensor.{name}", x), UNARY[name][0](xt), name)
    if kind == "binary":
        name = draw(st.sampled_from(_BINARY))
        partners = [(y, yt) for y, yt in v.pool if tuple(yt.shape) == shape]
        if draw(st.booleans()) or len(partners) < 2:  # a window of an input of the same shape
            k = draw(st.integers(0, len(params) - 1))
            full = tuple(inputs[k].shape)
            if all(s <= f for s, f in zip(shape, full)):
                off = [draw(st.integers(0, f - s)) for s, f in zip(shape, full)]
                y = b.op("tensor.slice", params[k], list(shape), off)
                yt = inputs[k][tuple(slice(o, o + s) for o, s in zip(off, shape))]
                partners.append((y, yt))
        y, yt = draw(st.sampled_from(partners))
        return v.add(b.op(f"tensor.{name}", x, y), BINARY[name][0](xt, yt), name)
    if kind == "scalar":
        name = draw(st.sampled_from(("adds", "muls", "maximums")))
        s = draw(st.sampled_from((0.5, -1.25, 3.0, 0.1, -0.3)))
        base = {"adds": "add", "muls": "mul", "maximums": "maximum"}[name]
        return v.add(b.op(f"tensor.{name}", x, s), BINARY[base][0](xt, num.scalar(s, dtype)), f"{name} {s}")
    if kind == "slice":
        off, ext = _window(draw, shape)
        return v.add(b.op("tensor.slice", x, ext, off), xt[tuple(slice(o, o + e) for o, e in zip(off, ext))],
                     f"slice {ext}@{off}")
    red = draw(st.sampled_from(("max", "min")))
    if kind in ("row_red", "col_red"):
        axis = kind.split("_")[0]
        return v.add(b.op(f"tensor.{axis}_{red}", x), REDUCE[axis](xt, red), f"{axis}_{red}")
    if kind in ("row_bcast", "col_bcast"):
        axis = kind.split("_")[0]
        f = draw(st.sampled_from(("add", "sub", "mul")))
        vec = b.op(f"tensor.{axis}_{red}", x)
        out = b.op(f"tensor.{axis}_expand_{f}", x, vec)
        return v.add(out, BINARY[f][0](xt, REDUCE[axis](xt, red)), f"{axis}_expand_{f}({axis}_{red})")
    # a tensor carried through a loop, updated with a partner of its shape
    trips = draw(st.integers(0, 3))
    name = draw(st.sampled_from(("add", "maximum", "sub")))
    partners = [(y, yt) for y, yt in v.pool if tuple(yt.shape) == shape]
    y, yt = draw(st.sampled_from(partners))
    with b.loop(0, trips, carried=(x,)) as loop:
        loop.yield_(b.op(f"tensor.{name}", loop.iter_vars[0], y))
    value = xt
    for _ in range(trips):
        value = BINARY[name][0](value, yt)
    return v.add(loop.results[0], value, f"loop x{trips} {name}")


@st.composite
def window_programs(draw, max_steps: int = 5):
    """An InCore kernel of tensor ops on one or two inputs — slices of computed values,
    reductions and their broadcasts, tensors carried through loops — storing one or two of
    its values into windows of the output. The output may be read too (an in-place update:
    then it is stored once), and the last value may be stored by a loop that carries it."""
    dtype = draw(st.sampled_from(DTYPES))
    large = draw(st.integers(0, 5)) == 0
    shape = draw(st.sampled_from(LARGE if large else SMALL))
    if large and dtype is not D.FP32:
        shape = (shape[0] * 2, shape[1]) if shape[0] > 4 else (shape[0], shape[1] * 2)
    seed = draw(st.integers(0, 2**31 - 1))
    specials = draw(st.booleans())
    n_in = draw(st.integers(1, 2))
    # (not of a large tensor: a sink that reads what it stores at other windows is computed whole)
    in_place = not large and draw(st.integers(0, 3)) == 0
    inputs = [random_tensor(shape, dtype, seed + k, specials) for k in range(n_in)]
    start = random_tensor(shape, dtype, seed + 7, specials) if in_place else sentinel(shape, dtype)
    b = FunctionBuilder("kernel", FunctionType.InCore, soc=A2A3)
    params = [b.param(f"a{k}", TensorType(shape, dtype)) for k in range(n_in)]
    out = b.param("out", TensorType(shape, dtype), ParamDirection.InOut if in_place else ParamDirection.Out)
    v = _Values(b)
    for k, p in enumerate(params):
        v.pool.append((p, inputs[k]))
    if in_place:
        v.pool.append((out, start))
    for _ in range(draw(st.integers(1, max_steps))):
        _step(draw, v, [*params, out] if in_place else params, [*inputs, start] if in_place else inputs, dtype)
    expected = start.clone()
    stores = [v.pool[-1]]
    if not in_place and draw(st.booleans()):
        stores.insert(0, draw(st.sampled_from(v.pool)))
    sinks = []
    for k, (var, value) in enumerate(stores):
        last = k == len(stores) - 1
        # (whole on chip beside its partner, computed whole too, and what computes that —
        # a window of the inputs, whole: not of a large tensor, and a quarter of Vec at most)
        small = math.prod(value.shape) * value.element_size() <= 32 * 1024 and value.shape[0] * 3 <= shape[0]
        if last and not in_place and not large and small and draw(st.integers(0, 3)) == 0:
            sinks.append(_storing_loop(draw, b, out, var, value, expected, v.pool))
            continue
        off = [draw(st.integers(0, s - e)) for s, e in zip(shape, value.shape)]
        b.eval("tensor.assemble", out, var, off)
        expected[tuple(slice(o, o + e) for o, e in zip(off, value.shape))] = value
        sinks.append(f"out{off} = {var.name}")
    b.ret(out)
    recipe = (f"{dtype.name}{list(shape)}{' specials' if specials else ''}{' in place' if in_place else ''}: "
              + ", ".join(v.steps) + "; " + ", ".join(sinks))
    return Case(n.Program("windows", (b.build(),)), "kernel", tuple(inputs), (start,), (expected,),
                recipe=recipe)


def _storing_loop(draw, b: FunctionBuilder, out, var, value, expected, pool) -> str:
    """``for i: t = op(t, y); out[i-th window] = t``: a loop that carries a computed tensor
    and stores it every trip (so it stays whole on chip: the caller keeps it small)."""
    shape = tuple(value.shape)
    full = tuple(expected.shape)
    trips = draw(st.integers(0, 3))
    name = draw(st.sampled_from(("add", "maximum")))
    y, yt = draw(st.sampled_from([(p, t) for p, t in pool if tuple(t.shape) == shape]))
    col = draw(st.integers(0, full[1] - shape[1]))
    with b.loop(0, trips, carried=(var,)) as loop:
        nxt = b.op(f"tensor.{name}", loop.iter_vars[0], y)
        b.eval("tensor.assemble", out, nxt, [loop.var * shape[0], col])
        loop.yield_(nxt)
    t = value
    for i in range(trips):
        t = BINARY[name][0](t, yt)
        expected[i * shape[0]:(i + 1) * shape[0], col:col + shape[1]] = t
    return f"for {trips}: out[i*{shape[0]}, {col}] = {name}(.., {y.name})"


# ----------------------------------------------------------------------------- the cube


@st.composite
def cube_programs(draw):
    """A tensor-level matmul kernel: ``c = pl.matmul(a[...], b[...])`` on windows of its
    inputs (transposed or not), possibly accumulated into with ``pl.matmul_acc`` — once,
    or by a K loop (``acc = pl.create_tensor`` or a first matmul, then ``acc =
    pl.matmul_acc(acc, ...)`` per K block, under ``if kb == 0`` — perhaps in the else of
    ``if kb == 1`` — or not) — and a window of the product stored. The result is within FP32 accumulation of float64's; the
    interpreter on the kernel as written gives its exact bits (``Case.check`` bounded)."""
    dtype = draw(st.sampled_from((D.FP16, D.BF16)))
    # with extents the cube's blocks do not divide (a tail block on M, N or K) and a K long
    # enough that the chain slices it
    m = draw(st.sampled_from((16, 32, 64, 48, 256, 130, 7)))
    nn = draw(st.sampled_from((16, 32, 64, 96, 512, 300, 44)))
    kb = draw(st.sampled_from((16, 32, 64, 128, 40, 500)))
    blocks = draw(st.integers(1, 4))
    k = kb * blocks
    a_trans, b_trans = draw(st.booleans()), draw(st.booleans())
    seed = draw(st.integers(0, 2**31 - 1))
    a_shape, b_shape = ((k, m) if a_trans else (m, k)), ((nn, k) if b_trans else (k, nn))
    a = random_tensor(a_shape, dtype, seed)
    w = random_tensor(b_shape, dtype, seed + 1)
    b = FunctionBuilder("kernel", FunctionType.InCore, soc=A2A3)
    pa, pw = b.param("a", TensorType(a_shape, dtype)), b.param("b", TensorType(b_shape, dtype))
    out = b.param("out", TensorType((m, nn), D.FP32), ParamDirection.Out)

    def lhs(k0, width):
        return b.op("tensor.slice", pa, [width, m] if a_trans else [m, width], [k0, 0] if a_trans else [0, k0])

    def rhs(k0, width):
        return b.op("tensor.slice", pw, [nn, width] if b_trans else [width, nn], [0, k0] if b_trans else [k0, 0])

    form = draw(st.sampled_from(("one", "two", "loop", "loop_if", "loop_nested_if", "loop_zero")))
    mm = dict(a_trans=a_trans, b_trans=b_trans)
    if form == "one":
        acc = b.op("tensor.matmul", lhs(0, k), rhs(0, k), **mm)
    elif form == "two" or blocks == 1:
        half = kb * (blocks // 2) if blocks > 1 else k
        acc = b.op("tensor.matmul", lhs(0, half), rhs(0, half), **mm)
        if half < k:
            acc = b.op("tensor.matmul_acc", acc, lhs(half, k - half), rhs(half, k - half), **mm)
    else:
        init = b.op("tensor.create", [m, nn], D.FP32) if form != "loop" else \
            b.op("tensor.matmul", lhs(0, kb), rhs(0, kb), **mm)
        with b.loop(0 if form != "loop" else 1, blocks, carried=(init,), var="kb") as loop:
            k0 = b.assign("k0", loop.var * kb)
            it = loop.iter_vars[0]
            if form == "loop_if":
                with b.if_(n.BinOp("==", loop.var, n.Const(0))) as branch:
                    branch.yield_(b.op("tensor.matmul", lhs(k0, kb), rhs(k0, kb), **mm))
                    branch.else_()
                    branch.yield_(b.op("tensor.matmul_acc", it, lhs(k0, kb), rhs(k0, kb), **mm))
                loop.yield_(branch.results[0])
            elif form == "loop_nested_if":  # the accumulator read in two branches, the first block in a nested one
                with b.if_(n.BinOp("==", loop.var, n.Const(1))) as outer:
                    outer.yield_(b.op("tensor.matmul_acc", it, lhs(k0, kb), rhs(k0, kb), **mm))
                    outer.else_()
                    with b.if_(n.BinOp("==", loop.var, n.Const(0))) as inner:
                        inner.yield_(b.op("tensor.matmul", lhs(k0, kb), rhs(k0, kb), **mm))
                        inner.else_()
                        inner.yield_(b.op("tensor.matmul_acc", it, lhs(k0, kb), rhs(k0, kb), **mm))
                    outer.yield_(inner.results[0])
                loop.yield_(outer.results[0])
            else:
                loop.yield_(b.op("tensor.matmul_acc", it, lhs(k0, kb), rhs(k0, kb), **mm))
        acc = loop.results[0]
    r0, rh = draw(st.sampled_from(((0, m), (0, m // 2), (m // 4, m // 2))))
    c0, cw = draw(st.sampled_from(((0, nn), (nn // 2, nn // 2))))
    window = b.op("tensor.slice", acc, [rh, cw], [r0, c0]) if (rh, cw) != (m, nn) else acc
    b.eval("tensor.assemble", out, window, [r0, c0])
    b.ret(out)
    a64, w64 = a.to(torch.float64), w.to(torch.float64)
    a64, w64 = (a64.T if a_trans else a64), (w64.T if b_trans else w64)
    product = a64 @ w64
    want = sentinel((m, nn), D.FP32).to(torch.float64)
    want[r0:r0 + rh, c0:c0 + cw] = product[r0:r0 + rh, c0:c0 + cw]
    bound = torch.zeros(m, nn, dtype=torch.float64)
    bound[r0:r0 + rh, c0:c0 + cw] = ((a64.abs() @ w64.abs()) * torch.finfo(torch.float32).eps * k + 1e-30)[
        r0:r0 + rh, c0:c0 + cw]
    recipe = (f"{form} {dtype.name} {m}x{k}x{nn} in {blocks} blocks{' a^T' if a_trans else ''}"
              f"{' b^T' if b_trans else ''}; out[{r0}:{r0 + rh}, {c0}:{c0 + cw}]")
    return Case(n.Program("cube", (b.build(),)), "kernel", (a, w), (sentinel((m, nn), D.FP32),), (want,),
                "bounded", (bound,), recipe=recipe)
