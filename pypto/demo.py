"""The seed's kernels ("Tuning the InCore Function"), run end to end: ``python -m pypto.demo``.

Each kernel computes exp over a [512, 128] tensor in 8 tiles: a single buffer, a
``pl.pipeline`` of depth 2, and explicit two-slot buffers. The demo checks each against
torch on the simulated AI core and prints its cycles (and µs), each pipe's busy cycles, whether
the load pipe (MTE2) overlapped the vector unit (the point of double buffering), the roofline.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

import torch

import pypto.language as pl
from pypto.backend import backend
from pypto.errors import PyptoError
from pypto.ir.levels import PassDumpLevel
from pypto.runtime import PLATFORMS, RunConfig, build_dirs

NT, TR, TC = 8, 64, 128  # tiles in the loop, tile rows, tile cols
ROWS = NT * TR


@pl.jit
def single_buffer(a: pl.Tensor, out: pl.Out[pl.Tensor]):  # the baseline
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(NT):
            tile = pl.load(a, [i * TR, 0], [TR, TC])
            pl.store(pl.exp(tile), [i * TR, 0], out)
    return out


@pl.jit
def pipelined(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.pipeline(NT, stage=2):
            tile = pl.load(a, [i * TR, 0], [TR, TC])
            pl.store(pl.exp(tile), [i * TR, 0], out)
    return out


@pl.jit
def explicit_slots(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(NT):
            tile: pl.Tile[[TR, TC], pl.FP32, pl.MemRef("ub", slots=2)[i % 2], pl.Mem.Vec] = pl.load(
                a, [i * TR, 0], [TR, TC], target_memory=pl.Mem.Vec
            )
            pl.store(pl.exp(tile), [i * TR, 0], out)
    return out


KERNELS = (single_buffer, pipelined, explicit_slots)


def main(argv=None) -> int:
    from pypto.console import description  # (here: a line above the kernels would move the goldens' lines)

    parser = argparse.ArgumentParser(prog="python -m pypto.demo", description=description(__doc__))
    parser.add_argument("--platform", choices=sorted(PLATFORMS), default=RunConfig().platform)
    parser.add_argument("--planner", choices=["PYPTO", "DSA_RP", "PTOAS"], default="PYPTO")
    parser.add_argument("--show-ir", action="store_true", help="print each kernel's lowered program")
    parser.add_argument("-o", "--output-dir", type=Path,
                        help="leave each kernel's build in OUTPUT_DIR/<kernel> (default: build_output/<kernel>_<time>)")
    parser.add_argument("--trace", action="store_true", help="record the L0 trace of each run (see: pypto trace)")
    parser.add_argument("--dump", action="store_true", help="write every pass's dump (see: pypto memory-map)")
    args = parser.parse_args(argv)
    try:
        return _run(args)
    except PyptoError as exc:  # an output directory it cannot write, say: one line
        print("error: " + exc.message.replace("\n", "\\n"), file=sys.stderr)
        return 1


def _run(args) -> int:
    config = RunConfig(platform=args.platform, memory_planner=args.planner, enable_l0_trace=args.trace,
                       dump_passes=PassDumpLevel.EXPLICIT if args.dump else PassDumpLevel.NONE)
    indices = torch.arange(ROWS * TC, dtype=torch.int64)
    a = (indices % 3 - 1).to(torch.float32).reshape(ROWS, TC)
    print(header(args.platform, args.planner))
    cycles, busy = {}, {}
    for kernel in KERNELS:
        out = torch.zeros(ROWS, TC, dtype=torch.float32)
        if args.output_dir is not None:
            config = dataclasses.replace(config, output_dir=args.output_dir / kernel.__name__)
        compiled = kernel.compile(a, out, config=config)
        report = compiled.run(a, out)
        exact = torch.equal(out, torch.exp(a))
        line = f"{kernel.__name__:15s} {args.platform}/{args.planner}: out == torch.exp(a) bit for bit: {exact}"
        if args.platform != "ref":
            mte2, vec = report.busy("MTE2"), report.busy("VECTOR")
            overlap = any(s1 < e2 and s2 < e1 for s1, e1 in mte2 for s2, e2 in vec)
            pipes = report.pipe_cycles["aiv0"]
            line += (f"; {report.kernel_cycles} cycles = {microseconds(report.kernel_cycles, args.platform)} (busy: "
                     f"{', '.join(f'{p} {c}' for p, c in sorted(pipes.items()))}); MTE2 overlaps VECTOR: {overlap}")
            cycles[kernel.__name__], busy[kernel.__name__] = report.kernel_cycles, pipes
        print(line)
        if not exact:
            return 1
        if args.show_ir:
            print(compiled.lowered.as_python())
    if cycles:
        print(explain_busy(cycles, busy))
        print(roofline(a, cycles, busy, args.platform))
        for name in ("pipelined", "explicit_slots"):
            print(f"{name} takes {cycles[name] / cycles['single_buffer']:.2f} x the cycles of single_buffer")
    if args.output_dir is None:
        keep = build_dirs.keep_count(config.keep_builds)
        print(f"kernel listings and reports: {compiled.output_dir.parent}/<kernel>_<timestamp>/"
              + (f" (the newest {keep} of each kept)" if keep else ""))
        return 0
    print(f"kernel listings and reports: {args.output_dir}/<kernel>/")
    build = args.output_dir / "pipelined"
    if args.trace and args.platform != "ref":
        print(f"  the L0 trace as a page:  pypto trace {build} -o {args.output_dir / 'trace'}")
    if args.dump and args.planner != "PTOAS":  # PTOAS dumps carry no offsets to draw
        print(f"  the memory map:          pypto memory-map {build} -o {args.output_dir / 'memory_map.html'}")
    return 0


def chip(platform: str):
    """The SoC table the platform runs (RunConfig's backend: a5sim's is a5)."""
    return backend(RunConfig(platform=platform).backend)

PLANNERS = {"PYPTO": "this compiler gives each tile an address when compiling (PTOAS: the assembler does)",
            "DSA_RP": "this compiler places each tile, keeping apart tiles whose sharing of bytes would stall one "
                      "pipe on another while there is room",
            "PTOAS": "the assembler places the tiles, a pipeline's buffers as one region of slots"}


def header(platform: str, planner: str) -> str:
    """What runs: the shape, the tiles, where, and what the planner's name means."""
    where = "the reference interpreter (ref)" if platform == "ref" else \
        f"one simulated vector core ({platform}, {chip(platform).chip.core_hz / 1e9:g} GHz)"
    return (f"exp of a [{ROWS}, {TC}] fp32 tensor in {NT} tiles of [{TR}, {TC}] ({TR * TC * 4 // 1024} KiB each), "
            f"three ways, on {where}\nmemory planner {planner}: {PLANNERS[planner]}")


def microseconds(cycles: int, platform: str = "a2a3sim") -> str:
    return f"{cycles / chip(platform).chip.core_hz * 1e6:.2f} \u00b5s"


def explain_busy(cycles: dict, busy: dict) -> str:
    """Why the busy cycles do not add up to the total: the pipes run at once."""
    s, p = "single_buffer", "pipelined"
    return (f"busy: each pipe's working cycles. The pipes run at once: their sum is under the total where they\n"
            f"  wait for one another ({s}: {sum(busy[s].values())} in {cycles[s]}), over it where they overlap "
            f"({p}: {sum(busy[p].values())} in {cycles[p]})")


def roofline(a: torch.Tensor, cycles: dict, busy: dict, platform: str = "a2a3sim") -> str:
    """The least cycles the kernel's GM traffic needs at the SoC table's bandwidth (MTE2 in,
    MTE3 out: a pipe each, working at once), against what each kernel took."""
    moved = a.numel() * a.element_size()  # in, and as much out
    soc = chip(platform)
    per_cycle = soc.costs.gm_bytes_per_cycle
    bound = -(-moved // per_cycle)  # whole cycles
    pipe, most = max(busy["pipelined"].items(), key=lambda kv: kv[1])
    took = ", ".join(f"{c} ({c / bound:.1f} x)" for c in cycles.values())
    return (f"roofline: {moved // 1024} KiB in (MTE2) and out (MTE3) at {per_cycle} B/cycle a pipe "
            f"({soc.name} GM) need {bound} cycles;\n  took {took}; the busiest pipe, {pipe}, works {most}")


if __name__ == "__main__":
    sys.exit(main())
