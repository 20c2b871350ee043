"""Split-K on the chip: a matmul whose M and N are too small to fill the cube while K is long.

One task reduces the whole of K on one cube core while 23 others wait. Splitting K gives
the parallelism the output dimensions could not: each split task multiplies its slice of K
and adds its partial product into ``c`` atomically (``atomic=pl.AtomicType.Add``), after a
first task has zeroed ``c``.

The dependency rules decide whether the splits really run at once. Written as the
reference writes it, each split's ``c`` is ``InOut`` — the zeroing task wrote ``c``
before (R-prior) — so every split waits for the one before: a chain, no faster than one
task. Saying the splits are independent (``no_dep_args=[c]``: atomic adds commute) and
that they wait only for the zeroing (``deps=[zeroed]``) lets them take a cube core each.

The sum's order is the order the adds complete in, not K's, so expect last-place
differences against one long accumulation; ``RunConfig(atomic_order_seed=...)`` permutes
the adds that are in flight at once, as hardware gives them no order.

    python examples/advanced/01_split_k.py [--platform ref|a2a3sim]
"""

import argparse
import tempfile
from pathlib import Path

import torch

import pypto.language as pl
from pypto.runtime import RunConfig

M, N, K, SPLIT = 64, 64, 4096, 8  # a 64 x 64 output: one cube core's work; K long
KS = K // SPLIT
CG = pl.Level.CORE_GROUP


@pl.jit
def unsplit(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=CG):  # one accumulation along the whole of K, on one core
        c = pl.assemble(c, pl.matmul(a, b, out_dtype=pl.FP32), [0, 0])
    return c


@pl.jit
def split_k_chained(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=CG, name_hint="zero_init"):
        c = pl.assemble(c, pl.full([M, N], dtype=pl.FP32, value=0.0), [0, 0])
    for ks in pl.parallel(SPLIT):  # R-prior: each split's c is InOut, so they chain
        with pl.at(level=CG, name_hint="split_k"):
            k0 = ks * KS
            partial = pl.matmul(a[:, k0:k0 + KS], b[k0:k0 + KS, :], out_dtype=pl.FP32)
            c = pl.assemble(c, partial, [0, 0], atomic=pl.AtomicType.Add)
    return c


@pl.jit
def split_k(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=CG, name_hint="zero_init") as zeroed:
        c = pl.assemble(c, pl.full([M, N], dtype=pl.FP32, value=0.0), [0, 0])
    for ks in pl.parallel(SPLIT):  # each waits for the zeroing only: the adds commute
        with pl.at(level=CG, name_hint="split_k", deps=[zeroed], no_dep_args=[c]):
            k0 = ks * KS
            partial = pl.matmul(a[:, k0:k0 + KS], b[k0:k0 + KS, :], out_dtype=pl.FP32)
            c = pl.assemble(c, partial, [0, 0], atomic=pl.AtomicType.Add)
    return c


def main(platform: str = "a2a3sim") -> dict:
    """Run the three forms; what each computed (error against float64) and, on the chip,
    its makespan in cycles."""
    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(M, K, generator=g), torch.randn(K, N, generator=g)
    exact = a.double() @ b.double()
    out = {}
    for kernel in (unsplit, split_k_chained, split_k):
        c = torch.zeros(M, N)
        with tempfile.TemporaryDirectory() as tmp:  # compile() writes its dumps and report there
            config = RunConfig(platform=platform, output_dir=Path(tmp))
            report = kernel.compile(a, b, c, config=config).run(a, b, c)
        error = (c.double() - exact).abs().max().item()
        cores = len({t.core for t in report.tasks})
        out[kernel.__name__] = (error, report.cycles, cores)
        where = f"  makespan {report.cycles:>6} cycles on {cores} core(s)" if platform != "ref" else ""
        print(f"{kernel.__name__:<16} max |error| vs float64 {error:.3g}{where}")
    if platform != "ref":
        speedup = out["unsplit"][1] / out["split_k"][1]
        chained = out["unsplit"][1] / out["split_k_chained"][1]
        print(f"split-K over unsplit: {speedup:.2f}x faster ({SPLIT} splits of K={KS}); chained by the rules, "
              f"{chained:.2f}x (each split waits for the last)")
        seeds = []
        for seed in (1, 2, 3):
            c = torch.zeros(M, N)
            split_k(a, b, c, config=RunConfig(platform=platform, atomic_order_seed=seed))
            seeds.append((c.double() - exact).abs().max().item())
        print("adds in flight at once, permuted by seeds 1-3: max |error| " + ", ".join(f"{e:.3g}" for e in seeds))
    return out


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--platform", default="a2a3sim", choices=["ref", "a2a3sim", "a5sim"])
    main(parser.parse_args().platform)
