"""SPMD: one task of n blocks, each running one kernel with its own block index — the three
``pl.spmd`` forms, ``pl.spmd_submit`` (and ``out, tid = pl.submit(...)``), the block
registers, ``sync_start``, more blocks than cores, races between blocks, the records and
the refusals, on both platforms."""

import json
import textwrap

import pytest
import torch

import pypto.language as pl
from pypto.backend import A2A3, CoreKind
from pypto.chip.races import TaskRace
from pypto.errors import PyptoError
from pypto.lang import parse
from helpers import load_kernel
from pypto.runtime import RunConfig

R, C = 32, 128
CG = pl.Level.CORE_GROUP
BLOCKS = 8


def run_both(kernel, *args, **config):
    """(the a2a3sim report, the tensors after ref): each platform on its own copies, the
    bits equal."""
    ref = [a.clone() for a in args]
    kernel(*ref, config=RunConfig(platform="ref", **config))
    sim = [a.clone() for a in args]
    report = kernel.compile(*sim, config=RunConfig(**config)).run(*sim)
    for got, want in zip(sim, ref):
        assert torch.equal(got, want)
    return report, sim


@pl.jit
def reversed_bands(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    for i in pl.spmd(BLOCKS):  # block i copies band n-1-i: both registers matter
        n = pl.tile.get_block_num()
        t = pl.load(a, [(n - 1 - i) * R, 0], [R, C])
        pl.store(pl.exp(t), [i * R, 0], out)
    return out


def flipped(a, n=BLOCKS):
    return torch.cat([a[(n - 1 - i) * R:(n - i) * R] for i in range(n)])


def test_the_loop_form_gives_each_block_its_index_and_the_count():
    a = torch.randn(BLOCKS * R, C)
    report, (_, out) = run_both(reversed_bands, a, torch.zeros(BLOCKS * R, C))
    assert torch.equal(out, torch.exp(flipped(a)))
    assert {t.task_id for t in report.tasks} == {"r0t0"}  # one task ...
    assert sorted(t.block for t in report.tasks) == list(range(BLOCKS))  # ... of its blocks
    assert len({t.core for t in report.tasks}) == BLOCKS and all(t.core_type == "aiv" for t in report.tasks)


def test_one_spmd_dispatch_beats_the_same_blocks_as_unrolled_scopes():
    @pl.jit
    def unrolled(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        for i in pl.unroll(BLOCKS):
            with pl.at(level=CG):
                pl.store(pl.exp(pl.load(a, [(BLOCKS - 1 - i) * R, 0], [R, C])), [i * R, 0], out)
        return out

    a = torch.randn(BLOCKS * R, C)
    spmd, (_, out) = run_both(reversed_bands, a, torch.zeros(BLOCKS * R, C))
    tasks, (_, again) = run_both(unrolled, a, torch.zeros(BLOCKS * R, C))
    assert torch.equal(out, again)
    assert len({t.task_id for t in tasks.tasks}) == BLOCKS and len({t.task_id for t in spmd.tasks}) == 1
    assert spmd.cycles < tasks.cycles


def test_the_with_forms_inline_carrier_and_task_id(tmp_path):
    path = tmp_path / "forms.py"
    path.write_text(textwrap.dedent(f'''
        import pypto.language as pl
        R, C, N, CG = {R}, {C}, {BLOCKS}, pl.Level.CORE_GROUP


        @pl.jit
        def forms(a: pl.Tensor, x: pl.Out[pl.Tensor], y: pl.Out[pl.Tensor], z: pl.Out[pl.Tensor]):
            with pl.spmd(N) as first:  # inline: the body reads the block index
                i = pl.tile.get_block_idx()
                pl.store(pl.exp(pl.load(a, [i * R, 0], [R, C])), [i * R, 0], x)
            with pl.spmd(N, deps=[first]):  # deps= without 'as': rejected below; here on the carrier form
                with pl.at(level=CG, name_hint="carried"):
                    j = pl.tile.get_block_idx()
                    pl.store(pl.neg(pl.load(a, [j * R, 0], [R, C])), [j * R, 0], y)
            return x, y
    '''))
    a = torch.randn(BLOCKS * R, C)
    with pytest.raises(PyptoError, match=r"pl.spmd\(\) does not accept 'deps=' here"):
        load_kernel(path, "forms").compile(a, *(torch.zeros(BLOCKS * R, C) for _ in range(3)))
    path.write_text(path.read_text().replace("with pl.spmd(N, deps=[first]):", "with pl.spmd(N, deps=[first]) as second:"))
    forms = load_kernel(path, "forms")
    report, (_, x, y, _) = run_both(forms, a, *(torch.zeros(BLOCKS * R, C) for _ in range(3)))
    assert torch.equal(x, torch.exp(a)) and torch.equal(y, -a)
    second = [t for t in report.tasks if t.task_id == "r0t1"]
    assert len(second) == BLOCKS and all(t.deps == ("r0t0",) for t in second)
    assert all(t.kernel == "carried" for t in second)
    first_end = max(t.finish for t in report.tasks if t.task_id == "r0t0")
    assert min(t.dispatch for t in second) >= first_end  # it waits for every block of the first
    compiled = forms.compile(a, *(torch.zeros(BLOCKS * R, C) for _ in range(3)))
    text = compiled.program.as_python()
    assert f"with pl.spmd({BLOCKS}) as first:" in text and f"with pl.spmd({BLOCKS}, deps=[first]) as second:" in text
    assert parse(text) == compiled.program
    lowered = compiled.lowered.as_python()
    assert f"second = pl.spmd_submit(self.carried, a, y, core_num={BLOCKS}, deps=[first])" in lowered
    assert parse(lowered).function(compiled.entry) == compiled.lowered.function(compiled.entry)


@pl.program
class Dispatch:
    @pl.function(type=pl.FunctionType.InCore)
    def band(self, a: pl.Tensor[[BLOCKS * R, C], pl.FP32],
             out: pl.Out[pl.Tensor[[BLOCKS * R, C], pl.FP32]]) -> pl.Tensor[[BLOCKS * R, C], pl.FP32]:
        i = pl.tile.get_block_idx()
        pl.store(pl.mul(pl.load(a, [i * R, 0], [R, C]), 3.0), [i * R, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[BLOCKS * R, C], pl.FP32], b: pl.Out[pl.Tensor[[BLOCKS * R, C], pl.FP32]],
             c: pl.Out[pl.Tensor[[BLOCKS * R, C], pl.FP32]]) -> pl.Tensor[[BLOCKS * R, C], pl.FP32]:
        with pl.spmd(BLOCKS):
            b = self.band(a, b)
        c, tid = pl.spmd_submit(self.band, b, c, core_num=BLOCKS // 2, sync_start=True)
        c, _ = pl.submit(self.band, b, c, deps=[tid])  # one block: band 0 again
        return c


def test_the_dispatch_form_and_spmd_submit_in_a_program():
    from pypto.runtime.compiled import compile_program

    a = torch.randn(BLOCKS * R, C)
    want_b = a * 3.0
    want_c = torch.cat([want_b[:BLOCKS // 2 * R] * 3.0, torch.zeros((BLOCKS - BLOCKS // 2) * R, C)])
    for platform in ("ref", "a2a3sim"):
        b, c = torch.zeros(BLOCKS * R, C), torch.zeros(BLOCKS * R, C)
        report = compile_program(Dispatch, ["a", "b", "c"], RunConfig(platform=platform), write=False).run(a, b, c)
        assert torch.equal(b, want_b) and torch.equal(c, want_c)
    sync = [t for t in report.tasks if t.task_id == "r0t1"]
    assert len(sync) == BLOCKS // 2 and len({t.start for t in sync}) == 1  # sync_start: together
    assert [t.deps for t in report.tasks if t.task_id == "r0t2"] == [("r0t0", "r0t1")]


def test_more_blocks_than_cores_reuse_them_and_sync_start_cannot_exceed_them():
    n = len(A2A3.cores(CoreKind.AIV)) + 8

    @pl.jit
    def many(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        for i in pl.spmd(n):
            pl.store(pl.exp(pl.load(a, [i * 8, 0], [8, C])), [i * 8, 0], out)
        return out

    a = torch.randn(n * 8, C)
    report, (_, out) = run_both(many, a, torch.zeros(n * 8, C))
    assert torch.equal(out, torch.exp(a))
    per_core: dict = {}
    for t in report.tasks:
        per_core.setdefault(t.core, []).append(t)
    assert len(per_core) == n - 8 and max(len(v) for v in per_core.values()) == 2
    for runs in per_core.values():  # a core runs its second block after its first has finished
        runs.sort(key=lambda t: t.start)
        assert all(x.finish <= y.dispatch for x, y in zip(runs, runs[1:]))

    @pl.jit
    def too_many(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        for i in pl.spmd(n, sync_start=True):
            pl.store(pl.exp(pl.load(a, [i * 8, 0], [8, C])), [i * 8, 0], out)
        return out

    with pytest.raises(PyptoError, match=f"sync_start=True admits all {n} blocks at once, and a2a3 has 48 vector"):
        too_many(a, torch.zeros(n * 8, C))


def test_blocks_writing_the_same_bytes_race():
    @pl.jit
    def same_band(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        for i in pl.spmd(4):
            pl.store(pl.exp(pl.load(a, [i * R, 0], [R, C])), [0, 0], out)  # every block: band 0
        return out

    a = torch.randn(4 * R, C)
    with pytest.raises(TaskRace, match=r"\(block 0\) writes out\[0, 0\], which task r0t0 .* \(block 1\) writes, and "
                                       r"nothing orders the blocks of one SPMD task"):
        same_band(a, torch.zeros(4 * R, C))
    out = torch.zeros(4 * R, C)
    same_band(a, out, config=RunConfig(unsafe_allow_task_races=True))  # lets it through: one band wins
    assert any(torch.equal(out[:R], torch.exp(a[k * R:(k + 1) * R])) for k in range(4))


def test_the_records_show_one_task_over_many_cores(tmp_path):
    a = torch.randn(BLOCKS * R, C)
    out = torch.zeros(BLOCKS * R, C)
    config = RunConfig(enable_chip_swimlane=True, enable_dep_gen=True, output_dir=tmp_path)
    reversed_bands.compile(a, out, config=config).run(a, out)
    dfx = tmp_path / "dfx_outputs"
    deps = json.loads((dfx / "deps.json").read_text())
    assert len(deps["tasks"]) == 1
    lane = json.loads((dfx / "chip_swimlane_records.json").read_text())
    rows = lane["aicore_tasks"]  # core, token, task, start, end, pickup, epoch
    assert len(rows) == BLOCKS and len({row[2] for row in rows}) == 1 and len({row[0] for row in rows}) == BLOCKS
    from pypto.tools import swimlane

    assert swimlane.main([str(tmp_path), "-o", str(tmp_path / "lane.json")]) == 0
    slices = [e for e in json.loads((tmp_path / "lane.json").read_text())["traceEvents"]
              if e["ph"] == "X" and e["name"] != "pickup"]
    assert len(slices) == BLOCKS and len({e["tid"] for e in slices}) == BLOCKS  # one task across many lanes
    assert {e["args"]["task_id"] for e in slices} == {"r0t0"} and all(e["args"]["blocks"] == BLOCKS for e in slices)


@pytest.mark.parametrize("body, message", [
    ("for i in pl.spmd(4, deps=[]):\n        pass", r"pl.spmd\(\) does not accept 'deps=' here"),
    ("for i in pl.spmd(4, blocks=2):\n        pass", r"pl.spmd\(\) got unexpected keyword argument 'blocks'"),
    ("for i in pl.spmd(0):\n        pass", r"core_num must be a positive integer, got 0"),
    ("for i in pl.spmd(4, 2):\n        pass", r"at most one positional argument \(core_num\)"),
    ("for i in pl.spmd(sync_start=True):\n        pass", r"pl.spmd\(\) requires core_num"),
    ("for i in pl.spmd(4, sync_start=1):\n        pass", r"sync_start must be a boolean literal"),
    ("for i in pl.spmd(4, core_num=4):\n        pass", r"multiple values for argument 'core_num'"),
    ("with pl.spmd(4):\n        pl.store(pl.load(a, [0, 0], [32, 128]), [0, 0], out)",
     r"body neither reads the per-block index"),
    ("with pl.at(level=pl.Level.CORE_GROUP):\n        for i in pl.spmd(4):\n            pass",
     r"pl.spmd is the orchestration's"),
    ("x = pl.tile.get_block_idx()", r"get_block_idx"),
    ("with pl.spmd(4) as (t, u):\n        pass", r"binds one name"),
    ("with pl.spmd(4):\n        for j in pl.range(2):\n            out = k(a, out)",
     r"called at the body's top level, once"),
    ("with pl.spmd(4):\n        out = k(a, out)\n        out = k(a, out)", r"dispatch body launches 2 kernels"),
    ("with pl.spmd(4):\n        out = helper(a, out)", r"'helper' is not one"),
    ("with pl.spmd(4):\n        for j in pl.range(1):\n            with pl.at(level=pl.Level.CORE_GROUP):\n"
     "                pass", r"only statement of its body"),
    ("with pl.spmd(4):\n        i = pl.tile.get_block_idx()\n        out = k(a, out)", r"not both"),
    ("for i in pl.spmd(4):\n        pass\n    else:\n        pass", r"for-else"),
    ("n = pl.system.available_aiv_count(1)", r"takes no arguments"),
    ("with pl.spmd(4, deps=3) as t:\n        i = pl.tile.get_block_idx()", r"pl.spmd\(deps=...\) must be a list"),
])
def test_spmd_mistakes_are_located_with_the_references_words(tmp_path, body, message):
    path = tmp_path / "bad.py"
    path.write_text(textwrap.dedent('''
        import pypto.language as pl


        @pl.jit.incore
        def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
            i = pl.tile.get_block_idx()
            pl.store(pl.load(a, [i * 32, 0], [32, 128]), [i * 32, 0], out)
            return out


        @pl.jit
        def helper(a: pl.Tensor, out: pl.Out[pl.Tensor]):
            with pl.at(level=pl.Level.CORE_GROUP):
                pl.store(pl.load(a, [0, 0], [32, 128]), [0, 0], out)
            return out


        @pl.jit
        def bad(a: pl.Tensor, out: pl.Out[pl.Tensor]):
            BODY
            return out
    ''').replace("BODY", body))
    with pytest.raises(PyptoError, match=message) as info:
        load_kernel(path, "bad")(torch.zeros(4 * R, C), torch.zeros(4 * R, C))
    assert info.value.span is not None and info.value.span.file.endswith("bad.py") and info.value.hint


def test_the_device_counts_size_a_launch():
    @pl.jit
    def per_vector_core(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        for i in pl.spmd(pl.system.available_aiv_count()):
            pl.store(pl.exp(pl.load(a, [i * 8, 0], [8, C])), [i * 8, 0], out)
        return out

    n = A2A3.clusters * A2A3.aiv_per_cluster
    a = torch.randn(n * 8, C)
    report, (_, out) = run_both(per_vector_core, a, torch.zeros(n * 8, C))
    assert torch.equal(out, torch.exp(a)) and len({t.core for t in report.tasks}) == n


def test_a_jit_kernel_dispatched_by_spmd_and_device_counts_in_expressions(tmp_path):
    path = tmp_path / "dispatch.py"
    path.write_text(textwrap.dedent('''
        import pypto.language as pl


        @pl.jit.incore
        def band(a: pl.Tensor, out: pl.Out[pl.Tensor]):
            i = pl.tile.get_block_idx()
            for j in pl.range(pl.tile.get_block_num() // 4):  # a register in a loop bound: once
                pl.store(pl.exp(pl.load(a, [i * 8, 0], [8, 128])), [i * 8, 0], out)
            return out


        @pl.jit
        def entry(a: pl.Tensor, out: pl.Out[pl.Tensor]):
            with pl.spmd(min(pl.system.available_aiv_count(), 4) + pl.system.available_cluster_count() // 6):
                out = band(a, out)
            return out
    '''))
    entry = load_kernel(path, "entry")
    a = torch.randn(8 * 8, C)
    report, (_, out) = run_both(entry, a, torch.zeros(8 * 8, C))
    assert torch.equal(out, torch.exp(a))  # 4 + 24 // 6 = 8 blocks
    assert sorted(t.block for t in report.tasks) == list(range(8))


def test_deps_json_counts_the_blocks(tmp_path):
    a = torch.randn(BLOCKS * R, C)
    out = torch.zeros(BLOCKS * R, C)
    reversed_bands.compile(a, out, config=RunConfig(enable_dep_gen=True, output_dir=tmp_path)).run(a, out)
    (task,) = json.loads((tmp_path / "dfx_outputs" / "deps.json").read_text())["tasks"]
    assert task["block_num"] == BLOCKS


@pl.program
class Gated:
    @pl.function(type=pl.FunctionType.InCore)
    def count(self, a: pl.Tensor[[R, C], pl.FP32], flags: pl.Out[pl.Tensor[[1, 8], pl.INT32]]):
        pl.store(pl.cast(pl.load(a, [0, 0], [1, 8]), target_type=pl.INT32, mode="round"), [0, 0], flags)
        return flags

    @pl.function(type=pl.FunctionType.InCore)
    def work(self, a: pl.Tensor[[R, C], pl.FP32], out: pl.Out[pl.Tensor[[R, C], pl.FP32]]):
        i = pl.tile.get_block_idx()  # 4 blocks of R // 4 rows
        pl.store(pl.exp(pl.load(a, [i * (R // 4), 0], [R // 4, C])), [i * (R // 4), 0], out)
        return out

    @pl.function(type=pl.FunctionType.InCore)
    def after(self, out: pl.Tensor[[R, C], pl.FP32], z: pl.Out[pl.Tensor[[R, C], pl.FP32]]):
        pl.store(pl.add(pl.load(out, [0, 0], [R, C]), 1.0), [0, 0], z)
        return z

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[R, C], pl.FP32], flags: pl.Out[pl.Tensor[[1, 8], pl.INT32]],
             out: pl.Out[pl.Tensor[[R, C], pl.FP32]], z: pl.Out[pl.Tensor[[R, C], pl.FP32]]):
        flags, c = pl.submit(self.count, a, flags)
        out, w = pl.spmd_submit(self.work, a, out, core_num=4, deps=[c], predicate=(0 < flags[0, 3]))
        z, _ = pl.submit(self.after, out, z, deps=[w])
        return z


@pytest.mark.parametrize("gate", [5.0, -5.0])
def test_a_false_predicate_retires_the_task_and_still_releases_its_consumer(gate):
    from pypto.runtime.compiled import compile_program

    a = torch.randn(R, C)
    a[0, 3] = gate
    for platform in ("ref", "a2a3sim"):
        flags, out, z = torch.zeros(1, 8, dtype=torch.int32), torch.zeros(R, C), torch.zeros(R, C)
        report = compile_program(Gated, ["a", "flags", "out", "z"], RunConfig(platform=platform),
                                 write=False).run(a, flags, out, z)
        assert torch.equal(out, torch.exp(a) if gate > 0 else torch.zeros(R, C))
        assert torch.equal(z, out + 1.0)  # the consumer ran either way
    work = [t for t in report.tasks if t.kernel == "work"]
    if gate > 0:
        assert len(work) == 4 and not any(t.retired for t in work)
    else:
        (retired,) = work
        assert retired.retired and retired.core == -1 and retired.start == retired.end
    consumer = next(t for t in report.tasks if t.kernel == "after")
    assert consumer.deps == (work[0].task_id,) and consumer.dispatch >= max(t.finish for t in work)
    text = Gated.as_python()
    assert "predicate=(flags[0, 3] > 0)" in text and parse(text) == Gated


def test_a_predicate_over_an_element_its_producer_may_still_be_writing_is_a_race(tmp_path):
    path = tmp_path / "stale.py"
    path.write_text(textwrap.dedent(f'''
        import pypto.language as pl
        R, C = {R}, {C}


        @pl.program
        class Stale:
            @pl.function(type=pl.FunctionType.InCore)
            def count(self, a: pl.Tensor[[R, C], pl.FP32], flags: pl.Out[pl.Tensor[[1, 8], pl.INT32]]):
                t = pl.load(a, [0, 0], [R, C])
                for _ in pl.range(6):  # long: still running when the next task is dispatched
                    t = pl.exp(t)
                pl.store(pl.cast(pl.load(a, [0, 0], [1, 8]), target_type=pl.INT32, mode="round"), [0, 0], flags)
                return flags

            @pl.function(type=pl.FunctionType.InCore)
            def work(self, a: pl.Tensor[[R, C], pl.FP32], out: pl.Out[pl.Tensor[[R, C], pl.FP32]]):
                pl.store(pl.exp(pl.load(a, [0, 0], [R, C])), [0, 0], out)
                return out

            @pl.function(type=pl.FunctionType.Orchestration)
            def main(self, a: pl.Tensor[[R, C], pl.FP32], flags: pl.Out[pl.Tensor[[1, 8], pl.INT32]],
                     out: pl.Out[pl.Tensor[[R, C], pl.FP32]]):
                flags, c = pl.submit(self.count, a, flags)
                out, w = pl.submit(self.work, a, out, predicate=(flags[0, 3] > 0))  # no deps=[c]
                return out
    '''))
    from pypto.runtime.compiled import compile_program

    stale = load_kernel(path, "Stale")
    args = torch.ones(R, C), torch.zeros(1, 8, dtype=torch.int32), torch.zeros(R, C)
    with pytest.raises(TaskRace, match=r"the predicate of task r0t1 .* reads element \[0, 3\] .* while task r0t0"):
        compile_program(stale, ["a", "flags", "out"], RunConfig(), write=False).run(*args)


@pytest.mark.parametrize("predicate, message", [
    ("flags[0, 3]", "must be a single comparison"),
    ("flags[0, 3] > 0 > -1", "got a chained comparison"),
    ("flags[0, 3] > a[0, 0]", "against an integer literal"),
    ("flags[0, 3] > 0.5", "against an integer literal"),
    ("a[0, 3] > 0", "signed 8/16/32/64-bit integer tensor, got FP32"),
    ("flags[3] > 0", "needs 2 index"),
    ("flags[0, -1] > 0", "must be non-negative"),
])
def test_predicate_mistakes_are_located_with_the_references_words(tmp_path, predicate, message):
    path = tmp_path / "bad.py"
    path.write_text(textwrap.dedent(f'''
        import pypto.language as pl


        @pl.jit
        def bad(a: pl.Tensor, flags: pl.Tensor, out: pl.Out[pl.Tensor]):
            for i in pl.spmd(2, predicate=({predicate})):
                pl.store(pl.load(a, [i * 32, 0], [32, 128]), [i * 32, 0], out)
            return out
    '''))
    with pytest.raises(PyptoError, match=message) as info:
        load_kernel(path, "bad")(torch.zeros(64, 128), torch.zeros(1, 8, dtype=torch.int32), torch.zeros(64, 128))
    assert info.value.span is not None and info.value.span.file.endswith("bad.py") and info.value.hint


@pl.jit
def _early_producer(a: pl.Tensor, src: pl.Tensor, flags: pl.Out[pl.Tensor], out: pl.Out[pl.Tensor]):
    with pl.at(level=CG, allow_early_resolve=True) as t:  # its consumers may be staged while it runs
        x = pl.load(a, [0, 0], [64, 128])
        for _ in pl.range(4):
            x = pl.exp(pl.mul(x, 0.5))
        pl.store(pl.add(pl.load(src, [0, 0], [1, 8]), 0), [0, 0], flags)
        pl.store(x, [0, 0], out)
    with pl.spmd(2, deps=[t], predicate=(flags[0, 3] > 0)) as gated:
        with pl.at(level=CG, no_dep_args=[out]):
            i = pl.tile.get_block_idx()
            pl.store(pl.add(pl.load(a, [i * 32, 0], [32, 128]), 5.0), [i * 32, 0], out)
    return out


@pytest.mark.parametrize("gate", [1, 0])
def test_a_predicated_task_is_not_staged_early_it_reads_once_its_producer_ends(gate):
    a = torch.randn(64, 128)
    src = torch.zeros(1, 8, dtype=torch.int32)
    src[0, 3] = gate
    report, (_, _, flags, out) = run_both(_early_producer, a, src, torch.zeros(1, 8, dtype=torch.int32),
                                          torch.zeros(64, 128))
    assert torch.equal(out, a + 5.0) == bool(gate)
    producer = next(t for t in report.tasks if t.task_id == "r0t0")
    assert all(t.dispatch >= producer.finish for t in report.tasks if t.task_id == "r0t1")


def test_a_later_writer_of_the_predicates_element_that_already_ran_is_a_race(tmp_path):
    path = tmp_path / "war.py"
    path.write_text(textwrap.dedent(f'''
        import pypto.language as pl
        R, C = {R}, {C}


        @pl.program
        class War:
            @pl.function(type=pl.FunctionType.InCore)
            def setf(self, src: pl.Tensor[[1, 8], pl.INT32], flags: pl.Out[pl.Tensor[[1, 8], pl.INT32]]):
                pl.store(pl.load(src, [0, 0], [1, 8]), [0, 0], flags)
                return flags

            @pl.function(type=pl.FunctionType.InCore)
            def slow(self, a: pl.Tensor[[R, C], pl.FP32], s: pl.Out[pl.Tensor[[R, C], pl.FP32]]):
                t = pl.load(a, [0, 0], [R, C])
                for _ in pl.range(8):
                    t = pl.exp(pl.mul(t, 0.5))
                pl.store(t, [0, 0], s)
                return s

            @pl.function(type=pl.FunctionType.InCore)
            def work(self, a: pl.Tensor[[R, C], pl.FP32], out: pl.Out[pl.Tensor[[R, C], pl.FP32]]):
                pl.store(pl.exp(pl.load(a, [0, 0], [R, C])), [0, 0], out)
                return out

            @pl.function(type=pl.FunctionType.Orchestration)
            def main(self, a: pl.Tensor[[R, C], pl.FP32], one: pl.Tensor[[1, 8], pl.INT32],
                     zero: pl.Tensor[[1, 8], pl.INT32], flags: pl.Out[pl.Tensor[[1, 8], pl.INT32]],
                     s: pl.Out[pl.Tensor[[R, C], pl.FP32]], out: pl.Out[pl.Tensor[[R, C], pl.FP32]]):
                flags, t1 = pl.submit(self.setf, one, flags)
                s, ts = pl.submit(self.slow, a, s)
                out, tw = pl.submit(self.work, a, out, deps=[t1, ts], predicate=(flags[0, 0] > 0))
                flags, _ = pl.submit(self.setf, zero, flags)  # waits for the first setf only (WAW)
                return out
    '''))
    from pypto.runtime.compiled import compile_program

    war = load_kernel(path, "War")
    args = (torch.randn(R, C), torch.ones(1, 8, dtype=torch.int32), torch.zeros(1, 8, dtype=torch.int32),
            torch.zeros(1, 8, dtype=torch.int32), torch.zeros(R, C), torch.zeros(R, C))
    with pytest.raises(TaskRace, match=r"the predicate of task r0t2 .* while task r0t3 .* writes it") as info:
        compile_program(war, ["a", "one", "zero", "flags", "s", "out"], RunConfig(), write=False).run(*args)
    assert "make r0t3 wait for r0t2" in info.value.hint


def test_a_kernel_dispatched_in_the_loop_form_of_spmd_is_refused_with_the_with_form_as_the_fix():
    text = f'''
import pypto.language as pl


@pl.program
class P:
    @pl.function(type=pl.FunctionType.InCore)
    def band(self, a: pl.Tensor[[{BLOCKS * R}, {C}], pl.FP32],
             out: pl.Out[pl.Tensor[[{BLOCKS * R}, {C}], pl.FP32]]) -> pl.Tensor[[{BLOCKS * R}, {C}], pl.FP32]:
        i = pl.tile.get_block_idx()
        pl.store(pl.load(a, [i * {R}, 0], [{R}, {C}]), [i * {R}, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[{BLOCKS * R}, {C}], pl.FP32], b: pl.Out[pl.Tensor[[{BLOCKS * R}, {C}], pl.FP32]]):
        for i in pl.spmd({BLOCKS}):
            b = self.band(a, b)
        return b
'''
    with pytest.raises(PyptoError, match="outlines its body into one kernel") as info:
        parse(text)
    assert "with pl.spmd(n)" in info.value.hint


@pytest.mark.parametrize("platform", ["ref", "a2a3sim"])
def test_an_opaque_function_looping_over_pl_spmd_orchestrates_it(platform):
    """The reference's bidirectional SPMD program: no ``with`` in the function, its loop over
    pl.spmd(n) is the SPMD scope (vector, cube, vector work on each block's rows)."""
    from pypto.lang import parse
    from pypto.runtime import RunConfig
    from pypto.runtime.compiled import compile_program

    text = '''
import pypto.language as pl


@pl.program
class S:
    @pl.function(type=pl.FunctionType.Opaque)
    def main(self, a: pl.Tensor[[32, 64], pl.FP32], b: pl.Tensor[[64, 16], pl.FP32],
             out: pl.InOut[pl.Tensor[[32, 16], pl.FP32]]) -> pl.Tensor[[32, 16], pl.FP32]:
        for ob in pl.spmd(2, name_hint="rows"):
            m0 = ob * 16
            a_add = pl.add(pl.slice(a, [16, 64], [m0, 0]), 1.0)
            c_vec = pl.add(pl.matmul(a_add, b), 1.0)
            out = pl.assemble(out, pl.transpose(c_vec, axis1=0, axis2=1), [m0, 0])
        return out
'''
    g = torch.Generator().manual_seed(6)
    a, b, out = torch.randn(32, 64, generator=g), torch.randn(64, 16, generator=g), torch.zeros(32, 16)
    want = out.clone()
    for m0 in (0, 16):
        want[m0:m0 + 16] = ((a[m0:m0 + 16] + 1) @ b + 1).t()
    report = compile_program(parse(text), ["a", "b", "out"], RunConfig(platform=platform), write=False).run(a, b, out)
    assert torch.allclose(out, want, atol=1e-4)
    if platform == "a2a3sim":
        assert len(report.tasks) == 2 and len({t.task_id for t in report.tasks}) == 1  # one task, two blocks
