"""Import time: ``import torch`` alone, ``import pypto.language`` beyond it, and what a small
kernel's first call costs after that, each the median over fresh interpreters.

    python bench/import_time.py [--runs N] [--pypto CHECKOUT]   (another checkout's pypto, to compare)

Every run is a new ``python`` process that imports torch, then pypto.language, then loads
the compiler and simulator (what the first compile loads: ``pypto.runtime.compiled``), then
calls a small kernel once on a2a3sim (specialize, compile, simulate). Both imports are
timed in the same process, so a busy machine slows both alike; the ratio is printed too.

Bytecode is cached as an installed package has it (a cache directory of this script's own,
warmed by one run first): PYTHONDONTWRITEBYTECODE in the environment would otherwise make
every run compile pypto's sources again. The full garbage collection that a large import
after torch triggers (torch leaves ~165k objects for the collector to walk) is timed apart:
it is torch's heap being walked, paid by whatever allocates next.

Target (issue 39): ``import pypto.language`` at most 0.3 s beyond torch.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET = 0.3  # seconds of import pypto.language beyond torch

CHILD = r'''
import gc, json, sys, time
walk = [0.0]
def _timed(phase, info, start=[0.0]):
    if info["generation"] == 2:
        if phase == "start":
            start[0] = time.perf_counter()
        else:
            walk[0] += time.perf_counter() - start[0]
t0 = time.perf_counter()
import torch
t1 = time.perf_counter()
gc.callbacks.append(_timed)
import pypto.language as pl
t2 = time.perf_counter()
gc.callbacks.remove(_timed)
loaded = sorted(m.split(".")[1] for m in sys.modules if m.count(".") >= 1 and m.startswith("pypto."))
import pypto.runtime.compiled
t3 = time.perf_counter()
sys.path.insert(0, sys.argv[1])
from import_time_kernel import scale
from pypto.runtime import RunConfig
x, out = torch.randn(64, 128), torch.zeros(64, 128)
t4 = time.perf_counter()
scale(x, out, config=RunConfig(platform="a2a3sim"))
t5 = time.perf_counter()
assert torch.equal(out, x * 2.0)
print(json.dumps({"torch": t1 - t0, "language": t2 - t1, "gc_walk": walk[0], "deferred": t3 - t2,
                  "first_call": t5 - t4, "packages": sorted(set(loaded))}))
'''

KERNEL = '''
import pypto.language as pl


@pl.jit
def scale(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(x, [0, 0], [64, 128])
        pl.store(pl.mul(t, 2.0), [0, 0], out)
    return out
'''


def one_run(work: Path, env: dict) -> dict:
    done = subprocess.run([sys.executable, "-c", CHILD, str(work)], env=env, cwd=work, capture_output=True,
                          text=True, check=False)
    if done.returncode != 0:
        sys.exit(f"import_time: a run failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--pypto", type=Path, default=ROOT, help="the checkout whose pypto is imported (default: this one)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="pypto_import_time_") as tmp:
        work = Path(tmp)
        (work / "import_time_kernel.py").write_text(KERNEL)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PYPTO_", "PTO2_"))}
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env.update(PYTHONPYCACHEPREFIX=str(work / "pycache"), PYTHONPATH=str(args.pypto.resolve()),
                   PYPTO_PROG_BUILD_DIR=str(work / "build_output"))
        one_run(work, env)  # warms the bytecode cache
        runs = [one_run(work, env) for _ in range(args.runs)]
    med = {key: statistics.median(r[key] for r in runs) for key in ("torch", "language", "gc_walk", "deferred",
                                                                    "first_call")}
    print(f"import time of {args.pypto.resolve()}, median of {args.runs} fresh interpreters "
          f"(load average {os.getloadavg()[0]:.1f}, {os.cpu_count()} cores)")
    print(f"  import torch                                {med['torch']:7.3f} s")
    print(f"  import pypto.language, beyond torch         {med['language']:7.3f} s   "
          f"({med['language'] / med['torch']:.0%} of torch's; target <= {TARGET} s: "
          f"{'met' if med['language'] <= TARGET else 'MISSED'})")
    print(f"    of which torch's heap walked by a full gc {med['gc_walk']:7.3f} s")
    print(f"  the compiler and simulator, loaded after    {med['deferred']:7.3f} s")
    print(f"  a small kernel's first call (a2a3sim)       {med['first_call']:7.3f} s   (specialize, compile, simulate)")
    print(f"  pypto packages loaded by import pypto.language: {', '.join(runs[0]['packages'])}")


if __name__ == "__main__":
    main()
