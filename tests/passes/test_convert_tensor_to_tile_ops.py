import pytest
import torch
from helpers import check_pass, program_text, same_results

import pypto.language as pl
from pypto.errors import UnsupportedSyntaxError
from pypto.lang import parse
from pypto.passes.context import PassContext
from pypto.passes.tile_conversion.convert_tensor_to_tile_ops import convert_tensor_to_tile_ops
from pypto.runtime import RunConfig
from pypto.backend import A2A3


def test_row_local_chain_blocks_along_rows_to_fit_vec():
    # Three [rows, 128] fp32 tiles per block: 64 rows fit Vec's 184 KiB, 128 would not.
    check_pass(convert_tensor_to_tile_ops, """
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[512, 128], pl.FP32], b: pl.Tensor[[512, 128], pl.FP32], out: pl.Out[pl.Tensor[[512, 128], pl.FP32]]):
            s = pl.tensor.add(a, b)
            m = pl.tensor.row_max(s)
            pl.tensor.assemble(out, pl.tensor.row_expand_sub(s, m), [0, 0])
    """, """
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[512, 128], pl.FP32], b: pl.Tensor[[512, 128], pl.FP32], out: pl.Out[pl.Tensor[[512, 128], pl.FP32]]):
            for r in pl.range(0, 512, 64):
                a_tile = pl.tile.load(a, [r, 0], [64, 128], target_memory=pl.Mem.Vec)
                b_tile = pl.tile.load(b, [r, 0], [64, 128], target_memory=pl.Mem.Vec)
                s_1 = pl.tile.add(a_tile, b_tile)
                m_1 = pl.tile.row_max(s_1)
                row_expand_sub_1 = pl.tile.row_expand_sub(s_1, m_1)
                pl.tile.store(row_expand_sub_1, [r, 0], out)
    """)


def test_small_tensors_become_one_block_and_slices_become_offsets():
    check_pass(convert_tensor_to_tile_ops, """
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[32, 64], pl.FP32], out: pl.Out[pl.Tensor[[32, 64], pl.FP32]]):
            top = pl.tensor.slice(a, [16, 64], [0, 0])
            bottom = pl.tensor.slice(a, [16, 64], [16, 0])
            pl.tensor.assemble(out, pl.tensor.muls(bottom, 2.0), [0, 0])
            pl.tensor.assemble(out, pl.tensor.exp(top), [16, 0])
    """, """
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[32, 64], pl.FP32], out: pl.Out[pl.Tensor[[32, 64], pl.FP32]]):
            bottom_tile = pl.tile.load(a, [16, 0], [16, 64], target_memory=pl.Mem.Vec)
            muls_1 = pl.tile.muls(bottom_tile, 2.0)
            pl.tile.store(muls_1, [0, 0], out)
            top_tile = pl.tile.load(a, [0, 0], [16, 64], target_memory=pl.Mem.Vec)
            exp_1 = pl.tile.exp(top_tile)
            pl.tile.store(exp_1, [16, 0], out)
    """)


def test_matmul_becomes_the_cube_chain_with_a_k_loop():
    got = check_pass(convert_tensor_to_tile_ops, """
        @pl.function(type=pl.FunctionType.InCore)
        def mm(self, a: pl.Tensor[[256, 512], pl.FP16], b: pl.Tensor[[256, 512], pl.FP16], out: pl.Out[pl.Tensor[[256, 256], pl.FP32]]):
            c = pl.tensor.matmul(a, b, b_trans=True)
            pl.tensor.assemble(out, c, [0, 0])
    """, """
        @pl.function(type=pl.FunctionType.InCore)
        def mm(self, a: pl.Tensor[[256, 512], pl.FP16], b: pl.Tensor[[256, 512], pl.FP16], out: pl.Out[pl.Tensor[[256, 256], pl.FP32]]):
            b_tile = pl.tile.load(b, [0, 0], [256, 128], target_memory=None, transpose=True)
            for mi in pl.range(0, 256, 128):
                a_tile = pl.tile.load(a, [mi, 0], [128, 128], target_memory=None)
                acc = pl.tile.matmul(a_tile, b_tile)
                for ki, (acc_iter,) in pl.range(128, 512, 128, init_values=(acc,)):
                    a_tile_1 = pl.tile.load(a, [mi, ki], [128, 128], target_memory=None)
                    b_tile_1 = pl.tile.load(b, [0, ki], [256, 128], target_memory=None, transpose=True)
                    acc_1 = pl.tile.matmul_acc(acc_iter, a_tile_1, b_tile_1)
                    acc_out = pl.yield_(acc_1)
                pl.tile.store(acc_out, [mi, 0], out)
    """)
    assert got.diagnostics == ()


def test_whole_tensor_ops_take_one_block():
    check_pass(convert_tensor_to_tile_ops, """
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[16, 32], pl.FP32], out: pl.Out[pl.Tensor[[1, 32], pl.FP32]]):
            pl.tensor.assemble(out, pl.tensor.col_sum(pl.tensor.abs(a)), [0, 0])
    """, """
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[16, 32], pl.FP32], out: pl.Out[pl.Tensor[[1, 32], pl.FP32]]):
            a_tile = pl.tile.load(a, [0, 0], [16, 32], target_memory=pl.Mem.Vec)
            abs_1 = pl.tile.abs(a_tile)
            col_sum_1 = pl.tile.col_sum(abs_1)
            pl.tile.store(col_sum_1, [0, 0], out)
    """)


def test_an_intermediate_tensor_read_by_a_tile_op_is_rejected():
    program = parse(program_text("""
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[16, 32], pl.FP32], out: pl.Out[pl.Tensor[[16, 32], pl.FP32]]):
            e = pl.tensor.exp(a)
            t = pl.tile.load(e, [0, 0], [16, 32], target_memory=pl.Mem.Vec)
            pl.tile.store(t, [0, 0], out)
    """))
    with pytest.raises(UnsupportedSyntaxError, match="the tensor 'e' computed by tensor.exp has no GM storage"):
        convert_tensor_to_tile_ops(program, PassContext(soc=A2A3))


def test_matmul_feeding_vector_ops_needs_gm():
    program = parse(program_text("""
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[16, 16], pl.FP16], out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]):
            c = pl.tensor.matmul(a, a)
            pl.tensor.assemble(out, pl.tensor.exp(c), [0, 0])
    """))
    with pytest.raises(UnsupportedSyntaxError, match="a matmul's result reaches vector ops only through GM"):
        convert_tensor_to_tile_ops(program, PassContext(soc=A2A3))


def test_jit_tensor_level_kernel_end_to_end():
    import torch

    import pypto.language as pl
    from pypto.runtime import RunConfig

    @pl.jit
    def softmax_rows(x: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            e = pl.row_expand_expdif(x, pl.row_max(x))
            out[:] = pl.row_expand_div(e, pl.row_sum(e))
        return out

    x, out = torch.randn(512, 256), torch.zeros(512, 256)
    lowered = softmax_rows.lower(x, out)
    assert "pl.range(0, 512, " in lowered.as_python()
    softmax_rows(x, out, config=RunConfig(platform="ref"))
    torch.testing.assert_close(out, torch.softmax(x, dim=1), rtol=1e-5, atol=1e-6)
    same_results(softmax_rows.specialize(x, out), lowered, "softmax_rows")


@pl.jit
def through_windows(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        s = a[8:16, :]
        t = pl.load(s, [0, 64], [8, 64])
        u = pl.load(a[0:8, :], [0, 0], [8, 64])
        pl.store(pl.add(pl.exp(t), u), [0, 0], out[6:14, 64:128])
    return out


@pytest.mark.parametrize("platform", ["ref", "a2a3sim"])
def test_tile_loads_and_stores_address_slices_through_their_tensor(platform):
    a, out = torch.randn(16, 128), torch.zeros(16, 128)
    config = RunConfig(platform=platform, verification_level="ROUNDTRIP", disabled_diagnostics=["PH001"])
    through_windows(a, out, config=config)
    want = torch.zeros(16, 128)
    want[6:14, 64:] = torch.exp(a[8:16, 64:]) + a[:8, :64]
    assert torch.equal(out, want)
    text = through_windows.lower(a, out, config=config).as_python()
    assert "tensor.slice" not in text and "pl.tile.load(a, [8, 64], [8, 64]" in text


def test_an_elementwise_chain_wider_than_vec_blocks_its_columns_too():
    # 3 x 65536 x 4 B per element does not fit one 184 KiB row: blocks of 8192 columns do.
    check_pass(convert_tensor_to_tile_ops, """
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[65536], pl.FP32], b: pl.Tensor[[65536], pl.FP32], out: pl.Out[pl.Tensor[[65536], pl.FP32]]):
            s = pl.tensor.add(a, b)
            out_1 = pl.tensor.assemble(out, s, [0])
    """, """
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[65536], pl.FP32], b: pl.Tensor[[65536], pl.FP32], out: pl.Out[pl.Tensor[[65536], pl.FP32]]):
            for c in pl.range(0, 65536, 8192):
                a_tile = pl.tile.load(a, [c], [8192], target_memory=pl.Mem.Vec)
                b_tile = pl.tile.load(b, [c], [8192], target_memory=pl.Mem.Vec)
                s_1 = pl.tile.add(a_tile, b_tile)
                pl.tile.store(s_1, [c], out)
            out_1: pl.Tensor[[65536], pl.FP32] = out
    """)


@pl.jit
def wide_exp_sum(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.exp(pl.add(a, b))
    return out


@pytest.mark.parametrize("platform", ["ref", "a2a3sim"])
@pytest.mark.parametrize("shape", [(65536,), (3, 40000)])
def test_wide_tensor_expressions_compute_what_torch_does(platform, shape):
    a, b, out = torch.randn(shape), torch.randn(shape), torch.zeros(shape)
    wide_exp_sum(a, b, out, config=RunConfig(platform=platform, verification_level="ROUNDTRIP"))
    assert torch.equal(out, torch.exp(a + b))


@pl.jit
def padded_exp(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.exp(pl.fillpad(a))
    return out


@pytest.mark.parametrize("platform", ["ref", "a2a3sim"])
def test_tensor_fillpad_lowers_to_the_tile_form(platform):
    a, out = torch.randn(32, 128), torch.zeros(32, 128)
    padded_exp(a, out, config=RunConfig(platform=platform, verification_level="ROUNDTRIP"))
    assert torch.equal(out, torch.exp(a))
    assert "pl.tile.fillpad(" in padded_exp.lower(a, out).as_python()


@pl.jit
def col_sum_exp(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.col_sum(pl.exp(a))
    return out


@pl.jit
def col_max_of(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.col_max(a)
    return out


@pl.jit
def col_min_of(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.col_min(a)
    return out


def test_a_column_reduction_too_large_for_vec_folds_blocks_of_rows():
    a = torch.randn(1024, 128)  # 512 KiB: no whole tile fits
    text = col_sum_exp.lower(a, torch.zeros(1, 128)).as_python()
    assert "pl.range(128, 1024, 128, init_values=(col_sum_1,))" in text  # the first block starts the fold
    assert "pl.tile.add(col_sum_acc, col_sum_2)" in text
    for platform in ("ref", "a2a3sim"):
        out = torch.zeros(1, 128)
        col_sum_exp(a, out, config=RunConfig(platform=platform))
        torch.testing.assert_close(out, torch.exp(a).sum(0, keepdim=True), rtol=1e-5, atol=1e-3)
        for kernel, want in ((col_max_of, a.max(0, keepdim=True).values), (col_min_of, a.min(0, keepdim=True).values)):
            out = torch.zeros(1, 128)
            kernel(a, out, config=RunConfig(platform=platform))
            assert torch.equal(out, want)  # max and min fold exactly


def test_the_folded_column_sum_is_the_same_on_the_interpreter_and_the_simulator():
    a = torch.randn(2048, 64)
    ref, sim = torch.zeros(1, 64), torch.zeros(1, 64)
    col_sum_exp(a, ref, config=RunConfig(platform="ref"))
    col_sum_exp(a, sim, config=RunConfig(memory_planner="PTOAS"))
    assert torch.equal(ref, sim)


@pl.jit
def col_max_into_itself(out: pl.InOut[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        pl.assemble(out, pl.col_max(out), [0, 0])
    return out


@pl.jit
def shifted_exp_into_itself(out: pl.InOut[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        pl.assemble(out, pl.exp(pl.slice(out, [32, 2048], [16, 0])), [0, 0])
    return out


VEC = A2A3.spec(pl.Mem.Vec).capacity  # 188416 B


@pytest.mark.parametrize("platform", ("ref", "a2a3sim"))
@pytest.mark.parametrize("kernel, shape, need, line", [
    # its col_max takes out whole at once (4 x 32768 FP32), or folded a row at a time, a row
    # and the partial maxima beside it: 131072 + 3 x 131072 B — neither fits
    (col_max_into_itself, (4, 32768), "at least 524288", "pl.col_max(out)"),
    # the window loaded and its exp: two [32, 2048] FP32 tiles
    (shifted_exp_into_itself, (64, 2048), "524288", "pl.exp(pl.slice(out"),
])
def test_a_sink_reading_the_tensor_it_stores_states_what_computing_it_whole_needs(platform, kernel, shape, need, line):
    """Blocks of it would read what earlier blocks stored, so it is computed whole: the
    message gives what that takes (it gave a blocked plan's bytes, below the capacity)."""
    from pypto.errors import MemorySpaceError

    with pytest.raises(MemorySpaceError) as info:
        kernel(torch.randn(*shape), config=RunConfig(platform=platform))
    err = info.value
    assert err.message == ("this sink reads the tensor it stores into at other windows than it stores, so it is "
                           f"computed whole, and that needs {need} B of Vec, more than its {VEC} B")
    assert int(need.split()[-1]) > VEC
    assert err.span.line == next(k for k, text in enumerate(open(__file__).read().splitlines(), 1)
                                 if "pl.assemble(out, " + line in text)
    assert "store into another tensor" in err.hint
