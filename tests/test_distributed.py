"""Many chips (``pypto.language.distributed``): host orchestrators on a cluster of simulated
ranks — windows, signals, remote loads and stores — through the public API; the reports a
cluster alone can give (a deadlock's blocked ranks, cells and lines); the language's
refusals, located; the dumps reading back."""

from __future__ import annotations

import inspect

import pytest
import torch
from hypothesis import Phase, given, settings
from hypothesis import strategies as st

import pypto.language as pl
import pypto.language.distributed as pld
from pypto.cluster.cluster import DeadlockError
from pypto.errors import ConfigError, PyptoError, TypeCheckError
from pypto.ir.distributed_compiled_program import DistributedConfig
from pypto.runtime import DistributedWorker, RunConfig

NR = pl.dynamic("NR")
SIZE = 64
ROWS, COLS = 8, 8


def _config(n: int, platform: str = "ref") -> RunConfig:
    return RunConfig(platform=platform, distributed_config=DistributedConfig(device_ids=list(range(n))))


def _line(fn, text: str) -> int:
    """The file line of the first line of ``fn``'s source holding ``text``."""
    lines, start = inspect.getsourcelines(fn)
    return start + next(k for k, line in enumerate(lines) if text in line)


# ----------------------------------------------------------------------------- the mesh allreduce


@pl.jit.incore
def reduce_step(
    inp: pl.Tensor[[1, SIZE], pl.FP32],
    out: pl.Out[pl.Tensor[[1, SIZE], pl.FP32]],
    data: pl.InOut[pld.DistributedTensor[[1, SIZE], pl.FP32]],
    signal: pl.InOut[pld.DistributedTensor[[NR, 1], pl.INT32]],
) -> pl.Tensor[[1, SIZE], pl.FP32]:
    ctx = pld.get_comm_ctx(data)
    my_rank = pld.rank(ctx)
    nranks = pld.nranks(ctx)
    local = pl.load(inp, [0, 0], [1, SIZE])
    data = pl.store(local, [0, 0], data)
    for peer in pl.range(nranks):
        if peer != my_rank:
            pld.system.notify(signal, peer=peer, offsets=[my_rank, 0], value=1, op=pld.NotifyOp.AtomicAdd)
    for src in pl.range(nranks):
        if src != my_rank:
            pld.system.wait(signal, offsets=[src, 0], expected=1, cmp=pld.WaitCmp.Ge)
    acc = pl.load(data, [0, 0], [1, SIZE])
    for peer in pl.range(nranks):
        if peer != my_rank:
            peer_tile = pld.tile.remote_load(data, peer=peer, offsets=[0, 0], shape=[1, SIZE])
            acc = pl.add(acc, peer_tile)
    return pl.store(acc, [0, 0], out)


@pl.jit
def reduce_orch(
    inp: pl.Tensor[[1, SIZE], pl.FP32],
    out: pl.Out[pl.Tensor[[1, SIZE], pl.FP32]],
    data: pl.InOut[pld.DistributedTensor[[1, SIZE], pl.FP32]],
    signal: pl.InOut[pld.DistributedTensor[[NR, 1], pl.INT32]],
) -> pl.Tensor[[1, SIZE], pl.FP32]:
    return reduce_step(inp, out, data, signal)


@pl.jit.host
def allreduce(
    inputs: pl.Tensor[[NR, 1, SIZE], pl.FP32],
    outputs: pl.Out[pl.Tensor[[NR, 1, SIZE], pl.FP32]],
) -> pl.Tensor[[NR, 1, SIZE], pl.FP32]:
    data_buf = pld.alloc_window_buffer(SIZE * pl.FP32.get_byte())
    signal_buf = pld.alloc_window_buffer([pld.world_size(), 1], dtype=pl.INT32)
    for r in pl.range(pld.world_size()):
        data = pld.window(data_buf, [1, SIZE], dtype=pl.FP32)
        signal = pld.window(signal_buf, [pld.world_size(), 1], dtype=pl.INT32)
        reduce_orch(inputs[r], outputs[r], data, signal, device=r)
    return outputs


def _mesh_sum(x: torch.Tensor, r: int) -> torch.Tensor:
    """Rank r's sum, in its kernel's order: its own row, then each peer's in rank order."""
    acc = x[r].clone()
    for p in range(x.shape[0]):
        if p != r:
            acc = acc + x[p]
    return acc


@settings(max_examples=12, deadline=None)
@given(n=st.integers(2, 6), seed=st.integers(0, 2**31 - 1))
def test_mesh_allreduce_gives_every_rank_the_sum_in_its_own_order(n, seed):
    x = torch.randn(n, 1, SIZE, generator=torch.Generator().manual_seed(seed))
    out = torch.zeros_like(x)
    report = allreduce.compile(config=_config(n)).run(x, out)
    for r in range(n):
        assert torch.equal(out[r], _mesh_sum(x, r)), r
    # each rank: a notify and a wait per peer, a remote load of each peer's row
    for rank in report.ranks:
        assert (rank.clock.notifies, rank.clock.waits, rank.clock.sent) == (n - 1, n - 1, (n - 1) * SIZE * 4)
        assert rank.clock.now == rank.clock.comm + rank.clock.waited  # (ref: the cores' work takes no time)
    assert report.eff_us == max(r.eff_us for r in report.ranks) > 0


def test_the_quickstart_call_form_writes_the_outputs_in_place():
    x = torch.tensor([[[1.0] * SIZE], [[10.0] * SIZE]])
    out = torch.zeros_like(x)
    allreduce(x, out, config=_config(2))
    assert torch.equal(out, torch.full_like(x, 11.0))


# ----------------------------------------------------------------------------- signals, deadlocks


@pl.jit.incore
def handshake_step(
    out: pl.Out[pl.Tensor[[1, 1], pl.INT32]],
    signal: pl.InOut[pld.DistributedTensor[[1, 1], pl.INT32]],
    peer: pl.Scalar[pl.INT32],
    tag: pl.Scalar[pl.INT32],
    expected: pl.Scalar[pl.INT32],
) -> pl.Tensor[[1, 1], pl.INT32]:
    pld.system.notify(target=signal, peer=peer, offsets=[0, 0], value=tag, op=pld.NotifyOp.AtomicAdd)
    pld.system.wait(signal=signal, offsets=[0, 0], expected=expected, cmp=pld.WaitCmp.Ge)
    val: pl.Scalar[pl.INT32] = pl.read(signal, [0, 0])
    pl.write(out, [0, 0], val)
    return out


@pl.jit
def handshake_orch(
    out: pl.Out[pl.Tensor[[1, 1], pl.INT32]],
    signal: pl.InOut[pld.DistributedTensor[[1, 1], pl.INT32]],
    peer: pl.Scalar[pl.INT32],
    tag: pl.Scalar[pl.INT32],
    expected: pl.Scalar[pl.INT32],
) -> pl.Tensor[[1, 1], pl.INT32]:
    return handshake_step(out, signal, peer, tag, expected)


@pl.jit.host
def handshake(outputs: pl.Out[pl.Tensor[[NR, 1, 1], pl.INT32]], expected: pl.Scalar[pl.INT32]):
    signal_buf = pld.alloc_window_buffer(pl.INT32.get_byte())
    for r in pl.range(pld.world_size()):
        signal = pld.window(signal_buf, [1, 1], dtype=pl.INT32)
        handshake_orch(outputs[r], signal, (r + 1) % pld.world_size(), r + 1, expected, device=r)
    return outputs


@pytest.mark.parametrize("n", [2, 3, 5])
def test_a_ring_of_notifies_reaches_each_rank_from_the_one_before(n):
    out = torch.zeros(n, 1, 1, dtype=torch.int32)
    handshake(out, 1, config=_config(n))
    assert out.flatten().tolist() == [(r - 1) % n + 1 for r in range(n)]


def test_a_wait_no_notify_can_satisfy_is_a_deadlock_report_naming_each_rank_cell_and_line():
    out = torch.zeros(2, 1, 1, dtype=torch.int32)
    with pytest.raises(DeadlockError) as info:
        handshake(out, 5, config=_config(2))  # each cell only ever reaches its one notifier's tag
    err = info.value
    line = _line(handshake_step.fn, "pld.system.wait(")
    assert err.span.line == line
    text = str(err)
    assert f"rank 0 waits at {err.span.file}:{line} for signal_buf[0, 0] >= 5; it holds 2" in text
    assert f"rank 1 waits at {err.span.file}:{line} for signal_buf[0, 0] >= 5; it holds 1" in text
    assert "peer=" in err.hint


@pl.jit.host
def lonely_handshake(outputs: pl.Out[pl.Tensor[[NR, 1, 1], pl.INT32]]):
    signal_buf = pld.alloc_window_buffer(pl.INT32.get_byte())
    for r in pl.range(pld.world_size()):
        signal = pld.window(signal_buf, [1, 1], dtype=pl.INT32)
        handshake_orch(outputs[r], signal, r, 1, 1, device=r)  # each rank notifies itself
    handshake_orch(outputs[0], pld.window(signal_buf, [1, 1], dtype=pl.INT32), 1, 0, 2, device=0)
    return outputs


def test_a_missing_notify_blocks_only_the_rank_that_waits_for_it():
    with pytest.raises(DeadlockError) as info:
        lonely_handshake(torch.zeros(2, 1, 1, dtype=torch.int32), config=_config(2))
    text = str(info.value)
    assert "rank 0 waits at" in text and ">= 2; it holds 1" in text and "rank 1 waits" not in text


def test_a_persistent_worker_zeroes_its_retained_windows_before_each_dispatch():
    compiled = handshake.compile(config=_config(2))
    out = torch.zeros(2, 1, 1, dtype=torch.int32)
    with compiled.prepare(persistent=True) as worker:
        assert isinstance(worker, DistributedWorker)
        for _ in range(3):
            out.zero_()
            worker(out, 1)
            assert out.flatten().tolist() == [2, 1]
        handle = worker.submit(compiled, out, 1)
        assert handle.done and handle.result().eff_us > 0
    with pytest.raises(RuntimeError, match="called after close"):  # (the reference's refusal)
        worker(out, 1)


# ----------------------------------------------------------------------------- remote stores


@pl.jit.incore
def shift_step(
    inp: pl.Tensor[[1, SIZE], pl.FP32],
    out: pl.Out[pl.Tensor[[1, SIZE], pl.FP32]],
    data: pl.InOut[pld.DistributedTensor[[1, SIZE], pl.FP32]],
    signal: pl.InOut[pld.DistributedTensor[[1, 1], pl.INT32]],
) -> pl.Tensor[[1, SIZE], pl.FP32]:
    ctx = pld.get_comm_ctx(data)
    nxt = (pld.rank(ctx) + 1) % pld.nranks(ctx)
    tile = pl.load(inp, [0, 0], [1, SIZE])
    pld.remote_store(tile, data, nxt, [0, 0])
    pld.system.notify(signal, peer=nxt, offsets=[0, 0], value=1, op=pld.NotifyOp.Set)
    pld.system.wait(signal, offsets=[0, 0], expected=1, cmp=pld.WaitCmp.Eq)
    got = pl.load(data, [0, 0], [1, SIZE])
    return pl.store(got, [0, 0], out)


@pl.jit
def shift_orch(
    inp: pl.Tensor[[1, SIZE], pl.FP32],
    out: pl.Out[pl.Tensor[[1, SIZE], pl.FP32]],
    data: pl.InOut[pld.DistributedTensor[[1, SIZE], pl.FP32]],
    signal: pl.InOut[pld.DistributedTensor[[1, 1], pl.INT32]],
) -> pl.Tensor[[1, SIZE], pl.FP32]:
    return shift_step(inp, out, data, signal)


@pl.jit.host
def shift(inputs: pl.Tensor[[NR, 1, SIZE], pl.FP32], outputs: pl.Out[pl.Tensor[[NR, 1, SIZE], pl.FP32]]):
    data_buf = pld.tensor.alloc_window_buffer([1, SIZE], dtype=pl.FP32)
    signal_buf = pld.tensor.alloc_window_buffer([1, 1], dtype=pl.INT32)
    data = pld.tensor.window(data_buf, [1, SIZE], dtype=pl.FP32)
    signal = pld.tensor.window(signal_buf, [1, 1], dtype=pl.INT32)
    for r in pl.range(pld.world_size()):
        shift_orch(inputs[r], outputs[r], data, signal, device=r)
    return outputs


@settings(max_examples=10, deadline=None)
@given(n=st.integers(2, 7), seed=st.integers(0, 2**31 - 1))
def test_a_remote_store_then_notify_hands_each_rank_its_predecessors_row(n, seed):
    x = torch.randn(n, 1, SIZE, generator=torch.Generator().manual_seed(seed))
    out = torch.zeros_like(x)
    report = shift.compile(config=_config(n)).run(x, out)
    assert torch.equal(out, torch.roll(x, 1, 0))
    # the notify rides the link behind the row it follows: no wait ends before the row has landed
    assert all(r.clock.sent == SIZE * 4 and r.clock.waited > 0 for r in report.ranks)


# ----------------------------------------------------------------------------- one chip per rank, unchanged


@pl.jit.incore
def add_rank(x: pl.Tensor[[ROWS, COLS], pl.FP32], y: pl.Out[pl.Tensor[[ROWS, COLS], pl.FP32]],
             rank: pl.Scalar[pl.FP32]):
    tile = pl.load(x, [0, 0], [ROWS, COLS])
    tile = pl.add(tile, rank)
    y = pl.store(tile, [0, 0], y)
    return y


@pl.jit
def per_rank(x: pl.Tensor, y: pl.Out[pl.Tensor], rank: pl.Scalar[pl.FP32]):
    return add_rank(x, y, rank)


@pl.jit.host
def hello_rank(x: pl.Tensor[[NR, ROWS, COLS], pl.FP32], y: pl.Out[pl.Tensor[[NR, ROWS, COLS], pl.FP32]]):
    for r in pl.range(pld.world_size()):
        per_rank(x[r], y[r], r, device=r)


@pytest.mark.parametrize("platform", ["ref", "a2a3sim"])
def test_hello_rank_runs_each_rank_on_its_platform_with_the_same_bits(platform):
    x = torch.randn(2, ROWS, COLS, generator=torch.Generator().manual_seed(7))
    y = torch.zeros_like(x)
    compiled = hello_rank.compile(x, y, config=_config(2, platform))
    compiled(x, y, config=RunConfig(platform=platform))
    assert torch.equal(y, x + torch.arange(2, dtype=torch.float32).view(2, 1, 1))
    kernels = [rep for _, rep in compiled.run(x, y).reports]
    assert len(kernels) == 2 and (platform == "ref" or all(k.cycles > 0 for k in kernels))


# ----------------------------------------------------------------------------- the language's refusals


def _refused(kernel, *args, match: str, line_text: str, error=TypeCheckError):
    with pytest.raises(error, match=match) as info:
        kernel.specialize(*args)
    assert info.value.span is not None and info.value.span.line == _line(kernel.fn, line_text)
    assert info.value.hint
    return info.value


def _window(shape, dtype=torch.float32) -> torch.Tensor:
    from pypto.cluster.windows import WindowBuffer, WindowView
    from pypto.sim.ops.numerics import FROM_TORCH

    view = WindowView(WindowBuffer.allocate("w", 4096, 2), tuple(shape), FROM_TORCH[dtype])
    return view.on(0)


@pl.jit.incore
def notify_plain(sig: pl.InOut[pl.Tensor[[1, 1], pl.INT32]]):
    pld.system.notify(sig, peer=1, offsets=[0, 0], value=1, op=pld.NotifyOp.Set)
    return sig


@pl.jit.incore
def wait_float(sig: pl.InOut[pld.DistributedTensor[[1, 1], pl.FP32]]):
    pld.system.wait(sig, offsets=[0, 0], expected=1, cmp=pld.WaitCmp.Eq)
    return sig


@pl.jit.incore
def atomic_bool(t: pl.Tensor[[1, 32], pl.INT8], d: pl.InOut[pld.DistributedTensor[[1, 32], pl.UINT8]]):
    tile = pl.load(t, [0, 0], [1, 32])
    pld.tile.remote_store(pl.cast(tile, target_type=pl.UINT8), d, 1, [0, 0], atomic=pl.AtomicType.Add)
    return d


@pl.jit.incore
def world_in_kernel(d: pl.InOut[pld.DistributedTensor[[1, 32], pl.FP32]]):
    n = pld.world_size()
    pl.write(d, [0, 0], pl.cast(n, target_type=pl.FP32))
    return d


@pl.jit.incore
def load_outside(d: pl.InOut[pld.DistributedTensor[[1, 32], pl.FP32]], out: pl.Out[pl.Tensor[[1, 32], pl.FP32]]):
    tile = pld.remote_load(d, peer=1, offsets=[0, 16], shape=[1, 32])
    return pl.store(tile, [0, 0], out)


def test_the_references_refusals_are_located_errors_with_hints():
    _refused(notify_plain, torch.zeros(1, 1, dtype=torch.int32), match="DistributedTensor signal",
             line_text="pld.system.notify(")
    _refused(wait_float, _window([1, 1]), match="an INT32 signal", line_text="pld.system.wait(")
    _refused(atomic_bool, torch.zeros(1, 32, dtype=torch.int8), _window([1, 32], torch.uint8),
             match="destination for atomic=Add", line_text="pld.tile.remote_store(")
    _refused(world_in_kernel, _window([1, 32]), match="host-only", line_text="pld.world_size()")
    _refused(load_outside, _window([1, 32]), torch.zeros(1, 32), match="outside the tensor",
             line_text="pld.remote_load(", error=PyptoError)


def test_a_plain_tensor_for_a_distributed_parameter_is_refused_at_the_parameter():
    with pytest.raises(PyptoError, match="window-bound pld.DistributedTensor") as info:
        wait_float.specialize(torch.zeros(1, 1))
    assert "pld.window" in info.value.hint


@pl.jit.host
def dispatch_incore(x: pl.Tensor[[NR, ROWS, COLS], pl.FP32], y: pl.Out[pl.Tensor[[NR, ROWS, COLS], pl.FP32]]):
    for r in pl.range(pld.world_size()):
        add_rank(x[r], y[r], r, device=r)


@pl.jit.host
def no_device(x: pl.Tensor[[NR, ROWS, COLS], pl.FP32], y: pl.Out[pl.Tensor[[NR, ROWS, COLS], pl.FP32]]):
    for r in pl.range(pld.world_size()):
        per_rank(x[r], y[r], r)


@pytest.mark.parametrize("host, match, text", [
    (dispatch_incore, "per-device @pl.jit function", "add_rank(x[r]"),
    (no_device, "device=", "per_rank(x[r]"),
])
def test_a_host_orchestrators_mistakes_are_located(host, match, text):
    x = torch.zeros(2, ROWS, COLS)
    with pytest.raises(PyptoError, match=match) as info:
        host(x, torch.zeros_like(x), config=_config(2))
    assert info.value.span.line == _line(host.fn, text)


def test_a_host_orchestrator_needs_the_devices():
    with pytest.raises(ConfigError, match="names none"):
        hello_rank.compile(config=RunConfig(platform="ref"))


# ----------------------------------------------------------------------------- the dumps


def test_a_lowered_rank_program_prints_as_text_that_reads_back_to_it():
    args = (torch.zeros(1, SIZE), torch.zeros(1, SIZE), _window([1, SIZE]), _window([2, 1], torch.int32))
    for program in (reduce_orch.specialize(*args), reduce_orch.lower(*args)):
        text = program.as_python()
        assert "pl.distributed.system.notify(" in text and "pl.distributed.DistributedTensor[[1, 64]" in text
        assert pl.parse_program(text).as_python() == text


def test_every_pld_op_a_kernel_runs_has_its_meaning_and_the_host_ones_are_refused_in_kernels():
    from pypto.ir.ops import all_ops
    from pypto.sim.ops.comm import COMM_OPS
    from pypto.sim.ops.semantics import IMPLS

    ops = {op.name for op in all_ops() if op.module}
    assert COMM_OPS <= ops and COMM_OPS <= set(IMPLS)
    # host-only, and the tensor-level push (lowered to the tile one where a kernel's tensors become tiles)
    assert ops - COMM_OPS == {"system.world_size", "tensor.alloc_window_buffer", "tensor.window", "tensor.remote_store"}


# ----------------------------------------------------------------------------- collectives

W = 32  # a row's extent
M = pl.dynamic("M")  # 5 blocks of NR rows: what each collective left


def _collectives(reduce_op):
    """A rank kernel running every collective once, on windows the host allocates."""

    @pl.jit.incore
    def step(x: pl.Tensor[[NR, W], pl.FP32], outs: pl.Out[pl.Tensor[[M, W], pl.FP32]],
             row: pl.InOut[pld.DistributedTensor[[1, W], pl.FP32]],
             stage: pl.InOut[pld.DistributedTensor[[NR, W], pl.FP32]],
             grid: pl.InOut[pld.DistributedTensor[[NR, W], pl.FP32]],
             signal: pl.InOut[pld.DistributedTensor[[NR, 1], pl.INT32]], root: pl.Scalar[pl.INT32]):
        ctx = pld.get_comm_ctx(row)
        me = pld.rank(ctx)
        n = pld.nranks(ctx)
        row = pl.store(pl.load(x, [me, 0], [1, W]), [0, 0], row)
        row = pld.tensor.allreduce(row, signal, op=reduce_op)
        outs = pl.store(pl.load(row, [0, 0], [1, W]), [0, 0], outs)
        row = pl.store(pl.load(x, [0, 0], [1, W]), [0, 0], row)
        row = pld.tensor.broadcast(row, signal, root=root)
        outs = pl.store(pl.load(row, [0, 0], [1, W]), [n, 0], outs)
        row = pl.store(pl.load(x, [me, 0], [1, W]), [0, 0], row)
        grid = pld.tensor.allgather(row, grid, signal)
        outs = pl.store(pl.load(grid, [0, 0], [NR, W]), [2 * n, 0], outs)
        stage = pl.store(pl.load(x, [0, 0], [NR, W]), [0, 0], stage)
        stage = pld.tensor.reduce_scatter(stage, signal, op=pld.ReduceOp.Sum)
        outs = pl.store(pl.load(stage, [me, 0], [1, W]), [3 * n, 0], outs)
        stage = pl.store(pl.load(x, [0, 0], [NR, W]), [0, 0], stage)
        grid = pld.tensor.all_to_all(stage, grid, signal)
        outs = pl.store(pl.load(grid, [0, 0], [NR, W]), [4 * n, 0], outs)
        signal = pld.tensor.barrier(signal)
        return outs

    @pl.jit
    def orch(x: pl.Tensor[[NR, W], pl.FP32], outs: pl.Out[pl.Tensor[[M, W], pl.FP32]],
             row: pl.InOut[pld.DistributedTensor[[1, W], pl.FP32]],
             stage: pl.InOut[pld.DistributedTensor[[NR, W], pl.FP32]],
             grid: pl.InOut[pld.DistributedTensor[[NR, W], pl.FP32]],
             signal: pl.InOut[pld.DistributedTensor[[NR, 1], pl.INT32]], root: pl.Scalar[pl.INT32]):
        return step(x, outs, row, stage, grid, signal, root)

    @pl.jit.host
    def host(x: pl.Tensor[[NR, NR, W], pl.FP32], outs: pl.Out[pl.Tensor[[NR, M, W], pl.FP32]],
             root: pl.Scalar[pl.INT32]):
        row_buf = pld.alloc_window_buffer([1, W], dtype=pl.FP32)
        stage_buf = pld.alloc_window_buffer([pld.world_size(), W], dtype=pl.FP32)
        grid_buf = pld.alloc_window_buffer([pld.world_size(), W], dtype=pl.FP32)
        signal_buf = pld.alloc_window_buffer([pld.world_size(), 1], dtype=pl.INT32)
        for r in pl.range(pld.world_size()):
            orch(x[r], outs[r], pld.window(row_buf, [1, W], dtype=pl.FP32),
                 pld.window(stage_buf, [pld.world_size(), W], dtype=pl.FP32),
                 pld.window(grid_buf, [pld.world_size(), W], dtype=pl.FP32),
                 pld.window(signal_buf, [pld.world_size(), 1], dtype=pl.INT32), root, device=r)
        return outs

    return host


_REDUCE = {pld.ReduceOp.Sum: torch.add, pld.ReduceOp.Prod: torch.mul, pld.ReduceOp.Max: torch.maximum,
           pld.ReduceOp.Min: torch.minimum}
_COLLECTIVES = {op: _collectives(op) for op in _REDUCE}


@settings(max_examples=10, deadline=None)
@given(n=st.integers(2, 5), op=st.sampled_from(list(pld.ReduceOp)), seed=st.integers(0, 2**31 - 1),
       root=st.integers(0, 4))
def test_each_collective_gives_every_rank_its_golden(n, op, seed, root):
    root %= n
    x = torch.randn(n, n, W, generator=torch.Generator().manual_seed(seed))  # x[r]: rank r's rows
    outs = torch.zeros(n, 5 * n, W)
    _COLLECTIVES[op](x, outs, root, config=_config(n))
    for r in range(n):
        reduced = x[r, r].clone()  # own row, then each peer's in rank order
        scattered = x[r, r].clone()
        for p in range(n):
            if p != r:
                reduced = _REDUCE[op](reduced, x[p, p])
                scattered = scattered + x[p, r]
        assert torch.equal(outs[r, 0], reduced)
        assert torch.equal(outs[r, n], x[root, 0])  # the root's row 0
        assert torch.equal(outs[r, 2 * n:3 * n], torch.stack([x[p, p] for p in range(n)]))
        assert torch.equal(outs[r, 3 * n], scattered)
        assert torch.equal(outs[r, 4 * n:], torch.stack([x[p, r] for p in range(n)]))


def test_a_collectives_refusals_are_located():
    @pl.jit.incore
    def ring(d: pl.InOut[pld.DistributedTensor[[1, W], pl.FP32]], s: pl.InOut[pld.DistributedTensor[[2], pl.INT32]]):
        d = pld.tensor.allreduce(d, s, mode="ring")
        return d

    @pl.jit.incore
    def scatter_max(d: pl.InOut[pld.DistributedTensor[[2, W], pl.FP32]],
                    s: pl.InOut[pld.DistributedTensor[[2, 1], pl.INT32]]):
        d = pld.tensor.reduce_scatter(d, s, op=pld.ReduceOp.Max)
        return d

    _refused(ring, _window([1, W]), _window([2], torch.int32), match=r"\[2 \* \(NR - 1\), NR\] signal",
             line_text="pld.tensor.allreduce(")
    _refused(scatter_max, _window([2, W]), _window([2, 1], torch.int32), match="op=pld.ReduceOp.Sum",
             line_text="pld.tensor.reduce_scatter(")


# ----------------------------------------------------------------------------- cross-rank races


@pl.jit.incore
def unsynced_step(
    inp: pl.Tensor[[1, SIZE], pl.FP32],
    out: pl.Out[pl.Tensor[[1, SIZE], pl.FP32]],
    data: pl.InOut[pld.DistributedTensor[[1, SIZE], pl.FP32]],
    signal: pl.InOut[pld.DistributedTensor[[1, 1], pl.INT32]],
) -> pl.Tensor[[1, SIZE], pl.FP32]:
    ctx = pld.get_comm_ctx(data)
    nxt = (pld.rank(ctx) + 1) % pld.nranks(ctx)
    pld.remote_store(pl.load(inp, [0, 0], [1, SIZE]), data, nxt, [0, 0])
    pld.system.notify(signal, peer=nxt, offsets=[0, 0], value=1, op=pld.NotifyOp.Set)
    got = pl.load(data, [0, 0], [1, SIZE])  # (no wait: the row may not have come)
    return pl.store(got, [0, 0], out)


@pl.jit
def unsynced_orch(
    inp: pl.Tensor[[1, SIZE], pl.FP32],
    out: pl.Out[pl.Tensor[[1, SIZE], pl.FP32]],
    data: pl.InOut[pld.DistributedTensor[[1, SIZE], pl.FP32]],
    signal: pl.InOut[pld.DistributedTensor[[1, 1], pl.INT32]],
) -> pl.Tensor[[1, SIZE], pl.FP32]:
    return unsynced_step(inp, out, data, signal)


@pl.jit.host
def unsynced(inputs: pl.Tensor[[NR, 1, SIZE], pl.FP32], outputs: pl.Out[pl.Tensor[[NR, 1, SIZE], pl.FP32]]):
    data_buf = pld.alloc_window_buffer([1, SIZE], dtype=pl.FP32)
    signal_buf = pld.alloc_window_buffer([1, 1], dtype=pl.INT32)
    for r in pl.range(pld.world_size()):
        unsynced_orch(inputs[r], outputs[r], pld.window(data_buf, [1, SIZE], dtype=pl.FP32),
                      pld.window(signal_buf, [1, 1], dtype=pl.INT32), device=r)
    return outputs


@pytest.mark.parametrize("n", [2, 3])
def test_a_remote_store_no_signal_orders_against_the_peers_load_is_a_cross_rank_race_naming_both_lines(n):
    from pypto.cluster.races import CrossRankRace

    x = torch.randn(n, 1, SIZE)
    with pytest.raises(CrossRankRace) as info:
        unsynced(x, torch.zeros_like(x), config=_config(n))
    err = info.value
    store, load = _line(unsynced_step.fn, "pld.remote_store("), _line(unsynced_step.fn, "got = pl.load(")
    # in rank order: with 2 ranks, rank 1's store lands on what rank 0 has loaded; with 3, rank 1
    # loads what rank 0 stored into it (each rank's wait is what is missing)
    first, second, owner = (("load", load, 0), ("remote_store", store, 1), 0) if n == 2 else \
        (("remote_store", store, 0), ("load", load, 1), 1)
    assert err.span.line == second[1]
    assert f"rank {owner}'s copy of window 'data_buf' [0:1, 0:{SIZE}]" in str(err)
    assert f"rank {first[2]}'s {first[0]} at {err.span.file}:{first[1]}" in str(err)
    assert f"rank {second[2]}'s {second[0]} at {err.span.file}:{second[1]}" in str(err)
    assert "waits for that notify" in err.hint


def test_the_swimlane_has_a_process_per_rank_and_an_arrow_from_each_notify_to_the_wait_it_ended(tmp_path):
    import json

    n = 3
    out = torch.zeros(n, 1, 1, dtype=torch.int32)
    report = handshake.compile(config=_config(n)).run(out, 1)
    trace = json.loads(report.write_swimlane(tmp_path / "ranks.json").read_text())["traceEvents"]
    assert {e["args"]["name"] for e in trace if e["name"] == "process_name"} == {f"rank {r}" for r in range(n)}
    slices = [e for e in trace if e["ph"] == "X"]
    assert sorted((e["pid"], e["name"]) for e in slices if e["tid"] == 2) == \
        [(r, f"notify -> rank {(r + 1) % n}") for r in range(n)]
    starts = {e["id"]: e for e in trace if e["ph"] == "s"}
    ends = [e for e in trace if e["ph"] == "f"]
    # rank r's wait was ended by the notify of the rank before it, which started before the wait ended
    assert sorted((starts[e["id"]]["pid"], e["pid"]) for e in ends) == sorted(((r - 1) % n, r) for r in range(n))
    assert all(starts[e["id"]]["ts"] < e["ts"] for e in ends)


# ----------------------------------------------------------------------------- put / get


@pl.jit.incore
def put_get_step(x: pl.Tensor[[2, SIZE], pl.FP32], y: pl.Out[pl.Tensor[[2, SIZE], pl.FP32]],
                 src: pl.InOut[pld.DistributedTensor[[2, SIZE], pl.FP32]],
                 dst: pl.InOut[pld.DistributedTensor[[2, SIZE], pl.FP32]],
                 signal: pl.InOut[pld.DistributedTensor[[2, 1], pl.INT32]]):
    ctx = pld.get_comm_ctx(src)
    me, n = pld.rank(ctx), pld.nranks(ctx)
    src = pl.store(pl.load(x, [0, 0], [2, SIZE]), [0, 0], src)
    nxt, prv = (me + 1) % n, (me + n - 1) % n
    # row 0: pushed whole to the next rank, in chunks; row 1: its second half pulled from the next rank
    pld.tensor.put(dst, peer=nxt, src=src, dst_offsets=[0, 0], src_offsets=[0, 0], shape=[1, SIZE],
                   chunk_rows=1, chunk_cols=16, pipeline=True)
    pld.system.notify(signal, peer=nxt, offsets=[0, 0], value=1, op=pld.NotifyOp.Set)
    pld.system.notify(signal, peer=prv, offsets=[1, 0], value=1, op=pld.NotifyOp.Set)
    pld.system.wait(signal, offsets=[0, 0], expected=1, cmp=pld.WaitCmp.Eq)
    pld.system.wait(signal, offsets=[1, 0], expected=1, cmp=pld.WaitCmp.Eq)
    pld.tensor.get(dst, peer=nxt, src=src, dst_offsets=[1, 0], src_offsets=[1, SIZE // 2], shape=[1, SIZE // 2])
    return pl.store(pl.load(dst, [0, 0], [2, SIZE]), [0, 0], y)


@pl.jit
def put_get_orch(x: pl.Tensor[[2, SIZE], pl.FP32], y: pl.Out[pl.Tensor[[2, SIZE], pl.FP32]],
                 src: pl.InOut[pld.DistributedTensor[[2, SIZE], pl.FP32]],
                 dst: pl.InOut[pld.DistributedTensor[[2, SIZE], pl.FP32]],
                 signal: pl.InOut[pld.DistributedTensor[[2, 1], pl.INT32]]):
    return put_get_step(x, y, src, dst, signal)


@pl.jit.host
def put_get(x: pl.Tensor[[NR, 2, SIZE], pl.FP32], y: pl.Out[pl.Tensor[[NR, 2, SIZE], pl.FP32]]):
    src_buf = pld.alloc_window_buffer([2, SIZE], dtype=pl.FP32)
    dst_buf = pld.alloc_window_buffer([2, SIZE], dtype=pl.FP32)
    signal_buf = pld.alloc_window_buffer([2, 1], dtype=pl.INT32)
    for r in pl.range(pld.world_size()):
        put_get_orch(x[r], y[r], pld.window(src_buf, [2, SIZE], dtype=pl.FP32),
                     pld.window(dst_buf, [2, SIZE], dtype=pl.FP32), pld.window(signal_buf, [2, 1], dtype=pl.INT32),
                     device=r)
    return y


@pytest.mark.parametrize("n", [2, 3, 4])
def test_put_pushes_to_the_next_rank_and_get_pulls_from_it(n):
    x = torch.randn(n, 2, SIZE)
    y = torch.zeros_like(x)
    report = put_get.compile(config=_config(n)).run(x, y)
    for r in range(n):
        assert torch.equal(y[r, 0], x[(r - 1) % n, 0])
        assert torch.equal(y[r, 1, :SIZE // 2], x[(r + 1) % n, 1, SIZE // 2:])
        assert torch.equal(y[r, 1, SIZE // 2:], torch.zeros(SIZE // 2))
    # the put's four chunks and the get, as five transfers
    assert all(sum(e.kind in ("remote_store", "remote_load") for e in report.events if e.rank == r) == 5
               for r in range(n))


def test_put_and_gets_refusals_are_located():
    @pl.jit.incore
    def half(d: pl.InOut[pld.DistributedTensor[[1, W], pl.FP32]], s: pl.InOut[pld.DistributedTensor[[1, W], pl.FP32]]):
        pld.tensor.put(d, peer=1, src=s, dst_offsets=[0, 0])
        return d

    @pl.jit.incore
    def unstaged(d: pl.InOut[pld.DistributedTensor[[1, W], pl.FP32]], s: pl.InOut[pld.DistributedTensor[[1, W], pl.FP32]]):
        pld.tensor.get(d, peer=1, src=s, chunk_rows=1, pipeline=True)
        return d

    _refused(half, _window([1, W]), _window([1, W]), match="together", line_text="pld.tensor.put(")
    _refused(unstaged, _window([1, W]), _window([1, W]), match="pipeline=True", line_text="pld.tensor.get(")


def test_a_worker_of_several_programs_dispatches_each_by_name_and_keeps_windows_unreset_when_asked():
    compiled = handshake.compile(config=_config(2))
    hello = hello_rank.compile(config=_config(2))
    x = torch.randn(2, ROWS, COLS)
    y = torch.zeros_like(x)
    out = torch.zeros(2, 1, 1, dtype=torch.int32)
    with compiled.prepare(extra_compiled=[hello], persistent=True, reset_persistent_windows=False) as rt:
        with pytest.raises(TypeError, match="rt.run"):
            rt(out, 1)
        rt.run(hello, x, y)
        assert torch.equal(y, x + torch.arange(2.0).view(2, 1, 1))
        rt.run(compiled, out, 1)
        assert out.flatten().tolist() == [2, 1]
        # the retained cells hold the first dispatch's tags (zeroed, rank 1's could never reach 2): rank 0
        # finds its cell at 2 already and reads it, rank 1 waits for rank 0's notify, 1 + 1
        rt.run(compiled, out, 2)
        assert out.flatten().tolist() == [2, 2]
        with pytest.raises(ValueError, match="extra_compiled"):
            rt.run(allreduce.compile(config=_config(2)), torch.zeros(2, 1, SIZE), torch.zeros(2, 1, SIZE))


# ----------------------------------------------------------------------------- ranks on the simulated chip


def _both(host, n: int, make, *scalars):
    """``host`` run on ref and on a2a3sim with the tensors ``make()`` gives: (each's tensors, report)."""
    out = {}
    for platform in ("ref", "a2a3sim"):
        tensors = make()
        out[platform] = tensors, host.compile(config=_config(n, platform)).run(*tensors, *scalars)
    return out


def _programs(n: int, seed: int, op, root: int) -> dict:
    """name -> (host, the tensors it runs on, made afresh, its scalars)."""
    return {
        "mesh allreduce": (allreduce, lambda: (torch.randn(n, 1, SIZE, generator=torch.Generator().manual_seed(seed)),
                                               torch.zeros(n, 1, SIZE)), ()),
        "notify ring": (handshake, lambda: (torch.zeros(n, 1, 1, dtype=torch.int32),), (1,)),
        "remote store then notify": (shift, lambda: (torch.randn(n, 1, SIZE,
                                                                 generator=torch.Generator().manual_seed(seed)),
                                                     torch.zeros(n, 1, SIZE)), ()),
        "put and get": (put_get, lambda: (torch.randn(n, 2, SIZE, generator=torch.Generator().manual_seed(seed)),
                                          torch.zeros(n, 2, SIZE)), ()),
        "collectives": (_COLLECTIVES[op], lambda: (torch.randn(n, n, W, generator=torch.Generator().manual_seed(seed)),
                                                   torch.zeros(n, 5 * n, W)), (root % n,)),
    }


@settings(max_examples=12, deadline=None)
@given(n=st.integers(2, 4), seed=st.integers(0, 2**31 - 1), op=st.sampled_from(list(pld.ReduceOp)),
       root=st.integers(0, 3), which=st.sampled_from(["mesh allreduce", "notify ring", "remote store then notify",
                                                      "put and get", "collectives"]))
def test_ranks_on_the_simulated_chip_give_refs_bits_and_their_waits_end_after_the_notifies_that_end_them(
        n, seed, op, root, which):
    host, make, scalars = _programs(n, seed, op, root)[which]
    runs = _both(host, n, make, *scalars)
    (ref_tensors, ref), (sim_tensors, sim) = runs["ref"], runs["a2a3sim"]
    for a, b in zip(ref_tensors, sim_tensors):
        assert torch.equal(a, b)
    # the same acts on each rank, each on the interconnect's clock
    kinds = lambda report, r: sorted(e.kind for e in report.events if e.rank == r)  # noqa: E731
    assert all(kinds(ref, r) == kinds(sim, r) for r in range(n))
    landed = {e.ident: e.end for e in sim.events if e.kind == "notify"}
    assert all(e.end >= landed[e.cause] for e in sim.events if e.kind == "wait" and e.cause >= 0)
    # a rank's time holds its chip's (every dispatch's cycles) and the acts that held it (a notify's end
    # is its landing at the peer, a remote store's its bytes' there: the rank went on)
    for rank in sim.ranks:
        chip = sum(rep.cycles for r, rep in sim.reports if r == rank.rank)
        assert rank.clock.now >= chip > 0 and rank.clock.now >= max(
            (e.end for e in sim.events if e.rank == rank.rank and e.kind in ("wait", "remote_load")), default=0)


RW = pl.dynamic("RW")
ROUNDS = pl.dynamic("ROUNDS")


def _ring_allreduce(op):
    @pl.jit.incore
    def ring_step(x: pl.Tensor[[1, RW], pl.FP32], y: pl.Out[pl.Tensor[[1, RW], pl.FP32]],
                  data: pl.InOut[pld.DistributedTensor[[1, RW], pl.FP32]],
                  signal: pl.InOut[pld.DistributedTensor[[ROUNDS, NR], pl.INT32]]):
        data = pl.store(pl.load(x, [0, 0], [1, RW]), [0, 0], data)
        data = pld.tensor.allreduce(data, signal, op=op, mode="ring")
        return pl.store(pl.load(data, [0, 0], [1, RW]), [0, 0], y)

    @pl.jit
    def ring_orch(x: pl.Tensor[[1, RW], pl.FP32], y: pl.Out[pl.Tensor[[1, RW], pl.FP32]],
                  data: pl.InOut[pld.DistributedTensor[[1, RW], pl.FP32]],
                  signal: pl.InOut[pld.DistributedTensor[[ROUNDS, NR], pl.INT32]]):
        return ring_step(x, y, data, signal)

    @pl.jit.host
    def ring(x: pl.Tensor[[NR, 1, RW], pl.FP32], y: pl.Out[pl.Tensor[[NR, 1, RW], pl.FP32]], width: pl.Scalar[pl.INT32]):
        data_buf = pld.alloc_window_buffer([1, width], dtype=pl.FP32)
        signal_buf = pld.alloc_window_buffer([2 * (pld.world_size() - 1), pld.world_size()], dtype=pl.INT32)
        for r in pl.range(pld.world_size()):
            ring_orch(x[r], y[r], pld.window(data_buf, [1, width], dtype=pl.FP32),
                      pld.window(signal_buf, [2 * (pld.world_size() - 1), pld.world_size()], dtype=pl.INT32),
                      device=r)
        return y

    return ring


_RINGS = {op: _ring_allreduce(op) for op in _REDUCE}


@settings(max_examples=8, deadline=None, phases=[Phase.explicit, Phase.generate])
@given(n=st.integers(2, 4), width=st.sampled_from([8, 24, 64]), op=st.sampled_from(list(pld.ReduceOp)),
       seed=st.integers(0, 2**31 - 1))
def test_a_ring_allreduce_gives_every_rank_each_segment_combined_around_the_ring_on_both_platforms(n, width, op, seed):
    x = torch.randn(n, 1, width, generator=torch.Generator().manual_seed(seed))
    runs = _both(_RINGS[op], n, lambda: (x.clone(), torch.zeros_like(x)), width)
    (_, ref_y), _ = runs["ref"]
    (_, sim_y), _ = runs["a2a3sim"]
    assert torch.equal(ref_y, sim_y)
    # segment k (balanced over the flat row) is combined from rank k on, around the ring
    flat = x.reshape(n, -1)
    want = torch.empty(width)
    bounds = [k * width // n for k in range(n + 1)]
    for k in range(n):
        lo, hi = bounds[k], bounds[k + 1]
        acc = flat[k, lo:hi].clone()
        for j in range(1, n):
            acc = _REDUCE[op](flat[(k + j) % n, lo:hi], acc)
        want[lo:hi] = acc
    assert all(torch.equal(ref_y[r, 0], want) for r in range(n))
