"""The reference's forms over windows of tiles: subscripts (``t[:, 0:HALF]``, ``t[i, j]``,
``t[a:b, :] = u``, a window of an expression's result), ``pl.tile.extract`` (TEXTRACT: Mat
to Left/Right, Acc to Mat, Vec to Vec), a window of a Mat tile moved to L0, ``pl.load(...,
clamp=True)``, ``pl.tile.fillpad_inplace`` and ``pl.matmul_acc(..., init_cond=)``: each
against torch, on the interpreter and the simulated core alike, and each mistake located."""

from __future__ import annotations

import textwrap

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import pypto.language as pl
from pypto.errors import CodegenError, PyptoError, TypeCheckError
from pypto.lang import parse
from pypto.runtime import RunConfig
from kernel_files import kernel_module, on_both


# ----------------------------------------------------------------------------- subscripts


@st.composite
def windows(draw):
    rows, cols = draw(st.sampled_from([(16, 64), (8, 128), (32, 32)]))
    r0 = draw(st.integers(0, rows - 1))
    r1 = draw(st.integers(r0 + 1, rows))
    c0 = draw(st.sampled_from(range(0, cols, 8)))
    c1 = draw(st.sampled_from(range(c0 + 8, cols + 1, 8)))
    return rows, cols, r0, r1, c0, c1


@settings(max_examples=20, deadline=None)
@given(w=windows(), written=st.booleans(), of_expression=st.booleans())
def test_property_a_subscript_window_of_a_tile_is_its_slice(w, written, of_expression):
    """``t[r0:r1, c0:c1]`` is that window (of a name, or of an op's result); assigned to, it
    writes the window of the tile the name then holds; ``t[i, j]`` reads one element."""
    rows, cols, r0, r1, c0, c1 = w
    base = "pl.exp(t)" if of_expression else "t"
    source = f"""
        @pl.jit
        def k(a: pl.Tensor[[{rows}, {cols}], pl.FP32], out: pl.Out[pl.Tensor[[{rows}, {cols}], pl.FP32]]):
            with pl.at(level=pl.Level.CORE_GROUP):
                t = pl.load(a, [0, 0], [{rows}, {cols}])
                part = {base}[{r0}:{r1}, {c0}:{c1}]
                scaled = pl.mul(part, t[{r1 - 1}, {c0}])
                {"t[" + f"{r0}:{r1}, {c0}:{c1}" + "] = scaled" if written else "t = pl.add(t, t)"}
                pl.store(t, [0, 0], out)
            return out
    """
    module, _ = kernel_module(source)
    a = torch.randn(rows, cols, generator=torch.Generator().manual_seed(rows + r0 + c1))
    _, out = on_both(module.k, a, torch.zeros(rows, cols))
    src = torch.exp(a) if of_expression else a
    want = a.clone()
    if written:
        want[r0:r1, c0:c1] = src[r0:r1, c0:c1] * a[r1 - 1, c0]
    else:
        want = a + a
    assert torch.equal(out, want)


@pl.jit
def halves(a: pl.Tensor[[16, 128], pl.FP32], out: pl.Out[pl.Tensor[[16, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [16, 128])
        lo: pl.Tile[[16, 64], pl.FP32] = t[:, 0:64]
        hi = t[:, 64:]
        pl.store(pl.sub(lo, hi), [0, 0], out)
    return out


def test_halves_by_subscript_print_as_slices_and_read_back_equal():
    a = torch.randn(16, 128)
    _, out = on_both(halves, a, torch.zeros(16, 64))
    assert torch.equal(out, a[:, :64] - a[:, 64:])
    program = halves.specialize(a, out)
    text = program.as_python()
    assert "pl.tile.slice(t, [16, 64], [0, 64])" in text
    assert parse(text) == program


# ----------------------------------------------------------------------------- extract and Mat windows


@pl.jit
def split_k(a: pl.Tensor[[16, 128], pl.BF16], b0: pl.Tensor[[64, 32], pl.BF16], b1: pl.Tensor[[64, 32], pl.BF16],
            out: pl.Out[pl.Tensor[[16, 32], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        pair = pl.load(a, [0, 0], [16, 128], target_memory=pl.Mem.Mat)  # one wide load, split on chip
        left0 = pl.move(pl.slice(pair, [16, 64], [0, 0]), target_memory=pl.Mem.Left)
        left1 = pl.tile.extract(pair, 0, 64, [16, 64], target_memory=pl.Mem.Left)
        r0 = pl.move(pl.load(b0, [0, 0], [64, 32], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
        r1 = pl.move(pl.load(b1, [0, 0], [64, 32], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
        acc = pl.matmul(left0, r0)
        acc = pl.matmul_acc(acc, left1, r1)
        pl.store(acc, [0, 0], out)
    return out


def test_a_wide_mat_tile_split_into_l0_windows_multiplies_as_its_halves():
    g = torch.Generator().manual_seed(1)
    a, b0, b1 = (torch.randn(*s, generator=g).to(torch.bfloat16) for s in ((16, 128), (64, 32), (64, 32)))
    *_, out = on_both(split_k, a, b0, b1, torch.zeros(16, 32))
    want = a[:, :64].float() @ b0.float() + a[:, 64:].float() @ b1.float()
    torch.testing.assert_close(out, want, rtol=1e-4, atol=1e-4)
    lowered = split_k.lower(a, b0, b1, out).as_python()
    assert "pl.tile.extract(pair, 0, 0, [16, 64], target_memory=pl.Mem.Left)" in lowered
    assert "pl.tile.slice" not in lowered  # the window is read by TEXTRACT from the tile itself


@pl.jit
def acc_out(a: pl.Tensor[[16, 32], pl.FP32], b: pl.Tensor[[32, 32], pl.FP32], c: pl.Tensor[[16, 32], pl.FP32],
            out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        left = pl.move(pl.load(a, [0, 0], [16, 32], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
        right = pl.move(pl.load(b, [0, 0], [32, 32], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
        prod = pl.matmul(left, right)
        cols = pl.tile.extract(prod, 0, 16, [16, 16], target_memory=pl.Mem.Mat)  # out of L0C by the fixpipe
        again = pl.tile.extract(cols, 0, 0, [16, 16], target_memory=pl.Mem.Left)
        eye = pl.move(pl.load(c, [0, 0], [16, 16], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
        pl.store(pl.matmul(again, eye), [0, 0], out)
    return out


def test_an_acc_window_extracted_to_mat_feeds_the_cube_again():
    g = torch.Generator().manual_seed(2)
    a, b = torch.randn(16, 32, generator=g), torch.randn(32, 32, generator=g)
    eye = torch.eye(16, 32)
    *_, out = on_both(acc_out, a, b, eye, torch.zeros(16, 16))
    torch.testing.assert_close(out, (a @ b)[:, 16:], rtol=1e-4, atol=1e-4)


@pl.jit
def vec_extract(a: pl.Tensor[[8, 64], pl.FP32], out: pl.Out[pl.Tensor[[1, 64], pl.FP32]], r: pl.Scalar[pl.INDEX]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [8, 64])
        row = pl.tile.extract(t, r, 0, [1, 64], target_memory=pl.Mem.Vec)
        pl.store(row, [0, 0], out)
    return out


@pytest.mark.parametrize("r", [0, 5, 7])
def test_a_vec_extract_at_a_runtime_row_reads_that_row(r):
    a = torch.randn(8, 64)
    _, out, _ = on_both(vec_extract, a, torch.zeros(1, 64), r)
    assert torch.equal(out, a[r:r + 1])


def test_a_vec_extract_past_its_tile_is_refused_where_it_runs():
    with pytest.raises(PyptoError, match=r"window \[8, 9\) on axis 0 is outside the tile's \[0, 8\)"):
        vec_extract(torch.randn(8, 64), torch.zeros(1, 64), 8, config=RunConfig(platform="ref"))


# ----------------------------------------------------------------------------- clamp, fillpad_inplace, init_cond


@st.composite
def clamped_loads(draw):
    rows = draw(st.integers(1, 48))
    r0 = draw(st.integers(0, 40))
    valid = draw(st.integers(1, 32))
    return rows, r0, valid


@settings(max_examples=15, deadline=None)
@given(case=clamped_loads(), space=st.sampled_from(["Vec"]))
def test_property_a_clamped_load_stops_at_the_tensor_s_end(case, space):
    """``pl.load(..., clamp=True)``: the rows past the tensor's end are not read (the valid
    region stops there), wherever the offset and the valid extent put the window."""
    rows, r0, valid = case
    source = f"""
        @pl.jit
        def k(a: pl.Tensor[[{rows}, 64], pl.FP32], out: pl.Out[pl.Tensor[[32, 64], pl.FP32]],
              r: pl.Scalar[pl.INDEX]):
            with pl.at(level=pl.Level.CORE_GROUP):
                t = pl.load(a, [r, 0], [32, 64], valid_shape=[{valid}, 64], clamp=True)
                pl.store(t, [0, 0], out)
            return out
    """
    module, _ = kernel_module(source)
    a = torch.randn(rows, 64)
    _, out, _ = on_both(module.k, a, torch.full((32, 64), -7.0), r0)
    n = max(0, min(valid, rows - r0))
    assert torch.equal(out[:n], a[r0:r0 + n]) and (out[n:] == -7.0).all()


@pl.jit
def padded(a: pl.Tensor[[48, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]],
           out2: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [64, 64], valid_shape=[48, 64])
        pl.store(pl.tile.fillpad_inplace(t, pad_value=pl.PadValue.min), [0, 0], out)
        u = pl.load(a, [0, 0], [64, 64], valid_shape=[48, 64])
        pl.store(pl.fillpad(u, pad_value=pl.PadValue.min), [0, 0], out2)
    return out, out2


def test_fillpad_inplace_fills_as_fillpad_does():
    a = torch.randn(48, 64)
    _, out, out2 = on_both(padded, a, torch.zeros(64, 64), torch.zeros(64, 64))
    assert torch.equal(out, out2) and torch.equal(out[:48], a) and (out[48:] == -float("inf")).all()
    assert "pl.tile.fillpad_inplace(t, pad_value=pl.PadValue.min)" in padded.specialize(
        a, out, out2).as_python()


@st.composite
def init_patterns(draw):
    steps = draw(st.integers(1, 4))
    first = draw(st.integers(0, steps - 1))
    return steps, first


@settings(max_examples=10, deadline=None)
@given(pattern=init_patterns())
def test_property_init_cond_starts_the_accumulator_afresh_where_it_holds(pattern):
    """``matmul_acc(acc, l, r, init_cond=(k == f))``: the trips up to f are overwritten by
    trip f's product, so the result is the sum of the products from f on."""
    steps, first = pattern
    source = f"""
        @pl.jit
        def k(a: pl.Tensor[[16, {32 * steps}], pl.FP32], b: pl.Tensor[[{32 * steps}, 32], pl.FP32],
              out: pl.Out[pl.Tensor[[16, 32], pl.FP32]]):
            with pl.at(level=pl.Level.CORE_GROUP):
                acc = pl.tile.create([16, 32], pl.FP32, target_memory=pl.Mem.Acc)
                for k0 in pl.range({steps}):
                    l = pl.move(pl.load(a, [0, k0 * 32], [16, 32], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
                    r = pl.move(pl.load(b, [k0 * 32, 0], [32, 32], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
                    acc = pl.matmul_acc(acc, l, r, init_cond=(k0 == {first}))
                pl.store(acc, [0, 0], out)
            return out
    """
    module, _ = kernel_module(source)
    g = torch.Generator().manual_seed(steps * 7 + first)
    a, b = torch.randn(16, 32 * steps, generator=g), torch.randn(32 * steps, 32, generator=g)
    *_, out = on_both(module.k, a, b, torch.zeros(16, 32))
    want = a[:, first * 32:] @ b[first * 32:]
    torch.testing.assert_close(out, want, rtol=1e-4, atol=1e-4)
    assert "init_cond=k0 == " in module.k.specialize(a, b, out).as_python()


# ----------------------------------------------------------------------------- mistakes


def refused(body: str, cls, message: str, token: str, *, params="a: pl.Tensor[[16, 64], pl.FP32]", args=None):
    module, path = kernel_module(f"""
        @pl.jit
        def k({params}, out: pl.Out[pl.Tensor[[16, 64], pl.FP32]]):
            with pl.at(level=pl.Level.CORE_GROUP):
{textwrap.indent(textwrap.dedent(body), " " * 16)}
            return out
    """)
    with pytest.raises(cls, match=message) as info:
        module.k(*(args or (torch.zeros(16, 64),)), torch.zeros(16, 64))
    text = str(info.value)
    lines = open(path).read().splitlines()
    line = next(k for k, x in enumerate(lines, 1) if "MARK" in x)
    assert f"{path}:{line}:" in text and token in lines[line - 1], text
    return info.value


def test_accumulating_onto_a_window_of_an_accumulator_is_refused_with_the_forms_that_work():
    err = refused("""
        l = pl.move(pl.load(a, [0, 0], [16, 16], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
        r = pl.move(pl.load(a, [0, 0], [16, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
        r2 = pl.move(pl.load(a, [0, 0], [16, 32], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
        acc = pl.matmul(l, r)
        win = pl.tile.slice(acc, [16, 32], [0, 32])
        win = pl.matmul_acc(win, l, r2)  # MARK
    """, TypeCheckError, "accumulates onto 'win', a window of an Acc tile", "matmul_acc")
    assert "pl.tile.extract(acc" in err.hint


@pytest.mark.parametrize("body, message", [
    ("t = pl.load(a, [0, 0], [16, 64])\ne = pl.tile.extract(t, 0, 0, [8, 8], target_memory=pl.Mem.Left)  # MARK",
     r"a source and target the TEXTRACT path joins .* but got Vec -> Left"),
    ("t = pl.load(a, [0, 0], [16, 64])\ne = pl.tile.extract(t, 0, 60, [8, 8], target_memory=pl.Mem.Vec)  # MARK",
     r"a window inside the tile \[16, 64\], but got \[60, 68\) on axis 1"),
    ("t = pl.load(a, [0, 0], [16, 64], clamp=1)  # MARK", "pl.load's clamp must be a bool"),
    ("t = pl.load(a, [0, 0], [16, 64])\nu = t[0:4, 3]  # MARK", "tile windows are written with start:stop slices"),
])
def test_a_window_form_the_compiler_cannot_take_is_refused_where_it_is_written(body, message):
    refused(body, PyptoError, message, "MARK")


def test_an_init_cond_that_is_a_tile_is_refused():
    refused("""
        l = pl.move(pl.load(a, [0, 0], [16, 16], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
        r = pl.move(pl.load(a, [0, 0], [16, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
        acc = pl.matmul(l, r)
        acc = pl.matmul_acc(acc, l, r, init_cond=l)  # MARK
    """, PyptoError, "init_cond", "init_cond")


def test_a_mat_window_read_as_a_whole_tile_is_refused_at_codegen():
    refused("""
        m = pl.load(a, [0, 0], [16, 64], target_memory=pl.Mem.Mat)
        w = pl.tile.slice(m, [16, 32], [0, 0])  # MARK
        t = pl.tile.transpose_view(w)
    """, CodegenError, "a window of the Mat tile 'm' is read here as a tile of its own", "slice")
