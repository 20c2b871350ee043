"""Atomic adds (``atomic=pl.AtomicType.Add`` on ``pl.assemble`` / ``pl.store``): split-K on
both platforms against torch, the dependency rules' verdict on the reference's form (its
split tasks chain on ``c``) and the form that runs in parallel, adds in completion order
and a seed that permutes those in flight at once, atomic adds commuting with each other
but racing plain accesses, and every refusal with the reference's words."""

import textwrap

import pytest
import torch

import pypto.language as pl
from pypto.chip.races import TaskRace
from pypto.errors import PyptoError
from helpers import load_kernel
from pypto.runtime import RunConfig

M, N, K, SPLIT = 64, 64, 1024, 4
KS = K // SPLIT
CG = pl.Level.CORE_GROUP


@pl.jit
def reference_split_k(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=CG, name_hint="zero_init"):
        c = pl.assemble(c, pl.full([M, N], dtype=pl.FP32, value=0.0), [0, 0])
    for ks in pl.parallel(0, SPLIT):
        with pl.at(level=CG, name_hint="split_k"):
            k0 = ks * KS
            partial = pl.matmul(a[:, k0:k0 + KS], b[k0:k0 + KS, :], out_dtype=pl.FP32)
            c = pl.assemble(c, partial, [0, 0], atomic=pl.AtomicType.Add)
    return c


@pl.jit
def parallel_split_k(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=CG, name_hint="zero_init") as zeroed:
        c = pl.assemble(c, pl.full([M, N], dtype=pl.FP32, value=0.0), [0, 0])
    for ks in pl.parallel(0, SPLIT):
        with pl.at(level=CG, name_hint="split_k", deps=[zeroed], no_dep_args=[c]):
            k0 = ks * KS
            partial = pl.matmul(a[:, k0:k0 + KS], b[k0:k0 + KS, :], out_dtype=pl.FP32)
            c = pl.assemble(c, partial, [0, 0], atomic=pl.AtomicType.Add)
    return c


def operands():
    g = torch.Generator().manual_seed(7)
    return torch.randn(M, K, generator=g), torch.randn(K, N, generator=g)


def test_the_references_split_k_matches_torch_and_its_split_tasks_chain_on_c():
    a, b = operands()
    for platform in ("ref", "a2a3sim"):
        c = torch.full((M, N), 5.0)  # zeroed by its own first task
        report = reference_split_k.compile(a, b, c, config=RunConfig(platform=platform)).run(a, b, c)
        torch.testing.assert_close(c, a @ b, rtol=1e-3, atol=1e-3)
    splits = sorted((t for t in report.tasks if t.kernel == "split_k"), key=lambda t: t.start)
    # R-prior: zero_init wrote c before, so each split task's c is InOut — a chain
    assert [t.deps for t in splits] == [("r0t0",)] + [(x.task_id,) for x in splits[:-1]]
    assert all(x.finish <= y.dispatch for x, y in zip(splits, splits[1:]))


def test_the_opted_out_form_runs_its_splits_at_once_and_beats_one_task():
    @pl.jit
    def unsplit(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
        with pl.at(level=CG):
            c = pl.assemble(c, pl.matmul(a, b, out_dtype=pl.FP32), [0, 0])
        return c

    a, b = operands()
    c_ref = torch.zeros(M, N)
    parallel_split_k(a, b, c_ref, config=RunConfig(platform="ref"))
    c = torch.zeros(M, N)
    report = parallel_split_k.compile(a, b, c).run(a, b, c)
    assert torch.equal(c, c_ref)  # the adds complete in the order the ref runs them
    torch.testing.assert_close(c, a @ b, rtol=1e-3, atol=1e-3)
    splits = [t for t in report.tasks if t.kernel == "split_k"]
    assert all(t.deps == ("r0t0",) for t in splits) and len({t.core for t in splits}) == SPLIT
    assert max(t.start for t in splits) < min(t.end for t in splits)  # all at once
    one = torch.zeros(M, N)
    assert report.cycles < unsplit.compile(a, b, one).run(a, b, one).cycles


def test_a_seed_permutes_the_adds_in_flight_at_once_and_only_their_last_bits_move():
    a, b = operands()
    results = []
    for seed in (None, 1, 2, 3, 4, 5):
        c = torch.zeros(M, N)
        parallel_split_k(a, b, c, config=RunConfig(atomic_order_seed=seed))
        results.append(c)
        torch.testing.assert_close(c, a @ b, rtol=1e-3, atol=1e-3)
    assert any(not torch.equal(results[0], r) for r in results[1:])  # the order shows in the bits
    again = torch.zeros(M, N)
    parallel_split_k(a, b, again, config=RunConfig(atomic_order_seed=3))
    assert torch.equal(again, results[3])  # one seed, one order


def test_atomic_adds_commute_but_race_a_plain_write():
    @pl.jit
    def adds(a: pl.Tensor, c: pl.Out[pl.Tensor]):
        for i in pl.parallel(4):  # every task adds into all of c: no order needed
            with pl.at(level=CG):
                pl.store(pl.exp(pl.load(a, [i * 16, 0], [16, 64])), [0, 0], c, atomic=pl.AtomicType.Add)
        return c

    a = torch.randn(64, 64)
    want = sum(torch.exp(a[i * 16:(i + 1) * 16]) for i in range(4))
    for platform in ("ref", "a2a3sim"):
        c = torch.zeros(16, 64)
        adds(a, c, config=RunConfig(platform=platform))
        torch.testing.assert_close(c, want)

    @pl.jit
    def adds_and_a_write(a: pl.Tensor, c: pl.Out[pl.Tensor]):
        for i in pl.parallel(2):
            with pl.at(level=CG, no_dep_args=[c]):
                pl.store(pl.exp(pl.load(a, [i * 16, 0], [16, 64])), [0, 0], c, atomic=pl.AtomicType.Add)
        with pl.at(level=CG, no_dep_args=[c]):
            pl.store(pl.load(a, [0, 0], [16, 64]), [0, 0], c)
        return c

    with pytest.raises(TaskRace, match=r"adds into c\[0, 0\], which task .* writes|writes c\[0, 0\], which .* adds"):
        adds_and_a_write(a, torch.zeros(16, 64))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.int32, torch.int8])
def test_atomic_adds_of_each_dtype_agree_on_both_platforms(dtype):
    @pl.jit
    def adds(a: pl.Tensor, c: pl.Out[pl.Tensor]):
        for i in pl.parallel(3):
            with pl.at(level=CG):
                pl.store(pl.load(a, [i * 16, 0], [16, 64]), [0, 0], c, atomic=pl.AtomicType.Add)
        return c

    a = (torch.randn(48, 64) * 4).to(dtype)
    got = []
    for platform in ("ref", "a2a3sim"):
        c = torch.ones(16, 64, dtype=dtype)
        adds(a, c, config=RunConfig(platform=platform))
        got.append(c)
    assert torch.equal(got[0], got[1])
    want = torch.ones(16, 64, dtype=dtype)
    for i in range(3):  # one add per store, in the target's dtype, in task order
        want = want + a[i * 16:(i + 1) * 16]
    assert torch.equal(got[0], want)


@pytest.mark.parametrize("body, message", [
    ("c = pl.assemble(c, a, [0, 0], atomic=pl.AtomicType.Add)",
     "is only supported inside an InCore function"),
    ("with pl.at(level=pl.Level.CORE_GROUP):\n"
     "        t = pl.load(a, [0, 0], [64, 64])\n"
     "        v = pl.assemble(t, t, [0, 0], atomic=pl.AtomicType.Add)\n"
     "        pl.store(v, [0, 0], c)",
     "requires a global-memory destination"),
    ("with pl.at(level=pl.Level.CORE_GROUP):\n"
     "        c = pl.assemble(c, a, [0, 0], atomic=pl.AtomicType.Add)",
     "the source must be an on-chip compute result"),
    ("with pl.at(level=pl.Level.CORE_GROUP):\n"
     "        pl.store(pl.load(a, [0, 0], [64, 64]), [0, 0], c, atomic=1)",
     "'atomic' must be AtomicType"),
])
def test_atomic_mistakes_are_located_with_the_references_words(tmp_path, body, message):
    path = tmp_path / "bad.py"
    path.write_text(textwrap.dedent('''
        import pypto.language as pl


        @pl.jit
        def bad(a: pl.Tensor, c: pl.Out[pl.Tensor]):
            BODY
            return c
    ''').replace("BODY", body))
    with pytest.raises(PyptoError, match=message) as info:
        load_kernel(path, "bad")(torch.ones(64, 64), torch.zeros(64, 64))
    assert info.value.span is not None and info.value.span.file.endswith("bad.py") and info.value.hint


def test_an_atomic_store_of_a_dtype_the_hardware_cannot_add_is_refused(tmp_path):
    path = tmp_path / "u8.py"
    path.write_text(textwrap.dedent('''
        import pypto.language as pl


        @pl.jit
        def u8(a: pl.Tensor, c: pl.Out[pl.Tensor]):
            with pl.at(level=pl.Level.CORE_GROUP):
                pl.store(pl.load(a, [0, 0], [64, 64]), [0, 0], c, atomic=pl.AtomicType.Add)
            return c
    '''))
    with pytest.raises(PyptoError, match="requires an fp32/bf16/fp16/int32/int16/int8 tile .* but got UINT8"):
        load_kernel(path, "u8")(torch.ones(64, 64, dtype=torch.uint8), torch.zeros(64, 64, dtype=torch.uint8))


def test_the_listing_and_the_dumps_show_the_atomic_store():
    a, b = operands()
    c = torch.zeros(M, N)
    compiled = parallel_split_k.compile(a, b, c)
    assert "atomic=pl.AtomicType.Add" in compiled.program.as_python()
    from pypto.lang import parse

    assert parse(compiled.program.as_python()) == compiled.program
    listings = {p.name: p.read_text() for p in compiled.output_dir.rglob("*.pto")}
    assert "atomic_add" in listings["split_k.pto"] and "atomic_add" not in listings["zero_init.pto"]


def test_a_kernel_sees_its_own_atomic_add_when_it_reads_the_bytes_back():
    @pl.jit
    def add_then_read(a: pl.Tensor, c: pl.InOut[pl.Tensor], d: pl.Out[pl.Tensor]):
        with pl.at(level=CG):
            c = pl.assemble(c, pl.exp(a), [0, 0], atomic=pl.AtomicType.Add)
            pl.assemble(d, pl.add(c, 1.0), [0, 0])  # reads c after its own add
        return c, d

    @pl.jit
    def add_then_overwrite(a: pl.Tensor, c: pl.InOut[pl.Tensor]):
        with pl.at(level=CG):
            pl.store(pl.exp(pl.load(a, [0, 0], [16, 64])), [0, 0], c, atomic=pl.AtomicType.Add)
            pl.store(pl.add(pl.load(a, [0, 0], [16, 64]), 10.0), [0, 0], c)  # the last word is the plain store
        return c

    a = torch.randn(16, 64)
    for platform in ("ref", "a2a3sim"):
        c, d = torch.full((16, 64), 2.0), torch.zeros(16, 64)
        add_then_read(a, c, d, config=RunConfig(platform=platform))
        assert torch.equal(c, 2.0 + torch.exp(a)) and torch.equal(d, c + 1.0)
        c = torch.full((16, 64), 2.0)
        add_then_overwrite(a, c, config=RunConfig(platform=platform))
        assert torch.equal(c, a + 10.0)


def test_assembling_into_a_view_made_in_the_scope_is_a_located_refusal():
    @pl.jit
    def into_view(a: pl.Tensor, c: pl.InOut[pl.Tensor]):
        with pl.at(level=CG):
            v = c[16:32, :]
            v = pl.assemble(v, pl.exp(a[0:16, :]), [0, 0], atomic=pl.AtomicType.Add)
        return c

    with pytest.raises(PyptoError, match="assembling into a slice") as info:
        into_view(torch.randn(16, 128), torch.ones(48, 128))
    assert info.value.span is not None and info.value.hint
