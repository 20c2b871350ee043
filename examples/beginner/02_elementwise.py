"""Elementwise at tile level: exp over a [512, 128] tensor, one tile at a time, then the
same loop double-buffered with ``pl.pipeline``.

``pl.load`` brings a [64, 128] tile from global memory into the vector core's unified
buffer (the MTE2 pipe), ``pl.exp`` computes on it (VECTOR), ``pl.store`` writes it back
(MTE3). With one buffer the three pipes take turns; ``pl.pipeline(n, stage=2)`` gives each
loaded tile two buffers, so the next load runs while this tile is computed: same bits,
fewer cycles.

    python examples/beginner/02_elementwise.py [-p ref|a2a3sim]
"""

import argparse

import torch

import pypto.language as pl
from pypto.runtime import RunConfig

TILES, ROWS, COLS = 8, 64, 128


@pl.jit
def exp_one_buffer(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(TILES):
            t = pl.load(a, [i * ROWS, 0], [ROWS, COLS])
            pl.store(pl.exp(t), [i * ROWS, 0], out)
    return out


@pl.jit
def exp_pipelined(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.pipeline(TILES, stage=2):  # two buffers: load i + 1 while computing i
            t = pl.load(a, [i * ROWS, 0], [ROWS, COLS])
            pl.store(pl.exp(t), [i * ROWS, 0], out)
    return out


def main(platform: str = "a2a3sim") -> dict:
    torch.manual_seed(0)
    a = torch.randn(TILES * ROWS, COLS)
    results = {}
    for kernel in (exp_one_buffer, exp_pipelined):
        out = torch.zeros_like(a)
        report = kernel.compile(a, out, config=RunConfig(platform=platform)).run(a, out)
        exact = torch.equal(out, torch.exp(a))
        cycles = "not simulated on ref" if platform == "ref" else report.kernel_cycles
        print(f"{kernel.__name__:15s} on {platform}: out == torch.exp(a) bit for bit: {exact}; kernel cycles: {cycles}")
        results[kernel.__name__] = (exact, report.kernel_cycles)
    if platform != "ref":
        ratio = results["exp_pipelined"][1] / results["exp_one_buffer"][1]
        print(f"pl.pipeline takes {ratio:.2f} x the cycles of one buffer")
    return results


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-p", "--platform", choices=["ref", "a2a3sim"], default="a2a3sim")
    main(parser.parse_args().platform)
