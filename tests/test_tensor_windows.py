"""Tensor code inside pl.at is computed window by window: slices of computed tensors,
reductions that do not fit (folded) and their broadcasts, tensors carried through loops,
and the tensor-level accumulate pattern — on the interpreter and the simulator alike."""

import re

import pytest
import torch
from helpers import compile_case
from hypothesis import given, reject

import pypto.language as pl
from pypto.errors import MemorySpaceError, UnsupportedSyntaxError
from pypto.fuzz import strategies as ps
from pypto.fuzz.windows import cube_programs, window_programs
from pypto.runtime import RunConfig
from pypto.sim.reference import interpreter

PLATFORMS = ("ref", "a2a3sim")


def run(kernel, *args, platform, planner="PYPTO"):
    outs = [a.clone() for a in args]
    kernel(*outs, config=RunConfig(platform=platform, memory_planner=planner, disabled_diagnostics=["PH001"],
                                   verification_level="ROUNDTRIP"))
    return outs[-1]


# ----------------------------------------------------------------------------- slices of computed tensors


@pl.jit
def slice_rows(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        e = pl.exp(a)
        out[0:4, :] = e[4:8, :]
    return out


@pl.jit
def slice_call(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        e = pl.exp(a)
        out[0:4, :] = pl.slice(e, [4, 64], [4, 0])
    return out


@pl.jit
def slice_same_rows(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        e = pl.exp(a)
        out[4:8, :] = e[4:8, :]
    return out


@pl.jit
def slice_then_compute(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        e = pl.exp(a)
        f = e[4:8, :]
        out[0:4, :] = pl.add(f, f)
    return out


@pl.jit
def slice_of_slice_columns(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        e = pl.mul(pl.abs(a), a)
        f = e[2:8, 16:64]
        out[1:4, 0:16] = f[3:6, 8:24]
    return out


@pl.jit
def slice_of_reduction(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        m = pl.row_max(pl.exp(a))
        out[0:3, 0:1] = m[5:8, :]
    return out


def _expected(kind, a):
    out = ps.sentinel(a.shape)
    e = torch.exp(a)
    if kind in (slice_rows, slice_call):
        out[0:4] = e[4:8]
    elif kind is slice_same_rows:
        out[4:8] = e[4:8]
    elif kind is slice_then_compute:
        out[0:4] = e[4:8] + e[4:8]
    elif kind is slice_of_slice_columns:
        out[1:4, 0:16] = (a.abs() * a)[2:8, 16:64][3:6, 8:24]
    else:
        out[0:3, 0:1] = e.max(dim=1, keepdim=True).values[5:8]
    return out


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("kernel", [slice_rows, slice_call, slice_same_rows, slice_then_compute,
                                    slice_of_slice_columns, slice_of_reduction], ids=lambda k: k.__name__)
def test_a_slice_of_a_computed_tensor_computes_the_slice(kernel, platform):
    a = torch.randn(8, 64)
    got = run(kernel, a, ps.sentinel((8, 64)), platform=platform)
    assert ps.bits_equal(got, _expected(kernel, a))


def test_only_the_slice_is_computed():
    a = torch.randn(8, 64)
    text = slice_rows.lower(a, torch.zeros(8, 64)).as_python()
    assert "pl.tile.load(a, [4, 0], [4, 64]" in text and "pl.Tile[[8, 64]" not in text


@pl.jit
def wide_slice_sum(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        e = pl.exp(pl.add(a, a))
        out[0:512, :] = e[1024:1536, :]
    return out


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_slice_of_a_tensor_larger_than_vec_is_blocked(platform):
    a = torch.randn(2048, 256)  # 2 MiB: no whole tile fits
    got = run(wide_slice_sum, a, ps.sentinel((512, 256)), platform=platform)
    assert ps.bits_equal(got, torch.exp(a + a)[1024:1536])


@pl.jit
def slice_of_matmul(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        c = pl.matmul(a, b)
        out[:, :] = c[16:48, 32:64]
    return out


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_slice_of_a_matmul_multiplies_only_its_rows_and_columns(platform):
    a, b = torch.randn(64, 128).half(), torch.randn(128, 96).half()
    got = run(slice_of_matmul, a, b, torch.zeros(32, 32), platform=platform)
    torch.testing.assert_close(got, (a.float() @ b.float())[16:48, 32:64], rtol=1e-3, atol=1e-3)
    text = slice_of_matmul.lower(a, b, torch.zeros(32, 32)).as_python()
    assert "pl.tile.load(a, [16, 0], [32, 128]" in text and "pl.tile.load(b, [0, 32], [128, 32]" in text


# ----------------------------------------------------------------------------- reductions past Vec


@pl.jit
def center_columns(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.col_expand_sub(a, pl.col_max(a))
    return out


@pl.jit
def center_rows(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.row_expand_sub(a, pl.row_min(a))
    return out


@pl.jit
def col_min_of(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.col_min(a)
    return out


@pl.jit
def row_max_of(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.row_max(pl.exp(a))
    return out


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("planner", ["PYPTO", "PTOAS"])
def test_a_broadcast_of_a_column_reduction_past_vec_is_computed_once_then_blocked(platform, planner):
    a = torch.randn(2048, 128)  # 1 MiB
    got = run(center_columns, a, ps.sentinel(a.shape), platform=platform, planner=planner)
    assert ps.bits_equal(got, a - a.max(dim=0, keepdim=True).values)
    text = center_columns.lower(a, a).as_python()
    assert text.count("pl.tile.col_max(") == 2 and "pl.tile.maximum(" in text  # folded once, before the blocks


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("shape", [(4, 65536), (3, 40000)])
def test_rows_too_wide_for_vec_fold_their_reduction_over_column_blocks(platform, shape):
    a = torch.randn(shape)
    assert ps.bits_equal(run(center_rows, a, ps.sentinel(shape), platform=platform),
                         a - a.min(dim=1, keepdim=True).values)
    assert ps.bits_equal(run(row_max_of, a, ps.sentinel((shape[0], 1)), platform=platform),
                         torch.exp(a).max(dim=1, keepdim=True).values)


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("shape", [(3, 20000), (5, 65536), (1, 100000)])
def test_a_column_reduction_too_wide_for_vec_is_split_into_column_blocks(platform, shape):
    a = torch.randn(shape)
    got = run(col_min_of, a, ps.sentinel((1, shape[1])), platform=platform)
    assert ps.bits_equal(got, a.min(dim=0, keepdim=True).values)


def test_a_row_that_can_never_fit_says_what_it_needs():
    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            out[:] = pl.reshape(pl.exp(a), [1, 65536 * 4])  # a reshape reads its whole operand
        return out

    with pytest.raises(MemorySpaceError) as info:
        k.lower(torch.randn(4, 65536), torch.zeros(1, 65536 * 4))
    message = str(info.value)
    assert "needs" in message and "more than its 188416 B" in message and "k(a" not in message
    assert info.value.span is not None and "pl.reshape" in info.value.span.source_line()


# ----------------------------------------------------------------------------- carried tensors


@pl.jit
def carried_sum(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.add(a, a)
        for i in pl.range(3):
            t = pl.add(t, a)
        out[:] = pl.mul(t, t)
    return out


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("rows", [64, 2048])
def test_a_tensor_carried_through_a_loop_becomes_a_carried_tile_blocked_when_large(platform, rows):
    a = torch.randn(rows, 128)
    t = a + a
    for _ in range(3):
        t = t + a
    assert ps.bits_equal(run(carried_sum, a, ps.sentinel(a.shape), platform=platform), t * t)


def test_a_carried_tensor_that_fits_is_one_carried_tile():
    a = torch.randn(64, 128)
    text = carried_sum.lower(a, a).as_python()
    assert "pl.range(3, init_values=(" in text and "pl.range(0, 64" not in text


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_loop_that_stores_carries_its_tensor_whole(platform):
    a = torch.randn(80, 128)
    want = ps.sentinel((80, 128))
    want[:64] = a[:64] + 1.0
    t = torch.exp(a[64:80])
    for _ in range(4):
        t = torch.maximum(t, a[64:80])
    want[64:80] = t

    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.exp(a[64:80, :])
            for i in pl.range(4):
                t = pl.maximum(t, a[64:80, :])
                out[i * 16:(i + 1) * 16, :] = pl.adds(a[i * 16:(i + 1) * 16, :], 1.0)
            out[64:80, :] = t
        return out

    assert ps.bits_equal(run(k, a, ps.sentinel((80, 128)), platform=platform), want)
    assert "pl.range(4, init_values=(" in k.lower(a, a).as_python()


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_reduction_of_a_window_already_on_chip_reads_it_whole(platform):
    # s is on chip whole before row_max needs it (a storing loop carries what reads it), so the
    # reduction reads that tile rather than folding over blocks it would compute again
    a0, a1 = torch.randn(1024, 128), torch.randn(1024, 128)
    s = (a0 + a1)[4:177, 7:98]
    t = s + s.amax(dim=1, keepdim=True)
    want = ps.sentinel((1024, 128))
    for i in range(2):
        t = t + t
        want[i * 173:(i + 1) * 173, 0:91] = t

    @pl.jit
    def k(a0: pl.Tensor, a1: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            x = pl.add(a0, a1)
            s = x[4:177, 7:98]
            r = pl.row_expand_add(s, pl.row_max(s))
            for i in pl.range(2):
                r = pl.add(r, r)
                out[i * 173:(i + 1) * 173, 0:91] = r
        return out

    assert ps.bits_equal(run(k, a0, a1, ps.sentinel((1024, 128)), platform=platform), want)


@pytest.mark.parametrize("iterations", [0, 2])
@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_loop_whose_initial_tensor_is_also_read_in_its_body_plans_room_for_the_copy(platform, iterations):
    # a's block is the loop's initial value and is read again inside it, so the chain needs a
    # copy of its own beside it; the plan counts it (it used to fail later, in the allocator)
    a = torch.randn(1024, 128)
    c = a + a.amax(dim=0, keepdim=True)
    t = a.clone()
    for _ in range(iterations):
        t = t + c

    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            c = pl.col_expand_add(a, pl.col_max(a))
            for i in pl.range(iterations):
                a = pl.add(a, c)
            out[:] = a
        return out

    assert ps.bits_equal(run(k, a, ps.sentinel((1024, 128)), platform=platform), t)


# ----------------------------------------------------------------------------- the accumulate pattern

MT, NT, KT, KB = 64, 64, 64, 4


@pl.jit
def k_blocked(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        acc = pl.create_tensor([MT, NT], dtype=pl.FP32)
        for kb in pl.range(KB):
            if kb == 0:
                acc = pl.matmul(a[0:MT, kb * KT:(kb + 1) * KT], b[kb * KT:(kb + 1) * KT, 0:NT])
            else:
                acc = pl.matmul_acc(acc, a[0:MT, kb * KT:(kb + 1) * KT], b[kb * KT:(kb + 1) * KT, 0:NT])
        c[0:MT, 0:NT] = acc
    return c


@pl.jit
def k_from_zero(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        acc = pl.create_tensor([MT, NT], dtype=pl.FP32)
        for kb in pl.range(KB):
            k0 = kb * KT
            acc = pl.matmul_acc(acc, a[:, k0:k0 + KT], b[k0:k0 + KT, :])
        c[:] = acc
    return c


@pl.jit
def k_peeled(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        acc = pl.matmul(a[:, 0:KT], b[0:KT, :], out_dtype=pl.FP32)
        for k in pl.range(1, KB):
            k0 = k * KT
            acc = pl.matmul_acc(acc, a[:, k0:k0 + KT], b[k0:k0 + KT, :])
        c[:] = acc
    return c


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("kernel", [k_blocked, k_from_zero, k_peeled], ids=lambda k: k.__name__)
def test_the_tensor_level_accumulate_pattern_runs_on_the_cube(kernel, platform):
    a, b = torch.randn(MT, KT * KB).half(), torch.randn(KT * KB, NT).half()
    got = run(kernel, a, b, ps.sentinel((MT, NT)), platform=platform)
    torch.testing.assert_close(got, a.float() @ b.float(), rtol=1e-3, atol=1e-2)
    if platform == "a2a3sim":  # the same bits as the interpreter
        assert ps.bits_equal(got, run(kernel, a, b, ps.sentinel((MT, NT)), platform="ref"))


def test_the_accumulator_lives_in_acc_across_the_loop():
    a, b = torch.randn(MT, KT * KB).half(), torch.randn(KT * KB, NT).half()
    text = k_blocked.lower(a, b, torch.zeros(MT, NT)).as_python()
    assert "pl.tile.create([64, 64], dtype=pl.FP32, target_memory=pl.Mem.Acc)" in text
    assert "pl.tile.matmul_acc(" in text and text.count("pl.tile.store(") == 1


def test_a_vector_value_feeds_the_cube_through_gm():
    @pl.jit
    def k(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            c[:] = pl.matmul(pl.exp(a), b)
        return c

    a, b = (torch.randn(16, 16) * 0.1).half(), torch.randn(16, 16).half()
    got = [run(k, a, b, torch.zeros(16, 16), platform=p) for p in ("ref", "a2a3sim")]
    assert ps.bits_equal(*got)
    torch.testing.assert_close(got[1], torch.exp(a.float()).half().float() @ b.float(), rtol=1e-2, atol=1e-2)
    assert "exp_gm = pl.tensor.create" in k.compile(a, b, torch.zeros(16, 16)).lowered.as_python()


# ----------------------------------------------------------------------------- program order


def test_a_value_read_before_a_store_is_not_computed_after_it():
    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor], out2: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            e = pl.exp(out)  # reads out as it comes in
            out[:] = a
            out2[:] = e
        return out

    with pytest.raises(UnsupportedSyntaxError, match="read here before it is stored into") as info:
        k.lower(torch.randn(16, 64), torch.randn(16, 64), torch.zeros(16, 64))
    assert "pl.exp(out)" in info.value.span.source_line()


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_sink_that_reads_what_it_stores_is_computed_whole(platform):
    @pl.jit
    def k(out: pl.InOut[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            out[1:16, :] = pl.adds(out[0:15, :], 1.0)
        return out

    x = torch.randn(16, 64)
    want = x.clone()
    want[1:16] = x[0:15] + 1.0
    assert ps.bits_equal(run(k, x, platform=platform), want)


# ----------------------------------------------------------------------------- the property


def _as_written(case):
    """The Out tensors of the kernel as written, interpreted before any pass."""
    args = case.args()
    interpreter.run(case.program, case.entry, args)
    return args[len(case.inputs):]


@given(window_programs())
def test_property_windows_of_tensor_code_are_bit_exact_on_both_platforms(case):
    assert ps.bits_equal(_as_written(case)[0], case.expected[0]), f"as written: {case.recipe}"
    for platform in PLATFORMS:
        args = case.args()
        try:
            compiled = compile_case(case, platform)
        except MemorySpaceError as err:
            # refusals the rules say: an in-place update that reads other windows, or a tensor
            # a storing loop carries (kept whole), too large to compute whole
            whole_only = ("in place" in case.recipe and "at other windows than it stores" in err.message) or (
                "for " in case.recipe and "stays whole on chip" in err.message)
            assert whole_only, f"{case.recipe}: {err.message}"
            reject()
        compiled.run(*args)
        got = args[len(case.inputs):]
        assert ps.bits_equal(got[0], case.expected[0]), f"{platform}: {case.recipe}"


@given(cube_programs())
def test_property_tensor_matmuls_give_the_bits_of_the_kernel_as_written(case):
    written = _as_written(case)[0]
    assert ps.within_bounds(written, case.expected[0], case.bounds[0]), case.recipe
    for platform in PLATFORMS:
        args = case.args()
        compile_case(case, platform).run(*args)
        assert ps.bits_equal(args[len(case.inputs)], written), f"{platform}: {case.recipe}"


# ----------------------------------------------------------------------------- blocks that do not divide


@pl.jit
def exp_of(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.exp(a)
    return out


def _tile_rows(text: str) -> list[int]:
    return [int(x) for x in re.findall(r"pl\.Tile\[\[(\d+), ", text)]


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("shape", [(8191, 64), (1021, 7), (13, 65537)])
def test_an_axis_no_block_divides_gets_large_blocks_and_a_shorter_last_one(platform, shape):
    a = torch.randn(shape)
    assert ps.bits_equal(run(exp_of, a, ps.sentinel(shape), platform=platform), torch.exp(a))
    if shape[1] <= 64:
        assert max(_tile_rows(exp_of.lower(a, a).as_python())) >= 64  # not one row at a time


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_fold_over_an_axis_no_block_divides_ends_with_a_shorter_block(platform):
    a = torch.randn(4, 65521)  # prime columns
    assert ps.bits_equal(run(row_max_of, a, ps.sentinel((4, 1)), platform=platform),
                         torch.exp(a).max(dim=1, keepdim=True).values)
    text = row_max_of.lower(a, torch.zeros(4, 1)).as_python()
    assert "pl.range(1, " not in text and text.count("pl.tile.row_max(") <= 4


@pl.jit
def matmul_of(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        c[:] = pl.matmul(a, b)
    return c


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("mkn", [(131, 64, 64), (64, 64, 257), (64, 1031, 64)])
def test_matmul_blocks_that_do_not_divide_leave_a_remainder_block(platform, mkn):
    m, k, nn = mkn
    a, b = torch.randn(m, k).half(), torch.randn(k, nn).half()
    got = run(matmul_of, a, b, ps.sentinel((m, nn)), platform=platform)
    torch.testing.assert_close(got, a.float() @ b.float(), rtol=1e-3, atol=1e-2)
    if platform == "a2a3sim":
        assert ps.bits_equal(got, run(matmul_of, a, b, ps.sentinel((m, nn)), platform="ref"))
    text = matmul_of.lower(a, b, torch.zeros(m, nn)).as_python()
    assert text.count("pl.tile.matmul_acc(") + text.count("pl.tile.matmul(") <= 8  # a few blocks, not one per row


@pytest.mark.parametrize("mkn", [(130, 512, 300), (130, 1000, 300), (130, 512, 256)])
def test_a_long_k_with_tails_on_m_and_n_keeps_one_operand_in_each_l0_buffer(mkn):
    """A tail block reads the same K slice of b as the first block: its move into Right is
    made again, not kept from the first block across the other's K loop (two full Right
    tiles where one fits)."""
    m, k, nn = mkn
    a, b = torch.randn(m, k).half(), torch.randn(k, nn).half()
    got = run(matmul_of, a, b, ps.sentinel((m, nn)), platform="a2a3sim")
    torch.testing.assert_close(got, a.float() @ b.float(), rtol=1e-3, atol=2e-2)
    assert ps.bits_equal(got, run(matmul_of, a, b, ps.sentinel((m, nn)), platform="ref"))


@pl.jit
def two_halves_of_k(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        acc = pl.matmul(a[:, 0:500], b[0:500, :])
        acc = pl.matmul_acc(acc, a[:, 500:1000], b[500:1000, :])
        c[:] = acc
    return c


@pl.jit
def first_block_in_an_if(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        acc = pl.create_tensor([256, 512], dtype=pl.FP32)
        for kb in pl.range(2):
            k0 = kb * 500
            if kb == 0:
                acc = pl.matmul(a[:, k0:k0 + 500], b[k0:k0 + 500, :])
            else:
                acc = pl.matmul_acc(acc, a[:, k0:k0 + 500], b[k0:k0 + 500, :])
        c[:] = acc
    return c


@pl.jit
def first_block_in_a_nested_else(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        acc = pl.create_tensor([128, 256], dtype=pl.FP32)
        for kb in pl.range(3):
            k0 = kb * 200
            if kb == 1:
                acc = pl.matmul_acc(acc, a[:, k0:k0 + 200], b[k0:k0 + 200, :])
            else:
                if kb == 0:
                    acc = pl.matmul(a[:, k0:k0 + 200], b[k0:k0 + 200, :])
                else:
                    acc = pl.matmul_acc(acc, a[:, k0:k0 + 200], b[k0:k0 + 200, :])
        c[:] = acc
    return c


@pytest.mark.parametrize("kernel,mkn", [(two_halves_of_k, (256, 1000, 512)), (first_block_in_an_if, (256, 1000, 512)),
                                        (first_block_in_a_nested_else, (128, 600, 256))])
def test_accumulations_in_full_acc_blocks_share_the_one_accumulator(kernel, mkn):
    """Each user-level matmul is a K chain of its own (a loop carrying its accumulator);
    the chain that continues another's, after it or in an if's other branch, accumulates in
    the same Acc buffer — a 128x256 FP32 block fills Acc, and two of them do not fit. In the
    nested form the carried accumulator is read in the first branch and in the nested else:
    its accumulation in the first writes over it, as no path reads it after."""
    m, k, n = mkn
    a, b = torch.randn(m, k).half(), torch.randn(k, n).half()
    got = run(kernel, a, b, ps.sentinel((m, n)), platform="a2a3sim")
    torch.testing.assert_close(got, a.float() @ b.float(), rtol=1e-3, atol=2e-2)
    assert ps.bits_equal(got, run(kernel, a, b, ps.sentinel((m, n)), platform="ref"))


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_three_dimensional_sink_blocks_its_first_long_axis(platform):
    a = torch.randn(1, 4096, 128)
    assert ps.bits_equal(run(exp_of, a, ps.sentinel(a.shape), platform=platform), torch.exp(a))
    assert "pl.Tile[[1, 4096, 2]" not in exp_of.lower(a, a).as_python()
    assert re.search(r"pl\.Tile\[\[1, \d{2,}, 128\]", exp_of.lower(a, a).as_python())


# ----------------------------------------------------------------------------- in place, blocked


@pl.jit
def negate_half(out: pl.InOut[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[0:1024, :] = pl.neg(out[1024:2048, :])
    return out


@pl.jit
def center_rows_in_place(out: pl.InOut[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.row_expand_sub(out, pl.row_max(out))
    return out


@pytest.mark.parametrize("platform", PLATFORMS)
def test_an_in_place_sink_that_reads_what_no_block_stores_is_blocked(platform):
    x = torch.randn(2048, 128)  # 1 MiB: never whole
    want = x.clone()
    want[:1024] = -x[1024:]
    assert ps.bits_equal(run(negate_half, x, platform=platform), want)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_an_in_place_sink_whose_blocks_read_their_rows_before_storing_them_is_blocked(platform):
    x = torch.randn(4, 65536)  # a row is 256 KiB: the row maximum folds, before the row is stored
    assert ps.bits_equal(run(center_rows_in_place, x, platform=platform), x - x.max(dim=1, keepdim=True).values)


# ----------------------------------------------------------------------------- loops that carry scalars too


@pl.jit
def sliding_sum(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.exp(a[0:1024, :])
        s = 0
        for i in pl.range(3):
            s = s + 1024
            t = pl.add(t, a[s:s + 1024, :])
        out[:] = t
    return out


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_loop_carrying_a_scalar_beside_a_tensor_is_still_blocked(platform):
    a = torch.randn(4096, 128)  # t is 512 KiB
    want = torch.exp(a[:1024]) + a[1024:2048] + a[2048:3072] + a[3072:]
    assert ps.bits_equal(run(sliding_sum, a, ps.sentinel((1024, 128)), platform=platform), want)


# ----------------------------------------------------------------------------- odds and ends


@pytest.mark.parametrize("platform", PLATFORMS)
def test_the_transpose_of_a_column_vector_is_stored(platform):
    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            out[:] = pl.transpose(pl.col_min(a), 0, 1)
        return out

    a = torch.randn(6, 8)
    assert ps.bits_equal(run(k, a, ps.sentinel((8, 1)), platform=platform), a.min(dim=0, keepdim=True).values.T)


def test_a_matmul_of_a_matmul_in_a_scope_takes_the_product_through_gm():
    @pl.jit
    def k(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            c[:] = pl.matmul(pl.matmul(a, b, out_dtype=pl.FP16), b)  # on a2a3 Acc reaches L0A through GM only
        return c

    a, b = torch.randn(16, 16).half(), torch.randn(16, 16).half()
    got = []
    for platform in ("ref", "a2a3sim"):
        c = torch.zeros(16, 16)
        k(a, b, c, config=RunConfig(platform=platform))
        got.append(c)
    assert torch.equal(got[0], got[1])
    torch.testing.assert_close(got[1], (a.float() @ b.float()).half().float() @ b.float(), rtol=1e-2, atol=1e-2)
    assert "_gm = pl.tensor.create([16, 16], dtype=pl.FP16)" in k.compile(a, b, torch.zeros(16, 16)).lowered.as_python()


@pytest.mark.parametrize("platform", PLATFORMS)
def test_two_names_of_one_window_in_one_expression_are_one_load(platform):
    @pl.jit
    def k(x: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            u = x[0:8, :]
            v = x[0:8, :]  # the same window again, under another name
            out[:] = pl.row_expand_sub(u, pl.row_max(v))
        return out

    x = torch.randn(8, 16)
    got = run(k, x, ps.sentinel((8, 16)), platform=platform)
    assert ps.bits_equal(got, x - x.amax(1, keepdim=True))


@pytest.mark.parametrize("trips", [0, 2])
def test_a_fold_beside_a_storing_loop_leaves_room_for_what_the_loop_carries(trips):
    # the loop keeps s and its carried value whole on chip (two 28 KiB tiles) through the sink in
    # it, which folds the column maximum over row blocks: the blocks are chosen beside those
    # tiles (they used to be chosen as if Vec were empty, and the allocator failed)
    a = torch.randn(2048, 128).half()
    s = (a + a.amax(dim=0, keepdim=True))[0:112]
    want = ps.sentinel((2048, 128)).half()
    t = s
    for i in range(trips):
        t = t + s
        want[i * 112:(i + 1) * 112] = t

    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            s = pl.slice(pl.col_expand_add(a, pl.col_max(a)), [112, 128], [0, 0])
            t = s
            for i in pl.range(trips):
                t = pl.add(t, s)
                out[i * 112:(i + 1) * 112, :] = t
        return out

    got = [run(k, a, ps.sentinel((2048, 128)).half(), platform=platform) for platform in PLATFORMS]
    assert ps.bits_equal(got[0], got[1]) and ps.bits_equal(got[1], want)
    assert "pl.range(512, 2048, 512" not in k.lower(a, want).as_python()  # the fold's blocks fit beside them


@pl.jit
def softmax_steps_then_sum(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = a
        for i in pl.range(3):
            t = pl.exp(pl.row_expand_sub(t, pl.row_max(t)))
        out[:] = pl.row_sum(t)  # MARK-sum
    return out


def test_a_reduction_of_a_loop_that_needs_whole_rows_says_the_loop_is_why():
    """The loop reduces across the row it carries, so no block of columns of it is computed
    alone: the row_sum's refusal says so, not that one column would not fit."""
    with pytest.raises(UnsupportedSyntaxError, match=r"the reduction 'row_sum' needs its operand whole \(\d+ B with "
                                                     r"what is live\), more than Vec holds, and its operand is not "
                                                     r"computed in blocks of columns: this loop reads a tensor it "
                                                     r"carries at another window") as info:
        softmax_steps_then_sum(torch.randn(1, 12000), torch.zeros(1, 1), config=RunConfig(platform="ref"))
    assert info.value.span.file == __file__ and "MARK-sum" in open(__file__).read().splitlines()[info.value.span.line - 1]
    a, out = torch.randn(1, 1000), torch.zeros(1, 1)  # a row that fits is computed
    softmax_steps_then_sum(a, out, config=RunConfig(platform="ref"))
    t = a
    for _ in range(3):
        t = torch.exp(t - t.amax(1, keepdim=True))
    torch.testing.assert_close(out, t.sum(1, keepdim=True), rtol=1e-5, atol=1e-5)
