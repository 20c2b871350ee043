import pytest
from helpers import check_pass, program_text

from pypto.errors import MemorySpaceError
from pypto.lang import parse
from pypto.passes.allocation.allocate_memory_addr import allocate_memory_addr
from pypto.passes.context import PassContext
from pypto.backend import A2A3


def test_co_live_buffers_get_disjoint_aligned_addresses_and_dead_ones_reuse():
    check_pass(allocate_memory_addr, """
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[16, 100], pl.FP32], out: pl.Out[pl.Tensor[[16, 100], pl.FP32]]):
            x: pl.Tile[[16, 100], pl.FP32, pl.MemRef("mem_vec_0", size=6400), pl.Mem.Vec] = pl.tile.load(a, [0, 0], [16, 100], target_memory=pl.Mem.Vec)
            y: pl.Tile[[16, 100], pl.FP32, pl.MemRef("mem_vec_1", size=6400), pl.Mem.Vec] = pl.tile.exp(x)
            z: pl.Tile[[16, 100], pl.FP32, pl.MemRef("mem_vec_2", size=6400), pl.Mem.Vec] = pl.tile.neg(y)
            pl.tile.store(z, [0, 0], out)
    """, """
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[16, 100], pl.FP32], out: pl.Out[pl.Tensor[[16, 100], pl.FP32]]):
            x: pl.Tile[[16, 100], pl.FP32, pl.MemRef("mem_vec_0", 0, 6400), pl.Mem.Vec] = pl.tile.load(a, [0, 0], [16, 100], target_memory=pl.Mem.Vec)
            y: pl.Tile[[16, 100], pl.FP32, pl.MemRef("mem_vec_1", 6400, 6400), pl.Mem.Vec] = pl.tile.exp(x)
            z: pl.Tile[[16, 100], pl.FP32, pl.MemRef("mem_vec_2", 0, 6400), pl.Mem.Vec] = pl.tile.neg(y)
            pl.tile.store(z, [0, 0], out)
    """)


def test_tiles_that_cannot_fit_name_the_space_bytes_and_tiles():
    program = parse(program_text("""
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[256, 128], pl.FP32], out: pl.Out[pl.Tensor[[256, 128], pl.FP32]]):
            x: pl.Tile[[256, 128], pl.FP32, pl.MemRef("mem_vec_0", size=131072), pl.Mem.Vec] = pl.tile.load(a, [0, 0], [256, 128], target_memory=pl.Mem.Vec)
            y: pl.Tile[[256, 128], pl.FP32, pl.MemRef("mem_vec_1", size=131072), pl.Mem.Vec] = pl.tile.exp(x)
            pl.tile.store(y, [0, 0], out)
    """))
    with pytest.raises(MemorySpaceError) as info:
        allocate_memory_addr(program, PassContext(soc=A2A3))
    text = str(info.value)
    assert "Vec cannot hold the tiles of 'k': 262144 B needed, 188416 B available" in text
    assert "live together: x (131072 B), y (131072 B)" in text
    assert info.value.span.line == 9  # x, the first tile live at the peak
