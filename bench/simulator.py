"""Simulator figures: per seed kernel, compile time, simulation wall time, simulated
instructions per second, and simulated cycles against the roofline (the busiest pipe's
own cycles: no schedule can beat it); then the b_trans matmul case; then the speed
targets the chip needs (issue 10), each as a now-vs-target line.

    python bench/simulator.py [--repeat N] [--quick] [--targets]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

import torch

import pypto.language as pl

from pypto.demo import KERNELS, ROWS, TC, TR
from pypto.examples import b_trans_matmul
from pypto.runtime import RunConfig
from timing import median_time  # bench/timing.py: scripts run as python bench/<name>.py



def roofline(report) -> int:
    return max(c for pipes in report.pipe_cycles.values() for c in pipes.values())


def row(name, compile_s, report, wall_s):
    dyn = report.instructions + report.sync_instructions
    bound = roofline(report)
    print(f"{name:>20} {compile_s * 1e3:>10.1f} {wall_s * 1e3:>9.1f} {dyn / wall_s:>12,.0f} {report.cycles:>9} "
          f"{bound:>9} {report.cycles / bound:>7.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="the targets on smaller sizes (a smoke run)")
    parser.add_argument("--targets", action="store_true", help="only the targets (issue 10's table)")
    parser.add_argument("--rss-child", type=int, metavar="TILES", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.rss_child:
        return _rss_child(args.rss_child)
    if args.targets:
        return targets(args.repeat, quick=args.quick)
    print(f"{'kernel':>20} {'compile ms':>10} {'sim ms':>9} {'instr/s':>12} {'cycles':>9} {'roofline':>9} "
          f"{'x bound':>7}")
    a = (torch.arange(ROWS * TC) % 3 - 1).float().reshape(ROWS, TC)
    for planner in ("PYPTO", "PTOAS"):
        config = RunConfig(memory_planner=planner)
        cycles = {}
        for kernel in KERNELS:
            out = torch.zeros(ROWS, TC)
            compile_s, compiled = median_time(lambda: kernel.compile(a, out, config=config), args.repeat)
            wall_s, report = median_time(lambda: compiled.run(a, out), args.repeat)
            row(f"{kernel.__name__}/{planner}", compile_s, report, wall_s)
            cycles[kernel.__name__] = report.cycles
        for name in ("pipelined", "explicit_slots"):
            print(f"{'':>20} {name} / single_buffer cycles: {cycles[name] / cycles['single_buffer']:.2f}")
    x, w = b_trans_matmul.inputs()
    out = torch.zeros(b_trans_matmul.M, b_trans_matmul.N)
    for name, kernel, weight in (("b_trans 128 B rows", b_trans_matmul.matmul_b_trans, w.T.contiguous()),
                                 ("row-major 512 B rows", b_trans_matmul.matmul_row_major, w)):
        compile_s, compiled = median_time(lambda: kernel.compile(x, weight, out), args.repeat)
        wall_s, report = median_time(lambda: compiled.run(x, weight, out), args.repeat)
        row(name, compile_s, report, wall_s)
    print(f"b_trans penalty (seed: 16-25 % measured on hardware): {b_trans_matmul.penalty() * 100:.1f} %")
    targets(args.repeat, quick=args.quick)


# ----------------------------------------------------------------------------- the chip's targets


def pipelined_of(tiles: int):
    """The seed's ``pipelined`` kernel over ``tiles`` tiles of [64, 128] fp32 (the demo's
    spells its trip count as the seed does, a constant, so it cannot be reused here)."""

    @pl.jit
    def pipelined(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            for i in pl.pipeline(tiles, stage=2):
                tile = pl.load(a, [i * TR, 0], [TR, TC])
                pl.store(pl.exp(tile), [i * TR, 0], out)
        return out

    return pipelined


def b_trans_of(k: int):
    """``pypto.examples.b_trans_matmul``'s kernel with a K loop of ``k``: compile, then a
    callable that runs it."""
    g = torch.Generator().manual_seed(0)
    a = torch.randn(b_trans_matmul.M, k, generator=g).half()
    w = torch.randn(b_trans_matmul.N, k, generator=g).half()
    out = torch.zeros(b_trans_matmul.M, b_trans_matmul.N)
    compiled = b_trans_matmul.matmul_b_trans.compile(a, w, out)
    return lambda: compiled.run(a, w, out)


def _pipelined_run(tiles: int):
    a = torch.randn(tiles * TR, TC)
    out = torch.zeros(tiles * TR, TC)
    compiled = pipelined_of(tiles).compile(a, out)
    return lambda: compiled.run(a, out)


def _rss_child(tiles: int) -> None:
    """In a fresh process: compile the pipelined kernel, then run it while a thread samples
    the resident set; print the most it grew over where the run began."""
    import os
    import threading
    import time

    page = os.sysconf("SC_PAGE_SIZE")

    def rss() -> int:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * page

    _pipelined_run(16)()  # torch's and the simulator's one-time set-up is not per instruction
    go = _pipelined_run(tiles)
    began, peak, done = rss(), [0], threading.Event()

    def sample():
        while not done.is_set():
            peak[0] = max(peak[0], rss())
            time.sleep(0.001)

    sampler = threading.Thread(target=sample)
    sampler.start()
    report = go()
    done.set()
    sampler.join()
    peak[0] = max(peak[0], rss())
    print(json.dumps({"grew": peak[0] - began, "instructions": report.instructions}))


def _child(tiles: int) -> dict:
    out = subprocess.run([sys.executable, __file__, "--rss-child", str(tiles)],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def line(what: str, now: float, target: str, unit: str = "", ok: bool | None = None) -> None:
    verdict = "" if ok is None else ("  met" if ok else "  not met")
    figure = f"{now:,.0f}" if now >= 100 else f"{now:.2f}"
    print(f"  {what:<62} {figure:>12}{unit:<4} target {target}{verdict}")


def cold(make, repeat: int):
    """(median seconds, report) of first launches: each of a fresh compile, so nothing of
    an earlier simulation is remembered."""
    runs = [make() for _ in range(repeat)]
    return median_time(lambda: runs.pop()(), repeat)


def warm(make, repeat: int):
    """(median seconds, report) of launches like an earlier one (the timeline is reused)."""
    go = make()
    go()
    return median_time(go, repeat)


def targets(repeat: int, quick: bool = False) -> None:
    """Issue 10's table, measured: medians of ``repeat`` runs, first launches and launches
    like an earlier one; instructions are compute and transfer ones (syncs not counted), as
    the issue counts them."""
    tiles, k, ks = (128, 2048, (1024, 2048, 4096)) if quick else (1024, 8192, (4096, 8192, 16384))
    print(f"\nthe chip's speed targets (issue 10){' -- quick sizes' if quick else ''}")
    for how, measure in (("first launch", cold), ("again", warm)):
        wall, report = measure(lambda: _pipelined_run(tiles), repeat)
        ips, cps = report.instructions / wall, report.cycles / wall
        line(f"seed pipelined, {tiles} tiles, {how}: instructions/s", ips, ">= 80,000", ok=ips >= 80_000)
        line(f"seed pipelined, {tiles} tiles, {how}: cycles/s", cps, ">= 10,000,000", ok=cps >= 10e6)
        wall, report = measure(lambda: b_trans_of(k), repeat)
        ips = report.instructions / wall
        line(f"b_trans matmul, K = {k}, {how}: instructions/s", ips, ">= 30,000", ok=ips >= 30_000)
    times = [cold(lambda x=x: b_trans_of(x), repeat)[0] for x in ks]
    for (a, ta), (b, tb) in zip(zip(ks, times), zip(ks[1:], times[1:])):
        line(f"b_trans simulate time, K {a} -> {b}, first launch", tb / ta, "<= 2.2 x", " x", ok=tb / ta <= 2.2)
    ran = _child(tiles)
    per = ran["grew"] / 1024 / ran["instructions"]
    line(f"peak memory per simulated instruction ({tiles} tiles, first launch)", per, "<= 0.5 KB", " KB",
         ok=per <= 0.5)
    more = _child(tiles * 4)  # what each further instruction costs, set-up and all apart
    per = (more["grew"] - ran["grew"]) / 1024 / (more["instructions"] - ran["instructions"])
    line(f"  the same, each instruction more ({tiles} -> {tiles * 4} tiles)", per, "<= 0.5 KB", " KB", ok=per <= 0.5)


if __name__ == "__main__":
    sys.exit(main())
