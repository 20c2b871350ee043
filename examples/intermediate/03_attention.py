"""A small attention head: ``softmax(q @ k.T * scale) @ v`` for 64 queries over 128 keys,
head dim 64, in two tasks.

The first ``pl.at`` scope is a mixed kernel: the cube computes the scores (``b_trans=True``
reads ``k`` as k.T), and the vector cores scale them and take the row softmax, reading the
cube's result through GM. The second multiplies the probabilities (cast to fp16) by ``v``.
The probabilities pass from one task to the other through a buffer the orchestration
creates, and the runtime orders the second task after the first.

    python examples/intermediate/03_attention.py [-p ref|a2a3sim]
"""

import argparse
import math

import torch

import pypto.language as pl
from pypto.runtime import RunConfig

Q, S, D = 64, 128, 64
SCALE = 1.0 / math.sqrt(D)


@pl.jit
def attention(q: pl.Tensor, k: pl.Tensor, v: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="scores"):
        s = pl.mul(pl.matmul(q, k, out_dtype=pl.FP32, b_trans=True), SCALE)
        e = pl.exp(pl.row_expand_sub(s, pl.row_max(s)))
        p = pl.cast(pl.row_expand_div(e, pl.row_sum(e)), pl.FP16)
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="weighted_sum"):
        out = pl.assemble(out, pl.matmul(p, v, out_dtype=pl.FP32), [0, 0])
    return out


def main(platform: str = "a2a3sim") -> dict:
    torch.manual_seed(0)
    q, k, v = (torch.randn(n, D, dtype=torch.float16) for n in (Q, S, S))
    out = torch.zeros(Q, D)
    report = attention.compile(q, k, v, out, config=RunConfig(platform=platform)).run(q, k, v, out)
    expected = torch.softmax(q.double() @ k.double().T * SCALE, dim=-1) @ v.double()
    error = (out.double() - expected).abs().max().item()
    ok = error < 1e-2  # the probabilities are rounded to fp16 for the cube
    cycles = "not simulated on ref" if platform == "ref" else report.kernel_cycles
    print(f"attention on {platform}: max |out - float64 attention| = {error:.2e} (< 1e-2: {ok}); "
          f"kernel cycles: {cycles}" + ("" if platform == "ref" else f" in {len(report.tasks)} tasks, "
                                        f"makespan {report.cycles} cycles"))
    return {"attention": (ok, report.kernel_cycles)}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-p", "--platform", choices=["ref", "a2a3sim"], default="a2a3sim")
    main(parser.parse_args().platform)
