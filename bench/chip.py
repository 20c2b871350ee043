"""Chip figures: the seed's pl.parallel claim (16 independent row-band tasks against the
same tasks under pl.range, which R-seq chains); one mixed scope (matmul then bias add)
against the same work as two staged scopes, at the reference example's shapes; one SPMD
dispatch of 16 blocks against 16 unrolled scopes; how many tiles the cube keeps in the
cross-core ring for each slot_num; split-K against one long accumulation (M = N = 64, K = 4096); how fast
the chip simulates a large task graph (tasks per second of wall time, first run and
again), and how the time of an orchestration that reads an element after each task grows
with its length.

    python bench/chip.py [--repeat N] [--tasks N]
"""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path

import torch

import pypto.language as pl
from timing import median_time  # bench/timing.py: scripts run as python bench/<name>.py

ROWS, COLS = 64, 512


def bands(loop, n: int):
    @pl.jit
    def band_tasks(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        for i in loop(n):
            with pl.at(level=pl.Level.CORE_GROUP):
                t = pl.load(a, [i * ROWS, 0], [ROWS, COLS])
                pl.store(pl.exp(t), [i * ROWS, 0], out)
        return out

    return band_tasks


def mixed_or_staged():
    m, k, n = 128, 256, 128
    cg = pl.Level.CORE_GROUP

    @pl.jit
    def staged(a: pl.Tensor, b: pl.Tensor, bias: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=cg):
            acc = pl.matmul(a, b, out_dtype=pl.FP32)
        with pl.at(level=cg):
            out[:] = pl.add(acc, bias)
        return out

    def mixed(mode):
        @pl.jit
        def mixed_scope(a: pl.Tensor, b: pl.Tensor, bias: pl.Tensor, out: pl.Out[pl.Tensor]):
            with pl.at(level=cg, optimizations=[pl.split(mode)]):
                acc = pl.matmul(a, b, out_dtype=pl.FP32)
                out[:] = pl.add(acc, bias)
            return out

        return mixed_scope

    g = torch.Generator().manual_seed(0)
    operands = (torch.randn(m, k, generator=g).half(), torch.randn(k, n, generator=g).half(),
                torch.randn(m, n, generator=g))
    return staged, mixed, operands, (m, n)


def ring_bands(slots: int):
    """Eight row bands, a short matmul then long vector work each: how far the cube runs ahead."""

    @pl.jit
    def bands_through_ring(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP,
                   optimizations=[pl.split(pl.SplitMode.UP_DOWN), pl.cross_core_slot(slot_num=slots)]):
            for i in pl.range(8):
                acc = pl.matmul(a[i * 16:(i + 1) * 16, :], b, out_dtype=pl.FP32)
                out[i * 16:(i + 1) * 16, :] = pl.exp(pl.exp(pl.exp(pl.exp(pl.mul(acc, 0.01)))))
        return out

    return bands_through_ring


def in_flight(report) -> int:
    """The most tiles the cube had stored into the ring that a vector core had not loaded."""
    events = [e for e in report.events if e.kind == "instr"]
    stores = sorted(e.start for e in events if e.core.startswith("aic") and e.name.startswith("FIXSTORE"))
    loads = [sorted(e.end for e in events if e.core == c and e.name.startswith("TLOAD acc_gm"))
             for c in sorted({e.core for e in events if e.core.startswith("aiv")})]
    return max(k - min(sum(t <= s for t in ends) for ends in loads) for k, s in enumerate(stores)) + 1


def spmd_or_unrolled(blocks: int):
    @pl.jit
    def unrolled(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        for i in pl.unroll(blocks):  # one task per block: each dispatched on its own
            with pl.at(level=pl.Level.CORE_GROUP, no_dep_args=[out]):
                pl.store(pl.exp(pl.load(a, [i * ROWS, 0], [ROWS, COLS])), [i * ROWS, 0], out)
        return out

    @pl.jit
    def spmd(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        for i in pl.spmd(blocks):  # one task of blocks
            pl.store(pl.exp(pl.load(a, [i * ROWS, 0], [ROWS, COLS])), [i * ROWS, 0], out)
        return out

    return unrolled, spmd


def read_after_each(n: int):
    @pl.jit
    def reader(a: pl.Tensor, out: pl.Out[pl.Tensor], flagged: pl.Out[pl.Tensor]):
        for i in pl.range(n):
            with pl.at(level=pl.Level.CORE_GROUP):
                pl.store(pl.exp(pl.load(a, [i * 16, 0], [16, COLS])), [i * 16, 0], out)
            if out[i * 16, 0] > 100.0:  # waits for the task; the orchestration goes on after it
                with pl.at(level=pl.Level.CORE_GROUP):
                    pl.store(pl.load(a, [i * 16, 0], [16, COLS]), [i * 16, 0], flagged)
        return out, flagged

    return reader


def line(what: str, now: float, target: str = "", ok: bool | None = None, unit: str = "") -> None:
    verdict = "" if ok is None else ("  met" if ok else "  not met")
    figure = f"{now:,.0f}" if now >= 100 else f"{now:.3f}"
    print(f"  {what:<64} {figure:>12}{unit:<3} {('target ' + target) if target else ''}{verdict}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--tasks", type=int, default=1024)
    args = parser.parse_args()
    n = 16
    a = torch.randn(n * ROWS, COLS)
    makespans = {}
    for name, loop in (("pl.range", pl.range), ("pl.parallel", pl.parallel)):
        out = torch.zeros(n * ROWS, COLS)
        report = bands(loop, n).compile(a, out).run(a, out)
        assert torch.equal(out, torch.exp(a))
        makespans[name] = report.cycles
        busy = len({t.core for t in report.tasks})
        line(f"{n} row-band tasks under {name}: makespan (cycles), {busy} core(s)", report.cycles)
    ratio = makespans["pl.parallel"] / makespans["pl.range"]
    line("pl.parallel / pl.range makespan (issue 12: the seed's claim)", ratio, "<= 0.25", ratio <= 0.25, " x")

    staged, mixed, operands, shape = mixed_or_staged()
    spans = {}
    kernels = [("staged (two scopes)", staged)] + [(f"mixed (one scope, {mode.name})", mixed(mode)) for mode in
                                                   (pl.SplitMode.NONE, pl.SplitMode.UP_DOWN, pl.SplitMode.LEFT_RIGHT)]
    for name, kernel in kernels:
        out = torch.zeros(shape)
        report = kernel.compile(*operands, out).run(*operands, out)
        spans[name] = report.cycles
        line(f"a @ b + bias [128x256 @ 256x128], {name}: makespan (cycles)", report.cycles)
    ratio = spans["mixed (one scope, UP_DOWN)"] / spans["staged (two scopes)"]
    line("mixed (UP_DOWN) / staged makespan (issue 13)", ratio, "< 1", ratio < 1, " x")

    g = torch.Generator().manual_seed(0)
    a16, b16 = torch.randn(128, 32, generator=g).half(), torch.randn(32, 128, generator=g).half()
    for slots in (1, 2, 4):
        out = torch.zeros(128, 128)
        report = ring_bands(slots).compile(a16, b16, out).run(a16, b16, out)
        depth = in_flight(report)
        line(f"8 bands, a ring of slot_num={slots}: makespan (cycles), {depth} tile(s) in flight at most",
             report.cycles, f"in flight <= {slots}", depth <= slots)

    unrolled, spmd = spmd_or_unrolled(n)
    spans = {}
    for name, kernel in (("pl.unroll scopes", unrolled), ("pl.spmd blocks", spmd)):
        out = torch.zeros(n * ROWS, COLS)
        report = kernel.compile(a, out).run(a, out)
        assert torch.equal(out, torch.exp(a))
        spans[name] = report.cycles
        line(f"{n} {name}: {len({t.task_id for t in report.tasks})} task(s) dispatched, makespan (cycles)",
             report.cycles)
    ratio = spans["pl.spmd blocks"] / spans["pl.unroll scopes"]
    line("pl.spmd / pl.unroll makespan (issue 13: fewer dispatches, shorter)", ratio, "< 1", ratio < 1, " x")

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples" / "advanced"))
    split_k = importlib.import_module("01_split_k")
    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(split_k.M, split_k.K, generator=g), torch.randn(split_k.K, split_k.N, generator=g)
    spans = {}
    for kernel in (split_k.unsplit, split_k.split_k):
        c = torch.zeros(split_k.M, split_k.N)
        spans[kernel.__name__] = kernel.compile(x, y, c).run(x, y, c).cycles
        line(f"{kernel.__name__} M=N={split_k.M}, K={split_k.K}: makespan (cycles)", spans[kernel.__name__])
    speedup = spans["unsplit"] / spans["split_k"]
    line(f"split-K ({split_k.SPLIT} splits) speed-up over unsplit (issue 13)", speedup, "> 1", speedup > 1, " x")

    big = args.tasks
    a = torch.randn(big * ROWS, COLS)
    out = torch.zeros(big * ROWS, COLS)
    compiled = bands(pl.parallel, big).compile(a, out)
    first, report = median_time(lambda: compiled.run(a, out), 1)
    again, report = median_time(lambda: compiled.run(a, out), args.repeat)
    line(f"{big} tasks: simulated tasks per second, first run", big / first)
    line(f"{big} tasks: simulated tasks per second, again", big / again)
    line(f"{big} tasks: makespan (cycles), {len({t.core for t in report.tasks})} cores", report.cycles)

    times = []
    for n in (big // 4, big // 2):
        a = torch.randn(n * 16, COLS)
        out, flagged = torch.zeros(n * 16, COLS), torch.zeros(n * 16, COLS)
        compiled = read_after_each(n).compile(a, out, flagged)
        compiled.run(a, out, flagged)
        again, _ = median_time(lambda: compiled.run(a, out, flagged), args.repeat)
        times.append(again)
        line(f"{n} tasks, an element read after each: seconds, again", again)
    line("  twice the tasks and reads: time ratio", times[1] / times[0], "<= 2.2", times[1] / times[0] <= 2.2, " x")


if __name__ == "__main__":
    sys.exit(main())
