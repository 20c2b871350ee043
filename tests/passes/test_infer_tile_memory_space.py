import pytest
from helpers import check_pass, program_text

from pypto.errors import MemorySpaceError
from pypto.lang import parse
from pypto.passes.context import PassContext
from pypto.passes.infer_tile_memory_space import infer_tile_memory_space
from pypto.backend import A2A3


def test_cube_operands_land_in_mat_and_move_to_l0():
    check_pass(infer_tile_memory_space, """
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[16, 32], pl.FP16], b: pl.Tensor[[32, 16], pl.FP16], out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]):
            x = pl.tile.load(a, [0, 0], [16, 32], target_memory=None)
            y = pl.tile.load(b, [0, 0], [32, 16], target_memory=None)
            c = pl.tile.matmul(x, y)
            pl.tile.store(c, [0, 0], out)
    """, """
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[16, 32], pl.FP16], b: pl.Tensor[[32, 16], pl.FP16], out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]):
            x = pl.tile.load(a, [0, 0], [16, 32], target_memory=pl.Mem.Mat)
            y = pl.tile.load(b, [0, 0], [32, 16], target_memory=pl.Mem.Mat)
            x_Left = pl.tile.move(x, target_memory=pl.Mem.Left)
            y_Right = pl.tile.move(y, target_memory=pl.Mem.Right)
            c = pl.tile.matmul(x_Left, y_Right)
            pl.tile.store(c, [0, 0], out)
    """)



def test_a_move_into_l0_is_reused_until_another_move_into_that_space():
    """y's move into Right serves the second matmul too; x's does not serve the last one,
    after z moved into Left in the loop between (an L0 buffer holds one operand at a time)."""
    check_pass(infer_tile_memory_space, """
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[16, 32], pl.FP16], b: pl.Tensor[[32, 16], pl.FP16], out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]):
            x = pl.tile.load(a, [0, 0], [16, 32], target_memory=None)
            y = pl.tile.load(b, [0, 0], [32, 16], target_memory=None)
            c = pl.tile.matmul(x, y)
            c2 = pl.tile.matmul_acc(c, x, y)
            for i, (s,) in pl.range(2, init_values=(c2,)):
                z = pl.tile.load(a, [0, 0], [16, 32], target_memory=None)
                s2 = pl.tile.matmul_acc(s, z, y)
                r = pl.yield_(s2)
            c3 = pl.tile.matmul_acc(r, x, y)
            pl.tile.store(c3, [0, 0], out)
    """, """
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[16, 32], pl.FP16], b: pl.Tensor[[32, 16], pl.FP16], out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]):
            x = pl.tile.load(a, [0, 0], [16, 32], target_memory=pl.Mem.Mat)
            y = pl.tile.load(b, [0, 0], [32, 16], target_memory=pl.Mem.Mat)
            x_Left = pl.tile.move(x, target_memory=pl.Mem.Left)
            y_Right = pl.tile.move(y, target_memory=pl.Mem.Right)
            c = pl.tile.matmul(x_Left, y_Right)
            c2 = pl.tile.matmul_acc(c, x_Left, y_Right)
            for i, (s,) in pl.range(2, init_values=(c2,)):
                z = pl.tile.load(a, [0, 0], [16, 32], target_memory=pl.Mem.Mat)
                z_Left = pl.tile.move(z, target_memory=pl.Mem.Left)
                s2 = pl.tile.matmul_acc(s, z_Left, y_Right)
                r = pl.yield_(s2)
            x_Left_1 = pl.tile.move(x, target_memory=pl.Mem.Left)
            c3 = pl.tile.matmul_acc(r, x_Left_1, y_Right)
            pl.tile.store(c3, [0, 0], out)
    """)

def test_vector_operands_land_in_vec_and_spaces_flow_through_loops():
    check_pass(infer_tile_memory_space, """
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[64, 32], pl.FP32], out: pl.Out[pl.Tensor[[16, 32], pl.FP32]]):
            acc = pl.tile.load(a, [0, 0], [16, 32], target_memory=None)
            for i, (s,) in pl.range(1, 4, init_values=(acc,)):
                t = pl.tile.load(a, [i * 16, 0], [16, 32], target_memory=None)
                s2 = pl.tile.maximum(s, t)
                r = pl.yield_(s2)
            pl.tile.store(r, [0, 0], out)
    """, """
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[64, 32], pl.FP32], out: pl.Out[pl.Tensor[[16, 32], pl.FP32]]):
            acc = pl.tile.load(a, [0, 0], [16, 32], target_memory=pl.Mem.Vec)
            for i, (s,) in pl.range(1, 4, init_values=(acc,)):
                t = pl.tile.load(a, [i * 16, 0], [16, 32], target_memory=pl.Mem.Vec)
                s2 = pl.tile.maximum(s, t)
                r = pl.yield_(s2)
            pl.tile.store(r, [0, 0], out)
    """)


def test_a_tile_wanted_in_vec_and_left_cannot_be_placed():
    program = parse(program_text("""
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[16, 16], pl.FP16], out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]):
            x = pl.tile.load(a, [0, 0], [16, 16], target_memory=None)
            y = pl.tile.exp(x)
            c = pl.tile.matmul(x, x)
            pl.tile.store(c, [0, 0], out)
    """))
    with pytest.raises(MemorySpaceError, match="tile.matmul needs 'x' in Left, but it is in Vec and a2a3 cannot move"):
        infer_tile_memory_space(program, PassContext(soc=A2A3))
