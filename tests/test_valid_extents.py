"""Valid extents at their edges. A valid extent runs from 0 to the tile's extent on its axis,
as in the reference: 0 is an empty region (a window clamped at a tensor's end leaves one),
which loads, moves, computes and stores nothing. A reduction needs an element on each
axis (the reference refuses a provably empty one: the vector unit's reductions assert on
it, and a max of nothing has no value) — refused where it is written when the extent is a
constant, a located run-time error on both platforms when it is computed; never a torch
exception. Extents below 0 or past the tile are refused per axis, also where another axis
is computed."""

import pytest
import torch

from helpers import scope_kernel
from pypto.errors import ExecutionError, PyptoError, TypeCheckError
from pypto.lang import parse
from pypto.runtime import RunConfig

PLATFORMS = ("ref", "a2a3sim")
READ = "x: pl.Tensor, cfg: pl.Tensor, out: pl.Out[pl.Tensor]"
REDUCTIONS = {"row_sum": (16, 1), "row_max": (16, 1), "row_min": (16, 1), "row_prod": (16, 1),
              "col_sum": (1, 64), "col_max": (1, 64), "col_min": (1, 64), "col_prod": (1, 64),
              "row_argmax": (16, 1), "row_argmin": (16, 1), "col_argmax": (1, 64), "col_argmin": (1, 64)}


def _out(op: str) -> torch.Tensor:
    return torch.zeros(REDUCTIONS[op], dtype=torch.int32 if "arg" in op else torch.float32)


@pytest.mark.parametrize("op", sorted(REDUCTIONS))
@pytest.mark.parametrize("valid", ([16, 0], [0, 64]))
def test_a_reduction_of_a_constant_empty_region_is_refused_where_it_is_written(tmp_path, op, valid):
    k = scope_kernel(tmp_path, f"t = pl.load(x, [0, 0], [16, 64], valid_shape={valid}, target_memory=pl.Mem.Vec)\n"
                               f"r = pl.{op}(t)\n"
                               "pl.store(r, [0, 0], out)")
    for platform in PLATFORMS:
        with pytest.raises(TypeCheckError, match=rf"tile\.{op} requires a valid region with an element on each "
                                                 rf"axis to reduce, but got \[{valid[0]}, {valid[1]}\]") as info:
            k(torch.randn(16, 64), _out(op), config=RunConfig(platform=platform))
        err = info.value
        assert (err.span.file, err.span.line, err.span.col) == (str(tmp_path / "k.py"), 7, 13)
        assert "at least 1" in err.hint


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("op", sorted(REDUCTIONS))
def test_a_reduction_of_an_empty_region_computed_as_it_runs_is_a_located_error(tmp_path, platform, op):
    k = scope_kernel(tmp_path, "v = pl.read(cfg, [0])\n"
                               "t = pl.load(x, [0, 0], [16, 64], valid_shape=[16 - v, 64 - 4 * v], "
                               "target_memory=pl.Mem.Vec)\n"
                               f"r = pl.{op}(t)\n"
                               "pl.store(r, [0, 0], out)", READ)
    x = torch.randn(16, 64)
    out = _out(op)
    k(x, torch.tensor([4], dtype=torch.int32), out, config=RunConfig(platform=platform))  # [12, 48]: fine
    region = x[:12, :48]
    if op in ("row_sum", "col_sum"):
        want = region.sum(dim=1 if op.startswith("row") else 0, keepdim=True)
        assert torch.allclose(out[:12, :1] if op.startswith("row") else out[:1, :48], want, atol=1e-4)
    if op == "row_argmax":
        assert torch.equal(out[:12, 0], region.argmax(dim=1).to(torch.int32))
    with pytest.raises(ExecutionError, match=rf"tile\.{op}: the valid region it reduces is \[0, 0\] here, "
                                             "with no element to reduce") as info:
        k(x, torch.tensor([16], dtype=torch.int32), _out(op), config=RunConfig(platform=platform))
    err = info.value
    assert (err.span.file, err.span.line) == (str(tmp_path / "k.py"), 8)
    assert err.hint and "skip the reduction" in err.hint


@pytest.mark.parametrize("platform", PLATFORMS)
def test_an_empty_region_loads_computes_and_stores_nothing(tmp_path, platform):
    """Rows 0 (computed) of a load: the store leaves ``out`` as it was; the same load filled
    with its pad value is all pad; set_validshape to 0 columns, computed on, stores nothing."""
    k = scope_kernel(tmp_path, "v = pl.read(cfg, [0])\n"
                               "t = pl.load(x, [0, 0], [16, 64], valid_shape=[v, 64], target_memory=pl.Mem.Vec)\n"
                               "pl.store(pl.exp(t), [0, 0], out)\n"
                               "w = pl.load(x, [16, 0], [16, 64], target_memory=pl.Mem.Vec)\n"
                               "e = pl.adds(pl.set_validshape(w, 16, 0), 1.0)\n"
                               "pl.store(e, [16, 0], out)\n"
                               "pl.store(pl.fillpad(t, pl.PadValue.max), [32, 0], out)", READ)
    x = torch.randn(48, 64)
    out = torch.full((48, 64), 7.0)
    k(x, torch.tensor([0], dtype=torch.int32), out, config=RunConfig(platform=platform))
    assert torch.equal(out[:32], torch.full((32, 64), 7.0))
    assert torch.equal(out[32:], torch.full((16, 64), torch.inf))


@pytest.mark.parametrize("line, want", [
    ("t = pl.load(x, [0, 0], [16, 64], valid_shape=[-1, v], target_memory=pl.Mem.Vec)",
     r"tile\.load requires valid_shape within the tile shape \[16, 64\], but got \[-1, v\]"),
    ("t = pl.load(x, [0, 0], [16, 64], valid_shape=[v, 65], target_memory=pl.Mem.Vec)",
     r"tile\.load requires valid_shape within the tile shape \[16, 64\], but got \[v, 65\]"),
    ("t = pl.set_validshape(pl.load(x, [0, 0], [16, 64], target_memory=pl.Mem.Vec), v, -2)",
     r"tile\.set_validshape requires extents within the tile shape \[16, 64\], but got \[v, -2\]"),
    ("t = pl.slice(pl.load(x, [0, 0], [16, 64], target_memory=pl.Mem.Vec), [8, 32], [0, 0], valid_shape=[9, v])",
     r"tile\.slice requires valid_shape within the slice shape \[8, 32\], but got \[9, v\]"),
])
def test_a_constant_extent_outside_the_tile_is_refused_beside_a_computed_one(tmp_path, line, want):
    k = scope_kernel(tmp_path, f"v = pl.read(cfg, [0])\n{line}\npl.store(t, [0, 0], out)", READ)
    for platform in PLATFORMS:
        with pytest.raises(TypeCheckError, match=want) as info:
            k(torch.randn(16, 128), torch.tensor([3], dtype=torch.int32), torch.zeros(16, 64),
              config=RunConfig(platform=platform))
        assert info.value.span.line == 7
        assert "from 0 (an empty region)" in info.value.hint


def test_an_annotated_valid_shape_the_value_does_not_have_is_refused_at_the_annotation(tmp_path):
    k = scope_kernel(tmp_path, "t: pl.Tile[[16, 64], pl.FP32, pl.Mem.Vec, pl.TileView(valid_shape=[16, 0])] = "
                               "pl.load(x, [0, 0], [16, 64], target_memory=pl.Mem.Vec)\n"
                               "pl.store(pl.row_sum(t), [0, 0], out)")
    with pytest.raises(TypeCheckError, match=r"the annotation says the tile is valid over \[16, 0\] but the value is "
                                             "whole") as info:
        k(torch.randn(16, 64), torch.zeros(16, 1), config=RunConfig(platform="ref"))
    assert (info.value.span.line, info.value.span.col) == (6, 12)
    assert "valid_shape=" in info.value.hint


def test_the_fuzz_reproducer_is_refused_at_its_reduction():
    """The fuzz review's program: a planted valid extent of 0 before a row_sum."""
    text = ("import pypto.language as pl\n\n\n@pl.program\nclass reduction:\n"
            "    @pl.function(type=pl.FunctionType.InCore)\n"
            "    def kernel(self, a: pl.Tensor[[8, 64], pl.FP32], out: pl.Out[pl.Tensor[[8, 1], pl.FP32]])"
            " -> pl.Tensor[[8, 1], pl.FP32]:\n"
            "        x = pl.tile.load(a, [0, 0], [8, 64], valid_shape=[8, 0], target_memory=pl.Mem.Vec)\n"
            "        row_sum = pl.tile.row_sum(x)\n"
            "        pl.tile.store(row_sum, [0, 0], out)\n"
            "        return out\n")
    with pytest.raises(PyptoError, match=r"tile\.row_sum requires a valid region with an element on each axis") as info:
        parse(text, filename="reduction.py")
    assert (info.value.span.file, info.value.span.line) == ("reduction.py", 9)
