"""A mixed kernel: cube work and the vector work that reads it, in one scope on one cluster.

``bands`` multiplies eight row bands of ``a`` by ``b`` on the cube and runs an epilogue on
each band on the vector cores. Written as two scopes (``staged``) the vector cores start
only when the cube has finished every band. In one scope the cube's band reaches the vector
cores through a cross-core ring in GM while the cube goes on with the next, so the two
overlap; ``pl.split(...)`` shares the epilogue between the cluster's two vector cores, by rows
(UP_DOWN) or columns (LEFT_RIGHT); ``pl.cross_core_slot(slot_num=N)`` is how many bands the
cube may run ahead. The ring's slots live in the vector cores' UB, so a deep ring costs
room: too deep, and the compiler says so, naming both levers.

    python examples/advanced/02_mixed_kernel.py [--platform ref|a2a3sim]
"""

import argparse

import torch

import pypto.language as pl
from pypto.errors import MemorySpaceError
from pypto.runtime import RunConfig

M, K, N, BAND = 128, 64, 128, 16
CG = pl.Level.CORE_GROUP


@pl.jit
def staged(a: pl.Tensor, b: pl.Tensor, scale: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=CG, name_hint="cube_only"):  # every band's product, into GM
        acc = pl.matmul(a, b, out_dtype=pl.FP32)
    with pl.at(level=CG, name_hint="vector_only"):  # then the epilogue, once the cube is done
        out[:] = pl.exp(pl.row_expand_mul(acc, scale))
    return out


def bands(mode, slots):
    @pl.jit
    def mixed(a: pl.Tensor, b: pl.Tensor, scale: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=CG, optimizations=[pl.split(mode), pl.cross_core_slot(slot_num=slots)], name_hint="mixed"):
            for i in pl.range(M // BAND):
                acc = pl.matmul(a[i * BAND:(i + 1) * BAND, :], b, out_dtype=pl.FP32)  # cube
                rows = pl.row_expand_mul(acc, scale[i * BAND:(i + 1) * BAND, :])  # vector, per band
                out[i * BAND:(i + 1) * BAND, :] = pl.exp(rows)
        return out

    return mixed


# 64 bands in flight, each slot a band (a vector core's half of it): more than UB holds
deep = bands(pl.SplitMode.UP_DOWN, 64)


def inputs():
    g = torch.Generator().manual_seed(0)
    return (torch.randn(M, K, generator=g).half(), torch.randn(K, N, generator=g).half(),
            torch.rand(M, 1, generator=g) * 0.01)


def main(platform: str = "a2a3sim") -> dict:
    """Each form's (makespan, tasks, max |error|), printed; and the deep ring's error, under "deep"."""
    a, b, scale = inputs()
    want = torch.exp((a.float() @ b.float()) * scale)
    forms = [("two scopes", staged)] + [(f"one scope, {mode.name}, slot_num={slots}", bands(mode, slots))
                                        for mode, slots in ((pl.SplitMode.NONE, 2), (pl.SplitMode.UP_DOWN, 2),
                                                            (pl.SplitMode.LEFT_RIGHT, 2), (pl.SplitMode.UP_DOWN, 4))]
    results = {}
    for name, kernel in forms:
        out = torch.zeros(M, N)
        report = kernel.compile(a, b, scale, out, config=RunConfig(platform=platform)).run(a, b, scale, out)
        results[name] = (report.cycles, len(report.tasks), (out - want).abs().max().item())
        cycles = f"{report.cycles:>7,} cycles, {len(report.tasks)} task(s)" if platform != "ref" else ""
        print(f"{name:<36} {cycles:<28} max |error| {results[name][2]:.2e}")
    try:
        deep(a, b, scale, torch.zeros(M, N), config=RunConfig(platform=platform))
    except MemorySpaceError as err:
        results["deep"] = err
        print(f"slot_num=64: {err.message.split('. ')[0]}.")
    return results


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--platform", default="a2a3sim", choices=["ref", "a2a3sim", "a5sim"])
    main(parser.parse_args().platform)
