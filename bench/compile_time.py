"""Compile-time figures: the seed's kernels, then how compile time grows with program size.

    python bench/compile_time.py [--repeat N]

Prints a table per experiment: the size knob, the statements after lowering, the median
wall time of specialize+lower (parse excluded after the first call), and the time per
lowered statement, so growth that is worse than linear stands out.
"""

from __future__ import annotations

import argparse
import time

import torch

from pypto.backend import A2A3
from pypto.demo import KERNELS
from pypto.ir import nodes as n
from pypto.ir.builder import FunctionBuilder
from pypto.ir.types import DataType, ForKind, FunctionType, ParamDirection, TensorType
from pypto.passes.context import PassContext
from pypto.passes.pipeline import lower
from timing import median_time  # bench/timing.py: scripts run as python bench/<name>.py


def timed(fn, repeat: int) -> float:
    return median_time(fn, repeat)[0]


def statements(program: n.Program) -> int:
    return sum(1 for f in program.functions for _ in n.walk_stmts(f.body))


def pipeline_program(trips: int, stage: int, tile_rows: int = 16) -> n.Program:
    b = FunctionBuilder("k", FunctionType.InCore, soc=A2A3)
    a = b.param("a", TensorType((trips * tile_rows, 128), DataType.FP32))
    out = b.param("out", TensorType((trips * tile_rows, 128), DataType.FP32), ParamDirection.Out)
    with b.loop(0, trips, kind=ForKind.Pipeline, stage=stage) as loop:
        t = b.op("tile.load", a, [loop.var * tile_rows, 0], [tile_rows, 128])
        b.eval("tile.store", b.op("tile.exp", t), [loop.var * tile_rows, 0], out)
    b.ret(out)
    return n.Program("pipeline", (b.build(),))


def chain_program(length: int) -> n.Program:
    b = FunctionBuilder("k", FunctionType.InCore, soc=A2A3)
    a = b.param("a", TensorType((16, 128), DataType.FP32))
    out = b.param("out", TensorType((16, 128), DataType.FP32), ParamDirection.Out)
    v = b.op("tile.load", a, [0, 0], [16, 128])
    for k in range(length):
        v = b.op(("tile.exp", "tile.neg", "tile.abs")[k % 3], v)
    b.eval("tile.store", v, [0, 0], out)
    b.ret(out)
    return n.Program("chain", (b.build(),))


def tensor_program(shape, length: int, reduce: str | None = None) -> n.Program:
    """Tensor-level code ConvertTensorToTileOps must block: a chain of ``length`` ops on a
    tensor larger than Vec, then (``reduce``) a broadcast of its reduction along an axis."""
    b = FunctionBuilder("k", FunctionType.InCore, soc=A2A3)
    a = b.param("a", TensorType(shape, DataType.FP32))
    out = b.param("out", TensorType(shape, DataType.FP32), ParamDirection.Out)
    v = a
    for k in range(length):
        v = b.op(("tensor.exp", "tensor.neg", "tensor.abs")[k % 3], v)
    if reduce is not None:
        v = b.op(f"tensor.{reduce}_expand_sub", v, b.op(f"tensor.{reduce}_max", v))
    b.eval("tensor.assemble", out, v, [0, 0])
    b.ret(out)
    return n.Program("tensor", (b.build(),))


def table(title: str, rows) -> None:
    print(f"\n{title}")
    print(f"{'size':>14} {'stmts':>7} {'compile ms':>11} {'us/stmt':>8}")
    base = None
    for label, program, seconds in rows:
        count = statements(program)
        per = seconds / max(count, 1) * 1e6
        base = base or per
        print(f"{label:>14} {count:>7} {seconds * 1e3:>11.2f} {per:>8.1f}  (x{per / base:.2f} per stmt)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    ctx = PassContext(soc=A2A3)

    a = torch.zeros(512, 128)
    print("seed kernels: specialize (parse, first call) and lower (the pass pipeline)")
    print(f"{'kernel':>16} {'parse ms':>9} {'lower ms':>9}")
    for kernel in KERNELS:
        began = time.perf_counter()
        program = kernel.specialize(a, a)
        parse_s = time.perf_counter() - began
        lower_s = timed(lambda: lower(program, ctx), args.repeat)
        print(f"{kernel.__name__:>16} {parse_s * 1e3:>9.2f} {lower_s * 1e3:>9.2f}")

    rows = []
    for trips, stage in ((8, 2), (32, 2), (128, 2), (128, 4), (512, 4), (512, 8)):
        low = lower(pipeline_program(trips, stage), ctx).program
        rows.append((f"N={trips} F={stage}", low, timed(lambda: lower(pipeline_program(trips, stage), ctx),
                                                        args.repeat)))
    table("pipelines of growing trip count and stage (statements after lowering)", rows)

    rows = []
    for length in (4, 16, 64, 256):
        program = chain_program(length)
        rows.append((f"chain {length}", lower(program, ctx).program, timed(lambda: lower(program, ctx), args.repeat)))
    table("elementwise chains", rows)

    rows = []
    for label, shape, length, reduce in (("chain 4", (2048, 128), 4, None), ("chain 16", (2048, 128), 16, None),
                                         ("chain 64", (2048, 128), 64, None), ("col-centred", (2048, 128), 2, "col"),
                                         ("row-centred", (4, 65536), 2, "row"), ("wide chain", (3, 40000), 8, None)):
        program = tensor_program(shape, length, reduce)
        rows.append((f"{label}", lower(program, ctx).program, timed(lambda: lower(program, ctx), args.repeat)))
    table("tensor code past Vec, planned into blocks (ConvertTensorToTileOps)", rows)


if __name__ == "__main__":
    main()
