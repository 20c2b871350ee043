"""Allocations declared outside a kernel: ``buf = pl.MemRef(slots=2)`` at module level (or in
a builder function), named by the variable in tile annotations (``buf[i % 2]``), as the
reference's @pl.program kernels write them. The allocation takes the variable's name unless
it names itself; the correspondence is checked where it breaks."""

from __future__ import annotations

import importlib.util
import itertools
import sys
import textwrap

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import pypto.language as pl
from pypto.errors import PyptoError, TypeCheckError
from pypto.lang import parse
from pypto.runtime import RunConfig

PLATFORMS = ("ref", "a2a3sim")
TR, TC, NT = 16, 64, 4

PINGPONG = pl.MemRef(slots=2)
SCRATCH = pl.MemRef()
NAMED = pl.MemRef("ub_pair", slots=2)


@pl.jit
def colive_pair(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(NT):
            lo: pl.Tile[[TR, TC], pl.FP32, PINGPONG[i % 2], pl.Mem.Vec] = pl.load(a, [i * TR, 0], [TR, TC])
            hi: pl.Tile[[TR, TC], pl.FP32, PINGPONG[(i + 1) % 2], pl.Mem.Vec] = pl.load(b, [i * TR, 0], [TR, TC])
            pl.store(pl.add(lo, hi), [i * TR, 0], out)
    return out


@pl.jit
def colive_pair_inline(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(NT):
            lo: pl.Tile[[TR, TC], pl.FP32, pl.MemRef("PINGPONG", slots=2)[i % 2], pl.Mem.Vec] = pl.load(
                a, [i * TR, 0], [TR, TC])
            hi: pl.Tile[[TR, TC], pl.FP32, pl.MemRef("PINGPONG", slots=2)[(i + 1) % 2], pl.Mem.Vec] = pl.load(
                b, [i * TR, 0], [TR, TC])
            pl.store(pl.add(lo, hi), [i * TR, 0], out)
    return out


def args():
    g = torch.Generator().manual_seed(3)
    return torch.randn(NT * TR, TC, generator=g), torch.randn(NT * TR, TC, generator=g), torch.zeros(NT * TR, TC)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_declared_pair_of_slots_holds_two_colive_tiles(platform):
    a, b, out = args()
    colive_pair(a, b, out, config=RunConfig(platform=platform))
    assert torch.equal(out, a + b)  # one slot collapsed onto the other would give b + b


def test_the_declaration_takes_its_variables_name_as_the_inline_form_spells_it():
    a, b, out = args()
    declared, inline = colive_pair.lower(a, b, out), colive_pair_inline.lower(a, b, out)
    assert declared.as_python().replace("colive_pair", "K") == inline.as_python().replace("colive_pair_inline", "K")
    text = colive_pair.specialize(a, b, out).as_python()
    assert 'pl.MemRef("PINGPONG", slots=2)[i % 2]' in text
    assert parse(text) == colive_pair.specialize(a, b, out)


@pl.jit
def named_and_scratch(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(NT):
            t: pl.Tile[[TR, TC], pl.FP32, NAMED[i % 2], pl.Mem.Vec] = pl.load(a, [i * TR, 0], [TR, TC])
            e: pl.Tile[[TR, TC], pl.FP32, SCRATCH, pl.Mem.Vec] = pl.exp(t)
            pl.store(e, [i * TR, 0], out)
    return out


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_named_declaration_keeps_its_name_and_a_single_slot_one_is_a_scratch(platform):
    a, _, out = args()
    named_and_scratch(a, out, config=RunConfig(platform=platform))
    assert torch.equal(out, torch.exp(a))
    text = named_and_scratch.specialize(a, out).as_python()
    assert 'pl.MemRef("ub_pair", slots=2)[i % 2]' in text and 'pl.MemRef("SCRATCH")' in text


_counter = itertools.count()


def module(tmp_path, text: str):
    """A module written to a file and imported: kernels are parsed from their file."""
    path = tmp_path / f"decl_{next(_counter)}.py"
    path.write_text("import pypto.language as pl\n\n" + textwrap.dedent(text))
    spec = importlib.util.spec_from_file_location(path.stem, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = mod  # where inspect finds a class's file (@pl.program reads it)
    try:
        spec.loader.exec_module(mod)
    finally:
        del sys.modules[path.stem]
    return mod, path


def where(path, marker: str) -> str:
    lines = path.read_text().splitlines()
    return f"{path}:{next(k for k, x in enumerate(lines) if marker in x) + 1}:"


PROGRAM = """
BUFS = pl.MemRef(slots={slots})


@pl.program
class Rotate:
    @pl.function(type=pl.FunctionType.InCore)
    def kernel(self, a: pl.Tensor[[{rows}, 64], pl.FP32],
               out: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
        acc: pl.Tile[[16, 64], pl.FP32, pl.Mem.Vec] = pl.load(a, [0, 0], [16, 64])
        for i in pl.range(1, {steps}):
{loads}
            acc = pl.add(acc, t0)
        out = pl.store(acc, [0, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[{rows}, 64], pl.FP32],
             out: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
        out = self.kernel(a, out)
        return out
"""


@settings(max_examples=12, deadline=None)
@given(slots=st.integers(2, 4), steps=st.integers(2, 5), data=st.data())
def test_every_slot_of_a_declaration_keeps_its_own_tile(tmp_path_factory, slots, steps, data):
    """Tiles selected by distinct rotating slots of one declaration are live together; each
    keeps what was loaded into it (the sum is of distinct rows) on both platforms."""
    live = data.draw(st.integers(1, slots))
    shifts = data.draw(st.permutations(range(slots)))[:live]
    loads = "\n".join(
        f"            t{k}: pl.Tile[[16, 64], pl.FP32, BUFS[(i + {s}) % {slots}], pl.Mem.Vec] = "
        f"pl.load(a, [(i * {live} + {k}) * 16, 0], [16, 64])" for k, s in enumerate(shifts))
    # every tile is read only once all are loaded: the slots hold them at once
    loads += "".join(f"\n            t0 = pl.add(t0, t{k})" for k in range(1, live))
    rows = (steps * live + 1) * 16
    mod, _ = module(tmp_path_factory.mktemp("decl"), PROGRAM.format(slots=slots, rows=rows, steps=steps,
                                                                    loads=loads))
    a = torch.randn(rows, 64, generator=torch.Generator().manual_seed(slots * 10 + steps))
    want = a[:16].clone()
    for i in range(1, steps):
        part = a[(i * live) * 16:(i * live + 1) * 16].clone()
        for k in range(1, live):
            part = part + a[(i * live + k) * 16:(i * live + k + 1) * 16]
        want = want + part
    for platform in PLATFORMS:
        out = torch.zeros(16, 64)
        pypto_run(mod.Rotate, a, out, platform)
        assert torch.equal(out, want), platform


def pypto_run(program, a, out, platform):
    from pypto.runtime import run

    run(program, a, out, config=RunConfig(platform=platform))


# ----------------------------------------------------------------------------- mistakes


def test_one_declaration_reached_through_two_names_is_refused(tmp_path):
    mod, path = module(tmp_path, """
        BUF = pl.MemRef(slots=2)
        OTHER = BUF


        @pl.jit
        def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
            with pl.at(level=pl.Level.CORE_GROUP):
                for i in pl.range(2):
                    x: pl.Tile[[16, 64], pl.FP32, BUF[i % 2], pl.Mem.Vec] = pl.load(a, [0, 0], [16, 64])
                    y: pl.Tile[[16, 64], pl.FP32, OTHER[(i + 1) % 2], pl.Mem.Vec] = pl.load(a, [16, 0], [16, 64])  # MARK
                    pl.store(pl.add(x, y), [0, 0], out)
            return out
    """)
    with pytest.raises(TypeCheckError, match="the allocation 'BUF' is also reached as 'OTHER'") as info:
        mod.k(torch.zeros(32, 64), torch.zeros(16, 64))
    assert where(path, "MARK") in str(info.value) and "use 'BUF' throughout" in str(info.value)


def test_two_declarations_of_one_name_are_refused(tmp_path):
    mod, path = module(tmp_path, """
        A = pl.MemRef("ub", slots=2)
        B = pl.MemRef("ub", slots=2)


        @pl.jit
        def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
            with pl.at(level=pl.Level.CORE_GROUP):
                x: pl.Tile[[16, 64], pl.FP32, A[0], pl.Mem.Vec] = pl.load(a, [0, 0], [16, 64])
                y: pl.Tile[[16, 64], pl.FP32, B[1], pl.Mem.Vec] = pl.load(a, [16, 0], [16, 64])  # MARK
                pl.store(pl.add(x, y), [0, 0], out)
            return out
    """)
    with pytest.raises(TypeCheckError, match="two pl.MemRef declarations both go by the name 'ub'") as info:
        mod.k(torch.zeros(32, 64), torch.zeros(16, 64))
    assert where(path, "MARK") in str(info.value)


@pytest.mark.parametrize("use, message", [
    ("ONE[0]", "'ONE' has a single slot, so it takes no slot index"),
    ("TWO[2]", "slot 2 is out of range for 'TWO', which has 2 slots"),
    ("TWO", "a 2-slot MemRef needs a slot index"),
])
def test_a_slot_that_does_not_fit_the_declaration_is_refused_where_it_is_selected(tmp_path, use, message):
    mod, path = module(tmp_path, f"""
        ONE = pl.MemRef()
        TWO = pl.MemRef(slots=2)


        @pl.jit
        def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
            with pl.at(level=pl.Level.CORE_GROUP):
                x: pl.Tile[[16, 64], pl.FP32, {use}, pl.Mem.Vec] = pl.load(a, [0, 0], [16, 64])  # MARK
                pl.store(x, [0, 0], out)
            return out
    """)
    with pytest.raises(TypeCheckError, match=message) as info:
        mod.k(torch.zeros(16, 64), torch.zeros(16, 64))
    assert where(path, "MARK") in str(info.value) and info.value.hint


@pytest.mark.parametrize("decl, message", [
    ("pl.MemRef(slots=0)", "slots must be a positive int, not 0"),
    ("pl.MemRef(3)", "pl.MemRef needs a name"),
    ("pl.MemRef('ub', slot=2)", "pl.MemRef got an unexpected keyword 'slot'"),
    ("pl.MemRef('ub', reusable=True)", "pipeline= and reusable= are the compiler's marks"),
])
def test_a_malformed_declaration_is_refused_where_it_is_written(tmp_path, decl, message):
    with pytest.raises(PyptoError, match=message) as info:
        module(tmp_path, f"BUF = {decl}  # MARK\n")
    assert "MARK" in str(info.value) and info.value.hint


def test_a_declaration_is_not_a_value(tmp_path):
    mod, path = module(tmp_path, """
        BUF = pl.MemRef(slots=2)


        @pl.jit
        def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
            with pl.at(level=pl.Level.CORE_GROUP):
                x = pl.load(a, [0, 0], [16, 64])
                y = pl.add(x, BUF)  # MARK
                pl.store(y, [0, 0], out)
            return out
    """)
    with pytest.raises(PyptoError) as info:
        mod.k(torch.zeros(16, 64), torch.zeros(16, 64))
    assert where(path, "MARK") in str(info.value) and "BUF" in str(info.value)


def test_subscripting_a_declaration_outside_a_kernel_explains_itself():
    with pytest.raises(PyptoError, match="selected in a tile annotation"):
        PINGPONG[0]
