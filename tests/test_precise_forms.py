"""The precise forms of the transcendental and dividing ops: ``high_precision=`` on div,
log and recip (Ascend950's slower algorithm: a2a3 runs the default one, so the bits and the
time stay the default's), and rsqrt's precise form — a scratch tile at tile level,
``high_precision=True`` at tensor level — which on a2a3 takes the square root and then
divides 1 by it, each rounded to the dtype (checked against an exact model over every
fp16 value); the same bits on both platforms, its cost, the round trip, and the refusals
naming the user's line."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import pypto.language as pl
from pypto.errors import TypeCheckError
from pypto.runtime import RunConfig
from pypto.sim.ops import numerics as num
from tests.test_roundtrip import exact

R, C = 16, 64
PLATFORMS = ("ref", "a2a3sim")


def _refined_model(x: np.ndarray, dtype) -> np.ndarray:
    """sqrt rounded to ``dtype``, then 1 / that rounded to ``dtype``: each step computed in
    float64 (exact to 53 bits, so its rounding to 11 or 24 bits is the correct one: for a
    square root or a quotient, rounding twice through p' >= 2p + 2 bits is rounding once)."""
    root = np.sqrt(x.astype(np.float64)).astype(dtype)
    with np.errstate(divide="ignore"):
        return (1.0 / root.astype(np.float64)).astype(dtype)


def test_refined_rsqrt_is_two_roundings_for_every_fp16():
    bits = np.arange(0, 0x7C00, dtype=np.uint16)  # every positive finite fp16 (and +0)
    x = bits.view(np.float16)
    got = num.rsqrt(torch.from_numpy(x.copy()), refined=True).numpy()
    want = _refined_model(x, np.float16)
    assert np.array_equal(got.view(np.uint16), want.view(np.uint16))
    # the form changes the bits: the default rounds 1 / sqrt once
    default = num.rsqrt(torch.from_numpy(x.copy())).numpy()
    assert (default.view(np.uint16) != got.view(np.uint16)).any()


@pl.jit
def scratch_vs_two_ops(a: pl.Tensor, out: pl.Out[pl.Tensor], two: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        x = pl.load(a, [0, 0], [4, 64])
        tmp = pl.tile.create([4, 64], dtype=pl.FP32, target_memory=pl.Mem.Vec)
        pl.store(pl.tile.rsqrt(x, tmp), [0, 0], out)
        pl.store(pl.recip(pl.sqrt(x)), [0, 0], two)
    return out, two


@settings(max_examples=12, deadline=None)
@given(st.integers(0, 2**31 - 1), st.integers(-120, 120), st.sampled_from(PLATFORMS))
def test_refined_rsqrt_is_the_vector_units_sqrt_then_division(seed, exponent, platform):
    g = torch.Generator().manual_seed(seed)
    a = torch.rand(4, 64, generator=g) * 2.0 ** exponent
    a[0, :4] = torch.tensor([0.0, float("inf"), 1e-45, -1.0])  # zero, infinity, a subnormal, outside the domain
    out, two = torch.zeros(4, 64), torch.zeros(4, 64)
    scratch_vs_two_ops(a, out, two, config=RunConfig(platform=platform))
    assert torch.equal(out.view(torch.int32), two.view(torch.int32))


@pl.jit
def tile_forms(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor], plain: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        x = pl.load(a, [0, 0], [R, C])
        y = pl.load(b, [0, 0], [R, C])
        tmp = pl.tile.create([R, C], dtype=pl.FP16, target_memory=pl.Mem.Vec)
        r = pl.tile.rsqrt(x, tmp)
        d = pl.div(r, y, high_precision=True)
        pl.store(pl.recip(pl.log(d, high_precision=True), high_precision=True), [0, 0], out)
    with pl.at(level=pl.Level.CORE_GROUP):
        x = pl.load(a, [0, 0], [R, C])
        y = pl.load(b, [0, 0], [R, C])
        r = pl.rsqrt(x, high_precision=False)  # the documented default: accepted on a tile
        pl.store(pl.recip(pl.log(pl.div(r, y))), [0, 0], plain)
    return out, plain


@pl.jit
def tensor_forms(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.div(pl.rsqrt(a, high_precision=True), b, high_precision=True)
    return out


def _inputs():
    g = torch.Generator().manual_seed(3)
    return (torch.rand(R, C, generator=g) * 60 + 0.25).half(), (torch.rand(R, C, generator=g) + 0.5).half()


def _refined(a: torch.Tensor) -> torch.Tensor:
    return torch.from_numpy(_refined_model(a.numpy(), np.float16))


@pytest.mark.parametrize("platform", PLATFORMS)
def test_tile_forms(platform):
    a, b = _inputs()
    out, plain = torch.zeros(R, C).half(), torch.zeros(R, C).half()
    tile_forms(a, b, out, plain, config=RunConfig(platform=platform))
    want = torch.reciprocal(torch.log(_refined(a) / b))
    assert torch.equal(out, want)
    # high_precision leaves div, log and recip as they were; only rsqrt's scratch tile changes bits
    assert torch.equal(plain, torch.reciprocal(torch.log(num.rsqrt(a) / b)))
    assert not torch.equal(out, plain)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_tensor_rsqrt_high_precision_is_the_tile_form_with_scratch(platform):
    a, b = _inputs()
    out = torch.zeros(R, C).half()
    tensor_forms(a, b, out, config=RunConfig(platform=platform))
    assert torch.equal(out, _refined(a) / b)
    text = tensor_forms.lower(a, b, out).as_python()
    assert "pl.tile.rsqrt(" in text and "tmp=" in text and "high_precision=True" in text


def test_forms_print_and_parse_back():
    a, b = _inputs()
    z = torch.zeros(R, C).half()
    for program in (tile_forms.specialize(a, b, z, z), tensor_forms.specialize(a, b, z)):
        text = exact(program)
        assert "high_precision=True" in text
    tile_forms.lower(a, b, z, z, config=RunConfig(verification_level="ROUNDTRIP"))
    tensor_forms.lower(a, b, z, config=RunConfig(verification_level="ROUNDTRIP"))


def _rsqrt_kernel(with_tmp: bool):
    if with_tmp:
        @pl.jit
        def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
            with pl.at(level=pl.Level.CORE_GROUP):
                tmp = pl.tile.create([R, C], dtype=pl.FP32, target_memory=pl.Mem.Vec)
                pl.store(pl.tile.rsqrt(pl.load(a, [0, 0], [R, C]), tmp), [0, 0], out)
            return out
    else:
        @pl.jit
        def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
            with pl.at(level=pl.Level.CORE_GROUP):
                tmp = pl.tile.create([R, C], dtype=pl.FP32, target_memory=pl.Mem.Vec)
                pl.store(pl.add(pl.tile.rsqrt(pl.load(a, [0, 0], [R, C])), tmp), [0, 0], out)
            return out
    return k


def test_the_scratch_form_costs_a_root_and_a_division():
    a, out = torch.rand(R, C) + 0.5, torch.zeros(R, C)
    cycles = {}
    for with_tmp in (True, False):
        k = _rsqrt_kernel(with_tmp)
        cycles[with_tmp] = k.compile(a, out).run(a, out).cycles
    # the scratch form runs two vector passes where the default runs one (the default
    # kernel's extra add costs less than the division it saves)
    assert cycles[True] > cycles[False]


def _refused(tmp_path, body: str, params: str = "a: pl.Tensor, out: pl.Out[pl.Tensor]"):
    from tests.helpers import scope_kernel

    k = scope_kernel(tmp_path, body, params)
    with pytest.raises(TypeCheckError) as e:
        k.lower(torch.rand(R, C), torch.zeros(R, C))
    return e.value


@pytest.mark.parametrize("body, words", [
    ("x = pl.load(a, [0, 0], [16, 64])\npl.store(pl.div(x, 2.0, high_precision=True), [0, 0], out)",
     "high_precision requires a Tile rhs"),
    ("x = pl.load(a, [0, 0], [16, 64])\npl.store(pl.rsqrt(x, high_precision=True), [0, 0], out)",
     "high_precision is Tensor-only"),
    ("out[:] = pl.div(a, 2.0, high_precision=True)", "high_precision requires a Tensor rhs"),
    ("x = pl.load(a, [0, 0], [16, 64])\nt = pl.tile.create([16, 32], dtype=pl.FP32, target_memory=pl.Mem.Vec)\n"
     "pl.store(pl.tile.rsqrt(x, t), [0, 0], out)", "tmp tile shape mismatch at dimension 1"),
    ("x = pl.load(a, [0, 0], [16, 64])\nt = pl.tile.create([16, 64], dtype=pl.FP16, target_memory=pl.Mem.Vec)\n"
     "pl.store(pl.tile.rsqrt(x, t), [0, 0], out)", "tmp tile dtype (FP16) must match input dtype (FP32)"),
])
def test_misplaced_precision_is_refused_where_written(tmp_path, body, words):
    err = _refused(tmp_path, body)
    assert words in str(err)
    assert "k.py:" in str(err) and err.hint


def test_integer_division_has_no_precise_form(tmp_path):
    from tests.helpers import scope_kernel

    k = scope_kernel(tmp_path, "x = pl.load(a, [0, 0], [16, 64])\n"
                               "pl.store(pl.div(x, x, high_precision=True), [0, 0], out)",
                     "a: pl.Tensor, out: pl.Out[pl.Tensor]")
    with pytest.raises(TypeCheckError, match="supports high_precision only for FP16, BF16 or FP32"):
        k.lower(torch.ones(R, C, dtype=torch.int32), torch.zeros(R, C, dtype=torch.int32))
