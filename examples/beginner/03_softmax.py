"""Row softmax at tile level: each [16, 256] tile's rows, max-subtracted, exponentiated and
divided by their sum.

The row reductions (``pl.row_max``, ``pl.row_sum``) give a [16, 1] column, and the
``row_expand_*`` ops apply it along each row. The check is against ``torch.softmax`` (to
float32 rounding: the vector unit sums a row in its own order, which torch does not).

    python examples/beginner/03_softmax.py [-p ref|a2a3sim]
"""

import argparse

import torch

import pypto.language as pl
from pypto.runtime import RunConfig

TILES, ROWS, COLS = 4, 16, 256


@pl.jit
def softmax(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.pipeline(TILES, stage=2):
            t = pl.load(x, [i * ROWS, 0], [ROWS, COLS])
            e = pl.exp(pl.row_expand_sub(t, pl.row_max(t)))  # exp(x - max): no overflow
            pl.store(pl.row_expand_div(e, pl.row_sum(e)), [i * ROWS, 0], out)
    return out


def main(platform: str = "a2a3sim") -> dict:
    torch.manual_seed(0)
    x = torch.randn(TILES * ROWS, COLS) * 4
    out = torch.zeros_like(x)
    report = softmax.compile(x, out, config=RunConfig(platform=platform)).run(x, out)
    error = (out - torch.softmax(x, dim=-1)).abs().max().item()
    ok = error < 1e-6
    cycles = "not simulated on ref" if platform == "ref" else report.kernel_cycles
    print(f"softmax on {platform}: max |out - torch.softmax| = {error:.2e} (< 1e-6: {ok}); kernel cycles: {cycles}")
    return {"softmax": (ok, report.kernel_cycles)}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-p", "--platform", choices=["ref", "a2a3sim"], default="a2a3sim")
    main(parser.parse_args().platform)
