"""Split-K: a matmul whose M and N are too small to fill the cube while K is long.

Each split multiplies its slice of K into a partial product of its own; a second kernel
adds the partials. The sum runs in a different order from one long accumulation, so expect
last-place differences against an unsplit matmul — compare within a tolerance, and check
the reduction order before calling a difference a bug.

    python examples/advanced/01_split_k.py [--platform ref|a2a3sim]

On this single simulated core the splits of ``pl.parallel`` run one after another, so the
cycle counts printed show what splitting costs here, not what it buys on the whole chip
(24 cube cores there; see DESIGN.md "Where this is going").
"""

import argparse
import tempfile
from pathlib import Path

import torch

import pypto.language as pl
from pypto.runtime import RunConfig

M, K, N, SPLITS = 16, 512, 256, 4  # a 16 x 256 output: too few fractals to keep the cube busy
KS = K // SPLITS


@pl.jit
def unsplit(a: pl.Tensor, w: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        x = pl.move(pl.load(a, [0, 0], [M, KS], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
        y = pl.move(pl.load(w, [0, 0], [KS, N], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
        acc = pl.matmul(x, y)
        for k in pl.range(1, SPLITS):  # one accumulation along the whole of K
            x = pl.move(pl.load(a, [0, k * KS], [M, KS], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
            y = pl.move(pl.load(w, [k * KS, 0], [KS, N], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
            acc = pl.matmul_acc(acc, x, y)
        pl.store(acc, [0, 0], out)
    return out


@pl.jit
def partials(a: pl.Tensor, w: pl.Tensor, part: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for ks in pl.parallel(SPLITS):  # each split reduces its slice of K
            x = pl.move(pl.load(a, [0, ks * KS], [M, KS], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
            y = pl.move(pl.load(w, [ks * KS, 0], [KS, N], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
            pl.store(pl.matmul(x, y), [ks * M, 0], part)
    return part


@pl.jit
def combine(part: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        total = pl.load(part, [0, 0], [M, N])
        for ks in pl.range(1, SPLITS):  # the partials, added in split order
            total = pl.add(total, pl.load(part, [ks * M, 0], [M, N]))
        pl.store(total, [0, 0], out)
    return out


def main(platform: str = "a2a3sim") -> float:
    torch.manual_seed(0)
    a, w = torch.randn(M, K).half(), torch.randn(K, N).half()
    # Each split's A panel has 128-element (256 B) rows, which PH001 would flag: that is the
    # deliberate cost of splitting K, so the check is silenced rather than lived with.
    config = RunConfig(platform=platform, disabled_diagnostics=["PH001"])
    one, split, part = torch.zeros(M, N), torch.zeros(M, N), torch.zeros(SPLITS * M, N)
    unsplit(a, w, one, config=config)
    partials(a, w, part, config=config)
    combine(part, split, config=config)
    want = a.double() @ w.double()
    err_one = (one.double() - want).abs().max().item()
    err_split = (split.double() - want).abs().max().item()
    print(f"unsplit  max |error| vs float64: {err_one:.3g}")
    print(f"split-K  max |error| vs float64: {err_split:.3g}  ({SPLITS} splits of K={KS})")
    print(f"split-K vs unsplit: {(split - one).abs().max().item():.3g} (a different summation order)")
    if platform != "ref":
        cycles = {}
        with tempfile.TemporaryDirectory() as tmp:  # compile() writes dumps and a report there
            for name, kernel, args in (("unsplit", unsplit, (a, w, one)), ("partials", partials, (a, w, part)),
                                       ("combine", combine, (part, split))):
                where = RunConfig(platform=platform, disabled_diagnostics=["PH001"], output_dir=Path(tmp) / name)
                cycles[name] = kernel.compile(*args, config=where).run(*args).cycles
        print("cycles on one simulated core: " + ", ".join(f"{k} {v}" for k, v in cycles.items()))
    return max(err_one, err_split)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--platform", default="a2a3sim", choices=["ref", "a2a3sim"])
    main(parser.parse_args().platform)
