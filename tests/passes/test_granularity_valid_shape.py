"""PH001 measures the valid innermost extent — what a transfer actually moves — not the
tile's physical shape: on loads and on stores, with valid shapes below and above the 512 B
line, with valid rows fewer than the tile's, through ``set_validshape`` and a transposing
load. Each hint's ``moves`` clause counts the valid rows and bytes."""

import pytest
from helpers import program_text

from pypto.lang import parse
from pypto.runtime import RunConfig
from pypto.runtime.compiled import compile_program


def hints(body: str, a_shape=(64, 256), dtype="FP32", out_shape=(64, 256)):
    text = program_text(f"""
@pl.function(type=pl.FunctionType.InCore)
def k(self, a: pl.Tensor[{list(a_shape)}, pl.{dtype}], out: pl.Out[pl.Tensor[{list(out_shape)}, pl.{dtype}]]):
""" + "\n".join("    " + line for line in body.strip().splitlines()) + "\n", name="k")
    compiled = compile_program(parse(text), ("a", "out"), RunConfig(platform="ref"), write=False)
    return {(h.message.split(" ", 1)[0], h.span.line): h.message for h in compiled.perf_hints if h.code == "PH001"}


LOAD_LINE, STORE_LINE = 9, 10  # the lines of the two statements in a two-line body


@pytest.mark.parametrize("tile, valid, hinted", [
    ((16, 128), (16, 16), "innermost dim = 64B (tile fp32[16], target_memory=Vec); moves 1024B as 16 x 64B rows"),
    ((16, 128), (16, 127), "innermost dim = 508B (tile fp32[127], target_memory=Vec); moves 8128B as 16 x 508B rows"),
    ((8, 256), (8, 100), "innermost dim = 400B (tile fp32[100], target_memory=Vec); moves 3200B as 8 x 400B rows"),
    ((16, 64), (4, 64), "innermost dim = 256B (tile fp32[64], target_memory=Vec); moves 1024B as 4 x 256B rows"),
    ((16, 128), (3, 1), "innermost dim = 4B (tile fp32[1], target_memory=Vec); moves 12B as 3 x 4B rows"),
    ((8, 256), (8, 128), None),  # exactly the line
    ((8, 256), (8, 200), None),  # above it
    ((4, 256), (1, 256), None),  # fewer rows, still whole lines
])
def test_a_valid_shape_decides_the_hint_on_the_load_and_the_store(tile, valid, hinted):
    got = hints(f"""
t = pl.tile.load(a, [0, 0], {list(tile)}, valid_shape={list(valid)})
pl.tile.store(t, [0, 0], out)
""")
    if hinted is None:
        assert got == {}
        return
    assert got == {("tile.load", LOAD_LINE): f"tile.load has {hinted}; recommended >= 512B for backend a2a3 (L2 cache "
                   "line = 512B). Consider increasing tile shape on the innermost axis.",
                   ("tile.store", STORE_LINE): f"tile.store has {hinted}; recommended >= 512B for backend a2a3 (L2 "
                   "cache line = 512B). Consider increasing tile shape on the innermost axis."}


def test_a_narrow_tile_with_a_full_valid_shape_is_still_hinted():
    got = hints("""
t = pl.tile.load(a, [0, 0], [16, 32], valid_shape=[16, 32])
pl.tile.store(t, [0, 0], out)
""")
    assert "moves 2048B as 16 x 128B rows" in got["tile.load", LOAD_LINE]
    assert "moves 2048B as 16 x 128B rows" in got["tile.store", STORE_LINE]


@pytest.mark.parametrize("valid_cols, hinted", [(16, "moves 512B as 8 x 64B rows"), (200, None), (128, None)])
def test_a_store_of_a_tile_narrowed_by_set_validshape_is_measured_by_its_valid_shape(valid_cols, hinted):
    got = hints(f"""
t = pl.tile.load(a, [0, 0], [8, 256])
v = pl.tile.set_validshape(t, 8, {valid_cols})
pl.tile.store(v, [0, 0], out)
""")
    assert ("tile.load", LOAD_LINE) not in got  # the load moves whole 1 KiB rows
    store = got.get(("tile.store", 11))
    assert (store is None) if hinted is None else (hinted in store), store


@pytest.mark.parametrize("valid, hinted", [((16, 100), "moves 3200B as 16 x 200B rows"), ((16, 256), None)])
def test_a_transposing_load_measures_the_rows_of_its_valid_region(valid, hinted):
    """A transposing load reads rows of the GM region: the region's valid columns count."""
    got = hints(f"""
w = pl.tile.load(a, [0, 0], [16, 256], valid_shape={list(valid)}, target_memory=pl.Mem.Mat, transpose=True)
pl.tile.store(pl.tile.load(a, [0, 0], [1, 256]), [0, 0], out)
""", dtype="FP16")
    load = got.get(("tile.load", LOAD_LINE))
    if hinted is None:
        assert load is None, load
    else:
        assert load.startswith("tile.load has innermost dim = 200B (tile fp16[100], target_memory=Mat)"), load
        assert hinted in load, load
