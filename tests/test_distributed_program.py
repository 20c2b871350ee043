"""The class form of a program of many ranks: a ``@pl.program`` whose host orchestrator is
``@pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)``, compiled with
``ir.compile(..., distributed_config=...)``, as the reference's distributed system tests write it."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import pypto.language as pl
import pypto.language.distributed as pld
from pypto import ir
from pypto.errors import ConfigError, ParseError, PyptoError, TypeCheckError
from pypto.ir.distributed_compiled_program import DistributedConfig


def _handshake(n: int):
    @pl.program
    class Handshake:
        @pl.function(type=pl.FunctionType.InCore)
        def step(self, out: pl.Out[pl.Tensor[[1, 1], pl.INT32]],
                 signal: pl.InOut[pld.DistributedTensor[[1, 1], pl.INT32]], peer: pl.Scalar[pl.INT32],
                 tag: pl.Scalar[pl.INT32]) -> pl.Tensor[[1, 1], pl.INT32]:
            pld.system.notify(target=signal, peer=peer, offsets=[0, 0], value=tag, op=pld.NotifyOp.AtomicAdd)
            pld.system.wait(signal=signal, offsets=[0, 0], expected=1, cmp=pld.WaitCmp.Ge)
            val: pl.Scalar[pl.INT32] = pl.read(signal, [0, 0])
            pl.write(out, [0, 0], val)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def orch(self, out: pl.Out[pl.Tensor[[1, 1], pl.INT32]],
                 signal: pl.InOut[pld.DistributedTensor[[1, 1], pl.INT32]], peer: pl.Scalar[pl.INT32],
                 tag: pl.Scalar[pl.INT32]) -> pl.Tensor[[1, 1], pl.INT32]:
            return self.step(out, signal, peer, tag)

        @pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)
        def host(self, outputs: pl.Out[pl.Tensor[[n, 1, 1], pl.INT32]]) -> pl.Tensor[[n, 1, 1], pl.INT32]:
            buf = pld.alloc_window_buffer(pl.INT32.get_byte())
            for r in pl.range(pld.world_size()):
                signal = pld.window(buf, [1, 1], dtype=pl.INT32)
                self.orch(outputs[r], signal, (r + 1) % pld.world_size(), r + 1, device=r)
            return outputs

    return Handshake


@pytest.mark.parametrize("n", [2, 3])
def test_a_class_form_host_orchestrator_dispatches_its_programs_orchestration_to_each_rank(n):
    compiled = ir.compile(_handshake(n), platform="ref", distributed_config=DistributedConfig(device_ids=list(range(n))))
    out = torch.zeros(n, 1, 1, dtype=torch.int32)
    compiled(out)
    assert out.flatten().tolist() == [(r - 1) % n + 1 for r in range(n)]
    with compiled.prepare(persistent=True) as worker:
        for _ in range(2):
            out.zero_()
            worker(out)
            assert out.flatten().tolist() == [(r - 1) % n + 1 for r in range(n)]


ROWS, COLS = 8, 16


@pl.program
class HelloRank:
    @pl.function(type=pl.FunctionType.InCore)
    def add_rank(self, x: pl.Tensor[[ROWS, COLS], pl.FP32], y: pl.Out[pl.Tensor[[ROWS, COLS], pl.FP32]],
                 rank: pl.Scalar[pl.FP32]) -> pl.Tensor[[ROWS, COLS], pl.FP32]:
        tile = pl.load(x, [0, 0], [ROWS, COLS])
        y = pl.store(pl.add(tile, rank), [0, 0], y)
        return y

    @pl.function(type=pl.FunctionType.Orchestration)
    def per_rank(self, x: pl.Tensor[[ROWS, COLS], pl.FP32], y: pl.Out[pl.Tensor[[ROWS, COLS], pl.FP32]],
                 rank: pl.Scalar[pl.FP32]) -> pl.Tensor[[ROWS, COLS], pl.FP32]:
        return self.add_rank(x, y, rank)

    @pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)
    def host(self, x: pl.Tensor[[4, ROWS, COLS], pl.FP32], y: pl.Out[pl.Tensor[[4, ROWS, COLS], pl.FP32]]):
        for r in pl.range(pld.world_size()):
            self.per_rank(x[r], y[r], r, device=r)


@settings(max_examples=6, deadline=None)
@given(n=st.integers(1, 4), seed=st.integers(0, 2**31 - 1), platform=st.sampled_from(["ref", "a2a3sim"]))
def test_the_class_form_runs_each_ranks_program_on_its_platform_with_the_same_bits(n, seed, platform):
    x = torch.randn(4, ROWS, COLS, generator=torch.Generator().manual_seed(seed))
    y = torch.zeros_like(x)
    compiled = ir.compile(HelloRank, platform=platform, distributed_config=DistributedConfig(device_ids=list(range(n))))
    compiled(x, y)
    want = torch.zeros_like(x)
    want[:n] = x[:n] + torch.arange(n, dtype=torch.float32).view(n, 1, 1)
    assert torch.equal(y, want)


def test_a_host_program_without_devices_and_a_one_chip_program_with_them_are_refused_at_the_call():
    with pytest.raises(ConfigError, match="no distributed_config names them") as info:
        ir.compile(HelloRank, platform="ref")
    assert info.value.span is not None and info.value.span.file == __file__
    with pytest.raises(ConfigError, match="runs on one chip"):
        ir.compile(HelloRank.device_program("per_rank"), distributed_config=DistributedConfig(device_ids=[0, 1]))


def test_a_host_dispatch_of_a_function_the_program_lacks_names_its_line():
    @pl.program
    class Wrong:
        @pl.function(type=pl.FunctionType.Orchestration)
        def orch(self, x: pl.Tensor[[ROWS, COLS], pl.FP32]) -> pl.Tensor[[ROWS, COLS], pl.FP32]:
            return x

        @pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)
        def host(self, x: pl.Tensor[[2, ROWS, COLS], pl.FP32]):
            for r in pl.range(pld.world_size()):
                self.orchestrate(x[r], device=r)

    compiled = ir.compile(Wrong, platform="ref", distributed_config=DistributedConfig(device_ids=[0, 1]))
    with pytest.raises(TypeCheckError, match="no device function 'orchestrate'") as info:
        compiled(torch.zeros(2, ROWS, COLS))
    assert info.value.span.file == __file__ and "orch" in info.value.hint


def test_a_program_of_two_host_orchestrators_is_refused_at_the_second():
    with pytest.raises(ParseError, match="2 host orchestrators"):
        @pl.program
        class Two:
            @pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)
            def a(self, x: pl.Tensor[[2, 4], pl.FP32]):
                pass

            @pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)
            def b(self, x: pl.Tensor[[2, 4], pl.FP32]):
                pass


def test_distributed_config_takes_the_references_runtime_fields_and_refuses_one_aicpu_thread():
    config = DistributedConfig(device_ids=[0, 1], runtime="tensormap_and_ringbuffer", aicpu_thread_num=4)
    assert config.aicpu_thread_num == 4 and config.nranks == 2
    with pytest.raises(ConfigError, match="at least 2"):
        DistributedConfig(device_ids=[0, 1], aicpu_thread_num=1)


NRD = pl.dynamic("NRD")


@pl.program
class SizedByExtents:
    @pl.function(type=pl.FunctionType.InCore)
    def copy_in(self, x: pl.Tensor[[1, 64], pl.FP32], y: pl.Out[pl.Tensor[[1, 64], pl.FP32]],
                win: pl.InOut[pld.DistributedTensor[[1, 64], pl.FP32]]) -> pl.Tensor[[1, 64], pl.FP32]:
        win = pl.store(pl.load(x, [0, 0], [1, 64]), [0, 0], win)
        return pl.store(pl.load(win, [0, 0], [1, 64]), [0, 0], y)

    @pl.function(type=pl.FunctionType.Orchestration)
    def orch(self, x: pl.Tensor[[1, 64], pl.FP32], y: pl.Out[pl.Tensor[[1, 64], pl.FP32]],
             win: pl.InOut[pld.DistributedTensor[[1, 64], pl.FP32]]) -> pl.Tensor[[1, 64], pl.FP32]:
        return self.copy_in(x, y, win)

    @pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)
    def host(self, x: pl.Tensor[[NRD, 1, 64], pl.FP32], y: pl.Out[pl.Tensor[[NRD, 1, 64], pl.FP32]]):
        buf = pld.alloc_window_buffer(NRD * 64 * pl.FP32.get_byte())  # room for NRD rows, one used
        for r in pl.range(pld.world_size()):
            self.orch(x[r], y[r], pld.window(buf, [1, 64], dtype=pl.FP32), device=r)


@pytest.mark.parametrize("n", [2, 3])
def test_a_host_bodys_dynamic_extent_is_the_extent_of_the_tensor_passed_for_it(n):
    x = torch.randn(n, 1, 64)
    y = torch.zeros_like(x)
    compiled = ir.compile(SizedByExtents, platform="ref", distributed_config=DistributedConfig(device_ids=list(range(n))))
    compiled(x, y)
    assert torch.equal(y, x)
    report = compiled.run(x, y)
    assert report.ranks and all(r.device == k for k, r in enumerate(report.ranks))


@pl.program
class Stacked:
    @pl.function(type=pl.FunctionType.InCore)
    def add(self, a: pl.Tensor[[8, 16], pl.FP32], b: pl.Tensor[[8, 16], pl.FP32],
            f: pl.Out[pl.Tensor[[8, 16], pl.FP32]]) -> pl.Tensor[[8, 16], pl.FP32]:
        return pl.store(pl.add(pl.load(a, [0, 0], [8, 16]), pl.load(b, [0, 0], [8, 16])), [0, 0], f)

    @pl.function(type=pl.FunctionType.Orchestration)
    def orch(self, a: pl.Tensor[[8, 16], pl.FP32], b: pl.Tensor[[8, 16], pl.FP32],
             f: pl.Out[pl.Tensor[[8, 16], pl.FP32]]) -> pl.Tensor[[8, 16], pl.FP32]:
        return self.add(a, b, f)

    @pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)
    def host(self, a: pl.Tensor[[2, 8, 16], pl.FP32], b: pl.Tensor[[2, 8, 16], pl.FP32],
             f: pl.Out[pl.Tensor[[2, 8, 16], pl.FP32]]):
        self.orch(a[0], b[0], f[0], device=1)
        self.orch(a[1], b[1], f[1], device=0)


@pytest.mark.parametrize("platform", ["ref", "a2a3sim"])
def test_a_stacked_tensor_is_uploaded_once_and_each_shard_dispatched_only_where_it_is_resident(platform):
    from pypto.runtime import StackedDeviceTensor
    from pypto.runtime.distributed_runner import DistributedWorker  # (the reference's module path)

    compiled = ir.compile(Stacked, platform=platform, distributed_config=DistributedConfig(device_ids=[0, 1]))
    a, f = torch.full((2, 8, 16), 2.0), torch.zeros(2, 8, 16)
    b = torch.stack([torch.full((8, 16), 10.0), torch.full((8, 16), 11.0)])
    with compiled.prepare() as rt:
        assert isinstance(rt, DistributedWorker)
        weight = rt.alloc_stacked_tensor(b, worker_ids=[1, 0])
        assert isinstance(weight, StackedDeviceTensor) and weight.shape == (2, 8, 16)
        b.zero_()  # the upload is the worker's copy
        rt(a, weight, f)
        assert torch.equal(f, torch.stack([torch.full((8, 16), 12.0), torch.full((8, 16), 13.0)]))
        back = torch.zeros(2, 8, 16)
        rt.copy_stacked_from(weight, back)
        assert back[1].eq(11.0).all()
        misplaced = rt.alloc_stacked_tensor(back)  # shard i on worker i, and the host sends shard 0 to device 1
        with pytest.raises(PyptoError, match="resident on worker 0 and this dispatch runs on device 1") as info:
            rt(a, misplaced, f)
        assert info.value.span.file == __file__ and "worker_ids" in info.value.hint
