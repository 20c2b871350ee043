"""AllocateMemoryAddr's contract, as properties of whole programs that mix declared
(``pl.MemRef("m", slots=N)[...]``, constant and rotating slots), pipeline (``pl.pipeline``
stage slots) and compiler-made MemRefs with lifetimes that nest and interleave: any two
allocations live at once are disjoint, every slot starts at its space's alignment (the SoC
table), everything fits the capacity, and the simulator gives ``ref``'s bits."""

import pytest
import torch
from helpers import check_pass, program_text
from hypothesis import given
from hypothesis import strategies as st

from pypto.ir import nodes as n
from pypto.lang import parse
from pypto.passes.allocation.allocate_memory_addr import allocate_memory_addr
from pypto.fuzz.checks import placement_problems
from pypto.runtime import RunConfig
from pypto.runtime.compiled import compile_program
from pypto.backend import A2A3

IN_ROWS, WIDTH = 64, 128  # the input tensor; tiles take a corner of it
SENTINEL = -555.0


def assert_placement_contract(fn: n.Function, soc=A2A3) -> None:
    problems = placement_problems(fn, soc)
    assert not problems, "\n".join(problems)


# ----------------------------------------------------------------------------- programs


@st.composite
def tile_shape(draw):
    # widths whose rows are not multiples of the 128 B alignment, so padding matters
    return draw(st.sampled_from([1, 3, 8, 16])), draw(st.sampled_from([8, 40, 100, 128]))


@st.composite
def memref(draw, rotating: bool):
    """A declared MemRef annotation's placement part, or None (the compiler makes one)."""
    kind = draw(st.sampled_from(["none", "declared"] + (["rotating"] if rotating else [])))
    if kind == "none":
        return None
    slots = draw(st.integers(2 if kind == "rotating" else 1, 3))
    if slots == 1:
        return "slots=1)"  # one slot takes no index
    index = f"(i + {draw(st.integers(0, slots - 1))}) % {slots}" if kind == "rotating" else \
        str(draw(st.integers(0, slots - 1)))
    return f"slots={slots})[{index}]"


class _Text:
    """Builds the kernel's lines and the out rows each store gets."""

    def __init__(self):
        self.lines: list[str] = []
        self.out_rows = 0
        self.names = 0

    def fresh(self, base):
        self.names += 1
        return f"{base}{self.names}"

    def load(self, shape, placement, row, indent=""):
        name = self.fresh("t")
        rows, cols = shape
        ann = ""
        if placement is not None:
            ann = f": pl.Tile[[{rows}, {cols}], pl.FP32, pl.MemRef(\"m{name}\", {placement}, pl.Mem.Vec]"
        self.lines.append(f"{indent}{name}{ann} = pl.tile.load(a, [{row}, 0], [{rows}, {cols}])")
        return name

    def store(self, value, rows, indent="", per_iteration=None):
        base = self.out_rows
        at = f"{base} + i * {rows}" if per_iteration else str(base)
        self.out_rows += rows * (per_iteration or 1)
        self.lines.append(f"{indent}pl.tile.store({value}, [{at}, 0], out)")


@st.composite
def allocation_programs(draw):
    """A kernel: top-level tiles loaded and stored at interleaved points (so their
    lifetimes nest and overlap), and loops (``pl.range`` or ``pl.pipeline``) whose bodies
    load into declared, rotating or stage slots and may read a top-level tile every
    iteration (which keeps it live across the loop)."""
    text = _Text()
    live: dict[str, tuple] = {}  # top-level tile -> shape
    for _ in range(draw(st.integers(2, 9))):
        action = draw(st.sampled_from(["load", "load", "store", "loop"]))
        if action == "load" or not live and action == "store":
            shape = draw(tile_shape())
            live[text.load(shape, draw(memref(rotating=False)), draw(st.integers(0, IN_ROWS - shape[0])))] = shape
        elif action == "store":
            name = draw(st.sampled_from(sorted(live)))
            text.store(name, live.pop(name)[0])
        else:
            trips = draw(st.integers(0, 5))
            stage = draw(st.sampled_from([None, 2, 3]))
            text.lines.append(f"for i in pl.pipeline({trips}, stage={stage}):" if stage else
                              f"for i in pl.range({trips}):")
            shape = draw(tile_shape())
            t = text.load(shape, draw(memref(rotating=True)), "i", indent="    ")
            partners = sorted(k for k, s in live.items() if s == shape)
            value = f"pl.tile.exp({t})"
            if partners and draw(st.booleans()):
                value = f"pl.tile.add({t}, {draw(st.sampled_from(partners))})"
            if draw(st.booleans()):  # a second stage buffer in the same body
                u = text.load(shape, draw(memref(rotating=True)), "i + 1", indent="    ")
                value = f"pl.tile.sub({value}, {u})"
            text.store(value, shape[0], indent="    ", per_iteration=max(trips, 1))
    for name in sorted(live):
        text.store(name, live[name][0])
    body = "\n".join("    " + line for line in text.lines)
    rows = max(text.out_rows, 1)
    return program_text(f"""
@pl.function(type=pl.FunctionType.InCore)
def k(self, a: pl.Tensor[[{IN_ROWS}, {WIDTH}], pl.FP32], out: pl.Out[pl.Tensor[[{rows}, {WIDTH}], pl.FP32]]):
{body}
""", name="k")


def run(program, platform):
    config = RunConfig(platform=platform, disabled_diagnostics=("PH001",))
    compiled = compile_program(program, ("a", "out"), config, write=False)
    a = torch.randn(IN_ROWS, WIDTH, generator=torch.Generator().manual_seed(3))
    out = torch.full(program.function("k").params[1].type.shape, SENTINEL)
    compiled.run(a, out)
    return compiled, out


def check(text):
    """a2a3sim gives ref's bits, and the lowered function keeps the placement contract."""
    program = parse(text)
    compiled, got = run(program, "a2a3sim")
    _, want = run(program, "ref")
    assert torch.equal(got, want), "a2a3sim differs from ref"
    assert_placement_contract(compiled.lowered.function("k"))


# ----------------------------------------------------------------------------- directed cases

def test_a_declared_two_slot_memref_lands_clear_of_every_tile_it_lives_with():
    """``t3`` outlives ``t1`` and ``t2``; ``t4`` takes a freed buffer; the declared
    2-slot ``m`` (256 B) lives with ``t3`` and ``t4`` and writes its slot 1: first fit has
    to step past all of them, whatever order it meets them in, or ``t3``'s bytes are
    overwritten and the stored row is wrong."""
    check(program_text(f"""
@pl.function(type=pl.FunctionType.InCore)
def k(self, a: pl.Tensor[[{IN_ROWS}, {WIDTH}], pl.FP32], out: pl.Out[pl.Tensor[[5, {WIDTH}], pl.FP32]]):
    t1 = pl.tile.load(a, [0, 0], [1, 8])
    t2 = pl.tile.load(a, [1, 0], [1, 8])
    t3 = pl.tile.load(a, [2, 0], [1, 8])
    pl.tile.store(t1, [0, 0], out)
    pl.tile.store(t2, [1, 0], out)
    t4 = pl.tile.load(a, [3, 0], [1, 8])
    t5: pl.Tile[[1, 8], pl.FP32, pl.MemRef("m", slots=2)[1], pl.Mem.Vec] = pl.tile.load(a, [4, 0], [1, 8])
    pl.tile.store(t3, [2, 0], out)
    pl.tile.store(t4, [3, 0], out)
    pl.tile.store(t5, [4, 0], out)
""", name="k"))


def test_pipeline_stages_beside_declared_and_long_lived_tiles():
    check(program_text(f"""
@pl.function(type=pl.FunctionType.InCore)
def k(self, a: pl.Tensor[[{IN_ROWS}, {WIDTH}], pl.FP32], out: pl.Out[pl.Tensor[[80, {WIDTH}], pl.FP32]]):
    big = pl.tile.load(a, [0, 0], [16, 128])
    b: pl.Tile[[3, 40], pl.FP32, pl.MemRef("mb", slots=2)[1], pl.Mem.Vec] = pl.tile.load(a, [16, 0], [3, 40])
    pl.tile.store(big, [0, 0], out)
    c = pl.tile.load(a, [20, 0], [8, 128])
    d: pl.Tile[[8, 128], pl.FP32, pl.MemRef("md", slots=1), pl.Mem.Vec] = pl.tile.load(a, [28, 0], [8, 128])
    for i in pl.pipeline(5, stage=3):
        e = pl.tile.load(a, [i, 0], [8, 128])
        pl.tile.store(pl.tile.add(e, d), [40 + i * 8, 0], out)
    pl.tile.store(b, [16, 0], out)
    pl.tile.store(c, [24, 0], out)
    pl.tile.store(d, [32, 0], out)
""", name="k"))


def test_first_fit_skips_past_the_furthest_end_it_has_crossed():
    """Pass level, before and after: ``y`` is live with ``big`` (0..8192) and with the two
    small ones that reuse ``big``'s bytes after it (0..2048, 2048..4096); the first gap
    that clears all three is at 8192, not at 4096 inside ``big``."""
    head = """
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[64, 128], pl.FP32], out: pl.Out[pl.Tensor[[64, 128], pl.FP32]]):"""
    before = head + """
            big: pl.Tile[[16, 128], pl.FP32, pl.MemRef("mem_vec_0", size=8192), pl.Mem.Vec] = pl.tile.load(a, [0, 0], [16, 128], target_memory=pl.Mem.Vec)
            y: pl.Tile[[2, 128], pl.FP32, pl.MemRef("mem_vec_1", size=1024), pl.Mem.Vec] = pl.tile.load(a, [16, 0], [2, 128], target_memory=pl.Mem.Vec)
            pl.tile.store(big, [0, 0], out)
            p: pl.Tile[[4, 128], pl.FP32, pl.MemRef("mem_vec_2", size=2048), pl.Mem.Vec] = pl.tile.load(a, [20, 0], [4, 128], target_memory=pl.Mem.Vec)
            q: pl.Tile[[4, 128], pl.FP32, pl.MemRef("mem_vec_3", size=2048), pl.Mem.Vec] = pl.tile.load(a, [24, 0], [4, 128], target_memory=pl.Mem.Vec)
            pl.tile.store(y, [16, 0], out)
            pl.tile.store(p, [20, 0], out)
            pl.tile.store(q, [24, 0], out)
    """
    after = before.replace('"mem_vec_0", size=8192', '"mem_vec_0", 0, 8192').replace(
        '"mem_vec_1", size=1024', '"mem_vec_1", 8192, 1024').replace(
        '"mem_vec_2", size=2048', '"mem_vec_2", 0, 2048').replace('"mem_vec_3", size=2048', '"mem_vec_3", 2048, 2048')
    got = check_pass(allocate_memory_addr, before, after)
    assert_placement_contract(got.program.function("k"))


@pytest.mark.parametrize("cols", [8, 40, 100])
def test_declared_slots_of_padded_tiles_each_start_aligned(cols):
    """A 3-slot declared MemRef of tiles whose bytes are not a multiple of 128: each slot
    is padded, so slot k starts aligned, and a neighbour starts past the padding."""
    check(program_text(f"""
@pl.function(type=pl.FunctionType.InCore)
def k(self, a: pl.Tensor[[{IN_ROWS}, {WIDTH}], pl.FP32], out: pl.Out[pl.Tensor[[24, {WIDTH}], pl.FP32]]):
    keep = pl.tile.load(a, [0, 0], [3, {cols}])
    for i in pl.range(6):
        t: pl.Tile[[3, {cols}], pl.FP32, pl.MemRef("ring", slots=3)[i % 3], pl.Mem.Vec] = pl.tile.load(a, [i, 0], [3, {cols}])
        pl.tile.store(pl.tile.add(t, keep), [i * 3, 0], out)
    pl.tile.store(keep, [18, 0], out)
""", name="k"))


# ----------------------------------------------------------------------------- property


@given(allocation_programs())
def test_property_live_allocations_are_disjoint_aligned_and_compute_refs_bits(text):
    check(text)
