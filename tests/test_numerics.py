"""The arithmetic defined once in pypto.sim.numerics: rounding modes, reduction and
matmul order, packed masks."""

import pytest
import torch

from pypto.ir.types import DataType as D
from pypto.ir.types import PadValue
from pypto.sim import numerics as num

HALF_ULP_16 = 2.0 ** -11  # half an fp16 ulp at 1.0


@pytest.mark.parametrize("mode, x, want", [
    ("rint", 1 + HALF_ULP_16, 1.0),                       # tie to even
    ("round", 1 + HALF_ULP_16, 1 + 2 * HALF_ULP_16),      # tie away from zero
    ("round", -(1 + HALF_ULP_16), -(1 + 2 * HALF_ULP_16)),
    ("round", 1 + 3 * HALF_ULP_16, 1 + 4 * HALF_ULP_16),  # tie between 1+2u and 1+4u: away
    ("floor", 1 + HALF_ULP_16 / 2, 1.0),
    ("floor", -(1 + HALF_ULP_16 / 2), -(1 + 2 * HALF_ULP_16)),
    ("ceil", 1 + HALF_ULP_16 / 2, 1 + 2 * HALF_ULP_16),
    ("trunc", -(1 + 3 * HALF_ULP_16 / 2), -(1 + 2 * HALF_ULP_16) + 2 * HALF_ULP_16),
    ("odd", 1 + HALF_ULP_16, 1 + 2 * HALF_ULP_16),        # 1 has an even mantissa; the odd neighbour wins
    ("none", 1 + HALF_ULP_16, 1.0),
    ("round", 1.0, 1.0),                                  # exact values stay
])
def test_fp32_to_fp16_rounding_modes(mode, x, want):
    got = num.cast(torch.tensor([x], dtype=torch.float32), D.FP16, mode)
    assert got.dtype == torch.float16
    assert got.item() == want


@pytest.mark.parametrize("mode, want", [
    ("round", [3, -3, 2, -2, 0]), ("rint", [2, -2, 2, -2, 0]), ("floor", [2, -3, 1, -3, 0]),
    ("ceil", [3, -2, 2, -2, 0]), ("trunc", [2, -2, 1, -2, 0]), ("odd", [3, -3, 1, -3, 0]),
])
def test_float_to_int_modes(mode, want):
    x = torch.tensor([2.5, -2.5, 1.5, -2.25, 0.0])
    assert num.cast(x, D.INT32, mode).tolist() == want


def test_float_to_int_saturates_and_maps_nan_to_zero():
    x = torch.tensor([1e10, -1e10, float("nan"), float("inf"), 300.0])
    assert num.cast(x, D.INT32, "round").tolist() == [2**31 - 1, -(2**31), 0, 2**31 - 1, 300]
    assert num.cast(x, D.INT8, "trunc").tolist() == [127, -128, 0, 127, 127]


def test_int_to_float_rounds_once():
    x = torch.tensor([2**24 + 1, 2049], dtype=torch.int32)
    assert num.cast(x, D.FP32, "rint").tolist() == [2**24, 2049.0]
    assert num.cast(x, D.FP16, "rint").tolist()[1] == 2048.0
    assert num.cast(x, D.FP16, "round").tolist()[1] == 2050.0


def test_reductions_combine_pairwise():
    # Sequential summation gives 1 (1e8 + 1 rounds back to 1e8); pairwise halves give 2.
    x = torch.tensor([[1e8, 1.0, -1e8, 1.0]], dtype=torch.float32)
    assert num.reduce_last(x, "sum").item() == 2.0
    assert num.reduce_last(x, "max").item() == 1e8
    odd = torch.tensor([[1.0, 2.0, 4.0, 8.0, 16.0]])
    assert num.reduce_last(odd, "sum").item() == 31.0
    assert num.reduce_first(odd.T.contiguous(), "sum").shape == (1, 1)


def test_matmul_accumulates_in_k_order_in_fp32():
    a = torch.tensor([[2048.0, 1.0, -2048.0]], dtype=torch.float16)
    b = torch.tensor([[8192.0], [1.0], [8192.0]], dtype=torch.float16)
    # k order: 2048*8192 = 2^24; + 1 rounds away in fp32; - 2^24 -> 0.
    assert num.matmul(a, b).item() == 0.0
    acc = torch.tensor([[5.0]])
    # 5 + 2^24 -> 2^24 + 4 (ties to even); + 1 -> 2^24 + 4 again; - 2^24 -> 4.
    assert num.matmul(a, b, acc).item() == 4.0
    ints = num.matmul(torch.tensor([[100, -7]], dtype=torch.int8), torch.tensor([[100], [3]], dtype=torch.int8))
    assert ints.dtype == torch.int32 and ints.item() == 9979


def test_masks_pack_one_bit_per_column():
    pred = torch.tensor([[True, False, True] + [False] * 6 + [True]])
    mask = num.pack_mask(pred, 32)
    assert mask.shape == (1, 32) and mask[0, 0].item() == 0b101 and mask[0, 1].item() == 0b10
    assert torch.equal(num.unpack_mask(mask, 10), pred)


def test_integer_division_by_zero_is_an_error():
    with pytest.raises(num.ArithmeticError_):
        num.div(torch.tensor([1], dtype=torch.int32), torch.tensor([0], dtype=torch.int32))
    assert num.div(torch.tensor([-7], dtype=torch.int32), torch.tensor([2], dtype=torch.int32)).item() == -3


def test_pad_values():
    assert num.pad_value(PadValue.max, D.FP16) == float("inf")
    assert num.pad_value(PadValue.min, D.INT8) == -128
    assert num.pad_value(PadValue.zero, D.FP32) == 0
