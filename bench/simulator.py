"""Simulator figures: per seed kernel, compile time, simulation wall time, simulated
instructions per second, and simulated cycles against the roofline (the busiest pipe's
own cycles: no schedule can beat it); then the b_trans matmul case.

    python bench/simulator.py [--repeat N]
"""

from __future__ import annotations

import argparse

import torch

from pypto.demo import KERNELS, ROWS, TC
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
    args = parser.parse_args()
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


if __name__ == "__main__":
    main()
