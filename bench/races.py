"""Task-race check figures on model-shaped task graphs (issue 39): how long the chip's race
check takes (``pypto.chip.races.check``) against the whole a2a3sim run.

- ``proj+residual``: a decode-shaped projection, x [16 x 5120] @ w [5120 x 5120] in bf16 with
  fp32 accumulation, cut into 128 tasks over N (40 columns each: every task reads its
  window of w as 5120 rows of 80 bytes, in K blocks of 256), then one task adding a
  residual to the whole product;
- ``12 projections``: 12 projections [16 x 5120] @ [5120 x 512] sharing their input x (the
  weights stacked in one [12 * 5120 x 512] tensor), each cut into 8 tasks over N: 96
  tasks.

Per kernel: tasks, simulated instructions, the race check's seconds, the whole run's
seconds (medians of --repeat runs of one compiled kernel, the first run left out: it
computes the timelines). ``--profile`` prints cProfile's top functions of one run instead.

    python bench/races.py [--repeat N] [--quick] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import statistics
import sys
import time

import torch

import pypto.language as pl
from pypto.chip import races
from pypto.runtime import RunConfig

CG = pl.Level.CORE_GROUP
KB = 256  # the K block of every task's accumulation


def projection(k: int, n: int, tasks: int):
    """x [16, k] @ w [k, n] in ``tasks`` column blocks, then y + r in one task."""
    nb = n // tasks

    @pl.jit
    def proj_residual(x: pl.Tensor, w: pl.Tensor, r: pl.Tensor, y: pl.Out[pl.Tensor], out: pl.Out[pl.Tensor]):
        for j in pl.parallel(tasks):
            with pl.at(level=CG):
                acc = pl.matmul(x[:, 0:KB], w[0:KB, j * nb:(j + 1) * nb], out_dtype=pl.FP32)
                for kb in pl.range(1, k // KB):
                    acc = pl.matmul_acc(acc, x[:, kb * KB:(kb + 1) * KB], w[kb * KB:(kb + 1) * KB, j * nb:(j + 1) * nb])
                y[:, j * nb:(j + 1) * nb] = acc
        with pl.at(level=CG):
            out[:] = pl.add(y, r)
        return y, out

    g = torch.Generator().manual_seed(0)
    args = (torch.randn(16, k, generator=g).bfloat16(), torch.randn(k, n, generator=g).bfloat16(),
            torch.randn(16, n, generator=g), torch.zeros(16, n), torch.zeros(16, n))
    return proj_residual, args


def projections(count: int, k: int, n: int, per: int):
    """``count`` projections x [16, k] @ w_p [k, n], the w_p stacked in rows of one tensor,
    each in ``per`` column blocks; projection p's product in columns p * n of y."""
    nb = n // per

    @pl.jit
    def shared_input(x: pl.Tensor, w: pl.Tensor, y: pl.Out[pl.Tensor]):
        for p in pl.parallel(count):
            for j in pl.parallel(per):
                with pl.at(level=CG):
                    c0 = j * nb
                    acc = pl.matmul(x[:, 0:KB], w[p * k:p * k + KB, c0:c0 + nb], out_dtype=pl.FP32)
                    for kb in pl.range(1, k // KB):
                        acc = pl.matmul_acc(acc, x[:, kb * KB:(kb + 1) * KB],
                                            w[p * k + kb * KB:p * k + (kb + 1) * KB, c0:c0 + nb])
                    y[:, p * n + c0:p * n + c0 + nb] = acc
        return y

    g = torch.Generator().manual_seed(1)
    args = (torch.randn(16, k, generator=g).bfloat16(), torch.randn(count * k, n, generator=g).bfloat16(),
            torch.zeros(16, count * n))
    return shared_input, args


def kernels(quick: bool) -> list:
    if quick:
        return [("proj+residual", *projection(1024, 1024, 32)), ("12 projections", *projections(12, 1024, 128, 2))]
    return [("proj+residual", *projection(5120, 5120, 128)), ("12 projections", *projections(12, 5120, 512, 8))]


class Clock:
    """Seconds spent in the race check, around the orchestrator's call of it."""

    def __init__(self):
        self.seconds = 0.0
        self.inner = races.check

    def __enter__(self):
        def timed(*args, **kwargs):
            began = time.perf_counter()
            try:
                return self.inner(*args, **kwargs)
            finally:
                self.seconds += time.perf_counter() - began

        races.check = timed
        return self

    def __exit__(self, *exc):
        races.check = self.inner


def measure(compiled, args, repeat: int) -> tuple:
    """(median race-check seconds, median run seconds, the last report) of ``repeat`` runs."""
    compiled.run(*args)  # the first run computes the timelines; the check is the same each run
    checks, walls, report = [], [], None
    for _ in range(repeat):
        with Clock() as clock:
            began = time.perf_counter()
            report = compiled.run(*args)
            walls.append(time.perf_counter() - began)
        checks.append(clock.seconds)
    return statistics.median(checks), statistics.median(walls), report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="smaller kernels (a smoke run)")
    parser.add_argument("--profile", action="store_true", help="cProfile's top functions of one run of each")
    args = parser.parse_args()
    config = RunConfig(platform="a2a3sim")
    print(f"{'kernel':>16} {'tasks':>6} {'instr':>8} {'check s':>8} {'run s':>8} {'check %':>8}")
    for name, kernel, operands in kernels(args.quick):
        compiled = kernel.compile(*operands, config=config)
        if args.profile:
            compiled.run(*operands)
            profile = cProfile.Profile()
            profile.runcall(compiled.run, *operands)
            print(f"--- {name}")
            pstats.Stats(profile).sort_stats("tottime").print_stats(12)
            continue
        check, wall, report = measure(compiled, operands, args.repeat)
        print(f"{name:>16} {len({t.task_id for t in report.tasks}):>6} {report.instructions:>8,} {check:>8.2f} "
              f"{wall:>8.2f} {100 * check / wall:>7.0f}%")


if __name__ == "__main__":
    sys.exit(main())
