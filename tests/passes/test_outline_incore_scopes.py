import pytest
import torch
from helpers import check_pass, outputs_of, program_text

import pypto.language as pl
from pypto.errors import UnsupportedSyntaxError
from pypto.lang import parse
from pypto.passes.context import PassContext
from pypto.passes.outlining.outline_incore_scopes import outline_incore_scopes
from pypto.runtime import RunConfig
from pypto.sim.ops.numerics import bits_equal
from pypto.backend import A2A3


def test_scope_becomes_an_incore_function_with_in_and_out_params():
    check_pass(outline_incore_scopes, """
        @pl.function(type=pl.FunctionType.Orchestration)
        def k(self, a: pl.Tensor[[64, 128], pl.FP32], out: pl.Out[pl.Tensor[[64, 128], pl.FP32]]) -> pl.Tensor[[64, 128], pl.FP32]:
            with pl.at(level=pl.Level.CORE_GROUP):
                for i in pl.range(4):
                    t = pl.tile.load(a, [i * 16, 0], [16, 128], target_memory=pl.Mem.Vec)
                    pl.tile.store(pl.tile.exp(t), [i * 16, 0], out)
            return out
    """, """
        @pl.function(type=pl.FunctionType.InCore)
        def k_incore_0(self, a: pl.Tensor[[64, 128], pl.FP32], out: pl.Out[pl.Tensor[[64, 128], pl.FP32]]):
            for i in pl.range(4):
                t = pl.tile.load(a, [i * 16, 0], [16, 128], target_memory=pl.Mem.Vec)
                exp = pl.tile.exp(t)
                pl.tile.store(exp, [i * 16, 0], out)

        @pl.function(type=pl.FunctionType.Orchestration)
        def k(self, a: pl.Tensor[[64, 128], pl.FP32], out: pl.Out[pl.Tensor[[64, 128], pl.FP32]]) -> pl.Tensor[[64, 128], pl.FP32]:
            self.k_incore_0(a, out)  # task args: Input, OutputExisting
            return out
    """)


def test_name_hint_scalars_inout_and_an_exported_tensor():
    check_pass(outline_incore_scopes, """
        @pl.function
        def k(self, a: pl.Tensor[[16, 128], pl.FP32], out: pl.InOut[pl.Tensor[[16, 128], pl.FP32]], n: pl.Scalar[pl.INT32]) -> pl.Tensor[[16, 128], pl.FP32]:
            with pl.at(level=pl.Level.CORE_GROUP, name_hint="body"):
                old = pl.tile.load(out, [0, 0], [16, 128], target_memory=pl.Mem.Vec)
                t = pl.tile.load(a, [0, 0], [16, 128], target_memory=pl.Mem.Vec)
                s = pl.tile.muls(t, n)
                out_1 = pl.tile.store(pl.tile.add(s, old), [0, 0], out)
            return out_1
    """, """
        @pl.function(type=pl.FunctionType.InCore)
        def body(self, out: pl.InOut[pl.Tensor[[16, 128], pl.FP32]], a: pl.Tensor[[16, 128], pl.FP32], n: pl.Scalar[pl.INT32]) -> pl.Tensor[[16, 128], pl.FP32]:
            old = pl.tile.load(out, [0, 0], [16, 128], target_memory=pl.Mem.Vec)
            t = pl.tile.load(a, [0, 0], [16, 128], target_memory=pl.Mem.Vec)
            s = pl.tile.muls(t, n)
            add = pl.tile.add(s, old)
            out_1 = pl.tile.store(add, [0, 0], out)
            return out_1

        @pl.function(type=pl.FunctionType.Orchestration)
        def k(self, a: pl.Tensor[[16, 128], pl.FP32], out: pl.InOut[pl.Tensor[[16, 128], pl.FP32]], n: pl.Scalar[pl.INT32]) -> pl.Tensor[[16, 128], pl.FP32]:
            out_1 = self.body(out, a, n)  # task args: InOut, Input, Scalar
            return out_1
    """)


def test_a_tile_cannot_leave_its_scope():
    program = parse(program_text("""
        @pl.function(type=pl.FunctionType.Orchestration)
        def k(self, a: pl.Tensor[[16, 128], pl.FP32], out: pl.Out[pl.Tensor[[16, 128], pl.FP32]]) -> pl.Tensor[[16, 128], pl.FP32]:
            with pl.at(level=pl.Level.CORE_GROUP):
                t = pl.tile.load(a, [0, 0], [16, 128], target_memory=pl.Mem.Vec)
            with pl.at(level=pl.Level.CORE_GROUP):
                pl.tile.store(t, [0, 0], out)
            return out
    """))
    with pytest.raises(UnsupportedSyntaxError, match=r"'t' \(Tile\[16x128 fp32 Vec\]\) is bound inside a pl.at scope"):
        outline_incore_scopes(program, PassContext(soc=A2A3))


@pl.jit
def scope_per_iteration(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    for i in pl.range(4):
        with pl.at(level=pl.Level.CORE_GROUP):
            u = pl.load(a, [i * 16, 0], [16, 128])
            pl.store(pl.exp(u), [i * 16, 0], out)
    return out


@pytest.mark.parametrize("platform", ["ref", "a2a3sim"])
def test_a_scope_inside_an_orchestration_loop_is_launched_each_iteration(platform):
    a, out = torch.randn(64, 128), torch.zeros(64, 128)
    scope_per_iteration(a, out, config=RunConfig(platform=platform))
    assert torch.equal(out, torch.exp(a))


@pl.jit
def store_carried(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(4):
            t = pl.load(a, [i * 16, 0], [16, 128])
            out = pl.store(pl.exp(t), [i * 16, 0], out)
    return out


@pl.jit
def store_in_branches(a: pl.Tensor, out: pl.Out[pl.Tensor], s: pl.Scalar[pl.INT64]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [16, 128])
        if s > 0:
            out = pl.store(t, [0, 0], out)
        else:
            out = pl.store(pl.neg(t), [0, 0], out)
    return out


@pytest.mark.parametrize("platform", ["ref", "a2a3sim"])
def test_a_tensor_threaded_through_a_loop_or_an_if_is_the_one_it_started_as(platform):
    config = RunConfig(platform=platform, verification_level="ROUNDTRIP")
    a, out = torch.randn(64, 128), torch.zeros(64, 128)
    store_carried(a, out, config=config)
    assert torch.equal(out, torch.exp(a))
    assert "out: pl.Out[" in store_carried.lower(a, out).as_python()  # written, so not an In param
    for s, want in ((1, a[:16]), (0, -a[:16])):
        out = torch.zeros(16, 128)
        store_in_branches(a[:16].clone(), out, s, config=config)
        assert torch.equal(out, want)


SPMD_BEFORE = """
    @pl.function(type=pl.FunctionType.InCore)
    def twice(self, x: pl.Tensor[[64, 128], pl.FP32], z: pl.Out[pl.Tensor[[64, 128], pl.FP32]]) -> pl.Tensor[[64, 128], pl.FP32]:
        t = pl.tile.load(x, [0, 0], [64, 128], target_memory=pl.Mem.Vec)
        z_1 = pl.tile.store(pl.tile.muls(t, 2.0), [0, 0], z)
        return z_1

    @pl.function(type=pl.FunctionType.Orchestration)
    def k(self, a: pl.Tensor[[64, 128], pl.FP32], flags: pl.Tensor[[1, 4], pl.INT32], n: pl.Scalar[pl.INDEX], out: pl.Out[pl.Tensor[[64, 128], pl.FP32]], y: pl.Out[pl.Tensor[[64, 128], pl.FP32]], z: pl.Out[pl.Tensor[[64, 128], pl.FP32]]) -> pl.Tensor[[64, 128], pl.FP32]:
        with pl.spmd(4) as first:
            with pl.at(level=pl.Level.CORE_GROUP):
                i = pl.tile.get_block_idx()
                t = pl.tile.load(a, [i * 16, 0], [16, 128], target_memory=pl.Mem.Vec)
                pl.tile.store(pl.tile.neg(t), [i * 16, 0], out)
        for j in pl.spmd(n, predicate=(flags[0, 1] > 0)):
            b = pl.tile.get_block_num()
            u = pl.tile.load(out, [(b - 1 - j) * 16, 0], [16, 128], target_memory=pl.Mem.Vec)
            pl.tile.store(pl.tile.exp(u), [j * 16, 0], y)
        z_1, _ = pl.submit(self.twice, out, z, deps=[first])
        return z_1
"""

SPMD_AFTER = """
    @pl.function(type=pl.FunctionType.InCore)
    def twice(self, x: pl.Tensor[[64, 128], pl.FP32], z: pl.Out[pl.Tensor[[64, 128], pl.FP32]]) -> pl.Tensor[[64, 128], pl.FP32]:
        t = pl.tile.load(x, [0, 0], [64, 128], target_memory=pl.Mem.Vec)
        muls = pl.tile.muls(t, 2.0)
        z_1 = pl.tile.store(muls, [0, 0], z)
        return z_1

    @pl.function(type=pl.FunctionType.InCore)
    def k_incore_0(self, a: pl.Tensor[[64, 128], pl.FP32], out: pl.Out[pl.Tensor[[64, 128], pl.FP32]]):
        i = pl.tile.get_block_idx()
        t = pl.tile.load(a, [i * 16, 0], [16, 128], target_memory=pl.Mem.Vec)
        neg = pl.tile.neg(t)
        pl.tile.store(neg, [i * 16, 0], out)

    @pl.function(type=pl.FunctionType.InCore)
    def k_incore_1(self, out: pl.Tensor[[64, 128], pl.FP32], y: pl.Out[pl.Tensor[[64, 128], pl.FP32]]):
        j = pl.tile.get_block_idx()
        b = pl.tile.get_block_num()
        u = pl.tile.load(out, [(b - 1 - j) * 16, 0], [16, 128], target_memory=pl.Mem.Vec)
        exp = pl.tile.exp(u)
        pl.tile.store(exp, [j * 16, 0], y)

    @pl.function(type=pl.FunctionType.Orchestration)
    def k(self, a: pl.Tensor[[64, 128], pl.FP32], flags: pl.Tensor[[1, 4], pl.INT32], n: pl.Scalar[pl.INDEX], out: pl.Out[pl.Tensor[[64, 128], pl.FP32]], y: pl.Out[pl.Tensor[[64, 128], pl.FP32]], z: pl.Out[pl.Tensor[[64, 128], pl.FP32]]) -> pl.Tensor[[64, 128], pl.FP32]:
        first = pl.spmd_submit(self.k_incore_0, a, out, core_num=4)  # task args: Input, OutputExisting
        pl.spmd_submit(self.k_incore_1, out, y, core_num=n, predicate=(flags[0, 1] > 0))  # task args: Input, OutputExisting
        _ = pl.submit(self.twice, out, z, deps=[first])  # task args: Input, OutputExisting
        return z
"""


def test_spmd_scopes_become_spmd_submits_and_run_every_block_before_as_after():
    """The front end's scopes run as the calls they become: once per block with its index
    (the with form, and the loop form whose block count is a scalar), retired where the
    predicate fails, their task id bound for a later deps=."""
    got = check_pass(outline_incore_scopes, SPMD_BEFORE, SPMD_AFTER, entry="k", scalars={"n": 3})
    before = parse(program_text(SPMD_BEFORE))
    a = torch.randn(64, 128)
    for gate in (1, 0):
        flags = torch.tensor([[0, gate, 0, 0]], dtype=torch.int32)
        args = (a, flags, 3, *(torch.full((64, 128), 9.0) for _ in range(3)))
        front, outlined = outputs_of(before, "k", args), outputs_of(got.program, "k", args)
        for x, y in zip(front, outlined):
            assert bits_equal(x, y)
        _, _, out, y, z = front
        assert torch.equal(out, -a)  # all 4 bands, not block 0's alone
        bands = torch.exp(-a[:48]).reshape(3, 16, 128).flip(0).reshape(48, 128)  # block j: band 2 - j
        assert torch.equal(y, torch.cat([bands, torch.full((16, 128), 9.0)]) if gate else torch.full((64, 128), 9.0))
        assert torch.equal(z, out * 2.0)


@pl.jit
def bands_by_block(x: pl.Tensor, n: pl.Scalar[pl.INDEX], y: pl.Out[pl.Tensor]):
    for i in pl.spmd(4):
        pl.store(pl.neg(pl.load(x, [i * 16, 0], [16, 128])), [i * 16, 0], y)
    with pl.spmd(n):
        with pl.at(level=pl.Level.CORE_GROUP):
            j = pl.tile.get_block_idx()
            pl.store(pl.exp(pl.load(x, [64 + j * 16, 0], [16, 128])), [64 + j * 16, 0], y)
    return y


@pytest.mark.parametrize("platform", ["ref", "a2a3sim"])
def test_a_kernels_spmd_scopes_keep_their_bits_from_the_front_end_through_every_pass(tmp_path, platform):
    """Each pass dump of a kernel with both SPMD forms, interpreted, writes every block's
    band (the front end's, before OutlineIncoreScopes, wrote block 0's alone)."""
    from pypto.ir import PassDumpLevel

    x = torch.randn(128, 128)
    want = torch.cat([-x[:64], torch.exp(x[64:112]), torch.zeros(16, 128)])
    y = torch.zeros(128, 128)
    config = RunConfig(platform=platform, output_dir=tmp_path, dump_passes=PassDumpLevel.CONCISE)
    bands_by_block.compile(x, 3, y, config=config).run(x, 3, y)
    assert torch.equal(y, want)
    dumps = sorted((tmp_path / "passes_dump").glob("*.py"))
    assert dumps[0].name == "00_frontend.py" and "OutlineIncoreScopes" in dumps[1].name
    for dump in dumps:
        program = parse(dump.read_text(), str(dump), soc=A2A3)
        _, got = outputs_of(program, "bands_by_block", (x, 3, torch.zeros(128, 128)))
        assert torch.equal(got, want), dump.name
