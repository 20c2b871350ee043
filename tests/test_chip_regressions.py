"""Defects an adversarial review of the chip found, each guarded by the class of program
that showed it: the rules through called orchestration functions and runtime-chosen
views, tensors created and dropped, TaskIds used as numbers, pl.submit of a non-kernel,
element reads in expressions, the PTO2_RING_* variables."""

import re

import pytest
import torch

import pypto.language as pl
from pypto.errors import ConfigError, PyptoError
from helpers import load_kernel
from pypto.runtime import RunConfig
from pypto.runtime.config import ring_sizes

R, C = 64, 128
CG = pl.Level.CORE_GROUP


def both(kernel, *args):
    """Run on ref and a2a3sim (each on copies); the a2a3sim report; the bits must agree."""
    ref = [a.clone() if isinstance(a, torch.Tensor) else a for a in args]
    kernel(*ref, config=RunConfig(platform="ref"))
    sim = [a.clone() if isinstance(a, torch.Tensor) else a for a in args]
    report = kernel.compile(*sim).run(*sim)
    for got, want in zip(sim, ref):
        if isinstance(got, torch.Tensor):
            assert torch.equal(got, want)
    return report


@pl.jit
def _helper(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=CG):
        pl.store(pl.mul(pl.load(a, [0, 0], [R, C]), 2.0), [0, 0], out)
    return out


def test_a_called_orchestration_function_follows_the_rules_of_its_call_site():
    @pl.jit
    def looped(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        for i in pl.range(3):  # R-seq reaches the helper's task
            out = _helper(a, out)
        return out

    @pl.jit
    def after(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=CG):
            pl.store(pl.exp(pl.load(a, [0, 0], [R, C])), [0, 0], out)
        out = _helper(a, out)  # R-prior: out was written before the call
        return out

    report = both(looped, torch.randn(R, C), torch.zeros(R, C))
    assert sorted(t.deps for t in report.tasks) == [(), ("r1t0",), ("r1t1",)]
    report = both(after, torch.randn(R, C), torch.zeros(R, C))
    assert sorted(t.deps for t in report.tasks) == [(), ("r0t0",)]


def test_a_write_through_a_view_an_if_chose_counts_for_its_buffer():
    @pl.jit
    def k(a: pl.Tensor, s: pl.Scalar[pl.INDEX], out: pl.Out[pl.Tensor]):
        if s > 0:
            v = out[0:R, :]
        else:
            v = out[R:2 * R, :]
        with pl.at(level=CG):
            pl.store(pl.exp(pl.load(a, [0, 0], [R, C])), [0, 0], v)
        with pl.at(level=CG):  # R-prior: an earlier task wrote out, through v
            pl.store(pl.neg(pl.load(a, [0, 0], [R, C])), [0, 0], out)
        return out

    for s in (1, 0):
        report = both(k, torch.randn(2 * R, C), s, torch.zeros(2 * R, C))
        assert sorted(t.deps for t in report.tasks) == [(), ("r0t0",)]


def test_a_dropped_manual_dep_tensor_leaves_no_untracked_address_behind():
    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        for i in pl.range(3):
            m = pl.create_tensor([1024, C], pl.FP32, manual_dep=True)  # rebound, never used
        s = pl.create_tensor([1024, C], pl.FP32)
        with pl.at(level=CG):
            pl.store(pl.exp(pl.load(a, [0, 0], [R, C])), [0, 0], s)
        with pl.at(level=CG):
            pl.store(pl.neg(pl.load(s, [0, 0], [R, C])), [0, 0], out)
        return out

    report = both(k, torch.randn(R, C), torch.zeros(R, C))
    assert {t.task_id: t.deps for t in report.tasks} == {"r0t0": (), "r0t1": ("r0t0",)}


@pytest.mark.parametrize("use", ["if t < 1000:\n        pass", "u = -t", "u = t + 1",
                                 "with pl.at(level=CG):\n        pl.store(pl.muls(pl.load(a, [0, 0], [R, C]), t), "
                                 "[0, 0], out)"])
def test_a_task_id_is_no_number_anywhere(tmp_path, use):
    src = tmp_path / "k.py"
    src.write_text(f'''
import pypto.language as pl
R, C, CG = 64, 128, pl.Level.CORE_GROUP


@pl.jit
def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=CG) as t:
        pl.store(pl.load(a, [0, 0], [R, C]), [0, 0], out)
    {use}
    return out
''')
    kernel = load_kernel(src)
    with pytest.raises(PyptoError, match="TaskId") as err:
        kernel(torch.randn(R, C), torch.zeros(R, C))
    assert err.value.span.file == str(src) and err.value.hint


def test_pl_submit_takes_a_kernel():
    from pypto.lang import parse

    text = '''
import pypto.language as pl


@pl.program
class P:
    @pl.function(type=pl.FunctionType.Orchestration)
    def helper(self, a: pl.Tensor[[64, 128], pl.FP32]):
        pass

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[64, 128], pl.FP32]):
        t = pl.submit(self.helper, a)
'''
    with pytest.raises(PyptoError, match="pl.submit\\(...\\) submits a kernel, and 'self.helper' is not one"):
        parse(text)


def test_an_element_read_is_a_scalar_in_an_expression():
    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        y = a[0, 1] * 2.0 + pl.tensor.read(a, [0, 2])
        with pl.at(level=CG):
            pl.store(pl.muls(pl.load(a, [0, 0], [R, C]), y), [0, 0], out)
        return out

    a = torch.randn(R, C)
    out = torch.zeros(R, C)
    both(k, a, out)
    k(a, out)
    y = torch.tensor(a[0, 1].item() * 2.0 + a[0, 2].item(), dtype=torch.float32)
    assert torch.equal(out, a * y)


def test_scope_builtins_outside_a_with_say_so():
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        s = pl.manual_scope()
        with pl.at(level=CG):
            pl.store(pl.load(a, [0, 0], [R, C]), [0, 0], out)
        return out

    with pytest.raises(PyptoError, match="pl.manual_scope is only valid as a with statement") as err:
        pl.jit(k)(torch.randn(R, C), torch.zeros(R, C))
    assert err.value.hint == "with pl.manual_scope():"


def test_an_orchestration_array_stays_out_of_kernels():
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        ids = pl.array.create(2, pl.TASK_ID)
        with pl.at(level=CG):
            t = ids[0]
            pl.store(pl.load(a, [0, 0], [R, C]), [0, 0], out)
        return out

    with pytest.raises(PyptoError, match="pl.array.get is the orchestration's"):
        pl.jit(k)(torch.randn(R, C), torch.zeros(R, C))


def test_ring_variables_are_checked_as_the_fields_are():
    config = RunConfig()
    assert ring_sizes(config, {"PTO2_RING_TASK_WINDOW": "8"})[0] == (8, 8, 8, 8)
    assert ring_sizes(RunConfig(ring_task_window=16), {"PTO2_RING_TASK_WINDOW": "8"})[0] == (16,) * 4
    for var, text, message in (("PTO2_RING_TASK_WINDOW", "lots", "is not an integer"),
                               ("PTO2_RING_TASK_WINDOW", "3", "ring_task_window must be a power of 2 >= 4"),
                               ("PTO2_RING_HEAP", "1e6", "is not an integer"),
                               ("PTO2_RING_DEP_POOL", "1", "ring_dep_pool must be in [4, INT32_MAX]")):
        with pytest.raises(ConfigError, match=re.escape(message)) as err:
            ring_sizes(config, {var: text})
        assert var in str(err.value)


def test_a_tensor_too_large_for_the_host_is_an_error_not_a_crash():
    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        huge = pl.create_tensor([2 ** 20, 2 ** 20], pl.FP32)
        with pl.at(level=CG):
            pl.store(pl.load(a, [0, 0], [R, C]), [0, 0], out)
        return out

    from pypto.chip.rings import RingExhausted

    with pytest.raises(RingExhausted, match="heap"):
        k(torch.randn(R, C), torch.zeros(R, C))
    with pytest.raises(PyptoError, match="cannot allocate|no memory"):
        k(torch.randn(R, C), torch.zeros(R, C), config=RunConfig(platform="ref"))


@pytest.mark.parametrize("body, message", [
    ("with pl.at(level=CG, depz=[]):", "pl.at got an unexpected keyword 'depz'"),
    ("with pl.at(level=CG, allow_early_resolve='yes'):", "allow_early_resolve must be a bool"),
    ("with pl.manual_scope() as s:", "a runtime scope binds no name"),
    ("with pl.scope(mode=3):", "pl.scope's mode must be ScopeMode"),
    ("for i in pl.unroll(2, chunk=1):", "pl.unroll got an unexpected keyword 'chunk'"),
])
def test_task_and_scope_mistakes_carry_a_hint(tmp_path, body, message):
    src = tmp_path / "k.py"
    src.write_text(f'''
import pypto.language as pl
CG = pl.Level.CORE_GROUP


@pl.jit(auto_scope=False)
def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    {body}
        with pl.at(level=CG):
            pl.store(pl.load(a, [0, 0], [64, 128]), [0, 0], out)
    return out
''')
    kernel = load_kernel(src)
    with pytest.raises(PyptoError) as err:
        kernel(torch.randn(R, C), torch.zeros(R, C))
    assert message in err.value.message and err.value.hint and err.value.span.line == 8


@pytest.mark.parametrize("fields", [dict(ring_task_window=6), dict(ring_heap=[1024, 1024]),
                                    dict(enable_chip_swimlane=5)])
def test_ring_and_swimlane_field_errors_carry_a_hint(fields):
    with pytest.raises(ConfigError) as err:
        RunConfig(**fields)
    assert err.value.hint


@pl.jit
def _long_writer_then_reads(a: pl.Tensor, flags: pl.Out[pl.Tensor], out: pl.Out[pl.Tensor]):
    m = pl.create_tensor([R, C], pl.FP32, manual_dep=True)
    with pl.at(level=CG):  # long: still running when the first read returns
        t = pl.load(a, [0, 0], [R, C])
        for _ in pl.range(8):
            t = pl.exp(t)
        pl.store(t, [0, 0], m)
    with pl.at(level=CG):
        pl.store(pl.mul(pl.load(a, [0, 0], [R, C]), 2.0), [0, 0], flags)
    v = flags[0, 0]
    w = m[0, 0]  # nothing orders this read after the long writer
    with pl.at(level=CG):
        pl.store(pl.add(pl.load(a, [0, 0], [R, C]), w + v), [0, 0], out)
    return flags, out


def test_a_task_still_running_at_a_second_read_is_checked_against_it():
    """The first read puts in place the data of every task that started by then, the long
    writer's too; a second read while that writer still runs is a race all the same."""
    a = torch.randn(R, C)
    flags, out = torch.zeros(R, C), torch.zeros(R, C)
    with pytest.raises(PyptoError, match=r"reads element \[0, 0\] .* while task r0t0 .* writes it \(cycles"):
        _long_writer_then_reads(a, flags, out)
