"""What a host orchestrator does itself: the host-level collectives (a builtin per-device
program dispatched to every rank), chip orchestrations called without ``device=``, the values
host calls give back, and SubWorkers run on the host between the ranks' dispatches."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import pypto.language as pl
import pypto.language.distributed as pld
from pypto import ir
from pypto.errors import TypeCheckError
from pypto.ir.distributed_compiled_program import DistributedConfig

W = 40  # (not a multiple of a block: the builtins take any row)
_REDUCE = {pld.ReduceOp.Sum: torch.add, pld.ReduceOp.Prod: torch.mul, pld.ReduceOp.Max: torch.maximum,
           pld.ReduceOp.Min: torch.minimum}


def _host_collectives(n: int, root: int):
    """Every host-level collective but allreduce (below) once, each rank publishing its rows
    first and copying the windows out after."""

    @pl.program
    class Collectives:
        @pl.function(type=pl.FunctionType.InCore)
        def publish_step(self, x: pl.Tensor[[n, W], pl.FP32], row: pl.InOut[pld.DistributedTensor[[1, W], pl.FP32]],
                         grid: pl.InOut[pld.DistributedTensor[[n, W], pl.FP32]],
                         me: pl.Scalar[pl.INT32]) -> pld.DistributedTensor[[1, W], pl.FP32]:
            grid = pl.store(pl.load(x, [0, 0], [n, W]), [0, 0], grid)
            return pl.store(pl.load(x, [me, 0], [1, W]), [0, 0], row)

        @pl.function(type=pl.FunctionType.Orchestration)
        def publish(self, x: pl.Tensor[[n, W], pl.FP32], row: pl.InOut[pld.DistributedTensor[[1, W], pl.FP32]],
                    grid: pl.InOut[pld.DistributedTensor[[n, W], pl.FP32]],
                    me: pl.Scalar[pl.INT32]) -> pld.DistributedTensor[[1, W], pl.FP32]:
            return self.publish_step(x, row, grid, me)

        @pl.function(type=pl.FunctionType.InCore)
        def copy_step(self, src: pld.DistributedTensor[[n, W], pl.FP32], out: pl.Out[pl.Tensor[[n, W], pl.FP32]],
                      at: pl.Scalar[pl.INT32]) -> pl.Tensor[[n, W], pl.FP32]:
            return pl.store(pl.load(src, [0, 0], [n, W]), [0, 0], out)

        @pl.function(type=pl.FunctionType.Orchestration)
        def copy(self, src: pld.DistributedTensor[[n, W], pl.FP32], out: pl.Out[pl.Tensor[[n, W], pl.FP32]],
                 at: pl.Scalar[pl.INT32]) -> pl.Tensor[[n, W], pl.FP32]:
            return self.copy_step(src, out, at)

        @pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)
        def host(self, x: pl.Tensor[[n, n, W], pl.FP32], outs: pl.Out[pl.Tensor[[5, n, n, W], pl.FP32]]):
            row_buf = pld.alloc_window_buffer(W * pl.FP32.get_byte())
            grid_buf = pld.alloc_window_buffer(pld.world_size() * W * pl.FP32.get_byte())
            out_buf = pld.alloc_window_buffer(pld.world_size() * W * pl.FP32.get_byte())
            sig_buf = pld.alloc_window_buffer(2 * pld.world_size() * pld.world_size() * pl.INT32.get_byte())
            row = pld.window(row_buf, [1, W], dtype=pl.FP32)
            grid = pld.window(grid_buf, [pld.world_size(), W], dtype=pl.FP32)
            out = pld.window(out_buf, [pld.world_size(), W], dtype=pl.FP32)
            signal = pld.window(sig_buf, [pld.world_size(), 1], dtype=pl.INT32)
            for r in pl.range(pld.world_size()):
                self.publish(x[r], row, grid, r, device=r)
            for r in pl.range(pld.world_size()):
                self.copy(grid, outs[0, r], 0, device=r)
            grid = pld.tensor.broadcast(grid, signal, root=root)
            for r in pl.range(pld.world_size()):
                self.copy(grid, outs[1, r], 1, device=r)
                self.publish(x[r], row, grid, r, device=r)
            out = pld.tensor.allgather(row, out, signal)
            for r in pl.range(pld.world_size()):
                self.copy(out, outs[2, r], 2, device=r)
            grid = pld.tensor.reduce_scatter(grid, signal, op=pld.ReduceOp.Sum)
            for r in pl.range(pld.world_size()):
                self.copy(grid, outs[3, r], 3, device=r)
                self.publish(x[r], row, grid, r, device=r)
            out = pld.tensor.all_to_all(grid, out, signal)
            pld.tensor.barrier(signal)
            for r in pl.range(pld.world_size()):
                self.copy(out, outs[4, r], 4, device=r)
            return outs

    return Collectives


@settings(max_examples=3, deadline=None)
@given(n=st.integers(2, 3), root=st.integers(0, 2), seed=st.integers(0, 2**31 - 1))
def test_each_host_collective_gives_every_rank_its_golden_with_the_same_bits_on_both_platforms(n, root, seed):
    root %= n
    x = torch.randn(n, n, W, generator=torch.Generator().manual_seed(seed))  # x[r]: rank r's rows
    program = _host_collectives(n, root)
    got = {}
    for platform in ("ref", "a2a3sim"):
        outs = torch.zeros(5, n, n, W)
        ir.compile(program, platform=platform, distributed_config=DistributedConfig(device_ids=list(range(n))))(x, outs)
        got[platform] = outs
    assert torch.equal(got["ref"], got["a2a3sim"])
    outs = got["ref"]
    for r in range(n):
        assert torch.equal(outs[0, r], x[r])  # (the allreduce wrote the row window only)
        assert torch.equal(outs[1, r], x[root])
        assert torch.equal(outs[2, r], torch.stack([x[p, p] for p in range(n)]))
        scattered = x[r, r].clone()
        for p in range(n):
            if p != r:
                scattered = scattered + x[p, r]
        assert torch.equal(outs[3, r, r], scattered)
        assert torch.equal(outs[4, r], torch.stack([x[p, r] for p in range(n)]))


def _allreduce_only(n: int, op):
    @pl.program
    class AllReduce:
        @pl.function(type=pl.FunctionType.InCore)
        def put_step(self, x: pl.Tensor[[1, W], pl.FP32], data: pl.InOut[pld.DistributedTensor[[1, W], pl.FP32]]
                     ) -> pld.DistributedTensor[[1, W], pl.FP32]:
            return pl.store(pl.load(x, [0, 0], [1, W]), [0, 0], data)

        @pl.function(type=pl.FunctionType.Orchestration)
        def put(self, x: pl.Tensor[[1, W], pl.FP32], data: pl.InOut[pld.DistributedTensor[[1, W], pl.FP32]]
                ) -> pld.DistributedTensor[[1, W], pl.FP32]:
            return self.put_step(x, data)

        @pl.function(type=pl.FunctionType.InCore)
        def get_step(self, data: pld.DistributedTensor[[1, W], pl.FP32], y: pl.Out[pl.Tensor[[1, W], pl.FP32]]
                     ) -> pl.Tensor[[1, W], pl.FP32]:
            return pl.store(pl.load(data, [0, 0], [1, W]), [0, 0], y)

        @pl.function(type=pl.FunctionType.Orchestration)
        def get(self, data: pld.DistributedTensor[[1, W], pl.FP32], y: pl.Out[pl.Tensor[[1, W], pl.FP32]]
                ) -> pl.Tensor[[1, W], pl.FP32]:
            return self.get_step(data, y)

        @pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)
        def host(self, x: pl.Tensor[[n, 1, W], pl.FP32], y: pl.Out[pl.Tensor[[n, 1, W], pl.FP32]]):
            buf = pld.alloc_window_buffer(W * pl.FP32.get_byte())
            data = pld.window(buf, [1, W], dtype=pl.FP32)
            for r in pl.range(pld.world_size()):
                self.put(x[r], data, device=r)
            data = pld.tensor.allreduce(data, op=op, core_num=2)
            for r in pl.range(pld.world_size()):
                self.get(data, y[r], device=r)
            return y

    return AllReduce


@settings(max_examples=5, deadline=None)
@given(n=st.integers(2, 5), op=st.sampled_from(list(pld.ReduceOp)), seed=st.integers(0, 2**31 - 1))
def test_a_host_allreduce_combines_every_ranks_row_in_its_own_order_with_its_signal_made(n, op, seed, tmp_path_factory):
    x = torch.randn(n, 1, W, generator=torch.Generator().manual_seed(seed))
    y = torch.zeros(n, 1, W)
    out = tmp_path_factory.mktemp("build")
    compiled = ir.compile(_allreduce_only(n, op), platform="ref", output_dir=str(out),
                          distributed_config=DistributedConfig(device_ids=list(range(n))))
    assert (compiled.output_dir / "next_levels" / f"builtin.tensor.allreduce__{op.name.lower()}__fp32").is_dir()
    compiled(x, y)
    for r in range(n):
        want = x[r, 0].clone()  # own row, then each peer's in rank order
        for p in range(n):
            if p != r:
                want = _REDUCE[op](want, x[p, 0])
        assert torch.equal(y[r, 0], want)


@pytest.mark.parametrize("call, match", [
    ("pld.tensor.allreduce(t, sig)", "target in a host orchestrator is a window"),
    ("pld.tensor.allreduce(data, sig, op=pld.ReduceOp.Max, mode='ring')",
     "ring path is op=pld.ReduceOp.Sum over an FP32 target"),
    ("pld.tensor.allreduce(data, sig, core_num=2)", "a signal lane per core"),
    ("pld.tensor.broadcast(data, sig)", "needs its root"),
])
def test_a_host_collectives_refusals_are_located_at_its_call(call, match):
    compiled = ir.compile(_PROGRAMS[call], platform="ref", distributed_config=DistributedConfig(device_ids=[0, 1]))
    with pytest.raises(TypeCheckError, match=match) as info:
        compiled(torch.zeros(1, W))
    assert info.value.span.file == __file__ and info.value.hint


# -- one program per refused call (the host body is walked, not run: no branches in it)


@pl.program
class _Plain:
    @pl.function(type=pl.FunctionType.Orchestration)
    def orch(self, t: pl.Tensor[[1, W], pl.FP32]) -> pl.Tensor[[1, W], pl.FP32]:
        return t

    @pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)
    def host(self, t: pl.Tensor[[1, W], pl.FP32]):
        sbuf = pld.alloc_window_buffer(2 * pl.INT32.get_byte())
        sig = pld.window(sbuf, [2, 1], dtype=pl.INT32)
        pld.tensor.allreduce(t, sig)


@pl.program
class _RingMax:
    @pl.function(type=pl.FunctionType.Orchestration)
    def orch(self, t: pl.Tensor[[1, W], pl.FP32]) -> pl.Tensor[[1, W], pl.FP32]:
        return t

    @pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)
    def host(self, t: pl.Tensor[[1, W], pl.FP32]):
        buf = pld.alloc_window_buffer(W * pl.FP32.get_byte())
        sbuf = pld.alloc_window_buffer(6 * pl.INT32.get_byte())
        data = pld.window(buf, [1, W], dtype=pl.FP32)
        sig = pld.window(sbuf, [3, 2], dtype=pl.INT32)
        pld.tensor.allreduce(data, sig, op=pld.ReduceOp.Max, mode="ring")


@pl.program
class _Cores:
    @pl.function(type=pl.FunctionType.Orchestration)
    def orch(self, t: pl.Tensor[[1, W], pl.FP32]) -> pl.Tensor[[1, W], pl.FP32]:
        return t

    @pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)
    def host(self, t: pl.Tensor[[1, W], pl.FP32]):
        buf = pld.alloc_window_buffer(W * pl.FP32.get_byte())
        sbuf = pld.alloc_window_buffer(2 * pl.INT32.get_byte())
        data = pld.window(buf, [1, W], dtype=pl.FP32)
        sig = pld.window(sbuf, [2, 1], dtype=pl.INT32)
        pld.tensor.allreduce(data, sig, core_num=2)


@pl.program
class _NoRoot:
    @pl.function(type=pl.FunctionType.Orchestration)
    def orch(self, t: pl.Tensor[[1, W], pl.FP32]) -> pl.Tensor[[1, W], pl.FP32]:
        return t

    @pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)
    def host(self, t: pl.Tensor[[1, W], pl.FP32]):
        buf = pld.alloc_window_buffer(W * pl.FP32.get_byte())
        sbuf = pld.alloc_window_buffer(2 * pl.INT32.get_byte())
        data = pld.window(buf, [1, W], dtype=pl.FP32)
        sig = pld.window(sbuf, [2, 1], dtype=pl.INT32)
        pld.tensor.broadcast(data, sig)


_PROGRAMS = {
    "pld.tensor.allreduce(t, sig)": _Plain,
    "pld.tensor.allreduce(data, sig, op=pld.ReduceOp.Max, mode='ring')": _RingMax,
    "pld.tensor.allreduce(data, sig, core_num=2)": _Cores,
    "pld.tensor.broadcast(data, sig)": _NoRoot,
}


# ----------------------------------------------------------------------------- host calls and sub-workers

SEEN: list = []


@pl.program
class SumDiff:
    @pl.function(type=pl.FunctionType.InCore)
    def step(self, a: pl.Tensor[[16, 16], pl.FP32], b: pl.Tensor[[16, 16], pl.FP32],
             s: pl.Out[pl.Tensor[[16, 16], pl.FP32]], d: pl.Out[pl.Tensor[[16, 16], pl.FP32]]):
        ta = pl.load(a, [0, 0], [16, 16])
        tb = pl.load(b, [0, 0], [16, 16])
        s = pl.store(pl.add(ta, tb), [0, 0], s)
        d = pl.store(pl.sub(ta, tb), [0, 0], d)
        return s, d

    @pl.function(type=pl.FunctionType.Orchestration)
    def chip(self, a: pl.Tensor[[16, 16], pl.FP32], b: pl.Tensor[[16, 16], pl.FP32],
             s: pl.Out[pl.Tensor[[16, 16], pl.FP32]], d: pl.Out[pl.Tensor[[16, 16], pl.FP32]]):
        s, d = self.step(a, b, s, d)
        return s, d

    @pl.function(level=pl.Level.HOST, role=pl.Role.SubWorker)
    def record(s: pl.Tensor[[16, 16], pl.FP32], d: pl.Tensor[[16, 16], pl.FP32]):
        SEEN.append((s.clone(), d.clone()))

    @pl.function(level=pl.Level.HOST, role=pl.Role.SubWorker)
    def inspect(s: pl.Tensor[[16, 16], pl.FP32]):
        ...

    @pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)
    def host(self, a: pl.Tensor[[16, 16], pl.FP32], b: pl.Tensor[[16, 16], pl.FP32],
             s: pl.Out[pl.Tensor[[16, 16], pl.FP32]], d: pl.Out[pl.Tensor[[16, 16], pl.FP32]]):
        total, diff = self.chip(a, b, s, d)
        self.record(total, diff)
        self.inspect(total)
        return total, diff


@pytest.mark.parametrize("platform", ["ref", "a2a3sim"])
def test_a_host_call_without_device_runs_on_the_one_device_and_its_sub_workers_see_what_it_wrote(platform):
    compiled = ir.compile(SumDiff, platform=platform, distributed_config=DistributedConfig(device_ids=[0]))
    a, b = torch.full((16, 16), 2.0), torch.full((16, 16), 3.0)
    s, d = torch.zeros(16, 16), torch.zeros(16, 16)
    with pytest.raises(ValueError, match="inspect have no body"):
        compiled.prepare()
    with pytest.raises(ValueError, match="nonexistent are not sub-workers"):
        compiled.prepare(callbacks={"inspect": print, "nonexistent": print})
    inspected = []
    SEEN.clear()
    with compiled.prepare(callbacks={"inspect": lambda args: inspected.append(args[0].clone())}) as rt:
        total, diff = rt(a, b, s, d)
    assert total is s and diff is d
    assert torch.equal(s, a + b) and torch.equal(d, a - b)
    assert torch.equal(SEEN[0][0], a + b) and torch.equal(SEEN[0][1], a - b)  # after the chip's dispatch
    assert torch.equal(inspected[0], a + b)


# ----------------------------------------------------------------------------- the variable all-to-all

MR = 3  # a slot's rows


def _all_to_all_v(n: int):
    total = n * MR

    @pl.program
    class AllToAllV:
        @pl.function(type=pl.FunctionType.InCore)
        def exchange(self, x: pl.Tensor[[total, W], pl.FP32], counts: pl.Tensor[[n, 1], pl.INT32],
                     out: pl.Out[pl.Tensor[[total, W], pl.FP32]], got: pl.Out[pl.Tensor[[n, 1], pl.INT32]],
                     data: pl.InOut[pld.DistributedTensor[[total, W], pl.FP32]],
                     signal: pl.InOut[pld.DistributedTensor[[n, 1], pl.INT32]],
                     recv: pl.InOut[pld.DistributedTensor[[n, 1], pl.INT32]]):
            data = pld.tensor.all_to_all_v(x, data, signal, counts, recv)
            out = pl.store(pl.load(data, [0, 0], [total, W]), [0, 0], out)
            for src in pl.range(n):
                pl.write(got, [src, 0], pl.read(recv, [src, 0]))
            return out, got

        @pl.function(type=pl.FunctionType.Orchestration)
        def orch(self, x: pl.Tensor[[total, W], pl.FP32], counts: pl.Tensor[[n, 1], pl.INT32],
                 out: pl.Out[pl.Tensor[[total, W], pl.FP32]], got: pl.Out[pl.Tensor[[n, 1], pl.INT32]],
                 data: pl.InOut[pld.DistributedTensor[[total, W], pl.FP32]],
                 signal: pl.InOut[pld.DistributedTensor[[n, 1], pl.INT32]],
                 recv: pl.InOut[pld.DistributedTensor[[n, 1], pl.INT32]]):
            return self.exchange(x, counts, out, got, data, signal, recv)  # (both of what it returns)

        @pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)
        def host(self, x: pl.Tensor[[n, total, W], pl.FP32], counts: pl.Tensor[[n, n, 1], pl.INT32],
                 out: pl.Out[pl.Tensor[[n, total, W], pl.FP32]], got: pl.Out[pl.Tensor[[n, n, 1], pl.INT32]]):
            data_buf = pld.alloc_window_buffer(total * W * pl.FP32.get_byte())
            signal_buf = pld.alloc_window_buffer(n * pl.INT32.get_byte())
            recv_buf = pld.alloc_window_buffer(n * pl.INT32.get_byte())
            data = pld.window(data_buf, [total, W], dtype=pl.FP32)
            signal = pld.window(signal_buf, [n, 1], dtype=pl.INT32)
            recv = pld.window(recv_buf, [n, 1], dtype=pl.INT32)
            for r in pl.range(pld.world_size()):
                self.orch(x[r], counts[r], out[r], got[r], data, signal, recv, device=r)
            return out, got

    return AllToAllV


@settings(max_examples=4, deadline=None)
@given(n=st.integers(2, 4), seed=st.integers(0, 2**31 - 1),
       counts=st.lists(st.integers(-1, MR + 1), min_size=16, max_size=16))
def test_the_variable_all_to_all_hands_each_rank_every_slot_and_count_meant_for_it(n, seed, counts):
    x = torch.randn(n, n * MR, W, generator=torch.Generator().manual_seed(seed))
    sent = torch.tensor(counts[:n * n], dtype=torch.int32).view(n, n, 1)
    got = {}
    for platform in ("ref", "a2a3sim"):
        out, recv = torch.zeros(n, n * MR, W), torch.zeros(n, n, 1, dtype=torch.int32)
        ir.compile(_all_to_all_v(n), platform=platform,
                   distributed_config=DistributedConfig(device_ids=list(range(n))))(x, sent, out, recv)
        got[platform] = (out, recv)
    assert torch.equal(got["ref"][0], got["a2a3sim"][0]) and torch.equal(got["ref"][1], got["a2a3sim"][1])
    out, recv = got["ref"]
    for r in range(n):
        for src in range(n):
            assert torch.equal(out[r, src * MR:(src + 1) * MR], x[src, r * MR:(r + 1) * MR])  # the whole slot
            assert int(recv[r, src, 0]) == min(max(int(sent[src, r, 0]), 0), MR)  # clamped to the slot


def test_a_worker_registers_its_programs_owns_what_it_allocates_and_refuses_use_after_close():
    from pypto.runtime import DistributedWorker

    compiled = ir.compile(SumDiff, platform="ref", distributed_config=DistributedConfig(device_ids=[0]))
    other = ir.compile(SumDiff, platform="ref", distributed_config=DistributedConfig(device_ids=[0]))
    rt = DistributedWorker([compiled, other])
    with pytest.raises(TypeError, match="ambiguous"):
        rt(torch.zeros(16, 16))
    b = rt.alloc_tensor((16, 16), torch.float32, init=torch.full((16, 16), 3.0))
    kept = rt.alloc_tensor((16, 16), torch.float32)
    assert rt._owned_tensors == [b, kept]
    rt.free_tensor(kept)
    assert rt._owned_tensors == [b]
    handle = rt.register(other)
    s, d = torch.zeros(16, 16), torch.zeros(16, 16)
    rt.bound = {"inspect": lambda args: None}  # (SumDiff's '...' sub-worker, as prepare(callbacks=) binds it)
    handle(torch.full((16, 16), 2.0), b, s, d)
    assert torch.equal(s, torch.full((16, 16), 5.0)) and handle.compiled is other
    rt.close()
    assert rt._owned_tensors == [] and handle.closed
    with pytest.raises(RuntimeError, match="called after close"):
        rt.register(compiled)


def _anchored(declared_cols: int):
    @pl.program
    class Anchored:
        @pl.function(type=pl.FunctionType.InCore)
        def anchor(self, scratch: pl.InOut[pld.DistributedTensor[[1, 8], pl.INT32]]
                   ) -> pl.Tensor[[1, declared_cols], pl.INT32]:
            return pl.store(pl.tile.full([1, 8], dtype=pl.INT32, value=7), [0, 0], scratch)

        @pl.function(type=pl.FunctionType.InCore)
        def copy(self, scratch: pld.DistributedTensor[[1, 8], pl.INT32], out: pl.Out[pl.Tensor[[1, 8], pl.INT32]]
                 ) -> pl.Tensor[[1, 8], pl.INT32]:
            return pl.store(pl.load(scratch, [0, 0], [1, 8]), [0, 0], out)

        @pl.function(type=pl.FunctionType.Orchestration)
        def orch(self, scratch: pl.InOut[pld.DistributedTensor[[1, 8], pl.INT32]],
                 out: pl.Out[pl.Tensor[[1, 8], pl.INT32]]) -> pl.Tensor[[1, 8], pl.INT32]:
            self.anchor(scratch)
            return self.copy(scratch, out)

        @pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)
        def host(self, out: pl.Out[pl.Tensor[[2, 1, 8], pl.INT32]]):
            buf = pld.alloc_window_buffer(8 * pl.INT32.get_byte())
            for r in pl.range(pld.world_size()):
                self.orch(pld.window(buf, [1, 8], dtype=pl.INT32), out[r], device=r)

    return Anchored


@pytest.mark.parametrize("platform", ["ref", "a2a3sim"])
def test_a_window_returned_where_a_tensor_of_its_shape_is_declared_is_that_tensor(platform):
    out = torch.zeros(2, 1, 8, dtype=torch.int32)
    ir.compile(_anchored(8), platform=platform, distributed_config=DistributedConfig(device_ids=[0, 1]))(out)
    assert torch.equal(out, torch.full((2, 1, 8), 7, dtype=torch.int32))
    with pytest.raises(TypeCheckError, match="returns DistributedTensor.*but is annotated"):
        ir.compile(_anchored(4), platform=platform, distributed_config=DistributedConfig(device_ids=[0, 1]))(out)


def test_each_ranks_dispatch_writes_its_chips_artifacts_apart(tmp_path):
    from pypto.runtime import RunConfig

    compiled = ir.compile(_allreduce_only(2, pld.ReduceOp.Sum), platform="a2a3sim", output_dir=str(tmp_path),
                          distributed_config=DistributedConfig(device_ids=[0, 1]))
    compiled(torch.ones(2, 1, W), torch.zeros(2, 1, W), config=RunConfig(platform="a2a3sim", enable_dep_gen=True))
    for r in range(2):  # put, the builtin allreduce, get: the rank's dispatches 0, 1, 2
        for k in range(3):
            deps = tmp_path / "dfx_outputs" / f"rank{r}" / f"d{k}" / "deps.json"
            assert deps.is_file() and deps.stat().st_size > 0


# ----------------------------------------------------------------------------- the host's order


def _rounds(n: int, rounds: int):
    @pl.program
    class Rounds:
        @pl.function(type=pl.FunctionType.InCore)
        def publish_step(self, x: pl.Tensor[[1, W], pl.FP32], data: pl.InOut[pld.DistributedTensor[[1, W], pl.FP32]]
                         ) -> pld.DistributedTensor[[1, W], pl.FP32]:
            return pl.store(pl.load(x, [0, 0], [1, W]), [0, 0], data)

        @pl.function(type=pl.FunctionType.Orchestration)
        def publish(self, x: pl.Tensor[[1, W], pl.FP32], data: pl.InOut[pld.DistributedTensor[[1, W], pl.FP32]]
                    ) -> pld.DistributedTensor[[1, W], pl.FP32]:
            return self.publish_step(x, data)

        @pl.function(type=pl.FunctionType.InCore)
        def consume_step(self, data: pld.DistributedTensor[[1, W], pl.FP32], out: pl.Out[pl.Tensor[[1, W], pl.FP32]],
                         peer: pl.Scalar[pl.INT32]) -> pl.Tensor[[1, W], pl.FP32]:
            return pl.store(pld.tile.remote_load(data, peer=peer, offsets=[0, 0], shape=[1, W]), [0, 0], out)

        @pl.function(type=pl.FunctionType.Orchestration)
        def consume(self, data: pld.DistributedTensor[[1, W], pl.FP32], out: pl.Out[pl.Tensor[[1, W], pl.FP32]],
                    peer: pl.Scalar[pl.INT32]) -> pl.Tensor[[1, W], pl.FP32]:
            return self.consume_step(data, out, peer)

        @pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)
        def host(self, x: pl.Tensor[[rounds, n, 1, W], pl.FP32], out: pl.Out[pl.Tensor[[rounds, n, 1, W], pl.FP32]]):
            data_buf = pld.alloc_window_buffer(W * pl.FP32.get_byte())
            signal_buf = pld.alloc_window_buffer(pld.world_size() * pl.INT32.get_byte())
            data = pld.window(data_buf, [1, W], dtype=pl.FP32)
            signal = pld.window(signal_buf, [pld.world_size()], dtype=pl.INT32)
            for k in pl.range(rounds):
                for r in pl.range(pld.world_size()):
                    self.publish(x[k, r], data, device=r)
                pld.tensor.barrier(signal)
                for r in pl.range(pld.world_size()):
                    self.consume(data, out[k, r], (r + 1) % pld.world_size(), device=r)

    return Rounds


@pytest.mark.parametrize("n", [2, 3])
def test_the_ranks_run_in_the_hosts_order_as_far_as_their_waits_allow(n):
    """Nothing orders a round's consumer (a remote load of the next rank's window) before the
    next round's publisher there, so the program races — ref says so, naming both lines. The
    simulated chip (which does not check) runs it in the host's order: the host wrote every
    consumer of a round before the next round's publishers, so a rank past the barrier does
    not run ahead of a peer the host ordered before it, and each round reads its own rows (the
    reference's host barrier test counts on this order)."""
    from pypto.cluster.races import CrossRankRace

    rounds = 3
    x = torch.randn(rounds, n, 1, W, generator=torch.Generator().manual_seed(n))
    out = torch.zeros_like(x)
    with pytest.raises(CrossRankRace, match="remote_load"):
        ir.compile(_rounds(n, rounds), platform="ref",
                   distributed_config=DistributedConfig(device_ids=list(range(n))))(x, out)
    ir.compile(_rounds(n, rounds), platform="a2a3sim",
               distributed_config=DistributedConfig(device_ids=list(range(n))))(x, out)
    for k in range(rounds):
        for r in range(n):
            assert torch.equal(out[k, r], x[k, (r + 1) % n])


@pl.program
class Reduced:
    @pl.function(type=pl.FunctionType.InCore)
    def add(self, a: pl.Tensor[[16, 16], pl.FP32], b: pl.Tensor[[16, 16], pl.FP32],
            f: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
        return pl.store(pl.add(pl.load(a, [0, 0], [16, 16]), pl.load(b, [0, 0], [16, 16])), [0, 0], f)

    @pl.function(type=pl.FunctionType.Orchestration)
    def chip_add(self, a: pl.Tensor[[16, 16], pl.FP32], b: pl.Tensor[[16, 16], pl.FP32],
                 f: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
        return self.add(a, b, f)

    @pl.function(level=pl.Level.HOST, role=pl.Role.SubWorker)
    def double(s: pl.Tensor[[16, 16], pl.FP32], f: pl.Out[pl.Tensor[[16, 16], pl.FP32]]
               ) -> pl.Tensor[[16, 16], pl.FP32]:
        f[:] = s + s
        return f

    @pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)
    def host(self, a: pl.Tensor[[16, 16], pl.FP32], b: pl.Tensor[[16, 16], pl.FP32],
             f: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
        s: pl.Tensor[[16, 16], pl.FP32] = pl.create_tensor([16, 16], dtype=pl.FP32)
        s = self.chip_add(a, b, s)
        out = self.double(s, f)
        return out


def test_a_return_style_call_makes_the_out_tensors_and_gives_back_what_the_host_returns():
    from pypto.runtime import DistributedWorker

    compiled = ir.compile(Reduced, platform="ref", distributed_config=DistributedConfig(device_ids=[0]))
    a, b = torch.full((16, 16), 2.0), torch.full((16, 16), 3.0)
    assert torch.equal(compiled(a, b), torch.full((16, 16), 10.0))  # f made, the sub-worker's result returned
    with DistributedWorker(compiled, inherited_host_tensors=[a]) as rt:
        rt.release_inherited_host_tensor_refs()
        for _ in range(2):
            rt(a, b)
        assert rt._w._next_alloc_id == 2  # (no windows kept: each dispatch allocates its own)
    with compiled.prepare(persistent=True) as rt:
        for _ in range(3):
            rt(a, b)
        assert rt._w._next_alloc_id == 1  # a persistent worker's windows, allocated once


@pl.jit.incore
def add_into_root(x: pl.Tensor[[8, 16], pl.INT32], out: pl.Out[pl.Tensor[[8, 16], pl.INT32]],
                  src: pl.InOut[pld.DistributedTensor[[8, 16], pl.INT32]],
                  acc: pl.InOut[pld.DistributedTensor[[8, 16], pl.INT32]],
                  signal: pl.InOut[pld.DistributedTensor[[1, 1], pl.INT32]]):
    ctx = pld.get_comm_ctx(acc)
    n = pld.nranks(ctx)
    src = pl.store(pl.load(x, [0, 0], [8, 16]), [0, 0], src)
    pld.tensor.put(acc, peer=0, src=src, atomic=pld.AtomicType.Add)  # every rank at once: unordered adds
    pld.system.notify(target=signal, peer=0, offsets=[0, 0], value=1, op=pld.NotifyOp.AtomicAdd)
    if pld.rank(ctx) == 0:
        pld.system.wait(signal=signal, offsets=[0, 0], expected=n, cmp=pld.WaitCmp.Ge)
        out = pl.store(pl.load(acc, [0, 0], [8, 16]), [0, 0], out)
    return out


@pl.jit
def add_into_root_rank(x: pl.Tensor[[8, 16], pl.INT32], out: pl.Out[pl.Tensor[[8, 16], pl.INT32]],
                       src: pl.InOut[pld.DistributedTensor[[8, 16], pl.INT32]],
                       acc: pl.InOut[pld.DistributedTensor[[8, 16], pl.INT32]],
                       signal: pl.InOut[pld.DistributedTensor[[1, 1], pl.INT32]]):
    return add_into_root(x, out, src, acc, signal)


@pl.jit.host
def add_into_root_host(x: pl.Tensor[[NR, 8, 16], pl.INT32], out: pl.Out[pl.Tensor[[NR, 8, 16], pl.INT32]]):
    src_buf = pld.alloc_window_buffer([8, 16], dtype=pl.INT32)
    acc_buf = pld.alloc_window_buffer([8, 16], dtype=pl.INT32)
    sig_buf = pld.alloc_window_buffer([1, 1], dtype=pl.INT32)
    for r in pl.range(pld.world_size()):
        add_into_root_rank(x[r], out[r], pld.window(src_buf, [8, 16], dtype=pl.INT32),
                           pld.window(acc_buf, [8, 16], dtype=pl.INT32), pld.window(sig_buf, [1, 1], dtype=pl.INT32),
                           device=r)
    return out


NR = pl.dynamic("NR")


@pytest.mark.parametrize("platform", ["ref", "a2a3sim"])
def test_unordered_atomic_adds_into_one_region_are_no_race(platform):
    from pypto.runtime import RunConfig

    n = 3
    x = torch.randint(-50, 50, (n, 8, 16), dtype=torch.int32, generator=torch.Generator().manual_seed(1))
    out = torch.zeros_like(x)
    add_into_root_host(x, out, config=RunConfig(platform=platform,
                                                distributed_config=DistributedConfig(device_ids=list(range(n)))))
    assert torch.equal(out[0], x.sum(0, dtype=torch.int32))


# ----------------------------------------------------------------------------- tensor-level remote_store


def _push_computed(atomic, short: bool = False):
    @pl.program
    class PushComputed:
        @pl.function(type=pl.FunctionType.InCore)
        def step(self, x: pl.Tensor[[4, W], pl.FP32], out: pl.Out[pl.Tensor[[4, W], pl.FP32]],
                 win: pl.InOut[pld.DistributedTensor[[4, W], pl.FP32]],
                 signal: pl.InOut[pld.DistributedTensor[[1, 1], pl.INT32]],
                 peer: pl.Scalar[pl.INT32]) -> pl.Tensor[[4, W], pl.FP32]:
            doubled = pl.tensor.add(x, x)  # a value on chip: pushed as it is, with no store in between
            if short:  # (the short form picks the push from its operand: a tensor here)
                pld.remote_store(doubled, win, peer, [0, 0], atomic=atomic)
            else:
                pld.tensor.remote_store(doubled, win, peer, [0, 0], atomic=atomic)
            pld.system.notify(target=signal, peer=peer, offsets=[0, 0], value=1, op=pld.NotifyOp.AtomicAdd)
            pld.system.wait(signal=signal, offsets=[0, 0], expected=1, cmp=pld.WaitCmp.Ge)
            return pl.store(pl.load(win, [0, 0], [4, W]), [0, 0], out)

        @pl.function(type=pl.FunctionType.Orchestration)
        def orch(self, x: pl.Tensor[[4, W], pl.FP32], out: pl.Out[pl.Tensor[[4, W], pl.FP32]],
                 win: pl.InOut[pld.DistributedTensor[[4, W], pl.FP32]],
                 signal: pl.InOut[pld.DistributedTensor[[1, 1], pl.INT32]],
                 peer: pl.Scalar[pl.INT32]) -> pl.Tensor[[4, W], pl.FP32]:
            return self.step(x, out, win, signal, peer)

        @pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)
        def host(self, x: pl.Tensor[[NR, 4, W], pl.FP32], out: pl.Out[pl.Tensor[[NR, 4, W], pl.FP32]]):
            buf = pld.alloc_window_buffer(4 * W * pl.FP32.get_byte())
            sig = pld.alloc_window_buffer(pl.INT32.get_byte())
            for r in pl.range(pld.world_size()):
                self.orch(x[r], out[r], pld.window(buf, [4, W], dtype=pl.FP32), pld.window(sig, [1, 1], dtype=pl.INT32),
                          (r + 1) % pld.world_size(), device=r)
            return out

    return PushComputed


@pytest.mark.parametrize("atomic, short", [(pld.AtomicType.None_, False), (pld.AtomicType.Add, False),
                                           (pld.AtomicType.None_, True)])
@pytest.mark.parametrize("platform", ["ref", "a2a3sim"])
def test_a_tensor_level_remote_store_pushes_the_computed_value_to_the_peer(platform, atomic, short):
    n = 3
    x = torch.randn(n, 4, W, generator=torch.Generator().manual_seed(5))
    out = torch.zeros_like(x)
    ir.compile(_push_computed(atomic, short), platform=platform,
               distributed_config=DistributedConfig(device_ids=list(range(n))))(x, out)
    for r in range(n):  # (the window starts zeroed: an atomic add onto it is the value)
        assert torch.equal(out[r], x[(r - 1) % n] + x[(r - 1) % n])


# ----------------------------------------------------------------------------- inline chip scopes


@pl.program
class InlineChips:
    @pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)
    def host(self, a: pl.Tensor[[16, 16], pl.FP32], b: pl.Tensor[[16, 16], pl.FP32],
             s: pl.Out[pl.Tensor[[16, 16], pl.FP32]], d: pl.Out[pl.Tensor[[16, 16], pl.FP32]]
             ) -> pl.Tensor[[16, 16], pl.FP32]:
        with pl.at(level=pl.Level.CHIP, role=pl.Role.Orchestrator):
            with pl.at(level=pl.Level.CORE_GROUP):
                total = pl.assemble(s, pl.add(a, b), [0, 0])
        with pl.at(level=pl.Level.CHIP, role=pl.Role.Orchestrator):
            with pl.at(level=pl.Level.CORE_GROUP):
                pl.assemble(d, pl.sub(a, b), [0, 0])
        return total


@pytest.mark.parametrize("platform", ["ref", "a2a3sim"])
def test_a_hosts_inline_chip_scopes_run_in_turn_on_the_devices(platform):
    a, b = torch.randn(16, 16), torch.randn(16, 16)
    s, d = torch.zeros(16, 16), torch.zeros(16, 16)
    compiled = ir.compile(InlineChips, platform=platform, distributed_config=DistributedConfig(device_ids=[0, 1]))
    report = compiled.run(a, b, s, d)
    assert report.outputs is s and torch.equal(s, a + b) and torch.equal(d, a - b)
    assert sorted(rank for rank, _ in report.reports) == [0, 1]  # the k-th scope on device k
