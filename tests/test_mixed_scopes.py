"""Mixed scopes: cube work whose result vector work reads, in one ``pl.at`` — staged
through a GM buffer the orchestration creates, one kernel of cube and vector programs on
one cluster, one task; ``optimizations=[pl.split(...), pl.cross_core_slot(...)]`` parsed,
printed and checked with the reference's words."""

import textwrap

import pytest
import torch

import pypto.language as pl
from pypto.errors import PyptoError, UnsupportedSyntaxError
from pypto.lang import parse
from helpers import load_kernel
from pypto.runtime import RunConfig

M, K, N = 128, 256, 128
CG = pl.Level.CORE_GROUP


@pl.jit
def staged(a: pl.Tensor, b: pl.Tensor, bias: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=CG, name_hint="cube_only"):
        acc = pl.matmul(a, b, out_dtype=pl.FP32)
    with pl.at(level=CG, name_hint="vector_only"):
        out[:] = pl.add(acc, bias)
    return out


def mixed(mode):
    @pl.jit
    def mixed_matmul_bias(a: pl.Tensor, b: pl.Tensor, bias: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=CG, optimizations=[pl.split(mode), pl.cross_core_slot(slot_num=2)], name_hint="mixed"):
            acc = pl.matmul(a, b, out_dtype=pl.FP32)  # cube
            out[:] = pl.add(acc, bias)  # vector: reads the cube's result
        return out

    return mixed_matmul_bias


def operands():
    g = torch.Generator().manual_seed(3)
    return (torch.randn(M, K, generator=g).half(), torch.randn(K, N, generator=g).half(),
            torch.randn(M, N, generator=g))


@pytest.mark.parametrize("mode", [pl.SplitMode.UP_DOWN, pl.SplitMode.LEFT_RIGHT, pl.SplitMode.NONE])
def test_a_mixed_scope_is_one_cluster_task_with_the_bits_of_ref(mode):
    a, b, bias = operands()
    kernel = mixed(mode)
    got = []
    for platform in ("ref", "a2a3sim"):
        out = torch.zeros(M, N)
        report = kernel.compile(a, b, bias, out, config=RunConfig(platform=platform)).run(a, b, bias, out)
        got.append(out)
    assert torch.equal(got[0], got[1])
    torch.testing.assert_close(got[1], a.float() @ b.float() + bias, rtol=1e-2, atol=1e-2)
    (task,) = report.tasks
    assert task.core_type == "mix"
    cube, vector = "aic", "aiv"
    assert {name[:3] for name in task.pipe_cycles} == {cube, vector}  # both kinds of core worked


def test_one_mixed_task_beats_the_two_staged_ones_and_the_dumps_say_how():
    a, b, bias = operands()
    out = torch.zeros(M, N)
    two = staged.compile(a, b, bias, out).run(a, b, bias, out)
    kernel = mixed(pl.SplitMode.UP_DOWN)
    compiled = kernel.compile(a, b, bias, out)
    one = compiled.run(a, b, bias, out)
    assert len(two.tasks) == 2 and len(one.tasks) == 1 and one.cycles < two.cycles
    text = compiled.program.as_python()
    assert "optimizations=[pl.split(pl.SplitMode.UP_DOWN), pl.cross_core_slot(slot_num=2)]" in text
    assert parse(text) == compiled.program
    lowered = compiled.lowered.as_python()
    assert "acc_gm = pl.tensor.create([128, 128], dtype=pl.FP32)" in lowered  # the crossing's GM buffer


def test_the_older_spelling_of_the_slot_count_is_accepted():
    @pl.jit
    def old(a: pl.Tensor, b: pl.Tensor, bias: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=CG, optimizations=[pl.split(pl.SplitMode.UP_DOWN, slot_num=4)]):
            out[:] = pl.add(pl.matmul(a, b, out_dtype=pl.FP32), bias)
        return out

    a, b, bias = operands()
    compiled = old.compile(a, b, bias, torch.zeros(M, N))
    assert "optimizations=[pl.split(pl.SplitMode.UP_DOWN), pl.cross_core_slot(slot_num=4)]" in \
        compiled.program.as_python()


def test_a_cube_accumulation_carried_through_a_loop_crosses_once_after_it():
    @pl.jit
    def accumulate(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=CG, optimizations=[pl.split(pl.SplitMode.NONE)]):
            acc = pl.matmul(a[:, 0:64], b[0:64, :], out_dtype=pl.FP32)
            for k in pl.range(1, 4):
                acc = pl.matmul_acc(acc, a[:, k * 64:(k + 1) * 64], b[k * 64:(k + 1) * 64, :])
            out[:] = pl.exp(pl.mul(acc, 0.01))
        return out

    a, b, _ = operands()
    got = []
    for platform in ("ref", "a2a3sim"):
        out = torch.zeros(M, N)
        accumulate(a, b, out, config=RunConfig(platform=platform))
        got.append(out)
    assert torch.equal(got[0], got[1])
    torch.testing.assert_close(got[1], torch.exp((a.float() @ b.float()) * 0.01), rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("entry, message", [
    ("pl.split(pl.SplitMode.UP_DOWN)", r"pl.at\(optimizations=...\) must be a list literal"),
    ("[pl.split(pl.SplitMode.UP_DOWN), pl.split(pl.SplitMode.NONE)]", "Duplicate 'pl.split"),
    ("[pl.cross_core_slot(slot_num=2), pl.cross_core_slot(slot_num=4)]", "Duplicate 'pl.cross_core_slot"),
    ("[pl.cross_core_slot(slot_num=0)]", "slot_num must be positive"),
    ("[pl.cross_core_slot(2)]", "takes slot_num= only"),
    ("[pl.exp]", r"Unsupported entry in pl.at\(optimizations"),
    ("[pl.split('UP_DOWN')]", "pl.split's mode must be"),
    ("[pl.split(pl.SplitMode.UP_DOWN, slot_num=2), pl.cross_core_slot(slot_num=4)]", "slot count twice"),
])
def test_optimizations_mistakes_are_located(tmp_path, entry, message):
    path = tmp_path / "bad.py"
    path.write_text(textwrap.dedent(f'''
        import pypto.language as pl


        @pl.jit
        def bad(a: pl.Tensor, out: pl.Out[pl.Tensor]):
            with pl.at(level=pl.Level.CORE_GROUP, optimizations={entry}):
                pl.store(pl.load(a, [0, 0], [32, 128]), [0, 0], out)
            return out
    '''))
    with pytest.raises(PyptoError, match=message) as info:
        load_kernel(path, "bad")(torch.zeros(32, 128), torch.zeros(32, 128))
    assert info.value.span is not None and info.value.span.file.endswith("bad.py") and info.value.hint


def test_the_blocks_of_a_mixed_spmd_scope_each_stage_through_their_own_window():
    m, k, n = 64, 128, 64

    @pl.jit
    def spmd_mixed(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
        for i in pl.spmd(4):
            acc = pl.matmul(a[i * m:(i + 1) * m, :], b, out_dtype=pl.FP32)
            out[i * m:(i + 1) * m, :] = pl.exp(pl.mul(acc, 0.01))
        return out

    g = torch.Generator().manual_seed(5)
    a, b = torch.randn(4 * m, k, generator=g).half(), torch.randn(k, n, generator=g).half()
    got = []
    for platform in ("ref", "a2a3sim"):
        out = torch.zeros(4 * m, n)
        report = spmd_mixed.compile(a, b, out, config=RunConfig(platform=platform)).run(a, b, out)
        got.append(out)
    assert torch.equal(got[0], got[1])  # no race between the blocks: each its own window
    torch.testing.assert_close(got[1], torch.exp((a.float() @ b.float()) * 0.01), rtol=1e-2, atol=1e-2)
    assert len(report.tasks) == 4 and {t.core_type for t in report.tasks} == {"mix"}
    assert len({t.core for t in report.tasks}) == 4  # a cluster each


def _both(kernel, *args):
    got = []
    for platform in ("ref", "a2a3sim"):
        copies = [x.clone() for x in args]
        report = kernel.compile(*copies, config=RunConfig(platform=platform)).run(*copies)
        got.append(copies)
    for x, y in zip(*got):
        assert torch.equal(x, y)
    return report, got[1]


def test_the_cubes_own_uses_keep_the_value_after_a_vector_core_read_it():
    @pl.jit
    def read_then_accumulate(a: pl.Tensor, b: pl.Tensor, bias: pl.Tensor, o1: pl.Out[pl.Tensor],
                             o2: pl.Out[pl.Tensor]):
        with pl.at(level=CG):
            acc = pl.matmul(a[:, 0:128], b[0:128, :], out_dtype=pl.FP32)
            o1[:] = pl.add(acc, bias)  # a vector read of acc ...
            acc = pl.matmul_acc(acc, a[:, 128:256], b[128:256, :])  # ... and the cube goes on with it
            o2[:] = acc
        return o1, o2

    a, b, bias = operands()
    report, (_, _, _, o1, o2) = _both(read_then_accumulate, a, b, bias, torch.zeros(M, N), torch.zeros(M, N))
    torch.testing.assert_close(o1, a[:, :128].float() @ b[:128].float() + bias, rtol=1e-2, atol=1e-2)
    torch.testing.assert_close(o2, a.float() @ b.float(), rtol=1e-2, atol=1e-2)
    assert [t.core_type for t in report.tasks] == ["mix"]


def test_a_value_the_cube_computes_on_one_path_and_the_vector_on_another_is_refused_there():
    @pl.jit
    def merged(a: pl.Tensor, b: pl.Tensor, bias: pl.Tensor, f: pl.Scalar[pl.INDEX], out: pl.Out[pl.Tensor]):
        with pl.at(level=CG):
            if f > 0:
                x = pl.matmul(a, b, out_dtype=pl.FP32)
            else:
                x = pl.mul(bias, 2.0)
            out[:] = pl.add(x, bias)
        return out

    a, b, bias = operands()
    with pytest.raises(PyptoError, match="a matmul's result on one path and vector work on another") as info:
        merged(a, b, bias, 1, torch.zeros(M, N))
    assert info.value.span is not None and info.value.hint


def test_the_swimlane_shows_a_mixed_task_on_every_core_of_its_cluster(tmp_path):
    import json

    a, b, bias = operands()
    out = torch.zeros(M, N)
    config = RunConfig(enable_chip_swimlane=2, output_dir=tmp_path)
    mixed(pl.SplitMode.NONE).compile(a, b, bias, out, config=config).run(a, b, bias, out)
    rows = json.loads((tmp_path / "dfx_outputs" / "chip_swimlane_records.json").read_text())["aicore_tasks"]
    assert sorted(row[0] for row in rows) == [0, 24, 25]  # cluster 0: its cube core and both vector cores


def test_a_crossing_read_in_a_loop_is_staged_once_before_it():
    @pl.jit
    def sliced_in_a_loop(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=CG):
            acc = pl.matmul(a, b, out_dtype=pl.FP32)
            for k in pl.range(4):  # each trip reads a band of the cube's result
                out[k * 32:(k + 1) * 32, :] = pl.mul(acc[k * 32:(k + 1) * 32, :], 2.0)
        return out

    @pl.jit
    def whole(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=CG):
            out[:] = pl.mul(pl.matmul(a, b, out_dtype=pl.FP32), 2.0)
        return out

    a, b, _ = operands()
    report, (_, _, out) = _both(sliced_in_a_loop, a, b, torch.zeros(M, N))
    torch.testing.assert_close(out, (a.float() @ b.float()) * 2.0, rtol=1e-2, atol=1e-2)
    once = whole.compile(a, b, torch.zeros(M, N)).run(a, b, torch.zeros(M, N))
    cube = lambda r: next(p for core, p in r.tasks[0].pipe_cycles.items() if core.startswith("aic"))  # noqa: E731
    assert cube(report)["MTE2"] == cube(once)["MTE2"]  # the cube loads a and b once, not once per trip
    text = sliced_in_a_loop.compile(a, b, torch.zeros(M, N)).lowered.as_python()
    assert text.count("pl.tile.matmul(") == 1


@pytest.mark.parametrize("mode", [pl.SplitMode.NONE, pl.SplitMode.UP_DOWN, pl.SplitMode.LEFT_RIGHT])
def test_vector_work_a_matmul_reads_reaches_the_cube_through_gm(mode):
    def kernel(split):
        @pl.jit
        def vector_then_cube(x: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
            with pl.at(level=CG, optimizations=[pl.split(split)]):
                h = pl.cast(pl.exp(x), pl.FP16)  # vector work ...
                out[:] = pl.matmul(h, b, out_dtype=pl.FP32)  # ... the cube multiplies
            return out

        return vector_then_cube

    g = torch.Generator().manual_seed(8)
    x, b = torch.randn(64, 64, generator=g) * 0.1, torch.randn(64, 64, generator=g).half()
    report, (_, _, out) = _both(kernel(mode), x, b, torch.zeros(64, 64))
    torch.testing.assert_close(out, torch.exp(x).half().float() @ b.float(), rtol=1e-3, atol=1e-3)
    assert [t.core_type for t in report.tasks] == ["mix"]


def test_a_value_the_cube_and_the_vector_cores_both_compute_is_refused_by_its_source_name(tmp_path):
    from helpers import scope_kernel

    k = scope_kernel(tmp_path, "acc = pl.matmul(a, b)\nfor j in pl.range(3):\n    acc = pl.add(acc, pl.matmul(a, b))\n"
                               "out[:] = acc", params="a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]")
    a, b = torch.randn(16, 32).half(), torch.randn(32, 16).half()
    with pytest.raises(UnsupportedSyntaxError, match=r"^'acc' is a matmul's result on one path and vector work on "
                                                     r"another") as info:
        k(a, b, torch.zeros(16, 16), config=RunConfig(platform="a2a3sim"))
    assert info.value.span.file == str(tmp_path / "k.py") and info.value.span.line == 7  # the loop
