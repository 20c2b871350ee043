"""The orchestration language: what an entry body may do around its tasks."""

import pytest
import torch

import pypto.language as pl
from pypto.errors import PyptoError
from helpers import load_kernel
from pypto.runtime import RunConfig

R, C = 64, 128
CG = pl.Level.CORE_GROUP


def test_unroll_makes_one_task_per_iteration_at_compile_time():
    @pl.jit
    def k(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
        for i in pl.unroll(4):
            with pl.at(level=CG):
                pl.store(pl.add(pl.load(a, [i * R, 0], [R, C]), pl.load(b, [i * R, 0], [R, C])), [i * R, 0], c)
        return c

    a, b = torch.randn(4 * R, C), torch.randn(4 * R, C)
    for platform in ("ref", "a2a3sim"):
        c = torch.zeros(4 * R, C)
        compiled = k.compile(a, b, c, config=RunConfig(platform=platform))
        report = compiled.run(a, b, c)
        assert torch.equal(c, a + b)
    assert [f.name for f in compiled.lowered.functions if f.type.is_kernel] == [f"k_incore_{j}" for j in range(4)]
    assert "pl.unroll" not in compiled.lowered.as_python()
    # four sibling tasks of the body's scope writing one buffer: each after the last (R-prior)
    assert [(t.task_id, t.deps) for t in sorted(report.tasks, key=lambda t: t.task_id)] == \
        [("r0t0", ()), ("r0t1", ("r0t0",)), ("r0t2", ("r0t1",)), ("r0t3", ("r0t2",))]


def test_unroll_with_start_stop_step_and_names_rebound_in_the_body():
    @pl.jit
    def k(a: pl.Tensor, c: pl.Out[pl.Tensor]):
        off = 0
        for i in pl.unroll(1, 7, 2):  # 1, 3, 5
            with pl.at(level=CG):
                pl.store(pl.exp(pl.load(a, [i * R, 0], [R, C])), [off, 0], c)
            off = off + R
        return c

    a = torch.randn(6 * R, C)
    c = torch.zeros(3 * R, C)
    k(a, c)
    assert torch.equal(c, torch.exp(torch.cat([a[R:2 * R], a[3 * R:4 * R], a[5 * R:6 * R]])))


def test_unroll_inside_a_kernel_unrolls_its_loop():
    @pl.jit
    def k(a: pl.Tensor, c: pl.Out[pl.Tensor]):
        with pl.at(level=CG):
            for i in pl.unroll(2):
                pl.store(pl.neg(pl.load(a, [i * R, 0], [R, C])), [i * R, 0], c)
        return c

    a = torch.randn(2 * R, C)
    c = torch.zeros(2 * R, C)
    compiled = k.compile(a, c)
    compiled.run(a, c)
    assert torch.equal(c, -a)
    assert "for " not in compiled.program.as_python()


def _error(src_fn, *args) -> PyptoError:
    with pytest.raises(PyptoError) as err:
        pl.jit(src_fn)(*args)
    return err.value


def test_unroll_refuses_init_values_with_the_reference_wording():
    def k(a: pl.Tensor, c: pl.Out[pl.Tensor]):
        acc = 0
        for i, (acc,) in pl.unroll(2, init_values=(acc,)):
            acc = pl.yield_(acc + i)
        with pl.at(level=CG):
            pl.store(pl.load(a, [acc, 0], [R, C]), [0, 0], c)
        return c

    err = _error(k, torch.randn(2 * R, C), torch.zeros(R, C))
    assert "pl.unroll() cannot be combined with init_values" in err.message and "pl.range()" in err.hint
    assert err.span.line == k.__code__.co_firstlineno + 2


def test_unroll_needs_constant_bounds_and_a_nonzero_step():
    def runtime_bound(a: pl.Tensor, n: pl.Scalar[pl.INDEX], c: pl.Out[pl.Tensor]):
        for i in pl.unroll(n):
            with pl.at(level=CG):
                pl.store(pl.load(a, [i * R, 0], [R, C]), [0, 0], c)
        return c

    def zero_step(a: pl.Tensor, c: pl.Out[pl.Tensor]):
        for i in pl.unroll(0, 4, 0):
            with pl.at(level=CG):
                pl.store(pl.load(a, [i * R, 0], [R, C]), [0, 0], c)
        return c

    err = _error(runtime_bound, torch.randn(R, C), 1, torch.zeros(R, C))
    assert "pl.unroll() requires compile-time constant integer bounds" in err.message
    err = _error(zero_step, torch.randn(R, C), torch.zeros(R, C))
    assert "pl.unroll() step cannot be zero" in err.message


def test_a_python_iterator_names_every_loop_form():
    def k(a: pl.Tensor, c: pl.Out[pl.Tensor]):
        for i in [0, 1]:
            with pl.at(level=CG):
                pl.store(pl.load(a, [0, 0], [R, C]), [0, 0], c)
        return c

    err = _error(k, torch.randn(R, C), torch.zeros(R, C))
    assert "pl.range(), pl.parallel(), pl.unroll(), pl.pipeline()" in err.message


def test_param_names_is_a_list():
    @pl.jit
    def add(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=CG):
            out[:] = pl.add(a, b)
        return out

    a = torch.randn(R, C)
    assert add.compile(a, a, torch.zeros(R, C)).param_names == ["a", "b", "out"]


def test_create_tensor_in_the_entry_is_a_buffer_tasks_share():
    @pl.jit
    def staged(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        scratch = pl.create_tensor([4 * R, C], pl.FP32)
        for i in pl.range(4):
            with pl.at(level=CG):
                pl.store(pl.mul(pl.load(a, [i * R, 0], [R, C]), 2.0), [i * R, 0], scratch)
        with pl.at(level=CG):
            for i in pl.range(4):
                pl.store(pl.load(scratch, [i * R, 0], [R, C]), [i * R, 0], out)
        return out

    a = torch.randn(4 * R, C)
    for platform in ("ref", "a2a3sim"):
        out = torch.zeros(4 * R, C)
        report = staged.compile(a, out, config=RunConfig(platform=platform)).run(a, out)
        assert torch.equal(out, a * 2.0)
    by_id = {t.task_id: t.deps for t in report.tasks}
    assert by_id["r0t0"] == ("r1t3",)  # the reader waits for scratch's last producer


def test_create_tensor_init_value_fills_it():
    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        ones = pl.create_tensor([R, C], pl.FP32, init_value=1.5)
        with pl.at(level=CG):
            pl.store(pl.add(pl.load(a, [0, 0], [R, C]), pl.load(ones, [0, 0], [R, C])), [0, 0], out)
        return out

    a = torch.randn(R, C)
    for platform in ("ref", "a2a3sim"):
        out = torch.zeros(R, C)
        k(a, out, config=RunConfig(platform=platform))
        assert torch.equal(out, a + 1.5)


def test_manual_dep_drops_the_edges_of_a_tensor_for_its_whole_life():
    from pypto.chip.races import TaskRace

    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        scratch = pl.create_tensor([4 * R, C], pl.FP32, manual_dep=True)
        with pl.at(level=CG):
            pl.store(pl.exp(pl.load(a, [0, 0], [4 * R, C])), [0, 0], scratch)  # a long writer
        with pl.at(level=CG):  # reads it with no edge: it runs while the writer does
            pl.store(pl.load(scratch, [0, 0], [R, C]), [0, 0], out)
        return out

    with pytest.raises(TaskRace, match="no dependency orders them"):
        pl.jit(k)(torch.randn(4 * R, C), torch.zeros(R, C))


def test_manual_dep_and_init_value_belong_to_the_orchestration():
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=CG):
            t = pl.create_tensor([R, C], pl.FP32, manual_dep=True)
            pl.store(pl.load(a, [0, 0], [R, C]), [0, 0], out)
        return out

    err = _error(k, torch.randn(R, C), torch.zeros(R, C))
    assert "pl.create_tensor(manual_dep=...) is the orchestration's" in err.message


def test_slices_made_in_the_orchestration_are_views_disjoint_by_construction():
    @pl.jit
    def sliced(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        for i in pl.range(4):  # R-seq makes each writer InOut, but its bytes are its own
            part = pl.slice(out, [R, C], [i * R, 0])
            src = a[i * R:(i + 1) * R, :]
            with pl.at(level=CG):
                pl.store(pl.exp(pl.load(src, [0, 0], [R, C])), [0, 0], part)
        return out

    a = torch.randn(4 * R, C)
    for platform in ("ref", "a2a3sim"):
        out = torch.zeros(4 * R, C)
        report = sliced.compile(a, out, config=RunConfig(platform=platform)).run(a, out)
        assert torch.equal(out, torch.exp(a))
    assert not any(t.deps for t in report.tasks) and len({t.core for t in report.tasks}) == 4


def test_column_views_are_strided_and_overlap_by_their_real_bytes():
    @pl.jit
    def cols(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        left = pl.slice(out, [R, C // 2], [0, 0])
        right = out[:, C // 2:C]
        wide = pl.slice(out, [R, 3 * C // 4], [0, 0])  # overlaps both
        with pl.at(level=CG):
            pl.store(pl.exp(pl.load(a, [0, 0], [R, C // 2])), [0, 0], left)
        with pl.at(level=CG):
            pl.store(pl.neg(pl.load(a, [0, C // 2], [R, C // 2])), [0, 0], right)
        with pl.at(level=CG):
            pl.store(pl.add(pl.load(wide, [0, 0], [R, 3 * C // 4]), pl.load(wide, [0, 0], [R, 3 * C // 4])),
                     [0, 0], wide)
        return out

    a = torch.randn(R, C)
    want = torch.cat([torch.exp(a[:, :C // 2]), -a[:, C // 2:]], dim=1)
    want[:, :3 * C // 4] *= 2
    for platform in ("ref", "a2a3sim"):
        out = torch.zeros(R, C)
        report = cols.compile(a, out, config=RunConfig(platform=platform)).run(a, out)
        assert torch.equal(out, want)
    found = {t.task_id: set(t.deps) for t in report.tasks}
    # R-prior makes the second writer of out InOut, but the rows of its columns are not the first's
    assert found["r0t0"] == set() and found["r0t1"] == set()
    assert found["r0t2"] == {"r0t0", "r0t1"}  # the wide view overlaps the bytes of both


def test_a_transposed_view_is_passed_to_a_task():
    @pl.jit
    def k(w: pl.Tensor, out: pl.Out[pl.Tensor]):
        wt = pl.tensor.transpose(w, 0, 1)
        with pl.at(level=CG):
            pl.store(pl.neg(pl.load(wt, [0, 0], [R, C])), [0, 0], out)
        return out

    w = torch.randn(C, R)
    for platform in ("ref", "a2a3sim"):
        out = torch.zeros(R, C)
        k(w, out, config=RunConfig(platform=platform))
        assert torch.equal(out, -w.T)


def test_tensor_dim_is_the_extent():
    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        rows = pl.tensor.dim(a, 0)
        for i in pl.range(rows // R):
            with pl.at(level=CG):
                pl.store(pl.exp(pl.load(a, [i * R, 0], [R, pl.tensor.dim(a, -1)])), [i * R, 0], out)
        return out

    a = torch.randn(3 * R, C)
    out = torch.zeros(3 * R, C)
    k(a, out)
    assert torch.equal(out, torch.exp(a))


def test_a_tensor_one_scope_computes_and_another_reads_gets_a_buffer():
    @pl.jit
    def staged(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=CG):
            s = pl.add(a, b)
        with pl.at(level=CG):
            out[:] = pl.exp(s)
        return out

    a, b = torch.randn(R, C), torch.randn(R, C)
    for platform in ("ref", "a2a3sim"):
        out = torch.zeros(R, C)
        compiled = staged.compile(a, b, out, config=RunConfig(platform=platform))
        report = compiled.run(a, b, out)
        assert torch.equal(out, torch.exp(a + b))
    assert {t.task_id: t.deps for t in report.tasks} == {"r0t0": (), "r0t1": ("r0t0",)}
    entry = compiled.lowered.as_python().split("Orchestration)")[1]
    assert "s_buf = pl.tensor.create([64, 128], dtype=pl.FP32)" in entry
    from pypto.lang import parse

    assert parse(compiled.lowered.as_python()).function(compiled.entry) == compiled.lowered.function(compiled.entry)


def test_a_tensor_carried_through_a_loop_of_scopes():
    @pl.jit
    def carried(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=CG):
            acc = pl.mul(a, 2.0)
        for k in pl.range(3):
            with pl.at(level=CG) as tid:
                acc = pl.add(acc, a)
        with pl.at(level=CG):
            out[:] = pl.exp(acc)
        return out

    a = torch.randn(R, C)
    want = a * 2.0
    for _ in range(3):
        want = want + a
    for platform in ("ref", "a2a3sim"):
        out = torch.zeros(R, C)
        report = carried.compile(a, out, config=RunConfig(platform=platform)).run(a, out)
        assert torch.equal(out, torch.exp(want))
    chain = sorted(report.tasks, key=lambda t: t.start)
    assert all(later.deps == (earlier.task_id,) for earlier, later in zip(chain, chain[1:]))


@pytest.mark.parametrize("form", ["read", "pl.read", "subscript"])
def test_an_element_read_waits_for_its_producer_and_steers_the_orchestration(form, tmp_path):
    import textwrap

    path = tmp_path / "reader.py"  # the front end reads a kernel's source from its file
    src = {"read": "pl.tensor.read(flags, [0, 3])", "pl.read": "pl.read(flags, [0, 3])",
           "subscript": "flags[0, 3]"}[form]
    path.write_text(textwrap.dedent(f'''
        import pypto.language as pl
        R, C, CG = 64, 128, pl.Level.CORE_GROUP


        @pl.jit
        def k(a: pl.Tensor, flags: pl.Out[pl.Tensor], out: pl.Out[pl.Tensor]):
            with pl.at(level=CG):
                pl.store(pl.mul(pl.load(a, [0, 0], [R, C]), 2.0), [0, 0], flags)
            v = {src}
            if v > 0.0:
                with pl.at(level=CG):
                    pl.store(pl.exp(pl.load(a, [0, 0], [R, C])), [0, 0], out)
            else:
                with pl.at(level=CG):
                    pl.store(pl.neg(pl.load(a, [0, 0], [R, C])), [0, 0], out)
            return flags, out
    '''))
    k = load_kernel(path)
    for sign in (1.0, -1.0):
        a = torch.randn(R, C)
        a[0, 3] = sign
        want = torch.exp(a) if sign > 0 else -a
        for platform in ("ref", "a2a3sim"):
            flags, out = torch.zeros(R, C), torch.zeros(R, C)
            report = k.compile(a, flags, out, config=RunConfig(platform=platform)).run(a, flags, out)
            assert torch.equal(out, want)
        first, second = sorted(report.tasks, key=lambda t: t.start)
        assert second.dispatch > first.finish  # the orchestrator waited for the producer before submitting


def test_reading_an_element_a_running_untracked_task_writes_is_a_race():
    from pypto.chip.races import TaskRace

    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        scratch = pl.create_tensor([4 * R, C], pl.FP32, manual_dep=True)
        with pl.at(level=CG):
            pl.store(pl.exp(pl.load(a, [0, 0], [4 * R, C])), [0, 0], scratch)
        v = scratch[0, 0]
        with pl.at(level=CG):
            pl.store(pl.muls(pl.load(a, [0, 0], [R, C]), v), [0, 0], out)
        return out

    with pytest.raises(TaskRace, match="the orchestrator reads element \\[0, 0\\]"):
        pl.jit(k)(torch.randn(4 * R, C), torch.zeros(R, C))


def test_create_tensor_takes_the_row_major_layout_only():
    def nd(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        t = pl.create_tensor([R, C], pl.FP32, layout=pl.TensorLayout.ND)
        with pl.at(level=CG):
            pl.store(pl.load(a, [0, 0], [R, C]), [0, 0], t)
        with pl.at(level=CG):
            pl.store(pl.load(t, [0, 0], [R, C]), [0, 0], out)
        return out

    def nz(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        t = pl.create_tensor([R, C], pl.FP32, layout=pl.TensorLayout.NZ)
        with pl.at(level=CG):
            pl.store(pl.load(a, [0, 0], [R, C]), [0, 0], t)
        return out

    a, out = torch.randn(R, C), torch.zeros(R, C)
    pl.jit(nd)(a, out)
    assert torch.equal(out, a)
    err = _error(nz, a, torch.zeros(R, C))
    assert "tensors here are row-major (ND)" in err.message and err.span.line == nz.__code__.co_firstlineno + 1
