"""Matmul two ways: at tile level, where you move each K block through the cube's memories
yourself, and at tensor level, where one ``pl.matmul`` says it all and the compiler builds
the chain of K blocks (its own block sizes and buffers: compare the cycles). Both give the
same bits: the cube rounds each 32-byte K block once, however K is sliced at block multiples.

The cube reads its left operand from ``Left`` and its right from ``Right``, fed from L1
(``Mat``), and accumulates in ``Acc`` (fp32). The tile-level kernel loads each [64, 64] K
block into Mat, moves it on, and accumulates with ``pl.matmul_acc`` in a ``pl.pipeline``
(the next block's loads overlap this block's multiply).

    python examples/intermediate/02_matmul.py [-p ref|a2a3sim]
"""

import argparse

import torch

import pypto.language as pl
from pypto.runtime import RunConfig

M, N, K, KB = 64, 64, 256, 64


@pl.jit
def matmul_tiles(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        x = pl.move(pl.load(a, [0, 0], [M, KB], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
        y = pl.move(pl.load(b, [0, 0], [KB, N], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
        acc = pl.matmul(x, y)
        for k in pl.pipeline(1, K // KB, stage=2):
            x = pl.move(pl.load(a, [0, k * KB], [M, KB], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
            y = pl.move(pl.load(b, [k * KB, 0], [KB, N], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
            acc = pl.matmul_acc(acc, x, y)
        pl.store(acc, [0, 0], c)
    return c


@pl.jit
def matmul_tensors(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        c = pl.assemble(c, pl.matmul(a, b, out_dtype=pl.FP32), [0, 0])
    return c


def main(platform: str = "a2a3sim") -> dict:
    torch.manual_seed(0)
    a, b = torch.randn(M, K, dtype=torch.float16), torch.randn(K, N, dtype=torch.float16)
    expected = a.double() @ b.double()
    results = {}
    for kernel in (matmul_tiles, matmul_tensors):
        c = torch.zeros(M, N)
        report = kernel.compile(a, b, c, config=RunConfig(platform=platform)).run(a, b, c)
        error = (c.double() - expected).abs().max().item()
        ok = error < 1e-2  # fp16 products, fp32 accumulation over K = 256
        cycles = "not simulated on ref" if platform == "ref" else report.kernel_cycles
        print(f"{kernel.__name__:14s} on {platform}: max |c - a @ b| vs float64 = {error:.2e} (< 1e-2: {ok}); "
              f"kernel cycles: {cycles}")
        results[kernel.__name__] = (ok, report.kernel_cycles, c)
    same = torch.equal(results["matmul_tiles"][2], results["matmul_tensors"][2])
    print(f"the two kernels agree bit for bit: {same}")
    return {name: (ok and same, cycles) for name, (ok, cycles, _) in results.items()}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-p", "--platform", choices=["ref", "a2a3sim"], default="a2a3sim")
    main(parser.parse_args().platform)
