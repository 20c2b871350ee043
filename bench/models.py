"""Model figures (issue 39): a 14B-class transformer layer, decode (batch 16 over a paged KV
cache) and prefill (a 512-token prompt), written in pypto.language as its users write it
(bench/model_kernels), run piece by piece on ref and a2a3sim beside torch eager.

    python bench/models.py [--pieces rmsnorm,qkv_rope,attention,o_proj,mlp,layer] [--modes decode,prefill]
                           [--platform ref|a2a3sim|both] [--small] [--repeat N] [--scaling] [--no-check]
                           [--timeout S] [--all]

Per piece: its tasks, instructions (compute and transfer; syncs apart), the simulated
time, the wall seconds of a run on each platform (a first launch: every repeat compiles
the kernel afresh, so nothing of an earlier simulation is reused; compiling is not timed)
and its CPU seconds (what a shared host's load does not inflate), simulated instructions
per wall second and per CPU second, torch eager's time on the same shapes and dtypes
(bf16 GEMMs, fp32 element-wise work, SDPA; on one thread as the package runs, unless
``--threads``) and the two ratios, the largest error against torch's fp32 oracle, and
whether ref and a2a3sim agree bit for bit; the host's load as each piece began. The whole
layer runs in a fresh process, whose peak resident set is its memory figure.
``--scaling`` runs each piece again at twice the batch (decode) or sequence (prefill), its
wall time held to 1.1 x the growth of its arithmetic (x2; about x4 for causal attention).
``--all``: every piece, both modes, the scaling check, and bench/simulator.py's and
bench/compile_time.py's targets, all in one table of targets. Every figure is measured;
a piece that fails prints its one-line error and the rest go on.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

import pypto
from model_kernels.pieces import PIECES, arguments, compare, expected, flops, make_inputs
from model_kernels.shapes import SIZES, Case
from pypto.backend import A2A3
from pypto.runtime import RunConfig

HERE = Path(__file__).resolve().parent
PLATFORMS = ("ref", "a2a3sim")
MODES = ("decode", "prefill")
MATMUL_HEAVY = ("qkv_rope", "o_proj", "mlp")


@dataclasses.dataclass
class Figures:
    mode: str
    piece: str
    tasks: int | None = None
    instructions: int | None = None
    syncs: int | None = None
    sim_us: float | None = None
    wall: dict = dataclasses.field(default_factory=dict)  # platform -> median seconds of a run
    cpu: dict = dataclasses.field(default_factory=dict)  # platform -> median CPU seconds of a run (this process)
    compile_s: dict = dataclasses.field(default_factory=dict)  # platform -> median seconds of a compile
    torch_s: float | None = None
    error: dict = dataclasses.field(default_factory=dict)  # platform -> largest |got - oracle|
    within: dict = dataclasses.field(default_factory=dict)  # platform -> within the bf16 tolerance
    same_bits: bool | None = None
    failed: dict = dataclasses.field(default_factory=dict)  # platform (or "torch") -> one-line error
    load: float | None = None  # the host's load average (1 min) as the piece began
    peak_mb: float | None = None  # the process's peak resident set after the pypto runs (the layer)
    inputs_mb: float | None = None

    def ips(self):
        wall = self.wall.get("a2a3sim")
        return self.instructions / wall if wall and self.instructions else None

    def cpu_ips(self):
        cpu = self.cpu.get("a2a3sim")
        return self.instructions / cpu if cpu and self.instructions else None


def one_line(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    return f"{type(err).__name__}: {text[0] if text else ''}"[:240]


def measure(piece_name: str, case: Case, platforms, repeat: int, check: bool, build_dir: Path) -> Figures:
    """Every figure of one piece at one case: runs on each platform (``repeat`` first
    launches, the median), torch eager (after a warm-up), the oracle."""
    piece = PIECES[piece_name]
    fig = Figures(case.mode, piece_name, load=os.getloadavg()[0])
    tensors = make_inputs(case, piece.inputs(case))
    fig.inputs_mb = sum(t.numel() * t.element_size() for t in tensors.values()) / 2**20
    got = {}
    for platform in platforms:
        try:
            walls, cpus, compiles = [], [], []
            for k in range(repeat):
                kernel = piece.build(case)  # a fresh kernel: its first launch, nothing remembered
                args, outs = arguments(piece, case, tensors)
                config = RunConfig(platform=platform, output_dir=build_dir / f"{piece_name}_{platform}_{k}")
                began = time.perf_counter()
                compiled = kernel.compile(*args, config=config)
                compiles.append(time.perf_counter() - began)
                began, cpu_began = time.perf_counter(), time.process_time()
                report = compiled.run(*args)
                walls.append(time.perf_counter() - began)
                cpus.append(time.process_time() - cpu_began)
            fig.wall[platform], fig.compile_s[platform] = statistics.median(walls), statistics.median(compiles)
            fig.cpu[platform] = statistics.median(cpus)
            got[platform] = outs
            if platform == "a2a3sim":
                fig.tasks, fig.instructions = len(report.tasks), report.instructions
                fig.syncs = report.sync_instructions
                fig.sim_us = report.cycles / A2A3.chip.core_hz * 1e6
        except Exception as err:  # a piece that fails says why, and the rest go on
            fig.failed[platform] = one_line(err)
    fig.peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    if len(got) == 2:
        fig.same_bits = all(torch.equal(a, b) for a, b in zip(got["ref"], got["a2a3sim"]))
    try:
        expected(piece, case, tensors, exact=False)  # warm-up: torch's first call pays its set-up
        samples = []
        for _ in range(max(3, repeat)):
            began = time.perf_counter()
            expected(piece, case, tensors, exact=False)
            samples.append(time.perf_counter() - began)
        fig.torch_s = statistics.median(samples)
        if check and got:
            oracle = expected(piece, case, tensors, exact=True)
            for platform, outs in got.items():
                fig.error[platform], fig.within[platform] = compare(outs, oracle)
    except Exception as err:
        fig.failed["torch"] = one_line(err)
    return fig


def measure_in_child(piece_name: str, size: str, case: Case, platforms, repeat: int, check: bool,
                     timeout: float | None) -> Figures:
    """``measure`` in a fresh process: its peak resident set is the piece's own."""
    job = dict(piece=piece_name, size=size, mode=case.mode, doubled=case != case_of(size, case.mode),
               platforms=list(platforms), repeat=repeat, check=check)
    try:
        ran = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--threads", str(torch.get_num_threads()),
                              "--child", json.dumps(job)], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return Figures(case.mode, piece_name, failed={"run": f"timed out after {timeout:.0f} s"})
    lines = ran.stdout.strip().splitlines()
    if ran.returncode or not lines or not lines[-1].startswith("{"):
        tail = (ran.stderr.strip().splitlines() or [f"exit status {ran.returncode}"])[-1]
        return Figures(case.mode, piece_name, failed={"run": tail[:240]})
    return Figures(**json.loads(lines[-1]))


def run_piece(name: str, size: str, case: Case, platforms, repeat: int, check: bool, timeout, build_dir: Path):
    """The layer in a process of its own (its peak memory is the layer's), the rest here."""
    if name == "layer":
        return measure_in_child(name, size, case, platforms, repeat, check, timeout)
    return measure(name, case, platforms, repeat, check, build_dir)


def warm_up(build_dir: Path) -> None:
    """A tiny piece on each platform first: the modules a first run loads (the simulator's,
    torch's kernels) are not any piece's cost."""
    case = SIZES["tiny"][0]
    measure("rmsnorm", case, PLATFORMS, 1, False, build_dir)


def case_of(size: str, mode: str, doubled: bool = False) -> Case:
    case = SIZES[size][MODES.index(mode)]
    return case.doubled() if doubled else case


# ----------------------------------------------------------------------------- printing


def fmt(value, spec: str, missing: str = "-") -> str:
    return missing if value is None else format(value, spec)


HEADER = (f"{'mode':<8} {'piece':<10} {'tasks':>6} {'instr':>9} {'sim us':>9} {'compile s':>9} {'ref s':>8} "
          f"{'a2a3sim s':>9} {'instr/s':>9} {'ref cpu':>7} {'sim cpu':>7} {'instr/cpu s':>11} {'torch ms':>9} {'ref/torch':>9} {'sim/torch':>9} {'max err':>8} "
          f"{'ref==sim':>8} {'load':>5}")


def print_row(fig: Figures) -> None:
    ref, sim = fig.wall.get("ref"), fig.wall.get("a2a3sim")
    ratio = (lambda wall: wall / fig.torch_s if wall and fig.torch_s else None)
    err = max(fig.error.values()) if fig.error else None
    ok = "" if not fig.within else ("" if all(fig.within.values()) else " FAIL")
    same = {None: "-", True: "yes", False: "NO"}[fig.same_bits]
    print(f"{fig.mode:<8} {fig.piece:<10} {fmt(fig.tasks, 'd'):>6} {fmt(fig.instructions, ',d'):>9} "
          f"{fmt(fig.sim_us, ',.1f'):>9} {fmt(fig.compile_s.get('a2a3sim', fig.compile_s.get('ref')), '.2f'):>9} "
          f"{fmt(ref, '.2f'):>8} {fmt(sim, '.2f'):>9} {fmt(fig.ips(), ',.0f'):>9} "
          f"{fmt(fig.cpu.get('ref'), '.2f'):>7} {fmt(fig.cpu.get('a2a3sim'), '.2f'):>7} {fmt(fig.cpu_ips(), ',.0f'):>11} "
          f"{fmt(fig.torch_s and fig.torch_s * 1e3, '.2f'):>9} {fmt(ratio(ref), ',.0f'):>9} "
          f"{fmt(ratio(sim), ',.0f'):>9} {fmt(err, '.2e'):>8}{ok} {same:>8} {fmt(fig.load, '.1f'):>5}", flush=True)
    for where, why in fig.failed.items():
        print(f"{'':<8} {fig.piece:<10} failed on {where}: {why}", flush=True)


@dataclasses.dataclass
class Target:
    source: str
    what: str
    now: str
    target: str
    verdict: str  # "met", "not met" or "-" (not measured)


def model_targets(figs: list[Figures], scaled: list[tuple[Figures, Figures, float]], small: bool) -> list[Target]:
    """The issue's targets, each against what was measured."""
    src = "models" + (" (small)" if small else "")
    out = []

    def add(what, value, target, ok, unit=""):
        out.append(Target(src, what, "-" if value is None else f"{value:,.2f}{unit}", target,
                          "-" if value is None else ("met" if ok(value) else "not met")))

    for fig in figs:
        name = f"{fig.mode} {fig.piece}"
        if fig.piece == "layer":
            if fig.mode == "decode":
                add(f"{name}: a2a3sim s", fig.wall.get("a2a3sim"), "<= 30 s", lambda v: v <= 30, " s")
            add(f"{name}: peak memory", fig.peak_mb, "<= 2048 MB", lambda v: v <= 2048, " MB")
        else:
            add(f"{name}: a2a3sim s", fig.wall.get("a2a3sim"), "<= 10 s", lambda v: v <= 10, " s")
            add(f"{name}: ref s", fig.wall.get("ref"), "<= 5 s", lambda v: v <= 5, " s")
        if fig.piece in MATMUL_HEAVY:
            add(f"{name}: a2a3sim instructions/s", fig.ips(), ">= 50,000", lambda v: v >= 50_000)
        for platform, limit in (("ref", 20), ("a2a3sim", 60)):
            wall = fig.wall.get(platform)
            add(f"{name}: {platform} / torch eager", wall / fig.torch_s if wall and fig.torch_s else None,
                f"<= {limit} x", lambda v, limit=limit: v <= limit, " x")
    for base, twice, work in scaled:
        for platform in PLATFORMS:
            a, b = base.wall.get(platform), twice.wall.get(platform)
            add(f"{base.mode} {base.piece}: {platform} wall, tokens x2", b / a if a and b else None,
                f"<= {1.1 * work:.2f} x (1.1 x work)", lambda v, work=work: v <= 1.1 * work, " x")
    return out


TARGET_LINE = re.compile(r"^\s+(?P<what>\S.*?)\s{2,}(?P<now>\S.*?)\s+target (?P<target>.+?)\s+"
                         r"(?P<verdict>not met|met)$")


def script_targets(script: str, flags: list[str], source: str, timeout: float | None) -> list[Target]:
    """A bench script's target lines (``... target <what> met|not met``), run as it runs."""
    try:
        ran = subprocess.run([sys.executable, str(HERE / script), *flags], capture_output=True, text=True,
                             timeout=timeout)
    except subprocess.TimeoutExpired:
        return [Target(source, f"{script} {' '.join(flags)}", "-", "-", f"timed out after {timeout:.0f} s")]
    found = [Target(source, m["what"], " ".join(m["now"].split()).split(" (")[0], m["target"], m["verdict"])
             for m in map(TARGET_LINE.match, ran.stdout.splitlines()) if m]
    if ran.returncode or not found:
        why = (ran.stderr.strip().splitlines() or [f"exit status {ran.returncode}, no target lines"])[-1]
        found.append(Target(source, f"{script} {' '.join(flags)}", "-", "-", f"failed: {why[:160]}"))
    return found


def print_targets(targets: list[Target]) -> None:
    print(f"\n{'source':<16} {'figure':<64} {'now':>24}  {'target':<28} verdict")
    for t in targets:
        print(f"{t.source:<16} {t.what[:64]:<64} {t.now[:24]:>24}  {t.target[:28]:<28} {t.verdict}")
    missed = [t for t in targets if t.verdict != "met"]
    print(f"{len(targets) - len(missed)} of {len(targets)} targets met")


# ----------------------------------------------------------------------------- main


def child(job: dict) -> None:
    pypto.set_log_level(pypto.LogLevel.WARN)
    case = case_of(job["size"], job["mode"], job["doubled"])
    with tempfile.TemporaryDirectory(prefix="pypto-models-") as tmp:
        warm_up(Path(tmp))
        fig = measure(job["piece"], case, job["platforms"], job["repeat"], job["check"], Path(tmp))
    print(json.dumps(dataclasses.asdict(fig)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pieces", default=",".join(PIECES), help=f"comma-separated, of: {', '.join(PIECES)}")
    parser.add_argument("--modes", default=",".join(MODES), help="decode, prefill or both")
    parser.add_argument("--platform", choices=("ref", "a2a3sim", "both"), default="both")
    parser.add_argument("--small", action="store_true", help="hidden 512, 4 heads: a quick run")
    parser.add_argument("--repeat", type=int, default=1, help="first launches per figure; the median")
    parser.add_argument("--scaling", action="store_true", help="each piece again at twice the tokens")
    parser.add_argument("--no-check", action="store_true", help="skip the oracle (and its fp32 GEMMs)")
    parser.add_argument("--timeout", type=float, default=None, help="seconds for each process run apart")
    parser.add_argument("--all", action="store_true", help="everything, and the other benchmarks' targets")
    parser.add_argument("--threads", type=int, default=1,
                        help="torch's threads, for torch eager and the package's own torch calls alike (default 1: "
                             "the package runs on one core; two threads on a busy 2-core host wait on each other)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    if args.child:
        return child(json.loads(args.child))
    pypto.set_log_level(pypto.LogLevel.WARN)
    pieces = list(PIECES) if args.all else args.pieces.split(",")
    modes = list(MODES) if args.all else args.modes.split(",")
    unknown = [p for p in pieces if p not in PIECES] + [m for m in modes if m not in MODES]
    if unknown:
        parser.error(f"unknown piece or mode: {', '.join(unknown)}")
    platforms = PLATFORMS if args.platform == "both" else (args.platform,)
    size = "small" if args.small else "full"
    check = not args.no_check
    load = os.getloadavg()
    print(f"host: {os.cpu_count()} cores, load {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; torch {torch.__version__}, "
          f"{torch.get_num_threads()} threads; sizes: {size}; {args.repeat} first launch(es) per figure")
    for mode in modes:
        case = case_of(size, mode)
        print(f"  {mode}: {case}")
    print(HEADER)
    figs, scaled = [], []
    with tempfile.TemporaryDirectory(prefix="pypto-models-") as tmp:
        warm_up(Path(tmp))
        for mode in modes:
            case = case_of(size, mode)
            for name in pieces:
                fig = run_piece(name, size, case, platforms, args.repeat, check, args.timeout, Path(tmp))
                print_row(fig)
                figs.append(fig)
        if args.scaling or args.all:
            print("\nscaling: each piece at twice the batch (decode) or sequence (prefill), against the growth "
                  "of its arithmetic (x2, but for causal attention)")
            for fig in figs:
                case = case_of(size, fig.mode)
                twice = run_piece(fig.piece, size, case.doubled(), platforms, args.repeat, False, args.timeout,
                                  Path(tmp))
                work = flops(fig.piece, case.doubled()) / flops(fig.piece, case)
                scaled.append((fig, twice, work))
                print_row(dataclasses.replace(twice, piece=f"{fig.piece} x2"))
                ratios = "  ".join(f"{p} x{twice.wall[p] / fig.wall[p]:.2f}" for p in platforms
                                   if p in twice.wall and p in fig.wall)
                torch_x = f"torch x{twice.torch_s / fig.torch_s:.2f}" if twice.torch_s and fig.torch_s else ""
                print(f"{'':<8} {fig.piece:<10} tokens x2: {ratios}  {torch_x}  work x{work:.2f}", flush=True)
    layers = [fig for fig in figs if fig.piece == "layer" and fig.peak_mb is not None]
    if layers:
        print(f"\npeak memory of the whole layer, run on {' and '.join(platforms)} in a fresh process:")
    for fig in layers:
        print(f"  {fig.mode}: {fig.peak_mb:,.0f} MB resident (its inputs {fig.inputs_mb:,.0f} MB)")
    targets = model_targets(figs, scaled, args.small)
    if args.all:
        quick = ["--quick"] if args.small else []
        targets += script_targets("simulator.py", ["--targets", "--repeat", str(args.repeat), *quick], "simulator.py",
                                  args.timeout)
        targets += script_targets("compile_time.py", ["--targets-only", "--repeat", str(args.repeat)],
                                  "compile_time.py", args.timeout)
    print_targets(targets)


if __name__ == "__main__":
    sys.exit(main())
