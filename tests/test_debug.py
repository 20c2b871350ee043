"""``pypto.debug.torch_codegen``: a program as executable host code that computes what the
reference interpreter computes — the fuzz families and their lowered forms, bit for bit."""

import pytest
import torch
from hypothesis import HealthCheck, given, settings

import pypto.language as pl
from pypto.backend import A2A3
from pypto.debug import torch_codegen
from pypto.fuzz import strategies as ps
from pypto.passes.context import PassContext
from pypto.passes.pipeline import lower
from pypto.sim.reference import interpreter


def _run(program, entry, args):
    scope = {}
    exec(torch_codegen(program, check_shapes=True), scope)
    return scope[entry](*args)


@settings(suppress_health_check=[HealthCheck.too_slow])
@given(ps.tile_programs())
def test_the_host_code_computes_what_the_interpreter_computes(case):
    for program in (case.program, lower(case.program, PassContext(soc=A2A3)).program):
        want = [o.clone() for o in case.outputs]
        interpreter.run(program, case.entry, (*[x.clone() for x in case.inputs], *want))
        got = [o.clone() for o in case.outputs]
        _run(program, case.entry, (*[x.clone() for x in case.inputs], *got))
        assert all(ps.bits_equal(g, w) for g, w in zip(got, want)), case.recipe


@pl.jit
def spmd(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.spmd(4):
        i = pl.tile.get_block_idx()
        pl.store(pl.adds(pl.load(a, [i * 16, 0], [16, 64]), 1.0), [i * 16, 0], out)
    return out


def test_an_spmd_task_runs_each_block_with_its_index():
    a = torch.randn(64, 64)
    program = spmd.lower(a, torch.zeros(64, 64))
    out = torch.zeros(64, 64)
    _run(program, program.functions[-1].name, (a, out))
    assert torch.equal(out, a + 1.0)


def test_what_it_refuses():
    with pytest.raises(TypeError, match="torch_codegen takes a Program or a Function, got str"):
        torch_codegen("def f(): pass")
    a = torch.randn(64, 64)
    program = spmd.lower(a, torch.zeros(64, 64))
    src = torch_codegen(program.functions[0], check_shapes=True)  # one function on its own
    scope = {}
    exec(src, scope)
    with pytest.raises(AssertionError):
        scope[program.functions[0].name](torch.zeros(8, 8), torch.zeros(64, 64))


@pl.program
class NamedMin:
    @pl.function(type=pl.FunctionType.InCore)
    def min(self, x: pl.Tensor[[16, 16], pl.FP32], m: pl.Scalar[pl.INDEX], out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]):
        out = pl.store(pl.adds(pl.load(x, [0, 0], [16, 16]), pl.min(m, 3)), [0, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[16, 16], pl.FP32], m: pl.Scalar[pl.INDEX], out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]):
        out = self.min(x, m, out)
        return out


def test_generated_code_keeps_pl_min_when_a_function_is_named_min():
    from pypto.debug import torch_codegen

    scope = {}
    exec(torch_codegen(NamedMin), scope)
    out = torch.zeros(16, 16)
    scope["main"](torch.zeros(16, 16), 7, out)
    assert torch.equal(out, torch.full((16, 16), 3.0))


@pl.program
class Overhang:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[16, 16], pl.FP32], out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]):
        out = pl.store(pl.load(x, [0, 0], [16, 16]), [0, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[16, 16], pl.FP32], start: pl.Scalar[pl.INDEX], out: pl.Out[pl.Tensor[[24, 16], pl.FP32]]):
        o = self.k(x, pl.slice(out, [16, 16], [start, 0]))
        return out


def test_generated_code_reports_an_access_outside_a_tensor_as_a_pypto_error():
    from pypto.errors import ExecutionError
    from pypto.debug import torch_codegen

    scope = {}
    exec(torch_codegen(Overhang), scope)
    with pytest.raises(ExecutionError, match="outside"):
        scope["main"](torch.randn(16, 16), 12, torch.zeros(24, 16))
