"""Hello, kernel: add two tensors on the simulated AI core.

The smallest whole kernel: a ``@pl.jit`` entry, one ``pl.at`` scope (one task on the
cores), and tensor-level code inside it that the compiler cuts into tiles that fit the
vector core's memory. The check is against torch, bit for bit.

    python examples/beginner/01_hello.py [-p ref|a2a3sim]
"""

import argparse

import torch

import pypto.language as pl
from pypto.runtime import RunConfig


@pl.jit
def hello(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):  # what runs on the cores: one task
        out[:] = pl.add(a, b)
    return out


def main(platform: str = "a2a3sim") -> dict:
    torch.manual_seed(0)
    a, b = torch.randn(64, 128), torch.randn(64, 128)
    out = torch.zeros(64, 128)
    report = hello.compile(a, b, out, config=RunConfig(platform=platform)).run(a, b, out)
    exact = torch.equal(out, a + b)
    print(f"hello on {platform}: out == a + b bit for bit: {exact}")
    # ref interprets the program for its values; a2a3sim also simulates the cores' time
    print("kernel cycles:", "not simulated on ref" if platform == "ref" else report.kernel_cycles)
    return {"hello": (exact, report.kernel_cycles)}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-p", "--platform", choices=["ref", "a2a3sim"], default="a2a3sim")
    main(parser.parse_args().platform)
