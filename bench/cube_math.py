"""The cube's arithmetic (``pypto.sim.ops.cube_math``): the time of ``numerics.matmul`` under the
contract it replaced (fp32 accumulation one k at a time: a chain of K dependent element-wise
passes over the output) and under the cube's (fractal blocks of K, each exact and rounded
once, added in K order), for [128, K] @ [K, 128]; the share of blocks each way of computing a
block takes on randn operands; and the wall time of a matmul-heavy kernel end to end on both
platforms under each contract.

    python bench/cube_math.py [--repeat N] [--quick]

Timings are CPU seconds of this process (``time.process_time``: on one torch thread, the
work itself; a shared host's load, printed beside them, inflates wall time many times
over), the least and the median of ``--repeat`` runs, the two contracts' runs interleaved.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from contextlib import contextmanager

import torch

import pypto.language as pl
from pypto.runtime import RunConfig
from pypto.sim.ops import cube_math
from pypto.sim.ops import numerics as num

DTYPES = (torch.float16, torch.bfloat16, torch.float32)


def k_order_matmul(a, b, acc=None):
    """The contract this one replaced, as numerics.matmul computed it (before 2026-12-07):
    acc + a @ b accumulated in fp32 one k at a time, each product rounded to fp32."""
    m, n = a.shape[0], b.shape[1]
    if not a.dtype.is_floating_point:
        out = a.to(torch.int64) @ b.to(torch.int64)
        return (out if acc is None else out + acc.to(torch.int64)).to(torch.int32)
    out = torch.zeros(m, n) if acc is None else acc.to(torch.float32).clone()
    a32, b32 = a.to(torch.float32), b.to(torch.float32)
    if a.dtype == b.dtype == torch.float16:  # an fp16 product is exact in fp32: a fused add is the same
        for column, row in zip(a32.T.contiguous().unsqueeze(2).unbind(0), b32.unbind(0)):
            out.addcmul_(column, row)
        return out
    for i in range(a.shape[1]):
        out = out + a32[:, i:i + 1] * b32[i:i + 1, :]
    return out


def k_order_batch(a, b, acc=None):
    if a.dim() == b.dim() == 2:
        return k_order_matmul(a, b, acc)
    batch = torch.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    a = a.expand(*batch, *a.shape[-2:]).reshape(-1, *a.shape[-2:])
    b = b.expand(*batch, *b.shape[-2:]).reshape(-1, *b.shape[-2:])
    pages = acc.reshape(-1, *acc.shape[-2:]) if acc is not None else [None] * a.shape[0]
    out = [k_order_matmul(x, y, c) for x, y, c in zip(a, b, pages)]
    return torch.stack(out).reshape(*batch, a.shape[-2], b.shape[-1])


@contextmanager
def contract(name: str):
    """numerics.matmul / batch_matmul as ``name`` says ("k-order": the old contract;
    "blocks": the cube's), for the interpreter and the simulator alike."""
    saved = num.matmul, num.batch_matmul
    if name == "k-order":
        num.matmul, num.batch_matmul = num.arith(k_order_matmul), num.arith(k_order_batch)
    try:
        yield
    finally:
        num.matmul, num.batch_matmul = saved


def cpu_samples(fns, repeat: int) -> list[list[float]]:
    """The CPU seconds of ``repeat`` calls of each of ``fns``, interleaved (a, b, a, b, ...)."""
    samples = [[] for _ in fns]
    for _ in range(repeat):
        for fn, times in zip(fns, samples):
            began = time.process_time()
            fn()
            times.append(time.process_time() - began)
    return samples


def _ms(times) -> str:
    return f"{min(times) * 1e3:>8.2f} {statistics.median(times) * 1e3:>8.2f}"


def _load() -> str:
    return "load average {:.1f} {:.1f} {:.1f}".format(*os.getloadavg())


def numerics_table(repeat: int, ks) -> None:
    print(f"numerics.matmul [128, K] @ [K, 128]: CPU ms, least and median of {repeat} ({_load()})")
    print(f"{'dtype':>9} {'K':>6} {'k-order':>17} {'blocks':>17} {'speedup':>8}")
    g = torch.Generator().manual_seed(0)
    for dtype in DTYPES:
        for k in ks:
            a, b = torch.randn(128, k, generator=g).to(dtype), torch.randn(k, 128, generator=g).to(dtype)
            old, new = cpu_samples([lambda: num.arith(k_order_matmul)(a, b), lambda: num.matmul(a, b)], repeat)
            print(f"{str(dtype).removeprefix('torch.'):>9} {k:>6} {_ms(old)} {_ms(new)} "
                  f"{min(old) / min(new):>7.1f}x")


def tiers_table(k: int) -> None:
    print(f"\nblocks of randn [128, {k}] @ [{k}, 128] by how they are computed (share of all)")
    g = torch.Generator().manual_seed(1)
    print(f"{'dtype':>9} {'exact':>9} {'cell':>9} {'fallback':>9}")
    for dtype in DTYPES:
        a, b = torch.randn(128, k, generator=g).to(dtype), torch.randn(k, 128, generator=g).to(dtype)
        tiers = cube_math.block_tiers(a, b)
        total = sum(tiers.values())
        print(f"{str(dtype).removeprefix('torch.'):>9} " + " ".join(
            f"{tiers[t] / total:>9.2e}" for t in ("exact", "cell", "fallback")))


@pl.jit
def gemm(x: pl.Tensor, w: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out = pl.assemble(out, pl.matmul(x, w, out_dtype=pl.FP32), [0, 0])
    return out


def end_to_end(repeat: int, m: int, k: int, n: int) -> None:
    print(f"\n[{m}, {k}] @ [{k}, {n}] bf16 -> fp32, one pl.matmul: CPU s of a run (compiled once), least and "
          f"median of {repeat} ({_load()})")
    g = torch.Generator().manual_seed(2)
    x, w = torch.randn(m, k, generator=g).bfloat16(), torch.randn(k, n, generator=g).bfloat16()
    print(f"{'platform':>9} {'k-order':>17} {'blocks':>17} {'speedup':>8} {'MMADs':>6}")
    for platform in ("ref", "a2a3sim"):
        out = torch.zeros(m, n)
        compiled = gemm.compile(x, w, out, config=RunConfig(platform=platform))
        times = {}
        for name in ("k-order", "blocks"):
            with contract(name):
                times[name] = cpu_samples([lambda: compiled.run(x, w, out)], repeat)[0]
        report = compiled.run(x, w, out)
        mmads = sum(1 for e in getattr(report, "events", ()) if e.name.startswith("MMAD")) or "-"
        print(f"{platform:>9} {min(times['k-order']):>8.3f} {statistics.median(times['k-order']):>8.3f} "
              f"{min(times['blocks']):>8.3f} {statistics.median(times['blocks']):>8.3f} "
              f"{min(times['k-order']) / min(times['blocks']):>7.1f}x {mmads:>6}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="small sizes (a smoke run)")
    args = parser.parse_args()
    with num.one_thread():
        numerics_table(args.repeat, (128, 512) if args.quick else (128, 512, 2048, 8192))
        tiers_table(512 if args.quick else 4096)
        end_to_end(max(1, args.repeat // 2), 16, 1024 if args.quick else 5120, 256 if args.quick else 1024)


if __name__ == "__main__":
    main()
