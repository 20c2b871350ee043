"""Layer norm at tile level: each row normalized to mean 0 and variance 1, then scaled by
``gamma`` and shifted by ``beta`` (one value per column).

Row statistics are [16, 1] columns (``pl.row_sum`` times ``1 / N``, a constant Python
computes when the kernel compiles); ``gamma`` and ``beta`` are [1, N] rows loaded once,
before the loop, and applied to every row with ``pl.col_expand_mul`` / ``pl.col_expand_add``.

    python examples/intermediate/01_layer_norm.py [-p ref|a2a3sim]
"""

import argparse

import torch

import pypto.language as pl
from pypto.runtime import RunConfig

TILES, ROWS, N = 4, 16, 256
EPS = 1e-5


@pl.jit
def layer_norm(x: pl.Tensor, gamma: pl.Tensor, beta: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        g = pl.load(gamma, [0, 0], [1, N])
        b = pl.load(beta, [0, 0], [1, N])
        for i in pl.pipeline(TILES, stage=2):
            t = pl.load(x, [i * ROWS, 0], [ROWS, N])
            centered = pl.row_expand_sub(t, pl.mul(pl.row_sum(t), 1.0 / N))
            variance = pl.mul(pl.row_sum(pl.mul(centered, centered)), 1.0 / N)
            normed = pl.row_expand_mul(centered, pl.rsqrt(pl.add(variance, EPS)))
            pl.store(pl.col_expand_add(pl.col_expand_mul(normed, g), b), [i * ROWS, 0], out)
    return out


def main(platform: str = "a2a3sim") -> dict:
    torch.manual_seed(0)
    x = torch.randn(TILES * ROWS, N) * 3 + 1
    gamma, beta = torch.rand(1, N) + 0.5, torch.randn(1, N)
    out = torch.zeros_like(x)
    report = layer_norm.compile(x, gamma, beta, out, config=RunConfig(platform=platform)).run(x, gamma, beta, out)
    expected = torch.nn.functional.layer_norm(x, (N,), gamma[0], beta[0], eps=EPS)
    error = (out - expected).abs().max().item()
    ok = error < 1e-4
    cycles = "not simulated on ref" if platform == "ref" else report.kernel_cycles
    print(f"layer_norm on {platform}: max |out - torch layer_norm| = {error:.2e} (< 1e-4: {ok}); "
          f"kernel cycles: {cycles}")
    return {"layer_norm": (ok, report.kernel_cycles)}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-p", "--platform", choices=["ref", "a2a3sim"], default="a2a3sim")
    main(parser.parse_args().platform)
