import pytest
from helpers import check_pass, program_text

from pypto.errors import MemorySpaceError
from pypto.ir import parse
from pypto.passes.context import PassContext
from pypto.passes.init_mem_ref import init_mem_ref


def test_carried_tiles_share_a_buffer_and_declared_slots_are_sized():
    check_pass(init_mem_ref, """
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[64, 100], pl.FP32], out: pl.Out[pl.Tensor[[16, 100], pl.FP32]]):
            acc = pl.tile.load(a, [0, 0], [16, 100], target_memory=pl.Mem.Vec)
            for i, (s,) in pl.range(1, 4, init_values=(acc,)):
                t: pl.Tile[[16, 100], pl.FP32, pl.MemRef("ub", slots=2)[i % 2], pl.Mem.Vec] = pl.tile.load(a, [i * 16, 0], [16, 100], target_memory=pl.Mem.Vec)
                s2 = pl.tile.add(s, t)
                r = pl.yield_(s2)
            pl.tile.store(r, [0, 0], out)
    """, """
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[64, 100], pl.FP32], out: pl.Out[pl.Tensor[[16, 100], pl.FP32]]):
            acc: pl.Tile[[16, 100], pl.FP32, pl.MemRef("mem_vec_0", size=6400), pl.Mem.Vec] = pl.tile.load(a, [0, 0], [16, 100], target_memory=pl.Mem.Vec)
            for i, (s,) in pl.range(1, 4, init_values=(acc,)):
                t: pl.Tile[[16, 100], pl.FP32, pl.MemRef("ub", size=12800, slots=2)[i % 2], pl.Mem.Vec] = pl.tile.load(a, [i * 16, 0], [16, 100], target_memory=pl.Mem.Vec)
                s2: pl.Tile[[16, 100], pl.FP32, pl.MemRef("mem_vec_0", size=6400), pl.Mem.Vec] = pl.tile.add(s, t)
                r = pl.yield_(s2)
            pl.tile.store(r, [0, 0], out)
    """)


def test_sizes_round_up_to_the_space_alignment():
    got = init_mem_ref(parse(program_text("""
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[3, 5], pl.FP16], out: pl.Out[pl.Tensor[[3, 5], pl.FP16]]):
            t = pl.tile.load(a, [0, 0], [3, 5], target_memory=pl.Mem.Vec)
            pl.tile.store(t, [0, 0], out)
    """)), PassContext()).program
    assert 'pl.MemRef("mem_vec_0", size=128)' in got.as_python()  # 30 B -> the 128 B UB alignment


def test_one_declared_allocation_in_two_spaces_is_rejected():
    program = parse(program_text("""
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[16, 16], pl.FP16], out: pl.Out[pl.Tensor[[16, 16], pl.FP16]]):
            x: pl.Tile[[16, 16], pl.FP16, pl.MemRef("buf"), pl.Mem.Vec] = pl.tile.load(a, [0, 0], [16, 16], target_memory=pl.Mem.Vec)
            y: pl.Tile[[16, 16], pl.FP16, pl.MemRef("buf"), pl.Mem.Mat] = pl.tile.load(a, [0, 0], [16, 16], target_memory=pl.Mem.Mat)
            pl.tile.store(x, [0, 0], out)
    """))
    with pytest.raises(MemorySpaceError, match=r'pl.MemRef\("buf"\) disagree on its memory space'):
        init_mem_ref(program, PassContext())
