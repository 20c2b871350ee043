"""Memory and time of long loops on a2a3sim, by trip count: the steady-loop fast path keeps
nothing per trip (closed forms), so its peak memory does not grow with the count.

    python bench/trip_counts.py [--trips 1000,1000000,2147483647] [--cases same_place,...]

Each (case, trip count) runs in a process of its own, so its peak resident size
(``ru_maxrss``) is its own; ``tracemalloc`` measures the Python objects the run allocates
(compiled beforehand). The run's count is a pl.Scalar argument: one compile serves every
count. Cases:

    same_place   a tile loaded and stored to one place each trip (every trip alike: the data
                 settles after one, however many follow)
    rotating     windows (i % 4) * 8: alike every four trips (settles after a period)
    carried_max  a running maximum of rotating windows, stored after the loop (settles)
    carried_add  acc = acc + 1.0 in FP32 (settles where fp32 stops counting, 2**24 trips)
    early_oob    a load moving past its tensor at trip 8: refused as ref refuses it
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
import tracemalloc

import torch

import pypto
import pypto.language as pl
from pypto.runtime import RunConfig


@pl.jit
def same_place(a: pl.Tensor, out: pl.Out[pl.Tensor], n: pl.Scalar[pl.INDEX]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(n):
            pl.store(pl.exp(pl.load(a, [0, 0], [16, 64])), [0, 0], out)
    return out


@pl.jit
def rotating(a: pl.Tensor, out: pl.Out[pl.Tensor], n: pl.Scalar[pl.INDEX]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(n):
            pl.store(pl.exp(pl.load(a, [(i % 4) * 8, 0], [8, 64])), [(i % 4) * 8, 0], out)
    return out


@pl.jit
def carried_max(a: pl.Tensor, out: pl.Out[pl.Tensor], n: pl.Scalar[pl.INDEX]):
    with pl.at(level=pl.Level.CORE_GROUP):
        acc = pl.load(a, [0, 0], [8, 64])
        for i in pl.range(n):
            acc = pl.maximum(acc, pl.load(a, [(i % 4) * 8, 0], [8, 64]))
        pl.store(acc, [0, 0], out)
    return out


@pl.jit
def carried_add(a: pl.Tensor, out: pl.Out[pl.Tensor], n: pl.Scalar[pl.INDEX]):
    with pl.at(level=pl.Level.CORE_GROUP):
        acc = pl.load(a, [0, 0], [8, 64])
        for i in pl.range(n):
            acc = pl.adds(acc, 1.0)
        pl.store(acc, [0, 0], out)
    return out


@pl.jit
def early_oob(a: pl.Tensor, out: pl.Out[pl.Tensor], n: pl.Scalar[pl.INDEX]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(n):
            pl.store(pl.load(a, [i * 8, 0], [8, 64]), [i * 8, 0], out)
    return out


CASES = {f.__name__: f for f in (same_place, rotating, carried_max, carried_add, early_oob)}


def one(case: str, trips: int) -> dict:
    """Run one case in this process: its figures."""
    pypto.set_log_level(pypto.LogLevel.WARN)
    kernel = CASES[case]
    a, out = torch.rand(64, 64), torch.zeros(64, 64)
    compiled = kernel.compile(a, out, 1, config=RunConfig(platform="a2a3sim"))
    tracemalloc.start()
    began = time.perf_counter()
    try:
        report = compiled.run(a, out, trips)
        what = f"{report.cycles:,} cycles"
    except pypto.errors.PyptoError as exc:
        what = f"{type(exc).__name__}: {str(exc).splitlines()[0][:60]}"
    seconds = time.perf_counter() - began
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return {"case": case, "trips": trips, "seconds": seconds, "traced_mb": peak / 2**20,
            "maxrss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "result": what}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--trips", default="1000,1000000,2147483647")
    p.add_argument("--cases", default="same_place,rotating,carried_max,early_oob")
    p.add_argument("--one", nargs=2, help=argparse.SUPPRESS)  # (case, trips): the child's own run
    args = p.parse_args()
    if args.one:
        print(json.dumps(one(args.one[0], int(args.one[1]))))
        return
    print(f"{'case':12} {'trips':>14} {'seconds':>9} {'traced MB':>10} {'maxrss MB':>10}  result")
    for case in args.cases.split(","):
        for trips in (int(t) for t in args.trips.split(",")):
            child = subprocess.run([sys.executable, __file__, "--one", case, str(trips)], capture_output=True,
                                   text=True, check=True)
            r = json.loads(child.stdout.strip().splitlines()[-1])
            print(f"{case:12} {trips:>14,} {r['seconds']:>9.2f} {r['traced_mb']:>10.2f} {r['maxrss_mb']:>10.0f}  "
                  f"{r['result']}")


if __name__ == "__main__":
    main()
