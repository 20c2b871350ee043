"""Many-chip figures: an 8-rank ring allreduce of 4 MB a rank, and an 8-rank all-to-all of
the same bytes, written in pld's primitives (remote stores, notify, wait) and run on the
simulated cluster (platform ``ref``: each rank's interpreter, the interconnect model of
the SoC table timing its transfers and signals). Prints each rank's simulated time, the
round's (the slowest rank's), the link-bandwidth bound — ring: 2(n-1)/n · bytes / link
bandwidth; all-to-all over the full mesh: (n-1)/n · bytes / link bandwidth, each pair on
its own link — and the wall seconds.

    python bench/distributed.py [--ranks N] [--mb MB]
"""

from __future__ import annotations

import argparse
import time

import torch

import pypto.language as pl
import pypto.language.distributed as pld
from pypto.backend import A2A3
from pypto.ir.distributed_compiled_program import DistributedConfig
from pypto.runtime import RunConfig

NR = pl.dynamic("NR")  # ranks
ROWS = pl.dynamic("ROWS")  # rows of a rank's data: NR chunks of CHUNK rows
COLS = 1024
BLOCK = 16  # rows a tile moves: 64 KB of FP32


@pl.jit.incore
def ring_allreduce_step(
    x: pl.Tensor[[ROWS, COLS], pl.FP32],
    out: pl.Out[pl.Tensor[[ROWS, COLS], pl.FP32]],
    recv: pl.InOut[pld.DistributedTensor[[ROWS, COLS], pl.FP32]],
    signal: pl.InOut[pld.DistributedTensor[[NR, 2], pl.INT32]],
    chunk: pl.Scalar[pl.INT32],
) -> pl.Tensor[[ROWS, COLS], pl.FP32]:
    ctx = pld.get_comm_ctx(recv)
    me = pld.rank(ctx)
    n = pld.nranks(ctx)
    nxt = (me + 1) % n
    for b in pl.range(0, chunk * n, BLOCK):  # out starts as this rank's x
        pl.store(pl.load(x, [b, 0], [BLOCK, COLS]), [b, 0], out)
    # reduce-scatter: at step s, send chunk (me - s) to the next rank, which adds it to its own
    for s in pl.range(n - 1):
        c = (me - s + n) % n
        for b in pl.range(0, chunk, BLOCK):
            pld.remote_store(pl.load(out, [c * chunk + b, 0], [BLOCK, COLS]), recv, nxt, [c * chunk + b, 0])
        pld.system.notify(signal, peer=nxt, offsets=[s, 0], value=1, op=pld.NotifyOp.Set)
        pld.system.wait(signal, offsets=[s, 0], expected=1, cmp=pld.WaitCmp.Eq)
        r = (me - s - 1 + n) % n
        for b in pl.range(0, chunk, BLOCK):
            acc = pl.add(pl.load(out, [r * chunk + b, 0], [BLOCK, COLS]),
                         pl.load(recv, [r * chunk + b, 0], [BLOCK, COLS]))
            pl.store(acc, [r * chunk + b, 0], out)
    # allgather: at step s, send the reduced chunk (me + 1 - s) on; the next rank keeps it
    for s in pl.range(n - 1):
        c = (me + 1 - s + n) % n
        for b in pl.range(0, chunk, BLOCK):
            pld.remote_store(pl.load(out, [c * chunk + b, 0], [BLOCK, COLS]), recv, nxt, [c * chunk + b, 0])
        pld.system.notify(signal, peer=nxt, offsets=[s, 1], value=1, op=pld.NotifyOp.Set)
        pld.system.wait(signal, offsets=[s, 1], expected=1, cmp=pld.WaitCmp.Eq)
        r = (me - s + n) % n
        for b in pl.range(0, chunk, BLOCK):
            pl.store(pl.load(recv, [r * chunk + b, 0], [BLOCK, COLS]), [r * chunk + b, 0], out)
    return out


@pl.jit.incore
def all_to_all_step(
    x: pl.Tensor[[ROWS, COLS], pl.FP32],
    out: pl.Out[pl.Tensor[[ROWS, COLS], pl.FP32]],
    recv: pl.InOut[pld.DistributedTensor[[ROWS, COLS], pl.FP32]],
    signal: pl.InOut[pld.DistributedTensor[[NR, 2], pl.INT32]],
    chunk: pl.Scalar[pl.INT32],
) -> pl.Tensor[[ROWS, COLS], pl.FP32]:
    ctx = pld.get_comm_ctx(recv)
    me = pld.rank(ctx)
    n = pld.nranks(ctx)
    # chunk p goes to rank p, into its slot for this rank: block by block to every peer in
    # turn, so that all the links stream at once
    for b in pl.range(0, chunk, BLOCK):
        for k in pl.range(1, n):
            p = (me + k) % n
            pld.remote_store(pl.load(x, [p * chunk + b, 0], [BLOCK, COLS]), recv, p, [me * chunk + b, 0])
    for k in pl.range(1, n):
        p = (me + k) % n
        pld.system.notify(signal, peer=p, offsets=[me, 0], value=1, op=pld.NotifyOp.Set)
    for b in pl.range(0, chunk, BLOCK):  # its own chunk stays
        pl.store(pl.load(x, [me * chunk + b, 0], [BLOCK, COLS]), [me * chunk + b, 0], out)
    for k in pl.range(1, n):
        p = (me + k) % n
        pld.system.wait(signal, offsets=[p, 0], expected=1, cmp=pld.WaitCmp.Eq)
        for b in pl.range(0, chunk, BLOCK):
            pl.store(pl.load(recv, [p * chunk + b, 0], [BLOCK, COLS]), [p * chunk + b, 0], out)
    return out


def _driver(step):
    """The one driver of a collective step: its per-device wrapper, dispatched by the host
    to every rank with the rank's rows, a receive window of a rank's bytes and a signal of
    two lanes a rank."""

    @pl.jit
    def rank_program(
        x: pl.Tensor[[ROWS, COLS], pl.FP32],
        out: pl.Out[pl.Tensor[[ROWS, COLS], pl.FP32]],
        recv: pl.InOut[pld.DistributedTensor[[ROWS, COLS], pl.FP32]],
        signal: pl.InOut[pld.DistributedTensor[[NR, 2], pl.INT32]],
        chunk: pl.Scalar[pl.INT32],
    ) -> pl.Tensor[[ROWS, COLS], pl.FP32]:
        return step(x, out, recv, signal, chunk)

    @pl.jit.host
    def host(x: pl.Tensor[[NR, ROWS, COLS], pl.FP32], out: pl.Out[pl.Tensor[[NR, ROWS, COLS], pl.FP32]],
             chunk: pl.Scalar[pl.INT32]):
        recv_buf = pld.alloc_window_buffer(chunk * pld.world_size() * COLS * pl.FP32.get_byte())
        signal_buf = pld.alloc_window_buffer([pld.world_size(), 2], dtype=pl.INT32)
        for r in pl.range(pld.world_size()):
            recv = pld.window(recv_buf, [chunk * pld.world_size(), COLS], dtype=pl.FP32)
            signal = pld.window(signal_buf, [pld.world_size(), 2], dtype=pl.INT32)
            rank_program(x[r], out[r], recv, signal, chunk, device=r)
        return out

    return host


ring_allreduce = _driver(ring_allreduce_step)
all_to_all = _driver(all_to_all_step)


def _ring_golden(x: torch.Tensor, chunk: int) -> torch.Tensor:
    """Each chunk summed in the ring's order: starting at the rank after the chunk's owner."""
    n = x.shape[0]
    total = torch.empty_like(x[0])
    for c in range(n):
        rows = slice(c * chunk, (c + 1) * chunk)
        acc = x[c, rows].clone()  # chunk c starts at rank c, then ranks c+1, c+2, ... add theirs
        for k in range(1, n):
            acc = x[(c + k) % n, rows] + acc
        total[rows] = acc
    return total.expand_as(x)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ranks", type=int, default=8)
    ap.add_argument("--mb", type=float, default=4.0, help="MB of FP32 data a rank holds")
    args = ap.parse_args(argv)
    n = args.ranks
    chunk = max(BLOCK, round(args.mb * 2**20 / 4 / COLS / n / BLOCK) * BLOCK)
    rows = chunk * n
    nbytes = rows * COLS * 4
    config = RunConfig(platform="ref", distributed_config=DistributedConfig(device_ids=list(range(n))))
    link = A2A3.links.link_bytes_per_cycle * A2A3.chip.core_hz  # bytes a second
    x = torch.randn(n, rows, COLS, generator=torch.Generator().manual_seed(0))
    print(f"{n} ranks, {nbytes / 2**20:.2f} MB a rank ({rows} x {COLS} FP32), link {link / 1e9:.1f} GB/s, "
          f"latency {A2A3.links.latency * 1e6 / A2A3.chip.core_hz:.2f} us (pypto.backend.soc.Interconnect)")
    for name, host, bound, golden in (
            ("ring allreduce", ring_allreduce, 2 * (n - 1) / n * nbytes / link, _ring_golden(x, chunk)),
            ("all-to-all", all_to_all, (n - 1) / n * nbytes / link / (n - 1),
             x.view(n, n, chunk, COLS).transpose(0, 1).reshape(n, rows, COLS))):
        out = torch.zeros_like(x)
        began = time.perf_counter()
        report = host.compile(config=config).run(x, out, chunk)
        wall = time.perf_counter() - began
        ok = torch.equal(out, golden)
        print(f"\n{name}: {report.eff_us:.1f} us simulated, bound {bound * 1e6:.1f} us "
              f"({report.eff_us / (bound * 1e6):.2f}x), {wall:.1f} s wall, {'OK' if ok else 'WRONG'}")
        for line in str(report).splitlines()[1:]:
            print("  " + line)


if __name__ == "__main__":
    main()
