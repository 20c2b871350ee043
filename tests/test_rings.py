"""The cross-core ring of a mixed scope: a crossing staged on each trip of a loop takes
slot ``trip % slot_num`` of a GM ring, so the cube runs at most ``slot_num`` tiles ahead of
the vector cores (per-slot flags: the producer waits for its slot's reads, the consumer for
its writes); the ring's slots are reserved in each vector core's UB and count against it,
and a ring too deep for Vec is the reference's error with both levers."""

import pytest
import torch

import pypto.language as pl
from pypto.errors import MemorySpaceError
from pypto.runtime import RunConfig
from helpers import assert_cross_core_flows

M, K, N = 128, 32, 128
CG = pl.Level.CORE_GROUP


def banded(slots, mode=pl.SplitMode.UP_DOWN):
    """Eight bands: a short matmul each, then long vector work on what it gave."""

    @pl.jit
    def bands(a: pl.Tensor, b: pl.Tensor, bias: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=CG, optimizations=[pl.split(mode), pl.cross_core_slot(slot_num=slots)]):
            for i in pl.range(8):
                acc = pl.matmul(a[i * 16:(i + 1) * 16, :], b, out_dtype=pl.FP32)
                y = pl.exp(pl.exp(pl.exp(pl.add(acc, bias[i * 16:(i + 1) * 16, :]))))
                out[i * 16:(i + 1) * 16, :] = pl.exp(pl.exp(pl.exp(y)))
        return out

    return bands


def operands(m=M, k=K, n=N):
    g = torch.Generator().manual_seed(7)
    return (torch.randn(m, k, generator=g).half(), torch.randn(k, n, generator=g).half(),
            torch.randn(m, n, generator=g) * 0.01)


def run(kernel, *args, **config):
    out = torch.zeros(M, N)
    report = kernel.compile(*args, out, config=RunConfig(**config)).run(*args, out)
    return report, out


def on_both(kernel, a, b, rows: int) -> torch.Tensor:
    """The kernel's out on ref and on a2a3sim, which agree bit for bit."""
    got = []
    for platform in ("ref", "a2a3sim"):
        out = torch.zeros(rows, N)
        kernel.compile(a, b, out, config=RunConfig(platform=platform)).run(a, b, out)
        got.append(out)
    assert torch.equal(*got)
    return got[1]


def in_flight(report) -> list[int]:
    """At each cube store into the ring: how many tiles it had stored that a vector core
    had not yet loaded (the slowest lane's count)."""
    events = [e for e in report.events if e.kind == "instr"]
    stores = sorted(e.start for e in events if e.core.startswith("aic") and e.name.startswith("FIXSTORE"))
    loads = {c: sorted(e.end for e in events if e.core == c and e.name.startswith("TLOAD acc_gm"))
             for c in {e.core for e in events if e.core.startswith("aiv")}}
    assert len(loads) == 2 and all(len(v) == len(stores) == 8 for v in loads.values())
    return [k - min(sum(t <= s for t in ends) for ends in loads.values()) for k, s in enumerate(stores)]


@pytest.mark.parametrize("slots", [1, 2, 3])
def test_the_cube_runs_at_most_slot_num_tiles_ahead(slots):
    a, b, bias = operands()
    report, out = run(banded(slots), a, b, bias)
    ahead = in_flight(report)
    assert max(ahead) == slots - 1  # the ring full, never past it: slot_num tiles in flight at most
    _, want = run(banded(slots), a, b, bias, platform="ref")
    assert torch.equal(out, want)


def test_the_ring_is_reserved_in_each_vector_cores_ub_below_its_tiles(tmp_path):
    a, b, bias = operands()
    out = torch.zeros(M, N)
    compiled = banded(3).compile(a, b, bias, out)
    text = compiled.lowered.as_python()
    lane_tile = 8 * N * 4  # a [16, 128] FP32 crossing, halved by rows
    assert f'pl.system.reserve_buffer(name="acc_gm", size={3 * lane_tile}, base=0, slot_num=3)' in text
    kernel = next(iter(compiled.kernels.values()))
    aiv = next(p for p in kernel.programs if p.core.value == "aiv")
    assert min(alloc.addr for alloc in aiv.allocs) >= 3 * lane_tile  # tiles go above the ring
    assert kernel.lanes == 2


def test_the_ring_in_the_l0_trace_shows_the_cluster_and_its_flags(tmp_path):
    import json

    a, b, bias = operands()
    report, _ = run(banded(2), a, b, bias, enable_l0_trace=True, output_dir=tmp_path)
    trace = json.loads((report.trace_dir / "simulator" / "trace.json").read_text())
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    cores = {e["args"]["name"] for e in events if e.get("name") == "process_name"}
    assert len(cores) == 3  # the cube core and both vector cores of the cluster
    flags = [e for e in events if e.get("name", "").startswith(("SET_FLAG", "WAIT_FLAG"))]
    assert flags


def test_a_ring_deeper_than_vec_holds_is_the_references_error_with_both_levers():
    """Slots are cut down to the block a pop carries, but not below 512 B: 400 of them
    outrun Vec whatever the blocks."""
    @pl.jit
    def deep(a: pl.Tensor, b: pl.Tensor, bias: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=CG, optimizations=[pl.split(pl.SplitMode.UP_DOWN), pl.cross_core_slot(slot_num=400)]):
            for i in pl.range(2):
                acc = pl.matmul(a[i * 64:(i + 1) * 64, :], b, out_dtype=pl.FP32)
                out[i * 64:(i + 1) * 64, :] = pl.add(acc, bias[i * 64:(i + 1) * 64, :])
        return out

    g = torch.Generator().manual_seed(1)
    a, b = torch.randn(128, 256, generator=g).half(), torch.randn(256, 128, generator=g).half()
    with pytest.raises(MemorySpaceError) as info:
        deep(a, b, torch.zeros(128, 128), torch.zeros(128, 128))
    message = info.value.message
    assert message.startswith("Vec buffer usage (") and "exceeds platform limit (188416 bytes)" in message
    assert f"The first {400 * 32 * 128 * 4} bytes of that space are reserved by system.reserve_buffer" in message
    assert "pl.cross_core_slot(slot_num=N)" in message and "shrink the tile that crosses" in message
    span = info.value.span
    assert span.file == __file__ and "pl.at(" in (span.text or "")  # the scope that asks for the ring


@pl.jit
def exp_of_matmul(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=CG):
        c[:] = pl.exp(pl.matmul(a, b))
    return c


@pl.jit
def exp_of_matmuls(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=CG, optimizations=[pl.cross_core_slot(slot_num=3)]):
        for i in pl.range(2):
            c[i * 150:(i + 1) * 150, :] = pl.exp(pl.matmul(a[i * 150:(i + 1) * 150, :], b))
    return c


def _ring(compiled):
    import re

    text = compiled.lowered.as_python()
    found = re.findall(r"pl\.system\.reserve_buffer\(name=\"\w+\", size=(\d+), base=0(?:, slot_num=(\d+))?\)", text)
    assert len(found) == 1, text
    return int(found[0][0]), int(found[0][1] or 1)  # (slot_num=1 is the default, not printed)


@pytest.mark.parametrize("kernel,m,depth", [(exp_of_matmul, 128, 1), (exp_of_matmul, 300, 1),
                                            (exp_of_matmuls, 300, 3)])
def test_a_crossing_larger_than_vec_crosses_in_slots_of_the_blocks_a_pop_carries(kernel, m, depth):
    """A whole 128x256 FP32 product is 128 KiB, two of them more than Vec: the ring has the
    depth of its GM ring (one slot for a crossing made once a launch) and its slots hold
    the block the vector cores load at a time, so the vector work fits beside them."""
    n = 256 if m == 128 else 1031
    g = torch.Generator().manual_seed(3)
    a, b = (torch.randn(m, 64, generator=g) * 0.1).half(), (torch.randn(64, n, generator=g) * 0.1).half()
    got = []
    for platform in ("ref", "a2a3sim"):
        c = torch.zeros(m, n)
        compiled = kernel.compile(a, b, c, config=RunConfig(platform=platform))
        compiled.run(a, b, c)
        got.append(c)
    assert torch.equal(*got)
    torch.testing.assert_close(got[1], torch.exp(a.float() @ b.float()), rtol=1e-5, atol=1e-5)
    size, slots = _ring(compiled)
    assert slots == depth and size % slots == 0
    assert size // slots < m * n * 4  # a block, not the whole crossing
    kernel_ = next(iter(compiled.kernels.values()))
    aiv = next(p for p in kernel_.programs if p.core.value == "aiv")
    assert min(alloc.addr for alloc in aiv.allocs) >= size  # tiles go above the ring


def test_the_blocks_of_a_spmd_ring_rotate_their_own_slots():
    m = 64

    @pl.jit
    def spmd_bands(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
        for blk in pl.spmd(2, optimizations=[pl.split(pl.SplitMode.LEFT_RIGHT)]):
            for i in pl.range(4):
                rows = blk * m + i * 16
                acc = pl.matmul(a[rows:rows + 16, :], b, out_dtype=pl.FP32)
                out[rows:rows + 16, :] = pl.exp(pl.mul(acc, 0.1))
        return out

    a, b, _ = operands(2 * m)
    out = on_both(spmd_bands, a, b, 2 * m)
    torch.testing.assert_close(out, torch.exp((a.float() @ b.float()) * 0.1), rtol=1e-2, atol=1e-2)


def test_clean_sim_trace_draws_the_cross_core_flows_of_a_split_kernel(tmp_path):
    a, b, bias = operands()
    report, _ = run(banded(2), a, b, bias, enable_l0_trace=True, output_dir=tmp_path / "build")
    assert_cross_core_flows(report.trace_dir, tmp_path / "clean")


@pytest.mark.parametrize("trips, slots, mode", [(2, 2, ""), (2, 3, "pl.split(pl.SplitMode.NONE), "), (3, 4, ""),
                                                (2, 4, "pl.split(pl.SplitMode.UP_DOWN), ")])
def test_a_ring_as_deep_as_the_loop_or_deeper_needs_no_more_flags_than_it_sets(tmp_path, trips, slots, mode):
    from helpers import load_kernel

    source = tmp_path / "short.py"
    source.write_text(f"""import pypto.language as pl


@pl.jit
def short(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP, optimizations=[{mode}pl.cross_core_slot(slot_num={slots})]):
        for i in pl.range({trips}):
            acc = pl.matmul(a[i * 16:(i + 1) * 16, :], b, out_dtype=pl.FP32)
            out[i * 16:(i + 1) * 16, :] = pl.exp(pl.mul(acc, 0.1))
    return out
""")
    short = load_kernel(source, "short")
    a, b, _ = operands(m=16 * trips)
    out = on_both(short, a, b, 16 * trips)
    torch.testing.assert_close(out, torch.exp((a.float() @ b.float()) * 0.1), rtol=1e-2, atol=1e-2)
