"""The screenshots the docs show (``docs/images/``): the real pages — the L0 trace, the memory
map, the chip's swimlane — of the tuning and task-graph tutorials' kernels, taken in headless
Chromium. The browser tests take them on every run; ``python dev/docs_images.py`` writes
them into ``docs/images/``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import torch

import pypto.language as pl
from pypto.ir import PassDumpLevel
from pypto.runtime import RunConfig

sys.path.insert(0, str(Path(__file__).resolve().parent))
from tools.browser import screenshot  # noqa: E402

IMAGES = {"trace.png": (1400, 250), "memory-map.png": (1400, 400), "swimlane.png": (1400, 500)}  # name: window


@pl.jit
def wide(a: pl.Tensor, out: pl.Out[pl.Tensor]):  # the tuning tutorial's tuned kernel
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.pipeline(16, stage=2):
            t = pl.load(a, [i * 16, 0], [16, 512])
            pl.store(pl.exp(t), [i * 16, 0], out)
    return out


@pl.jit
def bands(a: pl.Tensor, out: pl.Out[pl.Tensor]):  # the task-graph tutorial's graph
    for i in pl.parallel(16):
        with pl.at(level=pl.Level.CORE_GROUP):
            pl.store(pl.exp(pl.load(a, [i * 64, 0], [64, 512])), [i * 64, 0], out)
    return out


def _pypto(*args: str, cwd: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "pypto", *args], cwd=cwd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]


def take(out: Path, work: Path) -> list[Path]:
    """The three screenshots, written into ``out`` (``work``: builds and the browser profile)."""
    out.mkdir(parents=True, exist_ok=True)
    a = torch.randn(256, 512)
    config = RunConfig(output_dir=work / "wide", enable_l0_trace=True, dump_passes=PassDumpLevel.EXPLICIT)
    wide.compile(a, torch.zeros_like(a), config=config).run(a, torch.zeros_like(a))
    _pypto("trace", "wide", "-o", "trace", cwd=work)
    _pypto("memory-map", "wide", "-o", "map.html", cwd=work)
    b = torch.randn(16 * 64, 512)
    config = RunConfig(output_dir=work / "bands", enable_chip_swimlane=2, enable_dep_gen=True)
    bands.compile(b, torch.zeros_like(b), config=config).run(b, torch.zeros_like(b))
    _pypto("swimlane", "bands", "-o", "swim", cwd=work)
    (trace,) = (work / "trace").glob("OPPROF_*/trace.clean.html")
    pages = {"trace.png": trace, "memory-map.png": work / "map.html", "swimlane.png": work / "swim" / "swimlane.html"}
    return [screenshot(pages[name], out / name, work / "profile", size=size) for name, size in IMAGES.items()]
