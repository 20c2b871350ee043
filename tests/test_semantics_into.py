"""The elementwise ops the simulator computes straight into their destination
(``semantics.INTO``) leave the bits the op's semantics return (``IMPLS``), in place too."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from pypto.ir.ops import Kind, lookup
from pypto.sim.ops.semantics import IMPLS, INTO, TileVal

DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.int32]
SPECIAL = [float("nan"), float("inf"), -float("inf"), -0.0, 0.0, 1e-40, 6e-8, 65504.0, 3e38]


def _tile(dtype, shape, seed, special: bool):
    g = torch.Generator().manual_seed(seed)
    if not dtype.is_floating_point:
        return torch.randint(-2**31, 2**31 - 1, shape, generator=g, dtype=torch.int64).to(dtype)
    x = (torch.randn(shape, generator=g) * 4).to(dtype)
    if special:
        flat = x.view(-1)
        for k, v in enumerate(SPECIAL[: flat.numel()]):
            flat[k] = v
        if dtype == torch.float32 and flat.numel() > len(SPECIAL):  # a NaN with a payload and its sign set
            flat[len(SPECIAL)] = torch.tensor([-4194305], dtype=torch.int32).view(torch.float32)[0]
    return x


def _bits(t):
    return t.view({1: torch.uint8, 2: torch.int16, 4: torch.int32}[t.element_size()])


@pytest.mark.parametrize("op", sorted(INTO))
@pytest.mark.parametrize("dtype", DTYPES)
@settings(max_examples=max(3, settings().max_examples // 20))
@given(rows=st.integers(1, 9), cols=st.integers(1, 40), seed=st.integers(0, 2**16), special=st.booleans(),
       scalar=st.sampled_from([0, 3, -7, 0.5, -0.0, 1e30, float("inf"), float("nan")]), in_place=st.booleans())
def test_property_into_is_the_ops_semantics(op, dtype, rows, cols, seed, special, scalar, in_place):
    fn, floats_only = INTO[op]
    if floats_only and not dtype.is_floating_point:
        return
    shape = (rows, cols)
    x, y = _tile(dtype, shape, seed, special), _tile(dtype, shape, seed + 1, not special)
    if not dtype.is_floating_point and isinstance(scalar, float):
        scalar = 5
    tensors = iter((x, y))
    operands = tuple(next(tensors) if p.kind is Kind.TILE else scalar for p in lookup(op).params)
    tiles = [TileVal(o, shape) if isinstance(o, torch.Tensor) else o for o in operands]
    want = IMPLS[op](*tiles)
    out = x if in_place else torch.empty(shape, dtype=dtype)
    fn(out, *operands)
    assert torch.equal(_bits(out), _bits(want)), op
