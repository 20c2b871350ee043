from helpers import check_pass, program_text

from pypto.lang import parse
from pypto.passes.canonicalize_tile_slice import canonicalize_tile_slice


def test_a_mat_window_moved_to_l0_is_extracted_from_its_tile():
    check_pass(canonicalize_tile_slice, """
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[16, 64], pl.FP16], b: pl.Tensor[[32, 32], pl.FP16],
              out: pl.Out[pl.Tensor[[16, 32], pl.FP32]]):
            am = pl.tile.load(a, [0, 0], [16, 64], target_memory=pl.Mem.Mat)
            w = pl.tile.slice(am, [16, 32], [0, 32])
            inner = pl.tile.slice(w, [16, 16], [0, 16])
            x = pl.tile.move(w, target_memory=pl.Mem.Left)
            bm = pl.tile.load(b, [0, 0], [32, 32], target_memory=pl.Mem.Mat)
            y = pl.tile.move(bm, target_memory=pl.Mem.Right)
            c = pl.tile.matmul(x, y)
            e = pl.tile.extract(inner, 0, 8, [16, 8], target_memory=pl.Mem.Left)
            pl.tile.store(c, [0, 0], out)
    """, """
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[16, 64], pl.FP16], b: pl.Tensor[[32, 32], pl.FP16], out: pl.Out[pl.Tensor[[16, 32], pl.FP32]]):
            am = pl.tile.load(a, [0, 0], [16, 64], target_memory=pl.Mem.Mat)
            x = pl.tile.extract(am, 0, 32, [16, 32], target_memory=pl.Mem.Left)
            bm = pl.tile.load(b, [0, 0], [32, 32], target_memory=pl.Mem.Mat)
            y = pl.tile.move(bm, target_memory=pl.Mem.Right)
            c = pl.tile.matmul(x, y)
            e = pl.tile.extract(am, 0, 56, [16, 8], target_memory=pl.Mem.Left)
            pl.tile.store(c, [0, 0], out)
    """)


def test_vec_windows_and_windows_read_whole_are_left_alone():
    program = parse(program_text("""
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[16, 64], pl.FP32], out: pl.Out[pl.Tensor[[16, 32], pl.FP32]]):
            t = pl.tile.load(a, [0, 0], [16, 64], target_memory=pl.Mem.Vec)
            w = pl.tile.slice(t, [16, 32], [0, 32])
            pl.tile.store(w, [0, 0], out)
    """))
    assert canonicalize_tile_slice(program, None).program == program
