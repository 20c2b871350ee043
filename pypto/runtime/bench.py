"""``benchmark``: a compiled program launched ``warmup + rounds`` times on the simulated
chip, each launch timed as the device would take it. ``device_wall_us`` is the chip's
simulated time (its cycles at the SoC table's core clock); ``host_wall_us`` adds what
the host pays around it, modeled too: every host tensor the launch reads copied to the
device before it (H2D) and every one it writes copied back after (D2H), at the table's
host-link rate — a ``DeviceTensor`` already lives there and pays neither. The simulator
is deterministic, so rounds differ only where the data steers the kernel (``pl.read``)."""

from __future__ import annotations

import dataclasses
import math
import statistics

import attrs
import torch

from pypto.ir.types import ParamDirection, TensorType
from pypto.runtime.config import RunConfig
from pypto.runtime.worker import DeviceTensor
from pypto.backend import backend


@attrs.frozen
class BenchmarkStats:
    """Per-launch timing of ``benchmark``: ``device_wall_us`` and ``host_wall_us`` hold one
    sample per measured round (µs); ``h2d_us`` / ``d2h_us`` are a launch's modeled copies."""

    device_wall_us: list
    host_wall_us: list
    rounds: int
    warmup: int
    h2d_us: float
    d2h_us: float

    @property
    def invocations(self) -> int:
        """Launches made: the warm-up ones and the measured ones."""
        return self.warmup + self.rounds

    @property
    def samples(self) -> list:
        return self.device_wall_us

    @property
    def device_us_median(self) -> float:
        return statistics.median(self.device_wall_us)

    @property
    def device_us_min(self) -> float:
        return min(self.device_wall_us)

    @property
    def device_us_max(self) -> float:
        return max(self.device_wall_us)

    @property
    def device_us_mean(self) -> float:
        return statistics.fmean(self.device_wall_us)

    @property
    def device_us_stdev(self) -> float:
        return statistics.pstdev(self.device_wall_us)

    @property
    def all_zero_device(self) -> bool:
        """True when every sample is 0 (a ``ref`` run: the interpreter keeps no time)."""
        return bool(self.device_wall_us) and all(s == 0 for s in self.device_wall_us)

    def per_round(self, metric: str = "device") -> list:
        if metric not in ("device", "host"):
            raise ValueError(f"per_round: metric is 'device' or 'host', got {metric!r}")
        return list(self.device_wall_us if metric == "device" else self.host_wall_us)

    def __str__(self) -> str:
        return (f"{self.rounds} rounds (+{self.warmup} warm-up): device {self.device_us_median:.3f} µs median "
                f"[{self.device_us_min:.3f}, {self.device_us_max:.3f}], host {statistics.median(self.host_wall_us):.3f} µs "
                f"(H2D {self.h2d_us:.3f} + D2H {self.d2h_us:.3f})")


def transfer_us(compiled, args, soc) -> tuple[float, float]:
    """(H2D, D2H) µs of one launch: the host tensors it reads, then those it writes."""
    chip = soc.chip
    h2d = d2h = 0
    for p, a in zip(compiled.params, args):
        if not isinstance(p.type, TensorType) or isinstance(a, DeviceTensor) or not isinstance(a, torch.Tensor):
            continue
        nbytes = a.numel() * a.element_size()
        if p.direction is not ParamDirection.Out:
            h2d += nbytes
        if p.direction is not ParamDirection.In:
            d2h += nbytes

    def cost(nbytes: int) -> float:
        cycles = chip.host_copy if nbytes else 0
        cycles += math.ceil(nbytes / chip.host_link_bytes_per_cycle)
        return cycles * 1e6 / chip.core_hz

    return cost(h2d), cost(d2h)


def benchmark(compiled, args, *, rounds: int = 100, warmup: int = 3, platform: str | None = None,
              device_id: int | None = None, config: RunConfig | None = None, persistent: bool = False) -> BenchmarkStats:
    """Launch ``compiled(*args)`` ``warmup`` times, then ``rounds`` timed times (the
    arguments reused in place, as on the device). ``platform`` / ``device_id`` or
    ``config`` pick the run's configuration (not both); ``persistent`` is accepted and
    changes nothing here (every launch is a fresh dispatch of the same program)."""
    if isinstance(rounds, bool) or not isinstance(rounds, int) or rounds <= 0:
        raise ValueError(f"benchmark: rounds must be a positive int, got {rounds!r}")
    if isinstance(warmup, bool) or not isinstance(warmup, int) or warmup < 0:
        raise ValueError(f"benchmark: warmup must be an int >= 0, got {warmup!r}")
    if config is not None and (platform is not None or device_id is not None):
        raise ValueError("benchmark: pass either config= or platform=/device_id=, not both")
    if config is None:
        config = dataclasses.replace(compiled.config, **{k: v for k, v in (("platform", platform), ("device_id", device_id))
                                                  if v is not None})
    if hasattr(compiled, "compiled_for"):  # a program with pl.dynamic axes: its build for these extents
        compiled = compiled.compiled_for(*args)
    args = compiled._with_outputs(tuple(args))  # a return-style call's outputs, allocated once
    soc = backend(config.backend)
    h2d, d2h = transfer_us(compiled, args, soc)
    device, host = [], []
    for k in range(warmup + rounds):
        report = compiled.run(*args, config=config)
        if k < warmup:
            continue
        us = report.cycles * 1e6 / soc.chip.core_hz
        device.append(us)
        host.append(h2d + us + d2h)
    return BenchmarkStats(device, host, rounds, warmup, h2d, d2h)
