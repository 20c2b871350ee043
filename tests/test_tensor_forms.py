"""The reference's op forms and operands through the language, on both platforms: the
packed per-row carrier of row_expand_add and its scratch tile, the scratch operands of
sel / transpose, the tensor forms of the arg reductions, comparisons, partial combines,
fills and joins, arange in every dtype it counts in, an FP32 result assembled into a
half-precision tensor, and the refusals naming the user's line."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import pypto.language as pl
from pypto.errors import PyptoError, TypeCheckError
from pypto.ir import nodes as n
from pypto.runtime import RunConfig
from tests.helpers import scope_kernel
from tests.test_roundtrip import exact

PLATFORMS = ("ref", "a2a3sim")
TORCH = {"FP32": torch.float32, "FP16": torch.float16, "INT32": torch.int32, "INT16": torch.int16}


# ----------------------------------------------------------------------------- row_expand_add


@pl.jit
def packed_add(src: pl.Tensor, row_vec: pl.Tensor, out: pl.InOut[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(src, [0, 0], [M, N], valid_shape=[VR, VC])
        v = pl.load(row_vec, [0, 0], [M, LANES], valid_shape=[VR, LANES])
        tmp = pl.tile.create([M, N], dtype=DTYPE, target_memory=pl.Mem.Vec)
        pl.store(pl.tile.row_expand_add(t, v, tmp=tmp), [0, 0], out)
    return out


M, N, VR, VC, LANES, DTYPE = 16, 64, 16, 64, 8, pl.FP32


def _carrier_model(src, vec, vr, vc):
    """dst[i, j] = src[i, j] + vec[i, j % lanes] over the valid region (0 elsewhere)."""
    out = torch.zeros_like(src)
    lanes = vec.shape[1]
    cols = torch.arange(vc) % lanes
    out[:vr, :vc] = src[:vr, :vc] + vec[:vr][:, cols]
    return out


@settings(max_examples=10, deadline=None)
@given(st.sampled_from(["FP32", "FP16", "INT32", "INT16"]), st.integers(1, 16), st.integers(1, 64),
       st.booleans(), st.sampled_from(PLATFORMS))
def test_row_expand_add_carriers_repeat_their_block(dtype, vr, vc, packed, platform):
    global M, N, VR, VC, LANES, DTYPE
    tdt = TORCH[dtype]
    lanes = 32 // torch.tensor([], dtype=tdt).element_size() if packed else 1
    M, N, VR, VC, LANES, DTYPE = 16, 64, vr, vc, lanes, getattr(pl, dtype)
    g = torch.Generator().manual_seed(vr * 97 + vc)
    src = (torch.randint(-50, 50, (16, 64), generator=g)).to(tdt)
    vec = (torch.randint(-9, 9, (16, lanes), generator=g)).to(tdt)
    out = torch.zeros(16, 64, dtype=tdt)
    packed_add(src, vec, out, config=RunConfig(platform=platform))
    assert torch.equal(out, _carrier_model(src, vec, vr, vc))


def test_a_scratch_tile_or_a_broadcast_vector_never_holds_the_result():
    """The vector unit reads them while it writes the result: an in-place op's result
    takes its first operand's buffer, not theirs (here the first lives on)."""
    global M, N, VR, VC, LANES, DTYPE
    M, N, VR, VC, LANES, DTYPE = 16, 64, 16, 64, 8, pl.FP32

    @pl.jit
    def k(src: pl.Tensor, row_vec: pl.Tensor, out: pl.Out[pl.Tensor], again: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(src, [0, 0], [16, 64])
            v = pl.load(row_vec, [0, 0], [16, 1])
            tmp = pl.tile.create([16, 64], dtype=pl.FP32, target_memory=pl.Mem.Vec)
            pl.store(pl.tile.row_expand_add(t, v, tmp=tmp), [0, 0], out)
            pl.store(t, [0, 0], again)
        return out, again

    a, v = torch.randn(16, 64), torch.randn(16, 1)
    fn = k.lower(a, v, torch.zeros(16, 64), torch.zeros(16, 64)).functions[0]
    types = n.symbols(fn)
    call = next(s for s in n.walk_stmts(fn.body) if isinstance(s, n.Assign) and isinstance(s.value, n.Call)
                and s.value.op == "tile.row_expand_add")
    mine = types[call.target].memref.name
    assert mine != types[call.value.args[2].name].memref.name  # tmp
    assert mine != types[call.value.args[1].name].memref.name  # row_vec


@pytest.mark.parametrize("body, words", [
    ("t = pl.load(a, [0, 0], [16, 64])\nv = pl.load(a, [0, 0], [16, 4])\n"
     "pl.store(pl.tile.row_expand_add(t, v), [0, 0], out)", "or [16, 8] (a 32-byte FP32 block per row"),
    ("t = pl.load(a, [0, 0], [16, 64], valid_shape=[8, 64])\nv = pl.load(a, [0, 0], [16, 8])\n"
     "pl.store(pl.tile.row_expand_add(t, v), [0, 0], out)", "src1 valid row extent to match src0/dst"),
])
def test_a_wrong_carrier_is_refused_where_written(tmp_path, body, words):
    k = scope_kernel(tmp_path, body, "a: pl.Tensor, out: pl.Out[pl.Tensor]")
    with pytest.raises(TypeCheckError) as e:
        k.lower(torch.zeros(16, 64), torch.zeros(16, 64))
    assert words in str(e.value) and "k.py:" in str(e.value)


# ----------------------------------------------------------------------------- scratch operands


@pl.jit
def scratch_operands(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor], t_out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        x = pl.load(a, [0, 0], [16, 64])
        y = pl.load(b, [0, 0], [16, 64])
        tmp = pl.tile.create([1, 32], dtype=pl.UINT8, target_memory=pl.Mem.Vec)
        mask = pl.tile.cmp(x, y, cmp_type=4)
        pl.store(pl.tile.sel(mask, x, y, tmp), [0, 0], out)
        sq = pl.load(a, [0, 0], [16, 16])
        scratch = pl.tile.create([16, 16], dtype=pl.FP32, target_memory=pl.Mem.Vec)
        pl.store(pl.transpose(sq, 0, 1, tmp_tile=scratch), [0, 0], t_out)
    return out, t_out


@pytest.mark.parametrize("platform", PLATFORMS)
def test_sel_and_transpose_take_their_scratch_tiles(platform):
    a, b = torch.randn(16, 64), torch.randn(16, 64)
    out, t_out = torch.zeros(16, 64), torch.zeros(16, 16)
    scratch_operands(a, b, out, t_out, config=RunConfig(platform=platform))
    assert torch.equal(out, torch.maximum(a, b))
    assert torch.equal(t_out, a[:, :16].T)
    exact(scratch_operands.specialize(a, b, out, t_out))


# ----------------------------------------------------------------------------- tensor forms


@pl.jit
def tensor_forms(a: pl.Tensor, b: pl.Tensor, amax: pl.Out[pl.Tensor], cmin: pl.Out[pl.Tensor],
                 gt: pl.Out[pl.Tensor], le: pl.Out[pl.Tensor], parts: pl.Out[pl.Tensor], grown: pl.Out[pl.Tensor],
                 joined: pl.Out[pl.Tensor], bits: pl.Out[pl.Tensor], filled: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        amax = pl.assemble(amax, pl.row_argmax(a), [0, 0])
        cmin = pl.assemble(cmin, pl.col_argmin(a), [0, 0])
        gt = pl.assemble(gt, pl.cmp(a, b, cmp_type=4), [0, 0])
        le = pl.assemble(le, pl.cmp(a, 0.25, cmp_type=3), [0, 0])
        parts = pl.assemble(parts, pl.part_max(pl.part_add(a, b), pl.part_mul(a, b)), [0, 0])
        grown = pl.assemble(grown, pl.fillpad_expand(a, [24, 64], pad_value=pl.PadValue.min), [0, 0])
        joined = pl.assemble(joined, pl.concat(a, b), [0, 0])
        bits = pl.assemble(bits, pl.reinterpret_view(a, pl.INT32), [0, 0])
        filled = pl.assemble(filled, pl.expands(a, 1.5), [0, 0])
    return amax, cmin, gt, le, parts, grown, joined, bits, filled


@settings(max_examples=6, deadline=None)
@given(st.integers(0, 2**31 - 1), st.sampled_from(PLATFORMS))
def test_tensor_forms_are_their_tile_ops_on_the_whole_tensor(seed, platform):
    g = torch.Generator().manual_seed(seed)
    a = torch.randint(-4, 4, (16, 64), generator=g).float() / 4  # ties, so "the first extreme" matters
    b = torch.randn(16, 64, generator=g)
    outs = (torch.zeros(16, 1, dtype=torch.int32), torch.zeros(1, 64, dtype=torch.int32), torch.zeros(16, 64),
            torch.zeros(16, 64), torch.zeros(16, 64), torch.zeros(24, 64), torch.zeros(16, 128),
            torch.zeros(16, 64, dtype=torch.int32), torch.zeros(16, 64))
    tensor_forms(a, b, *outs, config=RunConfig(platform=platform))
    amax, cmin, gt, le, parts, grown, joined, bits, filled = outs
    assert torch.equal(amax, a.argmax(1, keepdim=True).int())
    assert torch.equal(cmin, a.argmin(0, keepdim=True).int())
    assert torch.equal(gt, (a > b).float()) and torch.equal(le, (a <= 0.25).float())
    assert torch.equal(parts, torch.maximum(a + b, a * b))
    assert torch.equal(grown, torch.cat([a, torch.full((8, 64), float("-inf"))]))
    assert torch.equal(joined, torch.cat([a, b], 1)) and torch.equal(bits, a.view(torch.int32))
    assert torch.equal(filled, torch.full((16, 64), 1.5))


def test_tensor_forms_print_and_parse_back():
    a, b = torch.randn(16, 64), torch.randn(16, 64)
    outs = (torch.zeros(16, 1, dtype=torch.int32), torch.zeros(1, 64, dtype=torch.int32), torch.zeros(16, 64),
            torch.zeros(16, 64), torch.zeros(16, 64), torch.zeros(24, 64), torch.zeros(16, 128),
            torch.zeros(16, 64, dtype=torch.int32), torch.zeros(16, 64))
    text = exact(tensor_forms.specialize(a, b, *outs))
    for name in ("row_argmax", "cmp", "cmps", "part_max", "fillpad_expand", "concat", "reinterpret_view", "expands"):
        assert f"pl.tensor.{name}(" in text
    lowered = tensor_forms.lower(a, b, *outs, config=RunConfig(verification_level="ROUNDTRIP")).as_python()
    assert "pl.tile.sel(" in lowered and "pl.tile.row_argmax(" in lowered


# ----------------------------------------------------------------------------- arange


@pl.jit
def sequences(u32: pl.Out[pl.Tensor], u16: pl.Out[pl.Tensor], i32: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        pl.store(pl.tile.arange(3, [1, 64], dtype=pl.UINT32, descending=True), [0, 0], u32)
        pl.store(pl.tile.arange(65530, [1, 64], dtype=pl.UINT16), [0, 0], u16)
    with pl.at(level=pl.Level.CORE_GROUP):
        i32 = pl.assemble(i32, pl.tensor.arange(-5, [1, 64], dtype=pl.INT32), [0, 0])
    return u32, u16, i32


@pytest.mark.parametrize("platform", PLATFORMS)
def test_arange_counts_in_its_dtype_and_wraps_at_its_width(platform):
    u32, u16 = torch.zeros(1, 64, dtype=torch.uint32), torch.zeros(1, 64, dtype=torch.uint16)
    i32 = torch.zeros(1, 64, dtype=torch.int32)
    sequences(u32, u16, i32, config=RunConfig(platform=platform))
    k = torch.arange(64).reshape(1, 64)
    assert torch.equal(u32.long(), (3 - k) % 2**32)
    assert torch.equal(u16.long(), (65530 + k) % 2**16)
    assert torch.equal(i32.long(), k - 5)


# ----------------------------------------------------------------------------- dtypes


@pl.jit
def half_accumulation(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        c = pl.assemble(c, pl.full([16, 16], dtype=pl.BF16, value=0.0), [0, 0])
    for ks in pl.parallel(0, 2):
        with pl.at(level=pl.Level.CORE_GROUP):
            partial = pl.matmul(a[:, ks * 16: ks * 16 + 16], b[ks * 16: ks * 16 + 16, :], out_dtype=pl.FP32)
            c = pl.assemble(c, partial, [0, 0], atomic=pl.AtomicType.Add)
    return c


@pytest.mark.parametrize("platform", PLATFORMS)
def test_an_fp32_result_adds_into_a_bf16_tensor_through_the_fixpipe(platform):
    g = torch.Generator().manual_seed(5)
    a, b = torch.randn(16, 32, generator=g).bfloat16(), torch.randn(32, 16, generator=g).bfloat16()
    c = torch.zeros(16, 16, dtype=torch.bfloat16)
    half_accumulation(a, b, c, config=RunConfig(platform=platform))
    halves = [(a[:, k:k + 16].float() @ b[k:k + 16].float()).bfloat16() for k in (0, 16)]  # each rounded once
    assert torch.equal(c, halves[0] + halves[1])


def test_a_vector_tile_of_another_dtype_is_not_converted(tmp_path):
    k = scope_kernel(tmp_path, "out = pl.assemble(out, pl.add(a, a), [0, 0])", "a: pl.Tensor, out: pl.Out[pl.Tensor]")
    with pytest.raises(PyptoError, match="dtype to match") as e:
        k(torch.zeros(16, 64), torch.zeros(16, 64, dtype=torch.bfloat16), config=RunConfig(platform="ref"))
    assert "k.py:" in str(e.value)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_an_integral_float_constant_is_an_integer_tiles_scalar(tmp_path, platform):
    k = scope_kernel(tmp_path, "out[:] = pl.tensor.subs(a, pl.const(2.0, pl.FP32))",
                     "a: pl.Tensor, out: pl.Out[pl.Tensor]")
    a, out = torch.arange(-64, 64, dtype=torch.int16).reshape(2, 64), torch.zeros(2, 64, dtype=torch.int16)
    k(a, out, config=RunConfig(platform=platform))
    assert torch.equal(out, a - 2)


def test_a_fraction_for_an_integer_tile_is_refused(tmp_path):
    k = scope_kernel(tmp_path, "out[:] = pl.tensor.subs(a, 2.5)", "a: pl.Tensor, out: pl.Out[pl.Tensor]")
    with pytest.raises(TypeCheckError, match="an integer scalar for a INT16 tile, but got 2.5"):
        k.lower(torch.zeros(2, 64, dtype=torch.int16), torch.zeros(2, 64, dtype=torch.int16))


@pytest.mark.parametrize("platform", PLATFORMS)
def test_not_flips_every_bit_of_an_unsigned_tile(tmp_path, platform):
    k = scope_kernel(tmp_path, "pl.store(pl.not_(pl.load(a, [0, 0], [2, 64])), [0, 0], out)",
                     "a: pl.Tensor, out: pl.Out[pl.Tensor]")
    a = torch.arange(0, 65536, 512, dtype=torch.int32).to(torch.uint16).reshape(2, 64)
    out = torch.zeros(2, 64, dtype=torch.uint16)
    k(a, out, config=RunConfig(platform=platform))
    assert torch.equal(out.int(), 65535 - a.int())


@pytest.mark.parametrize("platform", PLATFORMS)
def test_fillpad_inplace_fills_past_the_valid_region(tmp_path, platform):
    k = scope_kernel(tmp_path, "t = pl.load(a, [0, 0], [16, 64], valid_shape=[12, 64])\n"
                               "pl.store(pl.tile.fillpad_inplace(t, pad_value=pl.PadValue.max), [0, 0], out)",
                     "a: pl.Tensor, out: pl.Out[pl.Tensor]")
    a, out = torch.randn(12, 64), torch.zeros(16, 64)
    k(a, out, config=RunConfig(platform=platform))
    assert torch.equal(out, torch.cat([a, torch.full((4, 64), float("inf"))]))


# ----------------------------------------------------------------------------- mgather into Mat


@pl.jit
def gathered_rows(mem: pl.Tensor, idx: pl.Tensor, eye: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        r = pl.tile.mgather(mem, idx, coalesce="row", gather_oob="clamp", target_memory=pl.Mem.Mat,
                            valid_shape=[32, 30])
        e = pl.load(eye, [0, 0], [32, 32], target_memory=pl.Mem.Mat)
        pl.store(pl.matmul(pl.move(e, target_memory=pl.Mem.Left), pl.move(r, target_memory=pl.Mem.Right)), [0, 0], out)
    return out


@pl.jit
def gathered_elements(mem: pl.Tensor, idx: pl.Tensor, scratch: pl.Tensor, eye: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        r = pl.tile.mgather(mem, idx, coalesce="elem", gather_oob="wrap", target_memory=pl.Mem.Mat, scratch=scratch)
        e = pl.load(eye, [0, 0], [32, 32], target_memory=pl.Mem.Mat)
        pl.store(pl.matmul(pl.move(e, target_memory=pl.Mem.Left), pl.move(r, target_memory=pl.Mem.Right)), [0, 0], out)
    return out


@pytest.mark.parametrize("platform", PLATFORMS)
def test_an_index_tensor_gathers_into_l1(platform):
    """Rows (clamped past the table) and elements (indices read as unsigned offsets,
    wrapped) into Mat, read back through an identity matmul; past valid_shape, zeros."""
    mem = torch.arange(64 * 32).reshape(64, 32).remainder(53).half()
    idx = torch.tensor([[(i * 29 + 7) % 64 + (100 if i == 3 else 0) for i in range(32)]], dtype=torch.int32)
    eye, out = torch.eye(32).half(), torch.zeros(32, 32)
    gathered_rows(mem, idx, eye, out, config=RunConfig(platform=platform))
    want = torch.zeros(32, 32)
    want[:, :30] = mem[idx.reshape(-1).clamp(max=63).long()].float()[:, :30]
    assert torch.equal(out, want)
    flat = (torch.arange(32 * 32, dtype=torch.int32) * 7 - 50).reshape(32, 32)
    out = torch.zeros(32, 32)
    gathered_elements(mem.reshape(-1), flat, torch.zeros(32 * 32).half(), eye, out, config=RunConfig(platform=platform))
    assert torch.equal(out, mem.reshape(-1)[(flat.long() & 0xFFFFFFFF) % (64 * 32)].float())


@pytest.mark.parametrize("body, words", [
    ("r = pl.tile.mgather(m, i, coalesce='elem', target_memory=pl.Mem.Mat)", "a scratch tensor for the element gather"),
    ("r = pl.tile.mgather(m, i, coalesce='elem', target_memory=pl.Mem.Mat, scratch=s)",
     "a FP16 scratch tensor of at least 1024 elements"),
    ("r = pl.tile.mgather(m, pl.load(i, [0, 0], [32, 32]), coalesce='elem', scratch=m)", "no scratch for a Vec gather"),
])
def test_mgather_forms_are_refused_where_written(tmp_path, body, words):
    k = scope_kernel(tmp_path, body, "m: pl.Tensor, i: pl.Tensor, s: pl.Tensor, out: pl.Out[pl.Tensor]")
    with pytest.raises(TypeCheckError) as e:
        k.lower(torch.zeros(2048).half(), torch.zeros(32, 32, dtype=torch.int32), torch.zeros(16).half(),
                torch.zeros(1))
    assert words in str(e.value) and "k.py:" in str(e.value)


# ----------------------------------------------------------------------------- selects and scalar forms

MC = 32


@pl.jit
def selects(src: pl.Tensor, mask: pl.Tensor, out: pl.Out[pl.Tensor], from_cmp: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        s = pl.load(src, [0, 0], [2, 16])
        m = pl.load(mask, [0, 0], [2, MC])
        tmp = pl.tile.create([1, 8], dtype=pl.FP32, target_memory=pl.Mem.Vec)
        pl.store(pl.tile.sels(m, s, tmp, -3.0), [0, 0], out)
        packed = pl.tile.cmps(s, 0.0, cmp_type=4)
        pl.store(pl.tile.sels(packed, s, tmp, -3), [0, 0], from_cmp)  # (-3 joins the FP32 src, not the UINT8 mask)
    return out, from_cmp


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("carrier", [torch.int16, torch.int32, torch.uint8])
def test_sels_reads_any_integer_carrier_as_packed_bits(platform, carrier):
    global MC
    src = torch.randn(2, 16)
    bits = torch.tensor([0xAA, 0x0F, 0x31, 0xF0], dtype=torch.uint8)  # two bytes per row hold 16 columns
    raw = torch.zeros(2, 32, dtype=torch.uint8)
    raw[:, :2] = bits.reshape(2, 2)
    mask = raw.view(carrier).contiguous()  # 32 bytes a row, whatever the element
    MC = mask.shape[1]
    out, from_cmp = torch.zeros(2, 16), torch.zeros(2, 16)
    selects(src, mask, out, from_cmp, config=RunConfig(platform=platform))
    pred = torch.tensor([[(int(b) >> j) & 1 for b in row for j in range(8)] for row in bits.reshape(2, 2)],
                        dtype=torch.bool)
    assert torch.equal(out, torch.where(pred, src, torch.tensor(-3.0)))
    assert torch.equal(from_cmp, torch.where(src > 0, src, torch.tensor(-3.0)))


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_levels_op_with_a_scalar_rhs_is_its_scalar_form(tmp_path, platform):
    k = scope_kernel(tmp_path, "out = pl.assemble(out, pl.tensor.maximum(pl.tensor.mul(a, 3.0), 2.5), [0, 0])\n"
                               "pl.store(pl.tile.sub(pl.load(a, [0, 0], [4, 64]), 1.0), [0, 0], t_out)",
                     "a: pl.Tensor, out: pl.Out[pl.Tensor], t_out: pl.Out[pl.Tensor]")
    a, out, t_out = torch.randn(4, 64), torch.zeros(4, 64), torch.zeros(4, 64)
    k(a, out, t_out, config=RunConfig(platform=platform))
    assert torch.equal(out, torch.maximum(a * 3.0, torch.tensor(2.5))) and torch.equal(t_out, a - 1.0)


# ----------------------------------------------------------------------------- gather along any axis

GSHAPE, GIDX, GDIM = (4, 6, 8), (4, 3, 8), 1


@pl.jit
def gather_along(inp: pl.Tensor, idx: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out = pl.assemble(out, pl.tensor.gather(inp, dim=GDIM, index=idx), [0, 0, 0])
    return out


@settings(max_examples=12, deadline=None)
@given(st.integers(-3, 2), st.integers(1, 4), st.integers(0, 2**31 - 1), st.sampled_from(PLATFORMS))
def test_gather_along_any_axis_is_torch_gather(dim, picks, seed, platform):
    global GSHAPE, GIDX, GDIM
    GSHAPE, GDIM = (4, 6, 8), dim
    d = dim % 3
    GIDX = tuple(picks if k == d else (e if k == 2 else e - 1) for k, e in enumerate(GSHAPE))
    g = torch.Generator().manual_seed(seed)
    inp = torch.randn(GSHAPE, generator=g)
    idx = torch.randint(0, GSHAPE[d], GIDX, generator=g, dtype=torch.int32)
    out = torch.zeros(GIDX)
    gather_along(inp, idx, out, config=RunConfig(platform=platform))
    assert torch.equal(out, torch.gather(inp[tuple(slice(0, e) if k != d else slice(None)
                                                   for k, e in enumerate(GIDX))], d, idx.long()))
