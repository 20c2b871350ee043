"""The front end: kernel source to SSA IR, as the printed program shows it, and runs."""

import textwrap

import pytest
import torch

import pypto.language as pl
from pypto.lang import parse
from pypto.ir.verifier import verify
from pypto.runtime import RunConfig
from pypto.backend import A2A3

PLATFORMS = ["ref", "a2a3sim"]


@pytest.fixture(params=PLATFORMS)
def cfg(request):
    """Every kernel test runs on the interpreter and on the simulator."""
    return RunConfig(platform=request.param)


ROWS = 64
SHAPE = (16, 128)
WIDE = [16, 128]


def body_of(program, fn=None) -> str:
    """The printed body lines of one function, dedented, for before/after comparisons."""
    text = program.as_python()
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip().startswith(f"def {fn or program.functions[-1].name}("))
    body = []
    for line in lines[start + 1:]:
        if line.startswith("    @pl.function") or (line and not line.startswith("        ")):
            break
        body.append(line)
    return textwrap.dedent("\n".join(body)).strip() + "\n"


def roundtrips(program):
    verify(program, A2A3)
    assert parse(program.as_python()) == program
    return program


def test_rebinding_becomes_fresh_ssa_names(cfg):
    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(a, [0, 0], [ROWS, 128])
            t = pl.exp(t)
            t = pl.add(t, t)
            pl.store(t, [0, 0], out)
        return out

    a, out = torch.randn(ROWS, 128), torch.zeros(ROWS, 128)
    program = roundtrips(k.specialize(a, out))
    assert body_of(program) == textwrap.dedent("""\
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.tile.load(a, [0, 0], [64, 128], target_memory=pl.Mem.Vec)
            t_1 = pl.tile.exp(t)
            t_2 = pl.tile.add(t_1, t_1)
            pl.tile.store(t_2, [0, 0], out)
        return out
    """)
    k(a, out, config=cfg)
    assert torch.equal(out, torch.exp(a) + torch.exp(a))


def test_rebinding_in_a_loop_is_loop_carried(cfg):
    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            acc = pl.load(a, [0, 0], [16, 128])
            for i in pl.range(1, 4):
                t = pl.load(a, [i * 16, 0], [16, 128])
                acc = pl.add(acc, t)
            pl.store(acc, [0, 0], out)
        return out

    a, out = torch.randn(ROWS, 128), torch.zeros(16, 128)
    program = roundtrips(k.specialize(a, out))
    assert body_of(program) == textwrap.dedent("""\
        with pl.at(level=pl.Level.CORE_GROUP):
            acc = pl.tile.load(a, [0, 0], [16, 128], target_memory=pl.Mem.Vec)
            for i, (acc_1,) in pl.range(1, 4, init_values=(acc,)):
                t = pl.tile.load(a, [i * 16, 0], [16, 128], target_memory=pl.Mem.Vec)
                acc_2 = pl.tile.add(acc_1, t)
                acc_3 = pl.yield_(acc_2)
            pl.tile.store(acc_3, [0, 0], out)
        return out
    """)
    k(a, out, config=cfg)
    want = a[:16] + a[16:32] + a[32:48] + a[48:64]
    assert torch.equal(out, ((a[:16] + a[16:32]) + a[32:48]) + a[48:64]) and torch.allclose(out, want)


def test_a_name_rebound_in_a_loop_but_never_read_again_is_not_carried():
    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(a, [0, 0], [16, 128])
            pl.store(t, [0, 0], out)
            for i in pl.range(1, 4):
                t = pl.load(a, [i * 16, 0], [16, 128])
                pl.store(t, [i * 16, 0], out)
        return out

    program = roundtrips(k.specialize(torch.randn(ROWS, 128), torch.zeros(ROWS, 128)))
    assert "init_values" not in program.as_python()


def test_branch_results_from_rebinding_in_an_if(cfg):
    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor], n: pl.Scalar[pl.INT32]):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(a, [0, 0], [16, 128])
            if n > 2:
                t = pl.exp(t)
            else:
                t = pl.neg(t)
            pl.store(t, [0, 0], out)
        return out

    a = torch.randn(16, 128)
    for n, want in ((3, torch.exp(a)), (1, -a)):
        out = torch.zeros(16, 128)
        k(a, out, n, config=cfg)
        assert torch.equal(out, want)
    program = roundtrips(k.specialize(a, out, 3))
    text = body_of(program)
    assert "if n > 2:" in text and "t_3 = pl.yield_(t_1)" in text and "t_3 = pl.yield_(t_2)" in text


def test_static_if_on_module_constants_keeps_one_branch():
    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(a, [0, 0], [16, 128])
            if ROWS > 32:
                t = pl.exp(t)
            pl.store(t, [0, 0], out)
        return out

    program = roundtrips(k.specialize(torch.randn(16, 128), torch.zeros(16, 128)))
    assert "if " not in program.as_python() and "pl.tile.exp" in program.as_python()


def test_explicit_iter_args_and_yield_parse_as_written(cfg):
    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            acc0 = pl.load(a, [0, 0], [16, 128])
            for i, (acc,) in pl.range(1, 4, init_values=(acc0,)):
                t = pl.load(a, [i * 16, 0], [16, 128])
                nxt = pl.maximum(acc, t)
                res = pl.yield_(nxt)
            pl.store(res, [0, 0], out)
        return out

    a, out = torch.randn(ROWS, 128), torch.zeros(16, 128)
    roundtrips(k.specialize(a, out))
    k(a, out, config=cfg)
    assert torch.equal(out, a.reshape(4, 16, 128).amax(dim=0))


def test_incore_function_called_from_the_entry(cfg):
    @pl.jit.incore
    def body(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        t = pl.load(a, [0, 0], [16, 128])
        pl.store(pl.relu(t), [0, 0], out)
        return out

    @pl.jit
    def entry(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        out = body(a, out)
        return out

    a, out = torch.randn(16, 128), torch.zeros(16, 128)
    program = roundtrips(entry.specialize(a, out))
    assert [f.name for f in program.functions] == ["body", "entry"]
    assert "out_1 = self.body(a, out)" in program.as_python()
    assert "@pl.function(type=pl.FunctionType.InCore)" in program.as_python()
    entry(a, out, config=cfg)
    assert torch.equal(out, torch.relu(a))


def test_inline_function_is_spliced_into_the_caller(cfg):
    @pl.jit.inline
    def twice(x):
        return pl.add(x, x)

    @pl.jit
    def entry(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(a, [0, 0], [16, 128])
            pl.store(twice(t), [0, 0], out)
        return out

    a, out = torch.randn(16, 128), torch.zeros(16, 128)
    program = roundtrips(entry.specialize(a, out))
    assert len(program.functions) == 1
    entry(a, out, config=cfg)
    assert torch.equal(out, a + a)


def test_program_class_form_and_self_calls():
    @pl.program
    class Adder:
        @pl.function(type=pl.FunctionType.InCore)
        def add_kernel(self, a: pl.Tensor[[16, 128], pl.FP32], b: pl.Tensor[[16, 128], pl.FP32],
                       out: pl.Out[pl.Tensor[[16, 128], pl.FP32]]) -> pl.Tensor[[16, 128], pl.FP32]:
            ta: pl.Tile[[16, 128], pl.FP32, pl.Mem.Vec] = pl.tile.load(a, [0, 0], [16, 128])
            tb = pl.load(b, [0, 0], [16, 128])
            out_1 = pl.store(pl.add(ta, tb), [0, 0], out)
            return out_1

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, a: pl.Tensor[[16, 128], pl.FP32], b: pl.Tensor[[16, 128], pl.FP32],
                 out: pl.Out[pl.Tensor[[16, 128], pl.FP32]]) -> pl.Tensor[[16, 128], pl.FP32]:
            out_1 = self.add_kernel(a, b, out)
            return out_1

    roundtrips(Adder)
    from pypto.sim.reference import interpreter

    a, b, out = torch.randn(16, 128), torch.randn(16, 128), torch.zeros(16, 128)
    interpreter.run(Adder, "main", (a, b, out))
    assert torch.equal(out, a + b)


def test_tensor_level_ops_slices_and_window_assignment(cfg):
    @pl.jit
    def k(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            M, N = a.shape
            top = a[0:M // 2, :]
            out[0:M // 2, :] = pl.add(top, b[0:M // 2, 0:N])
            out[M // 2:M, :] = pl.mul(a[M // 2:M, :], 2.0)
        return out

    a, b, out = torch.randn(32, 64), torch.randn(32, 64), torch.zeros(32, 64)
    roundtrips(k.specialize(a, b, out))
    k(a, b, out, config=cfg)
    assert torch.equal(out[:16], a[:16] + b[:16]) and torch.equal(out[16:], a[16:] * 2.0)


def test_operators_on_tiles_are_the_unified_ops(cfg):
    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(a, [0, 0], [16, 128])
            pl.store(t * t + t / 2.0 - 1.0, [0, 0], out)
        return out

    a, out = torch.randn(16, 128), torch.zeros(16, 128)
    k(a, out, config=cfg)
    assert torch.equal(out, a * a + a / 2.0 - 1.0)


def test_closure_constants_and_full_annotations(cfg):
    tr = 8

    @pl.jit
    def k(a: pl.Tensor[[32, 16], pl.FP16], out: pl.Out[pl.Tensor[[32, 16], pl.FP16]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            for i in pl.pipeline(32 // tr, stage=3):
                t = pl.load(a, [i * tr, 0], [tr, 16])
                pl.store(pl.sqrt(pl.abs(t)), [i * tr, 0], out)
        return out

    a, out = torch.randn(32, 16).half(), torch.zeros(32, 16).half()
    program = roundtrips(k.specialize(a, out))
    assert "pl.pipeline(4, stage=3)" in program.as_python()
    k(a, out, config=cfg)
    assert torch.equal(out, torch.sqrt(torch.abs(a)))


def test_specializations_are_cached_per_argument_types():
    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(a, [0, 0], [4, 8])
            pl.store(t, [0, 0], out)
        return out

    p1 = k.specialize(torch.zeros(4, 8), torch.zeros(4, 8))
    assert k.specialize(torch.ones(4, 8), torch.ones(4, 8)) is p1
    p2 = k.specialize(torch.zeros(8, 8), torch.zeros(8, 8))
    assert p2 is not p1 and p2 != p1


def test_reductions_matmul_and_broadcasts_in_one_kernel(cfg):
    @pl.jit
    def k(x: pl.Tensor, w: pl.Tensor, out: pl.Out[pl.Tensor], rowmax: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            xm = pl.load(x, [0, 0], [16, 32], target_memory=pl.Mem.Mat)
            wm = pl.load(w, [0, 0], [32, 16], target_memory=pl.Mem.Mat)
            acc = pl.matmul(pl.move(xm, target_memory=pl.Mem.Left), pl.move(wm, target_memory=pl.Mem.Right))
            pl.store(acc, [0, 0], out)
            v = pl.load(out, [0, 0], [16, 16])
            m = pl.row_max(v)
            pl.store(pl.row_expand_expdif(v, m), [0, 0], out)
            pl.store(m, [0, 0], rowmax)
        return out

    x, w = torch.randn(16, 32).half(), torch.randn(32, 16).half()
    out, rowmax = torch.zeros(16, 16), torch.zeros(16, 1)
    roundtrips(k.specialize(x, w, out, rowmax))
    k(x, w, out, rowmax, config=cfg)
    ref = x.double() @ w.double()
    assert torch.allclose(rowmax.double(), ref.amax(dim=1, keepdim=True), atol=1e-4)
    assert torch.allclose(out.double(), torch.exp(ref - ref.amax(dim=1, keepdim=True)), atol=1e-4)


def test_dynamic_scalar_loop_bounds_and_parallel_loops(cfg):
    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor], n: pl.Scalar[pl.INT32]):
        with pl.at(level=pl.Level.CORE_GROUP):
            for i in pl.parallel(n):
                t = pl.load(a, [i * 8, 0], [8, 32])
                pl.store(pl.muls(t, 3.0), [i * 8, 0], out)
        return out

    a = torch.randn(32, 32)
    for n in (2, 4):
        out = torch.zeros(32, 32)
        k(a, out, n, config=cfg)
        assert torch.equal(out[: n * 8], a[: n * 8] * 3.0) and not out[n * 8:].any()
    program = roundtrips(k.specialize(a, out, 4))
    assert "for i in pl.parallel(n):" in program.as_python()
    assert "n: pl.Scalar[pl.INT32]" in program.as_python()


def test_runtime_out_of_range_is_an_execution_error(cfg):
    from pypto.errors import ExecutionError

    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor], n: pl.Scalar[pl.INT32]):
        with pl.at(level=pl.Level.CORE_GROUP):
            for i in pl.range(n):
                t = pl.load(a, [i * 8, 0], [8, 32])  # MARK-runtime-oob
                pl.store(t, [i * 8, 0], out)
        return out

    with pytest.raises(ExecutionError, match=r"load region \[32, 40\) on axis 0 is outside the tensor's \[0, 32\)") as info:
        k(torch.zeros(32, 32), torch.zeros(32, 32), 5, config=cfg)
    assert info.value.span.line > 0 and "MARK-runtime-oob" in str(info.value)


# ----------------------------------------------------------------------------- compile-time names


def test_unpacked_constants_rebound_in_a_loop_are_loop_carried(cfg):
    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            off, step = 0, 4
            for i in pl.range(4):
                t = pl.load(a, [off, 0], [4, 128])
                pl.store(t, [i * 4, 0], out)
                off = off + step
        return out

    a, out = torch.arange(16.0).repeat(128, 1).t().contiguous(), torch.zeros(16, 128)
    program = roundtrips(k.specialize(a, out))
    assert "init_values=(0,)" in body_of(program)
    k(a, out, config=cfg)
    assert torch.equal(out, a)


def test_shape_constants_rebound_in_a_loop_are_loop_carried(cfg):
    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            M, N = a.shape
            for i in pl.range(4):
                M = M - 4
                t = pl.load(a, [M, 0], [4, N])
                pl.store(t, [i * 4, 0], out)
        return out

    a, out = torch.randn(16, 128), torch.zeros(16, 128)
    roundtrips(k.specialize(a, out))
    k(a, out, config=cfg)
    assert torch.equal(out, a.flip(0).reshape(4, 4, 128).flip(1).reshape(16, 128))


def test_unpacked_constant_rebound_in_an_if_is_a_branch_result(cfg):
    @pl.jit
    def k(a: pl.Tensor, n: pl.Scalar[pl.INT64], out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            off, step = 0, 4
            if n > 0:
                off = off + step
            t = pl.load(a, [off, 0], [4, 128])
            pl.store(t, [0, 0], out)
        return out

    a = torch.arange(16.0).repeat(128, 1).t().contiguous()
    roundtrips(k.specialize(a, 1, torch.zeros(4, 128)))
    for n, first in ((1, 4.0), (0, 0.0)):
        out = torch.zeros(4, 128)
        k(a, n, out, config=cfg)
        assert out[0, 0].item() == first


def test_a_constant_both_branches_agree_on_stays_a_constant():
    @pl.jit
    def k(a: pl.Tensor, n: pl.Scalar[pl.INT64], out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            rows, cols = 8, 128
            if n > 0:
                rows, cols = 8, 128
            t = pl.load(a, [0, 0], [rows, cols])  # still a compile-time shape
            pl.store(t, [0, 0], out)
        return out

    program = roundtrips(k.specialize(torch.randn(8, 128), 1, torch.zeros(8, 128)))
    assert "pl.tile.load(a, [0, 0], [8, 128]" in body_of(program)


# ----------------------------------------------------------------------------- inline functions


@pl.jit.inline
def _exp_of(t: pl.Tile[[16, 128], pl.FP32]):
    u = pl.exp(t)
    return u


@pl.jit.inline
def _neg_of(t: pl.Tile):
    u = pl.neg(t)
    return u


def test_an_inline_function_returning_a_named_tile(cfg):
    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            u = _exp_of(pl.load(a, [0, 0], [16, 128]))
            v: pl.Tile[[16, 128], pl.FP32, pl.Mem.Vec] = _neg_of(u)
            pl.store(v, [0, 0], out)
        return out

    a, out = torch.randn(16, 128), torch.zeros(16, 128)
    program = roundtrips(k.specialize(a, out))
    assert body_of(program) == textwrap.dedent("""\
        with pl.at(level=pl.Level.CORE_GROUP):
            load = pl.tile.load(a, [0, 0], [16, 128], target_memory=pl.Mem.Vec)
            u = pl.tile.exp(load)
            u_1 = pl.tile.neg(u)
            pl.tile.store(u_1, [0, 0], out)
        return out
    """)
    k(a, out, config=cfg)
    assert torch.equal(out, -torch.exp(a))


def test_an_inline_argument_of_the_wrong_shape_is_reported_at_the_call():
    from pypto.errors import TypeCheckError

    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(a, [0, 0], [8, 128])
            pl.store(_exp_of(t), [0, 0], out)
        return out

    with pytest.raises(TypeCheckError, match=r"'_exp_of': argument 't' is Tile\[8x128 fp32 Vec\] but the parameter "
                                             r"is declared Tile\[16x128 fp32\]") as info:
        k.specialize(torch.zeros(8, 128), torch.zeros(8, 128))
    assert info.value.span.file == __file__ and "pl.store(_exp_of(t)" in str(info.value)


# ----------------------------------------------------------------------------- unified op keywords


def test_tile_matmul_takes_the_unified_keywords_at_their_defaults(cfg):
    @pl.jit
    def k(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            x = pl.move(pl.load(a, [0, 0], [32, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
            y = pl.move(pl.load(b, [0, 0], [64, 32], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
            c = pl.matmul(x, y, out_dtype=pl.FP32, a_trans=False, b_trans=False)
            c = pl.matmul_acc(c, x, y, a_trans=False, b_trans=False)
            pl.store(c, [0, 0], out)
        return out

    a, b = torch.randn(32, 64).half(), torch.randn(64, 32).half()
    out = torch.zeros(32, 32)
    program = roundtrips(k.specialize(a, b, out))
    assert "pl.tile.matmul(x, y)" in body_of(program)
    k(a, b, out, config=cfg)
    torch.testing.assert_close(out, 2 * (a.float() @ b.float()), atol=1e-3, rtol=1e-3)


def test_full_annotations_specialize_lower_and_compile_without_arguments(tmp_path):
    @pl.jit
    def k(a: pl.Tensor[[32, 128], pl.FP32], n: pl.Scalar[pl.INT64], out: pl.Out[pl.Tensor[[32, 128], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            for i in pl.range(n):
                pl.store(pl.exp(pl.load(a, [i * 16, 0], [16, 128])), [i * 16, 0], out)
        return out

    program = roundtrips(k.specialize())
    assert "def k(self, a: pl.Tensor[[32, 128], pl.FP32], n: pl.Scalar[pl.INT64]" in program.as_python()
    assert {f.name for f in k.lower().functions} == {"k", "k_incore_0"}
    compiled = k.compile(config=RunConfig(platform="ref", output_dir=tmp_path / "out"))
    assert compiled.output_dir == tmp_path / "out"
    a, out = torch.randn(32, 128), torch.zeros(32, 128)
    k(a, 2, out, config=RunConfig(platform="ref"))
    assert torch.equal(out, torch.exp(a))


def test_no_arguments_and_a_bare_annotation_is_a_specialization_error():
    from pypto.errors import SpecializationError

    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor[[8, 8], pl.FP32]]):
        return out

    with pytest.raises(SpecializationError, match="parameter 'a' does not spell out its type") as info:
        k.lower()
    assert info.value.span.file == __file__


# ----------------------------------------------------------------------------- compile-time values


def test_module_tuples_lists_min_and_local_constants_are_compile_time_values(cfg):
    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            R = 8
            t = pl.load(a, [0, 0], [R, SHAPE[1]])
            u = pl.load(a, [R, 0], [min(R, 32), SHAPE[-1]])
            w = pl.load(a, [0, 0], WIDE)
            pl.store(pl.add(t, u), [0, 0], out)
            pl.store(pl.row_sum(w), [0, 0], out)
        return out

    a, out = torch.randn(16, 128), torch.zeros(16, 128)
    program = roundtrips(k.specialize(a, out))
    assert "[8, 128]" in body_of(program)
    k(a, out, config=cfg)
    assert torch.equal(out[:8, 1:], (a[:8] + a[8:])[:, 1:]) and torch.equal(out[8:, 1:], torch.zeros(8, 127))
    torch.testing.assert_close(out[:, 0], a.sum(1))


def test_annotated_scalar_locals_take_the_declared_dtype(cfg):
    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            n: pl.Scalar[pl.INT32] = 3
            s: pl.Scalar[pl.FP32] = 2
            t = pl.load(a, [n, 0], [8, 128])
            pl.store(pl.muls(t, s), [0, 0], out)
        return out

    a, out = torch.randn(16, 128), torch.zeros(8, 128)
    program = roundtrips(k.specialize(a, out))
    assert "n: pl.Scalar[pl.INT32] = 3" in body_of(program) and "s = 2.0" in body_of(program)
    k(a, out, config=cfg)
    assert torch.equal(out, a[3:11] * 2)


def test_scalar_parameters_bare_and_widened_from_int(cfg):
    @pl.jit
    def scale(a: pl.Tensor, s: pl.Scalar[pl.FP32], out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            pl.store(pl.muls(pl.load(a, [0, 0], [16, 128]), s), [0, 0], out)
        return out

    @pl.jit
    def bare(a: pl.Tensor, s: pl.Scalar, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            pl.store(pl.muls(pl.load(a, [0, 0], [16, 128]), s), [0, 0], out)
        return out

    a = torch.randn(16, 128)
    for kernel, s in ((scale, 2), (bare, 2.5)):
        out = torch.zeros(16, 128)
        kernel(a, s, out, config=cfg)
        assert torch.equal(out, a * s)
    assert "s: pl.Scalar[pl.FP32]" in bare.specialize(a, 2.5, out).as_python()


# ----------------------------------------------------------------------------- several results


@pl.jit.incore
def _exp_and_neg(a: pl.Tensor, o1: pl.Out[pl.Tensor], o2: pl.Out[pl.Tensor]):
    t = pl.load(a, [0, 0], [16, 128])
    pl.store(pl.exp(t), [0, 0], o1)
    pl.store(pl.neg(t), [0, 0], o2)
    return o1, o2


def test_an_incore_kernel_returning_two_tensors(cfg):
    @pl.jit
    def k(a: pl.Tensor, o1: pl.Out[pl.Tensor], o2: pl.Out[pl.Tensor]):
        o1, o2 = _exp_and_neg(a, o1, o2)
        return o1, o2

    a, o1, o2 = torch.randn(16, 128), torch.zeros(16, 128), torch.zeros(16, 128)
    program = roundtrips(k.specialize(a, o1, o2))
    assert body_of(program, "k") == "self._exp_and_neg(a, o1, o2)  # task args: Input, OutputExisting, OutputExisting\nreturn o1, o2\n"
    assert "-> tuple[pl.Tensor[[16, 128], pl.FP32], pl.Tensor[[16, 128], pl.FP32]]" in program.as_python()
    k.lower(a, o1, o2, config=RunConfig(verification_level="ROUNDTRIP"))
    assert k(a, o1, o2, config=cfg) is None  # in place, as the reference's: the Outs are written
    assert torch.equal(o1, torch.exp(a)) and torch.equal(o2, -a)
    r1, r2 = k.compile(a, o1, o2, config=cfg)(a)  # return-style: the Outs allocated and returned
    assert torch.equal(r1, torch.exp(a)) and torch.equal(r2, -a)


def test_several_results_bound_to_one_name_or_the_wrong_count():
    from pypto.errors import TypeCheckError

    @pl.jit
    def one(a: pl.Tensor, o1: pl.Out[pl.Tensor], o2: pl.Out[pl.Tensor]):
        r = _exp_and_neg(a, o1, o2)
        return r

    @pl.jit
    def three(a: pl.Tensor, o1: pl.Out[pl.Tensor], o2: pl.Out[pl.Tensor]):
        x, _y, _z = _exp_and_neg(a, o1, o2)
        return x

    args = torch.randn(16, 128), torch.zeros(16, 128), torch.zeros(16, 128)
    with pytest.raises(TypeCheckError, match="'_exp_and_neg' returns 2 values; unpack them into as many names") as info:
        one.specialize(*args)
    assert "o1, o2 = _exp_and_neg(a, o1, o2)" in str(info.value)
    with pytest.raises(TypeCheckError, match="'_exp_and_neg' returns 2 values, unpacked into 3 names"):
        three.specialize(*args)


def test_a_program_function_returning_two_tensors():
    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.InCore)
        def two(self, a: pl.Tensor[[16, 128], pl.FP32], o1: pl.Out[pl.Tensor[[16, 128], pl.FP32]],
                o2: pl.Out[pl.Tensor[[16, 128], pl.FP32]]):
            t = pl.load(a, [0, 0], [16, 128])
            pl.store(pl.exp(t), [0, 0], o1)
            pl.store(pl.neg(t), [0, 0], o2)
            return o1, o2

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, a: pl.Tensor[[16, 128], pl.FP32], o1: pl.Out[pl.Tensor[[16, 128], pl.FP32]],
                 o2: pl.Out[pl.Tensor[[16, 128], pl.FP32]]):
            o2, o1 = self.two(a, o2, o1)
            return o1, o2

    from pypto.sim.reference import interpreter

    roundtrips(P)
    a, o1, o2 = torch.randn(16, 128), torch.zeros(16, 128), torch.zeros(16, 128)
    interpreter.run(P, "main", (a, o1, o2))
    assert torch.equal(o2, torch.exp(a)) and torch.equal(o1, -a)


@pl.jit
def _swapped(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor], k: pl.Scalar[pl.INT32]):
    with pl.at(level=pl.Level.CORE_GROUP):
        x, y = pl.load(a, [0, 0], [8, 32]), pl.load(b, [0, 0], [8, 32])
        x, y = y, x  # every value first, then the names: a swap
        i, j = k + 1, k * 2
        pl.store(pl.adds(pl.sub(x, y), i + j), [0, 0], out)
    return out


@pytest.mark.parametrize("platform", ["ref", "a2a3sim"])
def test_a_tuple_of_runtime_values_unpacks_as_python_does(platform):
    a, b, out = torch.randn(8, 32), torch.randn(8, 32), torch.zeros(8, 32)
    _swapped(a, b, out, 3, config=RunConfig(platform=platform))
    assert torch.equal(out, (b - a) + 10)
