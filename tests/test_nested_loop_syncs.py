"""Syncs around a loop nested in a loop: the inner loop's own syncs order, seen from outside,
only what they feed — a value loaded before the loops and stored by the inner loop's first
trip (the carried value) still needs its MTE2 -> MTE3 sync, though MTE2's work inside the
inner loop reaches MTE3 through the vector unit from the second trip on. Sound: a2a3sim
reports no hazard and gives ``ref``'s bits for every shape of the nest."""

import torch
from helpers import program_text
from hypothesis import given
from hypothesis import strategies as st

from pypto.lang import parse
from pypto.runtime import RunConfig
from pypto.runtime.build import run


def nest(outer: int, inner: int, loads: int) -> str:
    """c0 loaded first and carried through both loops, the inner loop storing it on each trip
    (c0 itself on the first) and carrying a fresh load on; ``loads`` more loads open the
    outer body."""
    opening = "".join(f"            t{k} = pl.tile.load(a, [(i + 2) * 1, 0], [1, 64], target_memory=pl.Mem.Vec)\n"
                      for k in range(loads))
    rows = outer * inner + 4
    return program_text(f'''
    @pl.function(type=pl.FunctionType.InCore)
    def kernel(self, a: pl.Tensor[[{rows}, 64], pl.FP32], out: pl.Out[pl.Tensor[[{outer * inner}, 64], pl.FP32]],
               out1: pl.Out[pl.Tensor[[2, 64], pl.FP32]]) -> pl.Tensor[[{outer * inner}, 64], pl.FP32]:
        c0 = pl.tile.load(a, [0, 0], [1, 64], target_memory=pl.Mem.Vec)
        c1 = pl.tile.load(a, [1, 0], [1, 64], target_memory=pl.Mem.Vec)
        for i, (c0_iter,) in pl.range({outer}, init_values=(c0,)):
{opening}            for j, (c0_inner,) in pl.range({inner}, init_values=(c0_iter,)):
                t = pl.tile.load(a, [(i * {inner} + j + 4) * 1, 0], [1, 64], target_memory=pl.Mem.Vec)
                pl.tile.store(c0_inner, [(i * {inner} + j) * 1, 0], out)
                c0_inner_out = pl.yield_(t)
            p = pl.tile.add(c0_inner_out, c1)
            c0_out = pl.yield_(p)
        pl.tile.store(c0_out, [0, 0], out1)
        pl.tile.store(c1, [1, 0], out1)
        return out
''', "nested")


@given(st.integers(1, 3), st.integers(1, 3), st.integers(0, 2))
def test_property_a_value_carried_into_an_inner_loops_store_waits_for_its_load(outer, inner, loads):
    program = parse(nest(outer, inner, loads), filename="nested.py")
    a = torch.randn(outer * inner + 4, 64)
    results = {}
    for platform in ("ref", "a2a3sim"):
        out, out1 = torch.full((outer * inner, 64), -777.0), torch.full((2, 64), -777.0)
        run(program, a, out, out1, config=RunConfig(platform=platform))  # a2a3sim raises on an unordered pair
        results[platform] = (out, out1)
    assert all(torch.equal(x, y) for x, y in zip(results["ref"], results["a2a3sim"]))
    assert torch.equal(results["ref"][0][0], a[0])  # the first trip stores what was loaded before the loops
