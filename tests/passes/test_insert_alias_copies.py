import pytest
import torch
from helpers import check_pass, program_text

import pypto.language as pl
from pypto.errors import MemorySpaceError
from pypto.lang import parse
from pypto.passes.context import PassContext
from pypto.passes.allocation.insert_alias_copies import insert_alias_copies
from pypto.runtime import RunConfig
from pypto.backend import A2A3

PLATFORMS = ("ref", "a2a3sim")


def test_a_value_computed_while_the_one_it_replaces_is_read_is_copied_before_the_yield():
    # z takes y's buffer, but muls still reads y after z is computed.
    check_pass(insert_alias_copies, """
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[16, 128], pl.FP32], out: pl.Out[pl.Tensor[[8, 128], pl.FP32]]):
            x0 = pl.tile.load(a, [0, 0], [8, 128], target_memory=pl.Mem.Vec)
            y0 = pl.tile.load(a, [8, 0], [8, 128], target_memory=pl.Mem.Vec)
            for i, (x, y) in pl.range(4, init_values=(x0, y0)):
                z = pl.tile.add(x, y)
                x2 = pl.tile.muls(y, 1.0)
                x_1, y_1 = pl.yield_(x2, z)
            pl.tile.store(y_1, [0, 0], out)
    """, """
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[16, 128], pl.FP32], out: pl.Out[pl.Tensor[[8, 128], pl.FP32]]):
            x0 = pl.tile.load(a, [0, 0], [8, 128], target_memory=pl.Mem.Vec)
            y0 = pl.tile.load(a, [8, 0], [8, 128], target_memory=pl.Mem.Vec)
            for i, (x, y) in pl.range(4, init_values=(x0, y0)):
                z = pl.tile.add(x, y)
                x2 = pl.tile.muls(y, 1.0)
                z_copy = pl.tile.move(z, target_memory=pl.Mem.Vec)
                x_1, y_1 = pl.yield_(x2, z_copy)
            pl.tile.store(y_1, [0, 0], out)
    """)


def test_swapped_carried_tiles_are_copied_out_then_back():
    check_pass(insert_alias_copies, """
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[16, 128], pl.FP32], out: pl.Out[pl.Tensor[[8, 128], pl.FP32]]):
            x0 = pl.tile.load(a, [0, 0], [8, 128], target_memory=pl.Mem.Vec)
            y0 = pl.tile.load(a, [8, 0], [8, 128], target_memory=pl.Mem.Vec)
            for i, (x, y) in pl.range(3, init_values=(x0, y0)):
                x_1, y_1 = pl.yield_(y, x)
            pl.tile.store(pl.tile.sub(x_1, y_1), [0, 0], out)
    """, """
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[16, 128], pl.FP32], out: pl.Out[pl.Tensor[[8, 128], pl.FP32]]):
            x0 = pl.tile.load(a, [0, 0], [8, 128], target_memory=pl.Mem.Vec)
            y0 = pl.tile.load(a, [8, 0], [8, 128], target_memory=pl.Mem.Vec)
            for i, (x, y) in pl.range(3, init_values=(x0, y0)):
                y_tmp = pl.tile.move(y, target_memory=pl.Mem.Vec)
                x_tmp = pl.tile.move(x, target_memory=pl.Mem.Vec)
                y_next = pl.tile.move(y_tmp, target_memory=pl.Mem.Vec)
                x_next = pl.tile.move(x_tmp, target_memory=pl.Mem.Vec)
                x_1, y_1 = pl.yield_(y_next, x_next)
            sub = pl.tile.sub(x_1, y_1)
            pl.tile.store(sub, [0, 0], out)
    """)


def test_an_initial_tile_read_after_the_loop_is_copied_before_it():
    check_pass(insert_alias_copies, """
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[64, 128], pl.FP32], out: pl.Out[pl.Tensor[[16, 128], pl.FP32]]):
            acc = pl.tile.load(a, [0, 0], [16, 128], target_memory=pl.Mem.Vec)
            for i, (s,) in pl.range(1, 4, init_values=(acc,)):
                t = pl.tile.load(a, [i * 16, 0], [16, 128], target_memory=pl.Mem.Vec)
                s2 = pl.tile.add(s, t)
                r = pl.yield_(s2)
            pl.tile.store(pl.tile.add(r, acc), [0, 0], out)
    """, """
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[64, 128], pl.FP32], out: pl.Out[pl.Tensor[[16, 128], pl.FP32]]):
            acc = pl.tile.load(a, [0, 0], [16, 128], target_memory=pl.Mem.Vec)
            acc_copy = pl.tile.move(acc, target_memory=pl.Mem.Vec)
            for i, (s,) in pl.range(1, 4, init_values=(acc_copy,)):
                t = pl.tile.load(a, [i * 16, 0], [16, 128], target_memory=pl.Mem.Vec)
                s2 = pl.tile.add(s, t)
                r = pl.yield_(s2)
            add = pl.tile.add(r, acc)
            pl.tile.store(add, [0, 0], out)
    """)


def test_branches_yielding_tiles_that_stay_live_yield_copies():
    check_pass(insert_alias_copies, """
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[16, 128], pl.FP32], out: pl.Out[pl.Tensor[[8, 128], pl.FP32]], n: pl.Scalar[pl.INT32]):
            x = pl.tile.load(a, [0, 0], [8, 128], target_memory=pl.Mem.Vec)
            y = pl.tile.load(a, [8, 0], [8, 128], target_memory=pl.Mem.Vec)
            if n > 0:
                z = pl.yield_(x)
            else:
                z = pl.yield_(y)
            pl.tile.store(pl.tile.add(pl.tile.add(z, x), y), [0, 0], out)
    """, """
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[16, 128], pl.FP32], out: pl.Out[pl.Tensor[[8, 128], pl.FP32]], n: pl.Scalar[pl.INT32]):
            x = pl.tile.load(a, [0, 0], [8, 128], target_memory=pl.Mem.Vec)
            y = pl.tile.load(a, [8, 0], [8, 128], target_memory=pl.Mem.Vec)
            if n > 0:
                x_copy = pl.tile.move(x, target_memory=pl.Mem.Vec)
                z = pl.yield_(x_copy)
            else:
                y_copy = pl.tile.move(y, target_memory=pl.Mem.Vec)
                z = pl.yield_(y_copy)
            add = pl.tile.add(z, x)
            add_1 = pl.tile.add(add, y)
            pl.tile.store(add_1, [0, 0], out)
    """, scalars={"n": 1})


def test_an_in_place_chain_needs_no_copy():
    text = program_text("""
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[64, 128], pl.FP32], out: pl.Out[pl.Tensor[[16, 128], pl.FP32]]):
            acc = pl.tile.load(a, [0, 0], [16, 128], target_memory=pl.Mem.Vec)
            for i, (s,) in pl.range(1, 4, init_values=(acc,)):
                t = pl.tile.load(a, [i * 16, 0], [16, 128], target_memory=pl.Mem.Vec)
                s2 = pl.tile.add(s, t)
                r = pl.yield_(s2)
            pl.tile.store(r, [0, 0], out)
    """)
    program = parse(text)
    assert insert_alias_copies(program, PassContext(soc=A2A3)).program == program


def test_an_accumulator_that_cannot_be_copied_is_an_error_at_the_loop():
    program = parse(program_text("""
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[16, 16], pl.FP16], out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]):
            x = pl.tile.load(a, [0, 0], [16, 16], target_memory=pl.Mem.Mat)
            xl = pl.tile.move(x, target_memory=pl.Mem.Left)
            xr = pl.tile.move(x, target_memory=pl.Mem.Right)
            c = pl.tile.matmul(xl, xr)
            for i, (s,) in pl.range(2, init_values=(c,)):
                s2 = pl.tile.matmul_acc(s, xl, xr)
                r = pl.yield_(s2)
            pl.tile.store(r, [0, 0], out)
            pl.tile.store(c, [0, 0], out)
    """))
    with pytest.raises(MemorySpaceError, match="Acc tiles cannot be copied on chip") as info:
        insert_alias_copies(program, PassContext(soc=A2A3))
    assert "the loop starts 's' from 'c'" in str(info.value)


# ----------------------------------------------------------------------------- end to end

@pl.jit
def fibonacci(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        x = pl.load(a, [0, 0], [8, 128])
        y = pl.load(a, [8, 0], [8, 128])
        for i in pl.range(5):
            z = pl.add(x, y)
            x = pl.muls(y, 1.0)
            y = z
        pl.store(y, [0, 0], out)
    return out


@pl.jit
def two_sums_from_one_start(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        start = pl.load(a, [0, 0], [8, 128])
        s = start
        for i in pl.range(1, 4):
            s = pl.add(s, pl.load(a, [i * 8, 0], [8, 128]))
        m = start
        for j in pl.range(1, 4):
            m = pl.maximum(m, pl.load(a, [j * 8, 0], [8, 128]))
        pl.store(pl.sub(s, m), [0, 0], out)
    return out


@pl.jit
def pick(a: pl.Tensor, out: pl.Out[pl.Tensor], n: pl.Scalar[pl.INT32]):
    with pl.at(level=pl.Level.CORE_GROUP):
        x = pl.load(a, [0, 0], [8, 128])
        y = pl.load(a, [8, 0], [8, 128])
        for i in pl.range(3):
            if n > i:
                z = x
            else:
                z = y
            x = pl.add(z, y)
        pl.store(pl.add(x, y), [0, 0], out)
    return out


@pytest.mark.parametrize("platform", PLATFORMS)
def test_carried_tiles_that_trade_buffers_compute_what_torch_does(platform):
    a = torch.randn(32, 128)
    out = torch.zeros(8, 128)
    fibonacci(a, out, config=RunConfig(platform=platform))
    x, y = a[:8], a[8:16]
    for _ in range(5):
        x, y = y * 1.0, x + y
    assert torch.equal(out, y)

    out = torch.zeros(8, 128)
    two_sums_from_one_start(a, out, config=RunConfig(platform=platform))
    blocks = a.view(4, 8, 128)
    assert torch.equal(out, blocks[0] + blocks[1] + blocks[2] + blocks[3] - blocks.amax(0))


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("n", [0, 2, 3])
def test_an_if_choosing_between_live_tiles_in_a_loop(platform, n):
    a = torch.randn(16, 128)
    out = torch.zeros(8, 128)
    pick(a, out, n, config=RunConfig(platform=platform))
    x, y = a[:8], a[8:16]
    for i in range(3):
        x = (x if n > i else y) + y
    assert torch.equal(out, x + y)


@pl.jit
def one_tile_two_results(a: pl.Tensor, out: pl.Out[pl.Tensor], n: pl.Scalar[pl.INT32]):
    with pl.at(level=pl.Level.CORE_GROUP):
        x = pl.load(a, [0, 0], [8, 128])
        y = pl.load(a, [8, 0], [8, 128])
        if n > 0:
            x = y
        else:
            y = pl.exp(y)
        pl.store(pl.add(x, y), [0, 0], out)
    return out


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("n", [0, 1])
def test_a_branch_yielding_one_tile_as_two_results(platform, n):
    a, out = torch.randn(16, 128), torch.zeros(8, 128)
    one_tile_two_results(a, out, n, config=RunConfig(platform=platform))
    x, y = (a[8:], a[8:]) if n > 0 else (a[:8], torch.exp(a[8:]))
    assert torch.equal(out, x + y)



KEPT_FOR_THE_ELSE = """
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[16, 64], pl.FP32], b: pl.Tensor[[16, 64], pl.FP32], out: pl.Out[pl.Tensor[[48, 64], pl.FP32]]):
        x0 = pl.tile.load(a, [0, 0], [16, 64], target_memory=pl.Mem.Vec)
        x = pl.tile.exp(x0)
        for i in pl.range(3):
            if i == 1:
                y0 = pl.tile.load(b, [0, 0], [16, 64], target_memory=pl.Mem.Vec)
                y = pl.tile.muls(y0, 2.0)
                pl.tile.store(y, [i * 16, 0], out)
                r = pl.yield_(y)
            else:
                pl.tile.store(x, [i * 16, 0], out)
                r = pl.yield_(x)
"""


@pytest.mark.parametrize("planner", ["PYPTO", "PTOAS"])
@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_tile_from_before_a_loop_read_in_its_last_statement_s_else_outlives_the_then(platform, planner):
    """x is read only in the else of the loop's last statement: the then branch of one trip
    must not write over it (nor the if's result take its buffer), because the next trip's
    else reads it again."""
    from pypto.runtime.compiled import compile_program

    program = parse(program_text(KEPT_FOR_THE_ELSE))
    a, b = torch.randn(16, 64), torch.randn(16, 64)
    out = torch.zeros(48, 64)
    config = RunConfig(platform=platform, memory_planner=planner, disabled_diagnostics=("PH001",))
    compile_program(program, ["a", "b", "out"], config, write=False).run(a, b, out)
    assert torch.equal(out, torch.cat([torch.exp(a), b * 2.0, torch.exp(a)]))
