"""What a call's values are: a scalar-valued op call is a scalar wherever it is written
(``pl.tile.get_block_idx() * 16``); an int64 tensor binds a ``pl.INDEX`` parameter; a tensor
autograd tracks is computed on as the storage it is; a tensor that is not dense and strided is
refused at the call line — on both platforms."""

import pytest
import torch

import pypto.language as pl
from pypto.errors import PyptoError
from pypto.runtime import RunConfig

from helpers import load_kernel

PLATFORMS = ("ref", "a2a3sim")
T, D, TT = 64, 128, 16


@pl.jit
def registers_in_expressions(x: pl.Tensor[[T, D], pl.FP32], y: pl.Out[pl.Tensor[[T, D], pl.FP32]]):
    for b in pl.spmd(T // TT):
        # each block writes the band mirrored from its own: both registers, called inside arithmetic
        r = (pl.tile.get_block_num() - 1 - pl.tile.get_block_idx()) * TT
        t = pl.load(x, [TT * pl.tensor.get_block_idx(), 0], [TT, D])
        pl.store(pl.add(t, 1.0), [r + 0 * pl.tile.get_subblock_idx(), 0], y)
    return y


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_register_read_inside_arithmetic_is_a_scalar(platform):
    x, y = torch.randn(T, D), torch.zeros(T, D)
    registers_in_expressions(x, y, config=RunConfig(platform=platform))
    n = T // TT
    want = torch.cat([x[(n - 1 - i) * TT:(n - i) * TT] + 1.0 for i in range(n)])
    assert torch.equal(y, want)


@pl.jit
def element_reads_in_expressions(a: pl.Tensor[[T, D], pl.FP32], at: pl.Tensor[[2], pl.INDEX],
                                 out: pl.Out[pl.Tensor[[TT, D], pl.FP32]]):
    row = pl.tensor.read(at, [0]) * TT + pl.read(at, [1])  # two element reads, in one expression
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [row, 0], [TT, D])
        pl.store(t, [0, 0], out)
    return out


@pytest.mark.parametrize("platform", PLATFORMS)
def test_an_int64_tensor_binds_an_index_parameter_and_element_reads_are_scalars(platform):
    a, out = torch.randn(T, D), torch.zeros(TT, D)
    element_reads_in_expressions(a, torch.tensor([2, 3]), out, config=RunConfig(platform=platform))
    assert torch.equal(out, a[2 * TT + 3:3 * TT + 3])


def test_an_index_parameter_refuses_another_integer_dtype_with_the_fix():
    with pytest.raises(PyptoError) as err:
        element_reads_in_expressions(torch.randn(T, D), torch.tensor([2, 3], dtype=torch.int32), torch.zeros(TT, D))
    text = str(err.value)
    assert "int32" in text and "at.to(torch.int64)" in text and "test_call_values.py" in text


def test_a_compiled_program_binds_int64_for_index_and_says_what_to_pass_otherwise():
    a, out = torch.randn(T, D), torch.zeros(TT, D)
    compiled = element_reads_in_expressions.compile(a, torch.tensor([1, 0]), out)
    compiled(a, torch.tensor([1, 0]), out)
    assert torch.equal(out, a[TT:2 * TT])
    with pytest.raises(PyptoError, match=r"at\.to\(torch\.int64\)"):
        compiled(a, torch.tensor([1, 0], dtype=torch.int16), out)


@pytest.fixture
def add_kernel(tmp_path):
    path = tmp_path / "k.py"
    path.write_text(
        "import pypto.language as pl\n\n"
        "@pl.jit\n"
        "def k(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):\n"
        "    with pl.at(level=pl.Level.CORE_GROUP):\n"
        "        for i in pl.range(4):\n"
        "            t = pl.load(a, [i * 16, 0], [16, 64])\n"
        "            u = pl.load(b, [i * 16, 0], [16, 64])\n"
        "            pl.store(pl.add(t, u), [i * 16, 0], out)\n"
        "    return out\n")
    return load_kernel(path)


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("which", ["a", "out"])
def test_tensors_autograd_tracks_are_computed_on_in_place(add_kernel, platform, which):
    a, b, out = torch.randn(64, 64), torch.randn(64, 64), torch.zeros(64, 64)
    args = {"a": a, "b": b, "out": out}
    args[which] = args[which].requires_grad_(True)
    add_kernel(*args.values(), config=RunConfig(platform=platform))
    assert torch.equal(args["out"].detach(), (a + b).detach())


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("make, said, fix", [
    (lambda: torch.randn(64, 64).to_sparse(), "a sparse_coo tensor", "a.to_dense()"),
    (lambda: torch.randn(64, 64).to_sparse_csr(), "a sparse_csr tensor", "a.to_dense()"),
    (lambda: torch.nested.nested_tensor([torch.randn(64, 64)]), "a nested tensor", "a.to_padded_tensor(0)"),
])
def test_a_tensor_that_is_not_dense_is_refused_at_the_call(add_kernel, platform, make, said, fix):
    with pytest.raises(PyptoError) as err:
        add_kernel(make(), torch.randn(64, 64), torch.zeros(64, 64), config=RunConfig(platform=platform))
    text = str(err.value)
    assert f"argument 'a' is {said}" in text and fix in text and "test_call_values.py" in text
