import pytest
import torch
from helpers import check_pass, program_text

import pypto.language as pl
from pypto.errors import MemorySpaceError
from pypto.lang import parse
from pypto.passes.context import PassContext
from pypto.passes.allocation.init_mem_ref import init_mem_ref
from pypto.backend import A2A3


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
            acc: pl.Tile[[16, 100], pl.FP32, pl.MemRef("mem_vec_0", size=6400, reusable=True), pl.Mem.Vec] = pl.tile.load(a, [0, 0], [16, 100], target_memory=pl.Mem.Vec)
            for i, (s,) in pl.range(1, 4, init_values=(acc,)):
                t: pl.Tile[[16, 100], pl.FP32, pl.MemRef("ub", size=12800, slots=2)[i % 2], pl.Mem.Vec] = pl.tile.load(a, [i * 16, 0], [16, 100], target_memory=pl.Mem.Vec)
                s2: pl.Tile[[16, 100], pl.FP32, pl.MemRef("mem_vec_0", size=6400, reusable=True), pl.Mem.Vec] = pl.tile.add(s, t)
                r = pl.yield_(s2)
            pl.tile.store(r, [0, 0], out)
    """)


def test_sizes_round_up_to_the_space_alignment():
    got = init_mem_ref(parse(program_text("""
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[3, 5], pl.FP16], out: pl.Out[pl.Tensor[[3, 5], pl.FP16]]):
            t = pl.tile.load(a, [0, 0], [3, 5], target_memory=pl.Mem.Vec)
            pl.tile.store(t, [0, 0], out)
    """)), PassContext(soc=A2A3)).program
    assert 'pl.MemRef("mem_vec_0", size=128, reusable=True)' in got.as_python()  # 30 B -> the 128 B UB alignment


def test_one_declared_allocation_in_two_spaces_is_rejected():
    program = parse(program_text("""
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[16, 16], pl.FP16], out: pl.Out[pl.Tensor[[16, 16], pl.FP16]]):
            x: pl.Tile[[16, 16], pl.FP16, pl.MemRef("buf"), pl.Mem.Vec] = pl.tile.load(a, [0, 0], [16, 16], target_memory=pl.Mem.Vec)
            y: pl.Tile[[16, 16], pl.FP16, pl.MemRef("buf"), pl.Mem.Mat] = pl.tile.load(a, [0, 0], [16, 16], target_memory=pl.Mem.Mat)
            pl.tile.store(x, [0, 0], out)
    """))
    with pytest.raises(MemorySpaceError, match=r'pl.MemRef\("buf"\) disagree on its memory space'):
        init_mem_ref(program, PassContext(soc=A2A3))


def _line_of(fn, marker: str) -> int:
    import inspect

    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, text in enumerate(lines) if marker in text)


@pl.jit
def slot_out_of_range(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(4):
            t: pl.Tile[[16, 128], pl.FP32, pl.MemRef("ub", slots=2)[i % 3], pl.Mem.Vec] = pl.load(a, [i * 16, 0], [16, 128])  # noqa: E501  MARK
            pl.store(t, [i * 16, 0], out)
    return out


@pl.jit
def one_slot_two_tiles(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(4):
            x: pl.Tile[[16, 128], pl.FP32, pl.MemRef("ub", slots=2)[i % 2], pl.Mem.Vec] = pl.load(a, [i * 16, 0], [16, 128])  # noqa: E501
            y: pl.Tile[[16, 128], pl.FP32, pl.MemRef("ub", slots=2)[i % 2], pl.Mem.Vec] = pl.load(a, [i * 16, 0], [16, 128])  # noqa: E501  MARK
            pl.store(pl.add(x, y), [i * 16, 0], out)
    return out


@pl.jit
def one_slot_spelled_two_ways(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(4):
            x: pl.Tile[[16, 128], pl.FP32, pl.MemRef("ub", slots=2)[i % 2], pl.Mem.Vec] = pl.load(a, [i * 16, 0], [16, 128])  # noqa: E501
            y: pl.Tile[[16, 128], pl.FP32, pl.MemRef("ub", slots=2)[(i + 2) % 2], pl.Mem.Vec] = pl.load(a, [i * 16, 0], [16, 128])  # noqa: E501  MARK
            pl.store(pl.add(x, y), [i * 16, 0], out)
    return out


@pl.jit
def in_place_in_one_slot(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(4):
            x: pl.Tile[[16, 128], pl.FP32, pl.MemRef("ub", slots=2)[i % 2], pl.Mem.Vec] = pl.load(a, [i * 16, 0], [16, 128])  # noqa: E501
            y: pl.Tile[[16, 128], pl.FP32, pl.MemRef("ub", slots=2)[i % 2], pl.Mem.Vec] = pl.exp(x)
            pl.store(y, [i * 16, 0], out)
    return out


@pl.jit
def two_slot_counts(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(2):
            x: pl.Tile[[16, 128], pl.FP32, pl.MemRef("ub", slots=2)[i % 2], pl.Mem.Vec] = pl.load(a, [i * 16, 0], [16, 128])  # noqa: E501
            pl.store(x, [i * 16, 0], out)
        for j in pl.range(2):
            y: pl.Tile[[16, 128], pl.FP32, pl.MemRef("ub", slots=4)[j % 4], pl.Mem.Vec] = pl.load(a, [j * 16, 0], [16, 128])  # noqa: E501  MARK
            pl.store(y, [j * 16, 0], out)
    return out


@pytest.mark.parametrize("kernel,message", [
    (slot_out_of_range, "'t' takes slot i % 3 of pl.MemRef(\"ub\", slots=2), which has slots 0..1"),
    (one_slot_two_tiles, "'y' is written to slot i % 2 of pl.MemRef(\"ub\") while 'x', which is in the same bytes, "
                         "is still to be read"),
    (one_slot_spelled_two_ways, "'y' is written to slot (i + 2) % 2 of pl.MemRef(\"ub\") while 'x'"),
    (two_slot_counts, "the tiles bound to pl.MemRef(\"ub\") disagree on its slot count: 'x' has Vec, slots=2; 'y' "
                      "has Vec, slots=4"),
])
def test_declared_allocations_that_cannot_hold_their_tiles_apart_are_errors_at_the_tile(kernel, message):
    a, out = torch.randn(64, 128), torch.zeros(64, 128)
    with pytest.raises(MemorySpaceError) as info:
        kernel(a, out)
    assert message in str(info.value)
    assert f"{__file__}:{_line_of(kernel.fn, 'MARK')}:" in str(info.value)


def test_a_result_written_over_its_dying_operand_in_one_slot_is_fine():
    a, out = torch.randn(64, 128), torch.zeros(64, 128)
    in_place_in_one_slot(a, out)
    assert torch.equal(out, torch.exp(a))


def test_a_declared_rotating_slot_cannot_follow_its_tile_out_of_the_loop():
    from pypto.runtime import RunConfig

    @pl.jit
    def escapes(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(a, [0, 0], [16, 128])
            for i in pl.range(3):
                t: pl.Tile[[16, 128], pl.FP32, pl.MemRef("s", slots=2)[i % 2], pl.Mem.Vec] = pl.load(a, [i * 16, 0], [16, 128])  # noqa: E501
            pl.store(t, [0, 0], out)
        return out

    for platform in ("ref", "a2a3sim"):
        with pytest.raises(MemorySpaceError, match=r"carried out of its loop \(as 't'\), but its slot i % 2 of "
                                                   r"pl.MemRef\(\"s\", slots=2\) changes with 'i'") as info:
            escapes(torch.randn(64, 128), torch.zeros(16, 128), config=RunConfig(platform=platform))
        assert info.value.span.line == escapes.fn.__code__.co_firstlineno + 5
