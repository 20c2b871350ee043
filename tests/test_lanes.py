"""A split mixed scope's vector work on both vector cores of the cluster: UP_DOWN halves
every vector value's rows, LEFT_RIGHT its columns, each lane computing its half at once
with the other (``pl.split_aiv`` regions the outliner makes), with the bits of ``ref``;
what halving cannot express is refused where it is written."""

import attrs
import pytest
import torch
from hypothesis import example, given, settings

import pypto.language as pl
from pypto.errors import PyptoError
from pypto.fuzz.lanes import Mixed, split_scopes
from pypto.fuzz.properties import PROPERTIES, Example
from pypto.lang import parse
from pypto.runtime import RunConfig

M, K, N = 128, 256, 128
CG = pl.Level.CORE_GROUP
UP_DOWN, LEFT_RIGHT, NONE = pl.SplitMode.UP_DOWN, pl.SplitMode.LEFT_RIGHT, pl.SplitMode.NONE


def operands(m=M, k=K, n=N, seed=3):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(m, k, generator=g).half(), torch.randn(k, n, generator=g).half(), torch.randn(m, n, generator=g)


def both(kernel, *args):
    """Run on ref and on a2a3sim: the a2a3sim report and its arguments, which match ref's bit for bit."""
    got = []
    for platform in ("ref", "a2a3sim"):
        copies = [x.clone() if isinstance(x, torch.Tensor) else x for x in args]
        report = kernel.compile(*copies, config=RunConfig(platform=platform)).run(*copies)
        got.append(copies)
    for x, y in zip(*got):
        if isinstance(x, torch.Tensor):
            assert torch.equal(x, y)
    return report, got[1]


def bias_add(mode):
    @pl.jit
    def mixed(a: pl.Tensor, b: pl.Tensor, bias: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=CG, optimizations=[pl.split(mode)], name_hint="mixed"):
            acc = pl.matmul(a, b, out_dtype=pl.FP32)
            out[:] = pl.add(acc, bias)
        return out

    return mixed


def vector_cycles(report) -> dict:
    return {core: pipes.get("VECTOR", 0) for core, pipes in report.pipe_cycles.items() if core.startswith("aiv")}


@pytest.mark.parametrize("mode", [UP_DOWN, LEFT_RIGHT])
def test_each_vector_core_computes_its_half_at_the_bits_of_ref(mode):
    a, b, bias = operands()
    report, (_, _, _, out) = both(bias_add(mode), a, b, bias, torch.zeros(M, N))
    torch.testing.assert_close(out, a.float() @ b.float() + bias, rtol=1e-2, atol=1e-2)
    (task,) = report.tasks
    assert task.core_type == "mix"
    lanes = vector_cycles(report)
    assert sorted(lanes) == ["aiv0", "aiv1"] and lanes["aiv0"] == lanes["aiv1"] > 0  # an equal half each
    unsplit, _ = both(bias_add(NONE), a, b, bias, torch.zeros(M, N))
    (alone,) = vector_cycles(unsplit).values()
    assert lanes["aiv0"] * 2 <= alone  # the one core's work, shared (in as few pieces or fewer)
    assert report.cycles < unsplit.cycles


@pytest.mark.parametrize("mode", [UP_DOWN, LEFT_RIGHT])
def test_the_lanes_read_the_crossing_and_store_in_halves(mode):
    compiled = bias_add(mode).compile(*operands(), torch.zeros(M, N))
    text = compiled.lowered.as_python()
    assert "for aiv_id in pl.split_aiv(2, mode=pl.SplitMode.NONE):" in text
    half = "[aiv_id * 64, 0]" if mode is UP_DOWN else "[0, aiv_id * 64]"
    assert f"pl.tile.store(add_1, {half}, out)" in text
    assert parse(text) == compiled.lowered  # the region reads back


def test_broadcast_operands_are_halved_only_along_the_split_axis():
    @pl.jit
    def epilogue(a: pl.Tensor, b: pl.Tensor, row: pl.Tensor, col: pl.Tensor, o1: pl.Out[pl.Tensor],
                 o2: pl.Out[pl.Tensor], mode: pl.Scalar[pl.INDEX]):
        with pl.at(level=CG, optimizations=[pl.split(pl.SplitMode.UP_DOWN)]):
            acc = pl.matmul(a, b, out_dtype=pl.FP32)
            o1[:] = pl.row_expand_mul(acc, row)  # row: [M, 1], halved by rows
            o2[:] = pl.col_expand_add(acc, col)  # col: [1, N], the same on both lanes
        return o1, o2

    @pl.jit
    def epilogue_lr(a: pl.Tensor, b: pl.Tensor, row: pl.Tensor, col: pl.Tensor, o1: pl.Out[pl.Tensor],
                    o2: pl.Out[pl.Tensor], mode: pl.Scalar[pl.INDEX]):
        with pl.at(level=CG, optimizations=[pl.split(pl.SplitMode.LEFT_RIGHT)]):
            acc = pl.matmul(a, b, out_dtype=pl.FP32)
            o1[:] = pl.row_expand_mul(acc, row)
            o2[:] = pl.col_expand_add(acc, col)
        return o1, o2

    a, b, _ = operands()
    g = torch.Generator().manual_seed(9)
    row, col = torch.randn(M, 1, generator=g), torch.randn(1, N, generator=g)
    want = a.float() @ b.float()
    for kernel in (epilogue, epilogue_lr):
        _, (_, _, _, _, o1, o2, _) = both(kernel, a, b, row, col, torch.zeros(M, N), torch.zeros(M, N), 0)
        torch.testing.assert_close(o1, want * row, rtol=1e-2, atol=1e-2)
        torch.testing.assert_close(o2, want + col, rtol=1e-2, atol=1e-2)


def test_a_row_reduction_splits_by_rows_and_is_refused_by_columns():
    def reduce(mode):
        @pl.jit
        def row_sums(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
            with pl.at(level=CG, optimizations=[pl.split(mode)]):
                acc = pl.matmul(a, b, out_dtype=pl.FP32)
                out[:] = pl.row_sum(acc)
            return out

        return row_sums

    a, b, _ = operands()
    _, (_, _, out) = both(reduce(UP_DOWN), a, b, torch.zeros(M, 1))
    torch.testing.assert_close(out, (a.float() @ b.float()).sum(1, keepdim=True), rtol=1e-2, atol=1e-1)
    with pytest.raises(PyptoError, match="row_sum reduces 'acc_gm_1' across the split axis") as info:
        reduce(LEFT_RIGHT)(a, b, torch.zeros(M, 1))
    assert info.value.span is not None and "UP_DOWN" in info.value.hint


def test_a_transpose_of_a_lanes_half_is_refused_where_it_is_written():
    @pl.jit
    def turned(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=CG, optimizations=[pl.split(pl.SplitMode.UP_DOWN)]):
            acc = pl.matmul(a, b, out_dtype=pl.FP32)
            out[:] = pl.transpose(pl.exp(acc), 0, 1)
        return out

    a, b, _ = operands()
    with pytest.raises(PyptoError, match="a transpose moves the split axis") as info:
        turned(a, b, torch.zeros(N, M))
    assert info.value.span is not None and "NONE" in info.value.hint


def test_a_cube_loop_feeding_the_vector_cores_each_trip_splits_inside_the_loop():
    @pl.jit
    def banded(a: pl.Tensor, b: pl.Tensor, bias: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=CG, optimizations=[pl.split(pl.SplitMode.UP_DOWN)]):
            for i in pl.range(4):
                acc = pl.matmul(a[i * 32:(i + 1) * 32, :], b, out_dtype=pl.FP32)
                out[i * 32:(i + 1) * 32, :] = pl.add(acc, bias[i * 32:(i + 1) * 32, :])
        return out

    a, b, bias = operands()
    report, (_, _, _, out) = both(banded, a, b, bias, torch.zeros(M, N))
    torch.testing.assert_close(out, a.float() @ b.float() + bias, rtol=1e-2, atol=1e-2)
    lanes = vector_cycles(report)
    assert sorted(lanes) == ["aiv0", "aiv1"] and lanes["aiv0"] == lanes["aiv1"] > 0


def test_the_blocks_of_a_split_spmd_scope_each_halve_their_own_window():
    m, k, n = 64, 128, 64

    @pl.jit
    def spmd_split(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
        for i in pl.spmd(4, optimizations=[pl.split(pl.SplitMode.LEFT_RIGHT)]):
            acc = pl.matmul(a[i * m:(i + 1) * m, :], b, out_dtype=pl.FP32)
            out[i * m:(i + 1) * m, :] = pl.exp(pl.mul(acc, 0.01))
        return out

    a, b, _ = operands(4 * m, k, n, seed=5)
    report, (_, _, out) = both(spmd_split, a, b, torch.zeros(4 * m, n))
    torch.testing.assert_close(out, torch.exp((a.float() @ b.float()) * 0.01), rtol=1e-2, atol=1e-2)
    assert len(report.tasks) == 4 and {t.core_type for t in report.tasks} == {"mix"}


def test_a_store_both_lanes_would_make_to_the_same_bytes_is_refused():
    @pl.jit
    def column_sums(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=CG, optimizations=[pl.split(pl.SplitMode.LEFT_RIGHT)]):
            acc = pl.matmul(a, b, out_dtype=pl.FP32)
            s = pl.row_sum(pl.col_sum(acc))  # refused before: it reduces across the split axis
            out[:] = s
        return out

    @pl.jit
    def uniform_store(a: pl.Tensor, b: pl.Tensor, x: pl.Tensor, out: pl.Out[pl.Tensor], o2: pl.Out[pl.Tensor]):
        with pl.at(level=CG, optimizations=[pl.split(pl.SplitMode.UP_DOWN)]):
            acc = pl.matmul(a, b, out_dtype=pl.FP32)
            out[:] = pl.exp(acc)
            o2[:] = pl.exp(x)  # a [1, N] row: the same on both lanes
        return out, o2

    a, b, _ = operands()
    with pytest.raises(PyptoError, match="both vector cores would store"):
        uniform_store(a, b, torch.zeros(1, N), torch.zeros(M, N), torch.zeros(1, N))
    with pytest.raises(PyptoError, match="across the split axis"):
        column_sums(a, b, torch.zeros(1, 1))


def explicit_region(mode):
    @pl.jit
    def explicit(a: pl.Tensor, b: pl.Tensor, bias: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=CG):
            acc = pl.matmul(a, b, out_dtype=pl.FP32)
            for aiv_id in pl.split_aiv(2, mode=mode):  # written whole: the region halves it
                out[:] = pl.add(pl.aiv_shard(acc), bias)  # the crossing, named
        return out

    return explicit


@pytest.mark.parametrize("mode", [UP_DOWN, LEFT_RIGHT])
def test_a_hand_written_data_parallel_region_is_halved_like_the_split(mode):
    a, b, bias = operands()
    report, (_, _, _, out) = both(explicit_region(mode), a, b, bias, torch.zeros(M, N))
    torch.testing.assert_close(out, a.float() @ b.float() + bias, rtol=1e-2, atol=1e-2)
    lanes = vector_cycles(report)
    assert sorted(lanes) == ["aiv0", "aiv1"] and lanes["aiv0"] == lanes["aiv1"] > 0


def test_a_task_parallel_region_runs_its_body_on_both_lanes_by_lane_index():
    @pl.jit
    def strided(x: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=CG):
            for aiv_id in pl.split_aiv(2, mode=pl.SplitMode.NONE):
                for r in pl.range(aiv_id, 8, 2):  # lane 0 the even bands, lane 1 the odd
                    out[r * 16:(r + 1) * 16, :] = pl.exp(x[r * 16:(r + 1) * 16, :])
        return out

    x = torch.randn(128, 128, generator=torch.Generator().manual_seed(2))
    report, (_, out) = both(strided, x, torch.zeros(128, 128))
    assert torch.equal(out, torch.exp(x))
    (task,) = report.tasks
    assert task.core_type == "mix" and sorted(vector_cycles(report)) == ["aiv0", "aiv1"]


def test_split_aiv_mistakes_are_located(tmp_path):
    import textwrap

    from pypto.lang import parse as parse_text

    def program(body):
        head = ("import pypto.language as pl\n\n\n@pl.program\nclass P:\n"
                "    @pl.function(type=pl.FunctionType.Orchestration)\n"
                "    def main(self, x: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):\n"
                "        with pl.at(level=pl.Level.CORE_GROUP):\n")
        return head + textwrap.indent(body, " " * 12) + "        return out\n"

    cases = [("for k in pl.split_aiv(4, mode=pl.SplitMode.NONE):\n    out[:] = pl.exp(x)\n", "n must be 2, got 4"),
             ("for k in pl.split_aiv(2):\n    out[:] = pl.exp(x)\n", "pl.split_aiv takes the lane count and mode="),
             ("for k in pl.split_aiv(2, mode=pl.SplitMode.NONE):\n    y = pl.exp(x)\nout[:] = y\n",
              "'y' is bound inside a pl.split_aiv region and read after it")]
    for body, message in cases:
        with pytest.raises(PyptoError, match=message) as info:
            parse_text(program(body))
        assert info.value.span is not None and info.value.hint


def test_a_crossing_read_by_a_reduction_and_by_its_broadcast_is_sliced_once():
    @pl.jit
    def centered(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=CG, optimizations=[pl.split(pl.SplitMode.UP_DOWN)]):
            acc = pl.matmul(a, b, out_dtype=pl.FP32)
            out[:] = pl.row_expand_sub(acc, pl.row_max(acc))
        return out

    a, b, _ = operands(k=64)
    _, (_, _, out) = both(centered, a, b, torch.zeros(M, N))
    mm = a.float() @ b.float()
    torch.testing.assert_close(out, mm - mm.amax(1, keepdim=True), rtol=1e-2, atol=1e-2)


def test_two_rows_split_by_rows_give_each_lane_one():
    @pl.jit
    def two_rows(x: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=CG, optimizations=[pl.split(pl.SplitMode.UP_DOWN)]):
            out[:] = pl.exp(x)
        return out

    @pl.jit
    def two_rows_summed(x: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=CG, optimizations=[pl.split(pl.SplitMode.UP_DOWN)]):
            out[:] = pl.col_sum(x)  # the two lanes' rows summed across the split axis: refused
        return out

    x = torch.randn(2, 64, generator=torch.Generator().manual_seed(4))
    _, (_, out) = both(two_rows, x, torch.zeros(2, 64))
    assert torch.equal(out, torch.exp(x))
    with pytest.raises(PyptoError, match="reduces 'x_half' across the split axis|reduces 'x' across the split axis"):
        two_rows_summed(x, torch.zeros(1, 64))


def test_vector_work_under_a_branch_stages_the_crossing_once():
    @pl.jit
    def branch(a: pl.Tensor, b: pl.Tensor, bias: pl.Tensor, f: pl.Scalar[pl.INDEX], out: pl.Out[pl.Tensor]):
        with pl.at(level=CG, optimizations=[pl.split(pl.SplitMode.NONE)]):
            acc = pl.matmul(a, b, out_dtype=pl.FP32)
            if f > 0:
                out[:] = pl.add(acc, bias)
            else:
                out[:] = pl.mul(acc, 3.0)
        return out

    a, b, bias = operands(k=64)
    for f, want in ((1, a.float() @ b.float() + bias), (0, (a.float() @ b.float()) * 3.0)):
        report, (*_, out) = both(branch, a, b, bias, f, torch.zeros(M, N))
        torch.testing.assert_close(out, want, rtol=1e-2, atol=1e-2)
    text = branch.compile(a, b, bias, 1, torch.zeros(M, N)).lowered.as_python()
    assert text.count("pl.system.reserve_buffer(") == 1  # one ring, not one per branch


@pytest.mark.parametrize("body, message", [
    ("with pl.at(level=CG):\n    for aiv_id in pl.split_aiv(2, mode=pl.SplitMode.UP_DOWN):\n"
     "        out[:] = pl.exp(pl.matmul(a, b, out_dtype=pl.FP32))\n",
     "cube op 'tensor.matmul' inside a pl.split_aiv region"),
    ("with pl.at(level=CG):\n    acc = pl.matmul(a, b, out_dtype=pl.FP32)\n"
     "    for aiv_id in pl.split_aiv(2, mode=pl.SplitMode.UP_DOWN):\n        out[:] = pl.exp(acc)\n",
     "'acc' is produced on the CUBE lane and read on the VECTOR lane inside a pl.split_aiv region"),
    ("with pl.at(level=CG):\n    y = pl.exp(x)\n"
     "    for aiv_id in pl.split_aiv(2, mode=pl.SplitMode.NONE):\n        out[:] = pl.mul(y, 2.0)\n",
     "vector op 'tensor.exp' sits outside every pl.split_aiv region"),
    ("with pl.at(level=CG):\n    acc = pl.matmul(a, b, out_dtype=pl.FP32)\n    out[:] = pl.exp(pl.aiv_shard(acc))\n",
     "pl.aiv_shard names a crossing into a pl.split_aiv region, and this is outside every region"),
    ("with pl.at(level=CG, optimizations=[pl.split(pl.SplitMode.UP_DOWN)]):\n"
     "    for aiv_id in pl.split_aiv(2, mode=pl.SplitMode.UP_DOWN):\n        out[:] = pl.exp(x)\n",
     "scope combines a function-level pl.split\\(pl.SplitMode.UP_DOWN\\)"),
    ("with pl.at(level=CG, optimizations=[pl.split(pl.SplitMode.UP_DOWN)]):\n"
     "    lane = pl.tile.get_subblock_idx()\n    out[:] = pl.mul(x, lane)\n",
     "get_subblock_idx\\(\\) outside a pl.split_aiv region"),
    ("with pl.at(level=CG):\n    y = pl.exp(x)\n    for aiv_id in pl.split_aiv(2, mode=pl.SplitMode.UP_DOWN):\n"
     "        y = pl.mul(y, 2.0)\n    out[:] = y\n",
     "'y' is bound inside a pl.split_aiv region and read after it"),
    ("with pl.at(level=CG):\n    for aiv_id in pl.split_aiv(2, mode=pl.SplitMode.UP_DOWN):\n"
     "        for k in pl.split_aiv(2, mode=pl.SplitMode.NONE):\n            out[:] = pl.exp(x)\n",
     "nested 'for ... in pl.split_aiv\\(...\\)' is not allowed"),
])
def test_what_a_lane_region_cannot_mean_is_refused_where_it_is_written(tmp_path, body, message):
    import textwrap

    source = tmp_path / "regions.py"
    source.write_text("import pypto.language as pl\n\nCG = pl.Level.CORE_GROUP\n\n\n@pl.jit\n"
                      "def k(a: pl.Tensor, b: pl.Tensor, x: pl.Tensor, out: pl.Out[pl.Tensor]):\n"
                      + textwrap.indent(body, "    ") + "    return out\n")
    from helpers import load_kernel

    kernel = load_kernel(source, "k")
    a, b, _ = operands(k=64)
    with pytest.raises(PyptoError, match=message) as info:
        kernel.compile(a, b, torch.randn(M, N), torch.zeros(M, N))
    assert info.value.span is not None and info.value.hint


@pytest.mark.parametrize("platform", ["a2a3sim", "a5sim"])
@settings(deadline=None, max_examples=60)
@given(case=split_scopes())
# a column sum A5's larger Vec folds in wider blocks than a2a3's: ref must interpret the chip's program
@example(case=("LEFT_RIGHT", Mixed(128, 128, 0, 1, ("exp", "exp", "exp", "neg", "col_sum"), 0)))
def test_property_a_split_gives_the_bits_of_one_vector_core(platform, case):
    mode, program = case
    PROPERTIES["mixed"].check(Example(source=program.source(mode), detail=(mode, *attrs.astuple(program)),
                                      platform=platform))


def test_a_named_crossing_reads_back_from_the_dumps():
    a, b, bias = operands()
    compiled = explicit_region(UP_DOWN).compile(a, b, bias, torch.zeros(M, N))
    text = compiled.program.as_python()
    assert "pl.tensor.aiv_shard(acc)" in text and parse(text) == compiled.program
    assert parse(compiled.lowered.as_python()) == compiled.lowered


@pytest.mark.parametrize("mode", ["UP_DOWN", "LEFT_RIGHT"])
@pytest.mark.parametrize("platform", ["ref", "a2a3sim"])
def test_split_vector_work_a_matmul_reads_reaches_the_cube_whole(mode, platform):
    """The reference's V2C programs: each lane computes its half of both matmul operands and
    stores it into the GM copy the cube then loads whole (the stores one run, before the cube)."""
    text = f'''
import pypto.language as pl


@pl.program
class V2C:
    @pl.function(type=pl.FunctionType.Opaque)
    def main(self, a: pl.Tensor[[32, 32], pl.FP32], b: pl.Tensor[[32, 32], pl.FP32],
             output: pl.Out[pl.Tensor[[32, 32], pl.FP32]]) -> pl.Tensor[[32, 32], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(pl.SplitMode.{mode})]):
            a_plus_b = pl.add(a, b)
            sub = pl.sub(a, b)
            out = pl.matmul(a_plus_b, sub)
            output = pl.assemble(output, out, [0, 0])
        return output
'''
    g = torch.Generator().manual_seed(3)
    a, b, out = torch.randn(32, 32, generator=g), torch.randn(32, 32, generator=g), torch.zeros(32, 32)
    compiled = _compiled(text, ["a", "b", "output"], platform)
    assert [k.lanes for k in compiled.kernels.values()] == [2]
    compiled.run(a, b, out)
    assert torch.allclose(out, (a + b) @ (a - b), atol=1e-4)


GATHER = '''
import pypto.language as pl


@pl.program
class G:
    @pl.function(type=pl.FunctionType.Opaque)
    def main(self, a: pl.Tensor[[32, 32], pl.FP32], b: pl.Tensor[[32, 32], pl.FP32],
             output: pl.Out[pl.Tensor[[32, 32], pl.FP32]]) -> pl.Tensor[[32, 32], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP):
            for aiv_id in pl.split_aiv(2, mode=pl.SplitMode.MODE):
                s = pl.add(a, b)
                d = pl.sub(a, b)
                s = pl.aic_gather(s)
                d = pl.aic_gather(d)
            out = pl.matmul(s, d)
            output = pl.assemble(output, out, [0, 0])
        return output
'''


def _gathered(text: str, platform: str):
    g = torch.Generator().manual_seed(4)
    a, b, out = torch.randn(32, 32, generator=g), torch.randn(32, 32, generator=g), torch.zeros(32, 32)
    _compiled(text, ["a", "b", "output"], platform).run(a, b, out)
    return a, b, out


@pytest.mark.parametrize("mode", ["UP_DOWN", "LEFT_RIGHT", "NONE"])
@pytest.mark.parametrize("platform", ["ref", "a2a3sim"])
def test_aic_gather_hands_the_lanes_halves_to_the_cube_rejoined(mode, platform):
    a, b, out = _gathered(GATHER.replace("MODE", mode), platform)  # NONE: both lanes hold it whole, lane 0's goes
    assert torch.allclose(out, (a + b) @ (a - b), atol=1e-4)


def test_a_gather_program_prints_and_parses_back():
    program = parse(GATHER.replace("MODE", "UP_DOWN"))
    assert "pl.tensor.aic_gather(s)" in program.as_python()
    assert parse(program.as_python()) == program


@pytest.mark.parametrize("change, match", [
    (("                d = pl.aic_gather(d)\n", ""),
     "'d' is bound inside a pl.split_aiv region and read after it"),
    (("            out = pl.matmul(s, d)\n", "            e = pl.aic_gather(d)\n            out = pl.matmul(s, e)\n"),
     "pl.aic_gather names a crossing out of a pl.split_aiv region, and this is outside every region"),
    (("                d = pl.aic_gather(d)\n", "                for i in pl.range(1):\n                    d = pl.aic_gather(d)\n"),
     "this one sits inside a loop or branch of the region"),
])
def test_aic_gather_misplaced_is_refused(change, match):
    text = GATHER.replace("MODE", "UP_DOWN").replace(*change)
    with pytest.raises(PyptoError, match=match) as err:
        _gathered(text, "a2a3sim")
    if "bound inside" in match:
        assert "pl.aic_gather(d)" in err.value.hint


@pytest.mark.parametrize("mode", ["UP_DOWN", "LEFT_RIGHT"])
@pytest.mark.parametrize("platform", ["ref", "a2a3sim"])
def test_a_split_loop_assembling_into_a_carried_tensor_hands_the_tensor_on(mode, platform):
    """The reference's C2V / bidirectional programs: nested loops, each trip's matmul result
    added to a slice of c (halved, per lane) and assembled back; the loop carries c itself."""
    text = f'''
import pypto.language as pl


@pl.program
class C2V:
    @pl.function(type=pl.FunctionType.Opaque)
    def main(self, a: pl.Tensor[[32, 64], pl.FP32], b: pl.Tensor[[64, 256], pl.FP32],
             c: pl.InOut[pl.Tensor[[32, 256], pl.FP32]]) -> pl.Tensor[[32, 256], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(pl.SplitMode.{mode})]):
            for cb in pl.range(0, 2):
                for ci in pl.range(0, 2):
                    n0 = (cb * 2 + ci) * 64
                    c_prev = pl.slice(c, [32, 64], [0, n0])
                    a_add = pl.add(a, 1.0)
                    c_next = pl.add(c_prev, pl.matmul(a_add, pl.slice(b, [64, 64], [0, n0])))
                    c = pl.assemble(c, c_next, [0, n0])
        return c
'''
    g = torch.Generator().manual_seed(5)
    a, b, c = torch.randn(32, 64, generator=g), torch.randn(64, 256, generator=g), torch.randn(32, 256, generator=g)
    want = c + (a + 1) @ b
    compiled = _compiled(text, ["a", "b", "c"], platform)
    assert [k.lanes for k in compiled.kernels.values()] == [2]
    compiled.run(a, b, c)
    assert torch.allclose(c, want, atol=1e-4)


def _compiled(text: str, names, platform: str):
    """A program text's entry compiled for ``platform``, without writing its dumps."""
    from pypto.runtime.compiled import compile_program

    return compile_program(parse(text), names, RunConfig(platform=platform), write=False)
