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



NEST = """
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[M, 256], pl.FP16], b: pl.Tensor[[256, 16], pl.FP16], out: pl.Out[pl.Tensor[[M, 16], pl.FP32]]):
            x = pl.tile.load(a, [0, 0], [M, 256], target_memory=None)
            y = pl.tile.load(b, [0, 0], [256, 16], target_memory=None)
            c = pl.tile.matmul(x, y)
            c2 = pl.tile.matmul_acc(c, x, y)
            for i, (s,) in pl.range(2, init_values=(c2,)):
                z = pl.tile.load(a, [0, 0], [M, 256], target_memory=None)
                s2 = pl.tile.matmul_acc(s, z, y)
                r = pl.yield_(s2)
            c3 = pl.tile.matmul_acc(r, x, y)
            pl.tile.store(c3, [0, 0], out)
"""


def _moves(m: int) -> list:
    from pypto.ir import nodes as n

    program = parse(program_text(NEST.replace("M", str(m))))
    fn = infer_tile_memory_space(program, PassContext(soc=A2A3)).program.functions[0]
    return [(s.target, s.value.args[0].name) for s in n.walk_stmts(fn.body)
            if isinstance(s, n.Assign) and isinstance(s.value, n.Call) and s.value.op == "tile.move"]


def test_a_move_into_l0_is_reused_while_it_fits_beside_the_next():
    """x [64, 256] FP16 is 32 KiB: its move into Left (64 KiB) still fits beside z's in the
    loop, so the last matmul reads it again; y's move into Right serves every matmul."""
    assert _moves(64) == [("x_Left", "x"), ("y_Right", "y"), ("z_Left", "z")]


def test_a_move_into_l0_is_made_again_once_another_took_its_room():
    """x [128, 256] FP16 fills Left: z's move in the loop takes its room, and the last matmul
    moves x again — rather than keeping two full Left tiles alive across the loop."""
    assert _moves(128) == [("x_Left", "x"), ("y_Right", "y"), ("z_Left", "z"), ("x_Left_1", "x")]


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
