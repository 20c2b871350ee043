import pytest
from helpers import check_pass, program_text, same_results
from hypothesis import given, settings
from hypothesis import strategies as st

from pypto.backend import A2A3
from pypto.backend import MemorySpace as M
from pypto.errors import ConfigError, MemorySpaceError, TypeCheckError
from pypto.ir import nodes as n
from pypto.ir.printer import print_program
from pypto.ir.types import TileType
from pypto.ir.verifier import verify
from pypto.lang import parse
from pypto.passes.l0_tiling.auto_tile_matmul_l0 import auto_tile_matmul_l0
from pypto.passes.context import PassContext, Planner
from pypto.passes.l0_tiling.l0_tile_chooser import L0TileConfig, Stationarity, choose_l0_tile

PTOAS = PassContext(soc=A2A3, planner=Planner.PTOAS)


def test_k_is_cut_while_the_result_fits_acc():
    """[64, 384] x [384, 256] FP32: the result fits Acc, A and B do not fit L0 whole; K
    goes in blocks of 32, the first starting the accumulator, the rest pipelined."""
    check_pass(auto_tile_matmul_l0, """
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[64, 384], pl.FP32], b: pl.Tensor[[384, 256], pl.FP32], out: pl.Out[pl.Tensor[[64, 256], pl.FP32]]):
            x = pl.tile.load(a, [0, 0], [64, 384], target_memory=pl.Mem.Mat)
            y = pl.tile.load(b, [0, 0], [384, 256], target_memory=pl.Mem.Mat)
            c = pl.tile.matmul(x, y)
            pl.tile.store(c, [0, 0], out)
    """, """
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[64, 384], pl.FP32], b: pl.Tensor[[384, 256], pl.FP32], out: pl.Out[pl.Tensor[[64, 256], pl.FP32]]):
            x = pl.tile.load(a, [0, 0], [64, 384], target_memory=pl.Mem.Mat)
            y = pl.tile.load(b, [0, 0], [384, 256], target_memory=pl.Mem.Mat)
            x_Left = pl.tile.extract(x, 0, 0, [64, 32], target_memory=pl.Mem.Left)
            y_Right = pl.tile.extract(y, 0, 0, [32, 256], target_memory=pl.Mem.Right)
            acc = pl.tile.matmul(x_Left, y_Right)
            for ko, (acc_iter,) in pl.pipeline(32, 384, 32, stage=2, init_values=(acc,)):
                x_Left_1 = pl.tile.extract(x, 0, ko, [64, 32], target_memory=pl.Mem.Left)
                y_Right_1 = pl.tile.extract(y, ko, 0, [32, 256], target_memory=pl.Mem.Right)
                acc_1 = pl.tile.matmul_acc(acc_iter, x_Left_1, y_Right_1)
                c = pl.yield_(acc_1)
            pl.tile.store(c, [0, 0], out)
    """)


def test_a_k_the_chosen_block_does_not_divide_ends_in_a_shorter_block():
    """[128, 688] x [688, 192] BF16: k = 64, ten blocks and a last one of 48."""
    got = check_pass(auto_tile_matmul_l0, """
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[128, 688], pl.BF16], b: pl.Tensor[[688, 192], pl.BF16], out: pl.Out[pl.Tensor[[128, 192], pl.FP32]]):
            x = pl.tile.load(a, [0, 0], [128, 688], target_memory=pl.Mem.Mat)
            y = pl.tile.load(b, [0, 0], [688, 192], target_memory=pl.Mem.Mat)
            c = pl.tile.matmul(x, y)
            pl.tile.store(c, [0, 0], out)
    """, """
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[128, 688], pl.BF16], b: pl.Tensor[[688, 192], pl.BF16], out: pl.Out[pl.Tensor[[128, 192], pl.FP32]]):
            x = pl.tile.load(a, [0, 0], [128, 688], target_memory=pl.Mem.Mat)
            y = pl.tile.load(b, [0, 0], [688, 192], target_memory=pl.Mem.Mat)
            x_Left = pl.tile.extract(x, 0, 0, [128, 64], target_memory=pl.Mem.Left)
            y_Right = pl.tile.extract(y, 0, 0, [64, 192], target_memory=pl.Mem.Right)
            acc = pl.tile.matmul(x_Left, y_Right)
            for ko, (acc_iter,) in pl.pipeline(64, 640, 64, stage=2, init_values=(acc,)):
                x_Left_1 = pl.tile.extract(x, 0, ko, [128, 64], target_memory=pl.Mem.Left)
                y_Right_1 = pl.tile.extract(y, ko, 0, [64, 192], target_memory=pl.Mem.Right)
                acc_1 = pl.tile.matmul_acc(acc_iter, x_Left_1, y_Right_1)
                acc_2 = pl.yield_(acc_1)
            x_Left_2 = pl.tile.extract(x, 0, 640, [128, 48], target_memory=pl.Mem.Left)
            y_Right_2 = pl.tile.extract(y, 640, 0, [48, 192], target_memory=pl.Mem.Right)
            c = pl.tile.matmul_acc(acc_2, x_Left_2, y_Right_2)
            pl.tile.store(c, [0, 0], out)
    """)
    assert got.program is not None


def test_a_result_larger_than_acc_is_stored_a_tile_at_a_time():
    """[272, 32] x [32, 416] BF16 is 442 KiB of FP32: (96, 256, 32) tiles with B held per
    column of tiles (the cheaper operand to hold), A streaming through a pipelined loop;
    the partial row (80) and column (160) of tiles follow the loops. Each tile is stored
    where the result was; the last store keeps its name."""
    check_pass(auto_tile_matmul_l0, """
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[272, 32], pl.BF16], b: pl.Tensor[[32, 416], pl.BF16], out: pl.Out[pl.Tensor[[272, 416], pl.FP32]]) -> pl.Tensor[[272, 416], pl.FP32]:
            x = pl.tile.load(a, [0, 0], [272, 32], target_memory=pl.Mem.Mat)
            y = pl.tile.load(b, [0, 0], [32, 416], target_memory=pl.Mem.Mat)
            c = pl.tile.matmul(x, y)
            out2 = pl.tile.store(c, [0, 0], out)
            return out2
    """, """
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[272, 32], pl.BF16], b: pl.Tensor[[32, 416], pl.BF16], out: pl.Out[pl.Tensor[[272, 416], pl.FP32]]) -> pl.Tensor[[272, 416], pl.FP32]:
            x = pl.tile.load(a, [0, 0], [272, 32], target_memory=pl.Mem.Mat)
            y = pl.tile.load(b, [0, 0], [32, 416], target_memory=pl.Mem.Mat)
            y_Right = pl.tile.extract(y, 0, 0, [32, 256], target_memory=pl.Mem.Right)
            for mi, (out_iter,) in pl.pipeline(0, 192, 96, stage=2, init_values=(out,)):
                x_Left = pl.tile.extract(x, mi, 0, [96, 32], target_memory=pl.Mem.Left)
                acc = pl.tile.matmul(x_Left, y_Right)
                out_1 = pl.tile.store(acc, [mi, 0], out_iter)
                out_2 = pl.yield_(out_1)
            x_Left_1 = pl.tile.extract(x, 192, 0, [80, 32], target_memory=pl.Mem.Left)
            acc_1 = pl.tile.matmul(x_Left_1, y_Right)
            out_3 = pl.tile.store(acc_1, [192, 0], out_2)
            y_Right_1 = pl.tile.extract(y, 0, 256, [32, 160], target_memory=pl.Mem.Right)
            for mi_1, (out_3_iter,) in pl.pipeline(0, 192, 96, stage=2, init_values=(out_3,)):
                x_Left_2 = pl.tile.extract(x, mi_1, 0, [96, 32], target_memory=pl.Mem.Left)
                acc_2 = pl.tile.matmul(x_Left_2, y_Right_1)
                out_4 = pl.tile.store(acc_2, [mi_1, 256], out_3_iter)
                out_3_1 = pl.yield_(out_4)
            x_Left_3 = pl.tile.extract(x, 192, 0, [80, 32], target_memory=pl.Mem.Left)
            acc_3 = pl.tile.matmul(x_Left_3, y_Right_1)
            out2 = pl.tile.store(acc_3, [192, 256], out_3_1)
            return out2
    """)


def test_bias_is_added_once_per_tile_from_a_window_of_its_row():
    """matmul_bias whose N (512) passes the Bias buffer (256 FP32): each column of tiles
    loads its own window of the bias row and adds it in its first K block only (its later
    blocks accumulate); the whole row's load is gone."""
    check_pass(auto_tile_matmul_l0, """
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[32, 64], pl.BF16], b: pl.Tensor[[64, 512], pl.BF16], bias: pl.Tensor[[1, 512], pl.FP32], out: pl.Out[pl.Tensor[[32, 512], pl.FP32]]) -> pl.Tensor[[32, 512], pl.FP32]:
            x = pl.tile.load(a, [0, 0], [32, 64], target_memory=pl.Mem.Mat)
            y = pl.tile.load(b, [0, 0], [64, 512], target_memory=pl.Mem.Mat)
            z = pl.tile.load(bias, [0, 0], [1, 512], target_memory=pl.Mem.Mat)
            c = pl.tile.matmul_bias(x, y, z)
            out2 = pl.tile.store(c, [0, 0], out)
            return out2
    """, """
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[32, 64], pl.BF16], b: pl.Tensor[[64, 512], pl.BF16], bias: pl.Tensor[[1, 512], pl.FP32], out: pl.Out[pl.Tensor[[32, 512], pl.FP32]]) -> pl.Tensor[[32, 512], pl.FP32]:
            x = pl.tile.load(a, [0, 0], [32, 64], target_memory=pl.Mem.Mat)
            y = pl.tile.load(b, [0, 0], [64, 512], target_memory=pl.Mem.Mat)
            x_Left = pl.tile.extract(x, 0, 0, [32, 32], target_memory=pl.Mem.Left)
            y_Right = pl.tile.extract(y, 0, 0, [32, 256], target_memory=pl.Mem.Right)
            z_win = pl.tile.load(bias, [0, 0], [1, 256], target_memory=pl.Mem.Mat)
            z_Bias = pl.tile.move(z_win, target_memory=pl.Mem.Bias)
            acc = pl.tile.matmul_bias(x_Left, y_Right, z_Bias)
            x_Left_1 = pl.tile.extract(x, 0, 32, [32, 32], target_memory=pl.Mem.Left)
            y_Right_1 = pl.tile.extract(y, 32, 0, [32, 256], target_memory=pl.Mem.Right)
            acc_1 = pl.tile.matmul_acc(acc, x_Left_1, y_Right_1)
            out_1 = pl.tile.store(acc_1, [0, 0], out)
            x_Left_2 = pl.tile.extract(x, 0, 0, [32, 32], target_memory=pl.Mem.Left)
            y_Right_2 = pl.tile.extract(y, 0, 256, [32, 256], target_memory=pl.Mem.Right)
            z_win_1 = pl.tile.load(bias, [0, 256], [1, 256], target_memory=pl.Mem.Mat)
            z_Bias_1 = pl.tile.move(z_win_1, target_memory=pl.Mem.Bias)
            acc_2 = pl.tile.matmul_bias(x_Left_2, y_Right_2, z_Bias_1)
            x_Left_3 = pl.tile.extract(x, 0, 32, [32, 32], target_memory=pl.Mem.Left)
            y_Right_3 = pl.tile.extract(y, 32, 256, [32, 256], target_memory=pl.Mem.Right)
            acc_3 = pl.tile.matmul_acc(acc_2, x_Left_3, y_Right_3)
            out2 = pl.tile.store(acc_3, [0, 256], out_1)
            return out2
    """)


def test_a_narrowing_cast_of_a_result_is_the_fixpipe_writing_it_into_mat():
    """pl.cast(c, pl.BF16, mode="rint") of an accumulator: a Mat tile the fixpipe writes
    (narrowing as it goes), which the next matmul reads from L1."""
    check_pass(auto_tile_matmul_l0, """
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[64, 64], pl.BF16], b: pl.Tensor[[64, 64], pl.BF16], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
            x = pl.tile.load(a, [0, 0], [64, 64], target_memory=pl.Mem.Mat)
            y = pl.tile.load(b, [0, 0], [64, 64], target_memory=pl.Mem.Mat)
            c = pl.tile.matmul(x, y)
            cb = pl.tile.cast(c, pl.BF16, mode="rint")
            d = pl.tile.matmul(cb, y)
            pl.tile.store(d, [0, 0], out)
    """, """
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[64, 64], pl.BF16], b: pl.Tensor[[64, 64], pl.BF16], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
            x = pl.tile.load(a, [0, 0], [64, 64], target_memory=pl.Mem.Mat)
            y = pl.tile.load(b, [0, 0], [64, 64], target_memory=pl.Mem.Mat)
            c = pl.tile.matmul(x, y)
            scratch = pl.tile.create([64, 64], dtype=pl.BF16, target_memory=pl.Mem.Mat)
            cb = pl.tile.assemble(scratch, c, [0, 0])
            d = pl.tile.matmul(cb, y)
            pl.tile.store(d, [0, 0], out)
    """)


def test_two_accumulators_take_turns_under_ptoas():
    """512 x 512 from K = 64 BF16 is drain-bound: under PTOAS the chooser takes (64, 256,
    64) with two accumulators, one per parity of the tile in the moving loop."""
    got = check_pass(auto_tile_matmul_l0, """
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[512, 64], pl.BF16], b: pl.Tensor[[64, 512], pl.BF16], out: pl.Out[pl.Tensor[[512, 512], pl.FP32]]) -> pl.Tensor[[512, 512], pl.FP32]:
            x = pl.tile.load(a, [0, 0], [512, 64], target_memory=pl.Mem.Mat)
            y = pl.tile.load(b, [0, 0], [64, 512], target_memory=pl.Mem.Mat)
            c = pl.tile.matmul(x, y)
            out2 = pl.tile.store(c, [0, 0], out)
            return out2
    """, """
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[512, 64], pl.BF16], b: pl.Tensor[[64, 512], pl.BF16], out: pl.Out[pl.Tensor[[512, 512], pl.FP32]]) -> pl.Tensor[[512, 512], pl.FP32]:
            x = pl.tile.load(a, [0, 0], [512, 64], target_memory=pl.Mem.Mat)
            y = pl.tile.load(b, [0, 0], [64, 512], target_memory=pl.Mem.Mat)
            for no, (out_iter,) in pl.range(0, 512, 256, init_values=(out,)):
                y_Right = pl.tile.extract(y, 0, no, [64, 256], target_memory=pl.Mem.Right)
                for mi, (out_iter_iter,) in pl.pipeline(0, 512, 64, stage=2, init_values=(out_iter,)):
                    x_Left = pl.tile.extract(x, mi, 0, [64, 64], target_memory=pl.Mem.Left)
                    acc: pl.Tile[[64, 256], pl.FP32, pl.MemRef("acc_dbc", slots=2, pipeline=True)[mi // 64 % 2], pl.Mem.Acc] = pl.tile.matmul(x_Left, y_Right)
                    out_1 = pl.tile.store(acc, [mi, no], out_iter_iter)
                    out_iter_1 = pl.yield_(out_1)
                out2 = pl.yield_(out_iter_1)
            return out2
    """, PTOAS)
    assert got.diagnostics == ()


def test_a_stack_of_pages_is_cut_along_k_all_pages_at_once():
    """batch_matmul of four [64, 256] x [256, 64] BF16 pages: the four accumulators fit Acc
    together, the operands' stacks do not fit L0 — each piece is the same K window of every
    page."""
    check_pass(auto_tile_matmul_l0, """
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[4, 64, 256], pl.BF16], b: pl.Tensor[[4, 256, 64], pl.BF16], out: pl.Out[pl.Tensor[[4, 64, 64], pl.FP32]]):
            x = pl.tile.load(a, [0, 0, 0], [4, 64, 256], target_memory=pl.Mem.Mat)
            y = pl.tile.load(b, [0, 0, 0], [4, 256, 64], target_memory=pl.Mem.Mat)
            c = pl.tile.batch_matmul(x, y)
            pl.tile.store(c, [0, 0, 0], out)
    """, """
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[4, 64, 256], pl.BF16], b: pl.Tensor[[4, 256, 64], pl.BF16], out: pl.Out[pl.Tensor[[4, 64, 64], pl.FP32]]):
            x = pl.tile.load(a, [0, 0, 0], [4, 64, 256], target_memory=pl.Mem.Mat)
            y = pl.tile.load(b, [0, 0, 0], [4, 256, 64], target_memory=pl.Mem.Mat)
            x_Left = pl.tile.extract(x, 0, 0, [4, 64, 64], target_memory=pl.Mem.Left)
            y_Right = pl.tile.extract(y, 0, 0, [4, 64, 64], target_memory=pl.Mem.Right)
            acc = pl.tile.batch_matmul(x_Left, y_Right)
            for ko, (acc_iter,) in pl.pipeline(64, 256, 64, stage=2, init_values=(acc,)):
                x_Left_1 = pl.tile.extract(x, 0, ko, [4, 64, 64], target_memory=pl.Mem.Left)
                y_Right_1 = pl.tile.extract(y, ko, 0, [4, 64, 64], target_memory=pl.Mem.Right)
                acc_1 = pl.tile.batch_matmul_acc(acc_iter, x_Left_1, y_Right_1)
                c = pl.yield_(acc_1)
            pl.tile.store(c, [0, 0, 0], out)
    """)


def test_pages_too_many_for_acc_together_are_an_error():
    p = _program("""
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[8, 128, 64], pl.BF16], b: pl.Tensor[[64, 128], pl.BF16], out: pl.Out[pl.Tensor[[8, 128, 128], pl.FP32]]):
            x = pl.tile.load(a, [0, 0, 0], [8, 128, 64], target_memory=pl.Mem.Mat)
            y = pl.tile.load(b, [0, 0], [64, 128], target_memory=pl.Mem.Mat)
            c = pl.tile.batch_matmul(x, y)
            pl.tile.store(c, [0, 0, 0], out)
    """)
    with pytest.raises(MemorySpaceError, match=r"the 8 pages of this tile.batch_matmul .* do not fit Acc"):
        auto_tile_matmul_l0(p, PassContext(soc=A2A3))


# ----------------------------------------------------------------------------- errors

def _program(body: str):
    return parse(program_text(body))


def _line(body: str, needle: str) -> int:
    return next(k for k, text in enumerate(program_text(body).splitlines(), 1) if needle in text)


def test_a_result_too_large_for_acc_with_nowhere_to_go_is_an_error_at_the_matmul():
    body = """
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[256, 64], pl.FP32], b: pl.Tensor[[64, 256], pl.FP32], out: pl.Out[pl.Tensor[[256, 256], pl.FP32]]):
            x = pl.tile.load(a, [0, 0], [256, 64], target_memory=pl.Mem.Mat)
            y = pl.tile.load(b, [0, 0], [64, 256], target_memory=pl.Mem.Mat)
            c = pl.tile.matmul(x, y)
            d = pl.tile.matmul_acc(c, x, y)
            pl.tile.store(d, [0, 0], out)
    """
    with pytest.raises(MemorySpaceError) as err:
        auto_tile_matmul_l0(_program(body), PassContext(soc=A2A3))
    assert "the [256, 256] result of this tile.matmul (262144 B) does not fit Acc (131072 B)" in err.value.message
    assert err.value.span.line == _line(body, "c = pl.tile.matmul(x, y)")
    assert "pl.store(c, ...)" in err.value.hint


def test_an_accumulator_too_large_for_acc_is_an_error():
    p = _program("""
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[256, 64], pl.FP32], b: pl.Tensor[[64, 256], pl.FP32], out: pl.Out[pl.Tensor[[256, 256], pl.FP32]]):
            x = pl.tile.load(a, [0, 0], [256, 64], target_memory=pl.Mem.Mat)
            y = pl.tile.load(b, [0, 0], [64, 256], target_memory=pl.Mem.Mat)
            acc = pl.tile.create([256, 256], dtype=pl.FP32, target_memory=pl.Mem.Acc)
            d = pl.tile.matmul_acc(acc, x, y)
            pl.tile.store(d, [0, 0], out)
    """)
    with pytest.raises(MemorySpaceError, match="an accumulator that large cannot be held"):
        auto_tile_matmul_l0(p, PassContext(soc=A2A3))


def test_an_l0_operand_the_program_placed_too_large_is_an_error_where_it_is_made():
    """The reference's diagnosis: the operand, its shape and bytes against the buffer's, and
    the two fixes (leave it in Mat for the pass, or extract a smaller tile)."""
    body = """
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[128, 256], pl.FP16], b: pl.Tensor[[256, 256], pl.FP16], out: pl.Out[pl.Tensor[[128, 256], pl.FP32]]):
            a_mat = pl.tile.load(a, [0, 0], [128, 256], target_memory=pl.Mem.Mat)
            b_mat = pl.tile.load(b, [0, 0], [256, 256], target_memory=pl.Mem.Mat)
            a_left = pl.tile.extract(a_mat, 0, 0, [128, 256], target_memory=pl.Mem.Left)
            b_right = pl.tile.extract(b_mat, 0, 0, [256, 256], target_memory=pl.Mem.Right)
            acc = pl.tile.matmul(a_left, b_right)
            pl.tile.store(acc, [0, 0], out)
    """
    with pytest.raises(MemorySpaceError) as err:
        auto_tile_matmul_l0(_program(body), PassContext(soc=A2A3))
    msg = err.value.message
    assert "tile.matmul right operand 'b_right' in Right (L0B) has physical shape [256, 256]" in msg
    assert "requiring 131072 bytes" in msg and "provides 65536 bytes" in msg
    assert "does not retile operands already placed in Left or Right" in msg
    assert "Keep this operand in Mat" in err.value.hint and "manually extract a smaller Right tile" in err.value.hint
    assert err.value.span.line == _line(body, "b_right = ")


def test_a_bias_to_window_that_is_not_a_load_is_an_error():
    p = _program("""
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[32, 64], pl.BF16], b: pl.Tensor[[64, 512], pl.BF16], out: pl.Out[pl.Tensor[[32, 512], pl.FP32]]):
            x = pl.tile.load(a, [0, 0], [32, 64], target_memory=pl.Mem.Mat)
            y = pl.tile.load(b, [0, 0], [64, 512], target_memory=pl.Mem.Mat)
            z = pl.tile.create([1, 512], dtype=pl.FP32, target_memory=pl.Mem.Mat)
            c = pl.tile.matmul_bias(x, y, z)
            pl.tile.store(c, [0, 0], out)
    """)
    with pytest.raises(MemorySpaceError, match="'z' is not a tile.load of a tensor"):
        auto_tile_matmul_l0(p, PassContext(soc=A2A3))


@pytest.mark.parametrize("cast", ['pl.tile.cast(c, pl.BF16)', 'pl.tile.cast(c, pl.FP32, mode="rint")'])
def test_a_cast_of_an_accumulator_other_than_the_fixpipe_narrowing_is_refused_where_written(cast):
    with pytest.raises(TypeCheckError, match="the fixpipe's narrowing") as err:
        _program(f"""
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, a: pl.Tensor[[64, 64], pl.BF16], out: pl.Out[pl.Tensor[[64, 64], pl.BF16]]):
                x = pl.tile.load(a, [0, 0], [64, 64], target_memory=pl.Mem.Mat)
                c = pl.tile.matmul(x, x)
                cb = {cast}
        """)
    assert err.value.hint is not None and "rint" in err.value.hint


# ----------------------------------------------------------------------------- properties

DTYPES = {"FP32": "FP32", "BF16": "FP32", "FP16": "FP32", "INT8": "INT32"}


def _matmul_program(m, k, nn, dtype, kind):
    acc = DTYPES[dtype]
    bias_param = f"bias: pl.Tensor[[1, {nn}], pl.{acc}], " if kind == "bias" else ""
    lines = [f"x = pl.tile.load(a, [0, 0], [{m}, {k}], target_memory=pl.Mem.Mat)",
             f"y = pl.tile.load(b, [0, 0], [{k}, {nn}], target_memory=pl.Mem.Mat)"]
    if kind == "bias":
        lines += [f"z = pl.tile.load(bias, [0, 0], [1, {nn}], target_memory=pl.Mem.Mat)",
                  "c = pl.tile.matmul_bias(x, y, z)"]
    else:
        lines += ["c = pl.tile.matmul(x, y)"]
    lines += ["out2 = pl.tile.store(c, [0, 0], out)", "return out2"]
    body = "\n".join("    " + s for s in lines)
    return _program(f"""
@pl.function(type=pl.FunctionType.InCore)
def k(self, a: pl.Tensor[[{m}, {k}], pl.{dtype}], b: pl.Tensor[[{k}, {nn}], pl.{dtype}], {bias_param}out: pl.Out[pl.Tensor[[{m}, {nn}], pl.{acc}]]) -> pl.Tensor[[{m}, {nn}], pl.{acc}]:
{body}
""")


def _l0_reads(program):
    """(space, bytes) of every operand a cube op reads after the pass."""
    fn = program.functions[0]
    types = n.symbols(fn)
    for s in n.walk_stmts(fn.body):
        if isinstance(s, n.Assign) and isinstance(s.value, n.Call) and s.value.op.startswith("tile.matmul"):
            for a in s.value.args:
                t = types.get(a.name) if isinstance(a, n.Var) else None
                if isinstance(t, TileType) and t.space is not M.Acc:
                    yield t.space, t.nbytes


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 24), st.integers(1, 40), st.integers(1, 24), st.sampled_from(sorted(DTYPES)),
       st.sampled_from(["plain", "bias"]), st.sampled_from(list(Planner)))
def test_the_pieces_compute_the_matmul_bit_for_bit(m16, k16, n16, dtype, kind, planner):
    """Any Mat-operand matmul: after the pass every piece fits its L0 buffer (what is left
    in Mat fits whole), the program verifies and prints back to itself, and the
    interpreter gives the same bits before and after."""
    m, k, nn = 16 * m16, 16 * k16, 16 * n16
    program = _matmul_program(m, k, nn, dtype, kind)
    got = auto_tile_matmul_l0(program, PassContext(soc=A2A3, planner=planner)).program
    verify(got, A2A3)
    for explicit in (False, True):
        assert parse(print_program(got, A2A3, explicit=explicit), soc=A2A3) == got
    for space, nbytes in _l0_reads(got):
        cap = A2A3.spec(M.Left if space is M.Mat else space).capacity
        assert nbytes <= (cap if space is not M.Mat else max(A2A3.spec(M.Left).capacity,
                                                             A2A3.spec(M.Right).capacity))
    same_results(program, got, "k", seeds=(0,))


# ----------------------------------------------------------------------------- the chooser

def _a2a3(m, k, nn, bytes_ab, dbc):
    c = L0TileConfig()
    c.M, c.K, c.N = m, k, nn
    c.l0a_bytes = c.l0b_bytes = 64 * 1024
    c.l0c_bytes = 128 * 1024
    c.bytes_a = c.bytes_b = bytes_ab
    c.allow_a_stationary = c.allow_b_stationary = True
    c.allow_double_buffer_c = dbc
    c.allow_k_boundary = True
    return choose_l0_tile(c)


OS, AS, BS = Stationarity.OutputStationary, Stationarity.AStationary, Stationarity.BStationary


@pytest.mark.parametrize("m,k,nn,bytes_ab,dbc,want", [
    # the reference's system tests pin these design points (a2a3, its calibration)
    (16, 128, 128, 4, False, (16, 128, 64, OS, False)),
    (64, 384, 256, 4, True, (64, 256, 32, OS, False)),
    (128, 384, 64, 4, False, (128, 64, 64, OS, False)),
    (256, 128, 544, 2, False, (256, 128, 128, AS, False)),
    (48, 352, 96, 2, True, (48, 32, 352, AS, True)),
    (192, 64, 512, 2, False, (64, 512, 64, BS, False)),
    (64, 80, 256, 2, True, (32, 256, 80, BS, True)),
    (160, 64, 160, 4, True, (80, 128, 64, OS, True)),
    (256, 64, 256, 4, True, (32, 256, 64, BS, True)),
    (448, 64, 448, 4, True, (112, 128, 64, OS, True)),
    (320, 64, 320, 4, True, (64, 128, 64, OS, True)),
])
def test_the_design_point_is_the_references(m, k, nn, bytes_ab, dbc, want):
    r = _a2a3(m, k, nn, bytes_ab, dbc)
    assert (r.m, r.n, r.k, r.stationarity, r.double_buffer_c) == want


def test_a_one_dimensional_grid_holds_the_operand_along_its_one_tile():
    r, t = _a2a3(16, 64, 256, 4, True), _a2a3(256, 64, 16, 4, True)
    assert (r.m, r.n, r.os_holds_a, r.double_buffer_c) == (16, 128, True, True)
    assert (t.m, t.n, t.os_holds_a, t.double_buffer_c) == (128, 16, False, True)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 40), st.integers(1, 40), st.integers(1, 40), st.sampled_from([1, 2, 4]), st.booleans())
def test_every_design_point_fits_l0_and_tiles_k_at_the_fractal(m16, k16, n16, nbytes, dbc):
    m, k, nn = 16 * m16, 16 * k16, 16 * n16
    r = _a2a3(m, k, nn, nbytes, dbc)
    stream_a, stream_b = r.stationarity is not AS, r.stationarity is not BS
    assert r.m * r.k * nbytes * (2 if stream_a else 1) <= 64 * 1024
    assert r.k * r.n * nbytes * (2 if stream_b else 1) <= 64 * 1024
    assert r.m * r.n * 4 * (2 if r.double_buffer_c else 1) <= 128 * 1024
    assert r.m % 16 == r.n % 16 == r.k % 16 == 0 and r.m <= m and r.n <= nn and r.k <= k
    if r.stationarity is not OS or r.double_buffer_c:
        assert r.k == k


def test_a_configuration_without_a_tile_is_refused():
    c = L0TileConfig()
    c.M, c.N, c.K = 7, 256, 512
    c.l0a_bytes = c.l0b_bytes = 64 * 1024
    c.l0c_bytes = 128 * 1024
    with pytest.raises(ConfigError, match="allow_padding=false but M=7"):
        choose_l0_tile(c)
    c.M = 0
    with pytest.raises(ValueError, match="M, N, K must all be positive"):
        choose_l0_tile(c)


def test_the_chooser_is_where_the_references_users_import_it():
    """The reference's tests ask ``pypto.pypto_core.passes.l0_tile_chooser`` what a matmul
    compiles to before they run it: the same chooser the pass asks."""
    from pypto.pypto_core import passes as core

    c = L0TileConfig(M=256, N=544, K=128, l0a_bytes=65536, l0b_bytes=65536, l0c_bytes=131072,
                     allow_a_stationary=True, allow_b_stationary=True, allow_k_boundary=True)
    assert core.l0_tile_chooser.choose_l0_tile(c) == choose_l0_tile(c)
    assert core.l0_tile_chooser.Stationarity.AStationary is Stationarity.AStationary
