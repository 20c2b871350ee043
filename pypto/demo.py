"""The seed's kernels ("Tuning the InCore Function"), run end to end: ``python -m pypto.demo``.

Each kernel computes exp over a [512, 128] tensor in 8 tiles: a single buffer, a
``pl.pipeline`` of depth 2, and explicit two-slot buffers. The demo checks each against
torch and prints the program the front end built for it.
"""

from __future__ import annotations

import argparse
import sys

import torch

import pypto.language as pl
from pypto.runtime import PLATFORMS, RunConfig

NT, TR, TC = 8, 64, 128  # tiles in the loop, tile rows, tile cols
ROWS = NT * TR


@pl.jit
def single_buffer(a: pl.Tensor, out: pl.Out[pl.Tensor]):  # the baseline
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(NT):
            tile = pl.load(a, [i * TR, 0], [TR, TC])
            pl.store(pl.exp(tile), [i * TR, 0], out)
    return out


@pl.jit
def pipelined(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.pipeline(NT, stage=2):
            tile = pl.load(a, [i * TR, 0], [TR, TC])
            pl.store(pl.exp(tile), [i * TR, 0], out)
    return out


@pl.jit
def explicit_slots(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(NT):
            tile: pl.Tile[[TR, TC], pl.FP32, pl.MemRef("ub", slots=2)[i % 2], pl.Mem.Vec] = pl.load(
                a, [i * TR, 0], [TR, TC], target_memory=pl.Mem.Vec
            )
            pl.store(pl.exp(tile), [i * TR, 0], out)
    return out


KERNELS = (single_buffer, pipelined, explicit_slots)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pypto.demo", description=__doc__.splitlines()[0])
    parser.add_argument("--platform", choices=sorted(PLATFORMS), default=RunConfig().platform)
    parser.add_argument("--quiet", action="store_true", help="do not print the programs")
    args = parser.parse_args(argv)
    config = RunConfig(platform=args.platform)
    indices = torch.arange(ROWS * TC, dtype=torch.int64)
    a = (indices % 3 - 1).to(torch.float32).reshape(ROWS, TC)
    for kernel in KERNELS:
        out = torch.zeros(ROWS, TC, dtype=torch.float32)
        kernel(a, out, config=config)
        exact = torch.equal(out, torch.exp(a))
        print(f"{kernel.__name__:15s} on {args.platform}: out == torch.exp(a) bit for bit: {exact}")
        if not exact:
            return 1
        if not args.quiet:
            print(kernel.specialize(a, out).as_python())
    return 0


if __name__ == "__main__":
    sys.exit(main())
