"""The MX matmul family (``pl.matmul_mx`` / ``_acc`` / ``_bias``) as a kernel runs it: FP8E4M3FN
data, FP8E8M0 scales packed MX_A_ZZ / MX_B_NN as the reference's system test packs them, on
``a5sim`` and on ``ref`` for Ascend950 with the same bits — those of ``mx_math``'s block
contract (tests/test_mx_numerics.py holds it to an exact oracle) — and refused on a2a3 at the
user's line naming the chip that has it."""

import inspect

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import pypto.language as pl
from pypto.backend import BackendType
from pypto.errors import MemorySpaceError, PyptoError, TypeCheckError
from pypto.runtime import RunConfig
from pypto.sim.ops import mx_math

A5SIM = RunConfig(platform="a5sim")
REF_A5 = RunConfig(platform="ref", backend_type=BackendType.Ascend950)
M, K, N = 32, 128, 64


def _line(marker: str) -> int:
    lines, _ = inspect.getsourcelines(inspect.getmodule(_line))
    return next(k for k, t in enumerate(lines, start=1) if t.rstrip().endswith(marker))


@pl.jit
def mx_all(a: pl.Tensor[[M, K], pl.FP8E4M3FN], a_scale: pl.Tensor[[M, K // 32], pl.FP8E8M0, pl.MX_A_ZZ],
           b: pl.Tensor[[K, N], pl.FP8E4M3FN], b_scale: pl.Tensor[[K // 32, N], pl.FP8E8M0, pl.MX_B_NN],
           bias: pl.Tensor[[1, N], pl.FP32], out: pl.Out[pl.Tensor[[M, N], pl.FP32]],
           out_acc: pl.Out[pl.Tensor[[M, N], pl.FP32]], out_bias: pl.Out[pl.Tensor[[M, N], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        lhs = pl.move(pl.load(a, [0, 0], [M, K], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
        ls = pl.move(pl.load(a_scale, [0, 0], [M, K // 32], target_memory=pl.Mem.Mat), target_memory=pl.Mem.LeftScale)
        rhs = pl.move(pl.load(b, [0, 0], [K, N], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
        rs = pl.move(pl.load(b_scale, [0, 0], [K // 32, N], target_memory=pl.Mem.Mat),
                     target_memory=pl.Mem.RightScale)
        bias_row = pl.move(pl.load(bias, [0, 0], [1, N], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Bias)
        base = pl.matmul_mx(lhs, ls, rhs, rs)  # MARK-mx
        pl.store(base, [0, 0], out)
        pl.store(pl.tile.matmul_mx_acc(base, lhs, ls, rhs, rs), [0, 0], out_acc)
        pl.store(pl.matmul_mx_bias(lhs, ls, rhs, rs, bias_row), [0, 0], out_bias)
    return out, out_acc, out_bias


def _inputs(seed, specials=False):
    g = torch.Generator().manual_seed(seed)
    a = torch.randint(0, 256, (M, K), generator=g).to(torch.uint8)
    b = torch.randint(0, 256, (K, N), generator=g).to(torch.uint8)
    if not specials:  # E4M3's NaN codes (S.1111.111) out
        a = torch.where((a & 0x7F) == 0x7F, a & 0xF0, a)
        b = torch.where((b & 0x7F) == 0x7F, b & 0xF0, b)
    sa = torch.randint(100, 150, (M, K // 32), generator=g).to(torch.uint8)
    sb = torch.randint(100, 150, (K // 32, N), generator=g).to(torch.uint8)
    if specials:
        sa[0, 0], sb[1, 2], sa[3, 1] = 0xFF, 0, 254  # a NaN scale, the least and the largest
    bias = torch.randn(1, N, generator=g)
    return a, sa, b, sb, bias


def _run(config, a, sa, b, sb, bias):
    outs = [torch.zeros(M, N) for _ in range(3)]
    mx_all(a.view(torch.float8_e4m3fn), mx_math.pack_a(sa).view(torch.float8_e8m0fnu), b.view(torch.float8_e4m3fn),
           mx_math.pack_b(sb).view(torch.float8_e8m0fnu), bias, *outs, config=config)
    return outs


def _same(x, y):
    return torch.equal(x.view(torch.int32), y.view(torch.int32)) or \
        bool(torch.all((x.isnan() & y.isnan()) | (x.view(torch.int32) == y.view(torch.int32))))


@settings(max_examples=5, deadline=None)
@given(seed=st.integers(0, 2**31), specials=st.booleans())
def test_a5sim_and_ref_compute_the_mx_cube_contract(seed, specials):
    a, sa, b, sb, bias = _inputs(seed, specials)
    want = mx_math.mmad_mx(a, sa, mx_math.E4M3, b, sb, mx_math.E4M3)
    want_acc = mx_math.mmad_mx(a, sa, mx_math.E4M3, b, sb, mx_math.E4M3, want)
    want_bias = mx_math.mmad_mx(a, sa, mx_math.E4M3, b, sb, mx_math.E4M3, bias)
    for config in (REF_A5, A5SIM):
        out, out_acc, out_bias = _run(config, a, sa, b, sb, bias)
        assert _same(out, want) and _same(out_acc, want_acc) and _same(out_bias, want_bias)


def test_the_reference_golden_of_its_mxfp8_case():
    """The reference's system test: small E4M3 integers, scales 2**-1..2**2, its float64
    golden (exact here: every block sum fits fp32) for base and acc (twice the base)."""
    g = torch.Generator().manual_seed(23)
    a = torch.randint(-2, 3, (M, K), generator=g).to(torch.float8_e4m3fn).view(torch.uint8)
    b = torch.randint(-2, 3, (K, N), generator=g).to(torch.float8_e4m3fn).view(torch.uint8)
    sa = torch.randint(126, 130, (M, K // 32), generator=g).to(torch.uint8)
    sb = torch.randint(126, 130, (K // 32, N), generator=g).to(torch.uint8)
    scale_a = torch.pow(2.0, sa.double() - 127).repeat_interleave(32, 1)
    scale_b = torch.pow(2.0, sb.double() - 127).repeat_interleave(32, 0)
    golden = ((a.view(torch.float8_e4m3fn).double() * scale_a) @ (b.view(torch.float8_e4m3fn).double() * scale_b))
    out, out_acc, _ = _run(A5SIM, a, sa, b, sb, torch.zeros(1, N))
    assert torch.equal(out, golden.float()) and torch.equal(out_acc, 2 * golden.float())


def test_an_mx_matmul_is_refused_on_a2a3_at_the_users_line_naming_a5():
    a, sa, b, sb, bias = _inputs(1)
    with pytest.raises(MemorySpaceError, match=r"Ascend910B \(a2a3\) has no LeftScale memory \(Ascend950 \(a5\) has "
                                               r"it\)") as info:
        _run(RunConfig(platform="a2a3sim"), a, sa, b, sb, bias)
    assert "platform='a5sim'" in info.value.hint and info.value.span.file == __file__


@pl.jit
def mx_e5m2(a: pl.Tensor[[M, K], pl.FP8E5M2], a_scale: pl.Tensor[[M, K // 32], pl.FP8E8M0, pl.MX_A_ZZ],
            b: pl.Tensor[[K, N], pl.FP8E4M3FN], b_scale: pl.Tensor[[K // 32, N], pl.FP8E8M0, pl.MX_B_NN],
            out: pl.Out[pl.Tensor[[M, N], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        lhs = pl.move(pl.load(a, [0, 0], [M, K], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
        ls = pl.move(pl.load(a_scale, [0, 0], [M, K // 32], target_memory=pl.Mem.Mat), target_memory=pl.Mem.LeftScale)
        rhs = pl.move(pl.load(b, [0, 0], [K, N], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
        rs = pl.move(pl.load(b_scale, [0, 0], [K // 32, N], target_memory=pl.Mem.Mat),
                     target_memory=pl.Mem.RightScale)
        pl.store(pl.matmul_mx(lhs, ls, rhs, rs), [0, 0], out)  # MARK-e5m2
    return out


def test_an_e5m2_operand_is_refused_as_the_reference_refuses_it():
    a, sa, b, sb, _ = _inputs(2)
    with pytest.raises(TypeCheckError, match="requires an FP8E4M3FN lhs, but got FP8E5M2") as info:
        mx_e5m2(a.view(torch.float8_e5m2), mx_math.pack_a(sa).view(torch.float8_e8m0fnu), b.view(torch.float8_e4m3fn),
                mx_math.pack_b(sb).view(torch.float8_e8m0fnu), torch.zeros(M, N), config=A5SIM)
    assert info.value.span.line == _line("MARK-e5m2")


def test_the_scale_packings_are_permutations_that_undo():
    x = torch.arange(64 * 4).reshape(64, 4)
    assert torch.equal(mx_math.unpack_a(mx_math.pack_a(x)), x) and not torch.equal(mx_math.pack_a(x), x)
    y = torch.arange(4 * 64).reshape(4, 64)
    assert torch.equal(mx_math.unpack_b(mx_math.pack_b(y)), y) and not torch.equal(mx_math.pack_b(y), y)


@pl.jit
def cast_to_fp8(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        pl.store(pl.cast(pl.load(a, [0, 0], [16, 64]), target_type=pl.FP8E4M3FN), [0, 0], out)  # MARK-cast
    return out


@pl.jit
def add_fp8(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.add(a, a)  # MARK-add
    return out


@pytest.mark.parametrize("platform", ["ref", "a5sim"])
def test_fp8_values_are_moved_not_computed_on(platform):
    """FP8 tensors load, store and feed the MX cube; a conversion into FP8 or vector arithmetic
    on it is refused at the user's line (quantization is the host's, as in the reference)."""
    fp8 = torch.randn(16, 64).to(torch.float8_e4m3fn)
    config = RunConfig(platform=platform, backend_type=BackendType.Ascend950)
    with pytest.raises(TypeCheckError, match="FP32 to FP8E4M3FN") as info:
        cast_to_fp8(torch.randn(16, 64), fp8.clone(), config=config)
    assert info.value.span.line == _line("MARK-cast") and "quantize on the host" in info.value.hint
    with pytest.raises(TypeCheckError, match="got FP8E4M3FN") as info:
        add_fp8(fp8, fp8.clone(), config=config)
    assert info.value.span.line == _line("MARK-add")


@pl.program
class MxProgram:
    """The reference's form: a @pl.program, read when Python defines it (before any config
    names a chip) although only Ascend950 has its scale memories."""

    @pl.function(type=pl.FunctionType.InCore)
    def kernel(self, a: pl.Tensor[[M, K], pl.FP8E4M3FN], a_scale: pl.Tensor[[M, K // 32], pl.FP8E8M0, pl.MX_A_ZZ],
               b: pl.Tensor[[K, N], pl.FP8E4M3FN], b_scale: pl.Tensor[[K // 32, N], pl.FP8E8M0, pl.MX_B_NN],
               out: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        lhs = pl.move(pl.load(a, [0, 0], [M, K], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
        ls = pl.move(pl.load(a_scale, [0, 0], [M, K // 32], target_memory=pl.Mem.Mat),
                     target_memory=pl.Mem.LeftScale)  # MARK-program
        rhs = pl.move(pl.load(b, [0, 0], [K, N], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
        rs = pl.move(pl.load(b_scale, [0, 0], [K // 32, N], target_memory=pl.Mem.Mat),
                     target_memory=pl.Mem.RightScale)
        out = pl.store(pl.matmul_mx(lhs, ls, rhs, rs), [0, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def orchestrator(self, a: pl.Tensor[[M, K], pl.FP8E4M3FN],
                     a_scale: pl.Tensor[[M, K // 32], pl.FP8E8M0, pl.MX_A_ZZ], b: pl.Tensor[[K, N], pl.FP8E4M3FN],
                     b_scale: pl.Tensor[[K // 32, N], pl.FP8E8M0, pl.MX_B_NN],
                     out: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        out = self.kernel(a, a_scale, b, b_scale, out)
        return out


def test_an_mx_program_compiles_for_a5_and_is_refused_for_a2a3():
    import pypto.ir as ir

    a, sa, b, sb, _ = _inputs(4)
    args = [a.view(torch.float8_e4m3fn), mx_math.pack_a(sa).view(torch.float8_e8m0fnu), b.view(torch.float8_e4m3fn),
            mx_math.pack_b(sb).view(torch.float8_e8m0fnu)]
    out = torch.zeros(M, N)
    ir.compile(MxProgram, platform="a5sim", dump_passes=False)(*args, out)
    assert _same(out, mx_math.mmad_mx(a, sa, mx_math.E4M3, b, sb, mx_math.E4M3))
    with pytest.raises(PyptoError, match=r"Ascend910B \(a2a3\) has no LeftScale memory") as info:
        ir.compile(MxProgram, platform="a2a3sim", dump_passes=False)
    assert info.value.span.line == _line("MARK-program") - 1


# ----------------------------------------------------------------------------- windows of the scales


@pl.jit
def mx_bands(a: pl.Tensor[[M, K], pl.FP8E4M3FN], a_scale: pl.Tensor[[M, K // 32], pl.FP8E8M0, pl.MX_A_ZZ],
             b: pl.Tensor[[K, N], pl.FP8E4M3FN], b_scale: pl.Tensor[[K // 32, N], pl.FP8E8M0, pl.MX_B_NN],
             out: pl.Out[pl.Tensor[[M, N], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        rhs = pl.move(pl.load(b, [0, 0], [K, N], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
        rs = pl.move(pl.load(b_scale, [0, 0], [K // 32, N], target_memory=pl.Mem.Mat),
                     target_memory=pl.Mem.RightScale)
        for i in pl.range(M // 16):  # a band of 16 rows of A and its scales' band
            lhs = pl.move(pl.load(a, [i * 16, 0], [16, K], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
            ls = pl.move(pl.load(a_scale, [i * 16, 0], [16, K // 32], target_memory=pl.Mem.Mat),
                         target_memory=pl.Mem.LeftScale)
            pl.store(pl.matmul_mx(lhs, ls, rhs, rs), [i * 16, 0], out)
    return out


@pytest.mark.parametrize("config", [REF_A5, A5SIM], ids=["ref", "a5sim"])
def test_a_band_window_of_the_left_scales_reads_that_bands_scales(config):
    """MX_A_ZZ keeps each 16-row band's scales in its own rows: a kernel that loads A and its
    scales band by band computes the whole MX matmul's bits, on both platforms."""
    a, sa, b, sb, _ = _inputs(6)
    out = torch.zeros(M, N)
    mx_bands(a.view(torch.float8_e4m3fn), mx_math.pack_a(sa).view(torch.float8_e8m0fnu), b.view(torch.float8_e4m3fn),
             mx_math.pack_b(sb).view(torch.float8_e8m0fnu), out, config=config)
    assert _same(out, mx_math.mmad_mx(a, sa, mx_math.E4M3, b, sb, mx_math.E4M3))


_WINDOWS = {  # a window whose packed bytes are not those scales: (statement, the refusal's words)
    "k_half": ("ls = pl.load(a_scale, [0, 0], [M, K // 64], target_memory=pl.Mem.Mat)", "whole 16-row bands"),
    "half_band": ("ls = pl.load(a_scale, [8, 0], [16, K // 32], target_memory=pl.Mem.Mat)", "whole 16-row bands"),
    "b_columns": ("ls = pl.load(b_scale, [0, 0], [K // 32, 32], target_memory=pl.Mem.Mat)", "the whole tensor"),
    "vec": ("ls = pl.load(a_scale, [0, 0], [M, K // 32])", "target_memory=pl.Mem.Mat"),
    "slice": ("ls = pl.load(pl.slice(a_scale, [16, K // 32], [16, 0]), [0, 0], [16, K // 32], "
              "target_memory=pl.Mem.Mat)", "not a pl.MX_A_ZZ MX scale tensor"),
    "reshape": ("ls = pl.load(pl.reshape(b_scale, [N, K // 32]), [0, 0], [N, K // 32], target_memory=pl.Mem.Mat)",
                "not a pl.MX_B_NN MX scale tensor"),
}


@pytest.mark.parametrize("platform", ["ref", "a5sim"])
@pytest.mark.parametrize("case", sorted(_WINDOWS))
def test_a_window_of_packed_scales_is_refused_at_the_users_line(tmp_path, case, platform):
    """A window the packing does not keep whole (part of the K groups, half a band, any part of
    MX_B_NN's column bands, a view) would read other bytes as its scales: the type carries the
    layout, so the load or view is refused where it is written, naming the window that works."""
    from helpers import load_kernel

    statement, words = _WINDOWS[case]
    source = tmp_path / "k.py"
    source.write_text(
        "import pypto.language as pl\n\n\n@pl.jit\n"
        f"def k(a_scale: pl.Tensor[[{M}, {K // 32}], pl.FP8E8M0, pl.MX_A_ZZ],\n"
        f"      b_scale: pl.Tensor[[{K // 32}, {N}], pl.FP8E8M0, pl.MX_B_NN], out: pl.Out[pl.Tensor[[{M}, 4], pl.FP32]]):\n"
        f"    M, K, N = {M}, {K}, {N}\n"
        "    with pl.at(level=pl.Level.CORE_GROUP):\n"
        f"        {statement}\n"
        "    return out\n")
    kernel = load_kernel(source, "k")
    _, sa, _, sb, _ = _inputs(7)
    with pytest.raises(TypeCheckError, match=words) as info:
        kernel(mx_math.pack_a(sa).view(torch.float8_e8m0fnu), mx_math.pack_b(sb).view(torch.float8_e8m0fnu),
               torch.zeros(M, 4), config=RunConfig(platform=platform, backend_type=BackendType.Ascend950))
    assert info.value.span.file == str(source) and info.value.span.line == 9 and info.value.hint


def test_the_scale_layout_is_printed_and_parsed_back():
    from pypto.backend import backend
    from pypto.lang import parse

    text = MxProgram.as_python()
    assert "pl.FP8E8M0, pl.MX_A_ZZ]" in text and "pl.FP8E8M0, pl.MX_B_NN]" in text
    assert parse(text, soc=backend("a5")) == MxProgram
