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


BENCH_ROUNDS, BENCH_WARMUP = 10, 2  # what $PYPTO_BENCH_ROUNDS / $PYPTO_BENCH_WARMUP leave unset


def _count(text: str, name: str, default: int, least: int) -> int:
    if not text:
        return default
    try:
        value = int(text)
    except ValueError:
        value = least - 1
    if value < least:
        from pypto.errors import ConfigError

        raise ConfigError(f"{name}={text!r} is not a count (an int >= {least})",
                          hint=f"set {name} to e.g. {default}, or unset it")
    return value


def bench_line(compiled, args, config: RunConfig, environ) -> str:
    """``$PYPTO_BENCH=1``: the line the reference's benchmark harness prints after a kernel
    call, ``[RUN] effective_us (N rounds) min= median= mean= max=``, from ``rounds`` more
    launches on copies of the call's arguments (the call's own results are left as they
    are). Effective µs is the chip's makespan — orchestration, dispatch and the tasks, the
    window the reference's "Effective" covers — in simulated time, said on the line."""
    if config.platform == "ref":
        return ("[RUN] effective_us: unavailable on platform 'ref' (the interpreter keeps no time); "
                "platform='a2a3sim' gives it, simulated")
    rounds = _count(environ.get("PYPTO_BENCH_ROUNDS", ""), "PYPTO_BENCH_ROUNDS", BENCH_ROUNDS, 1)
    warmup = _count(environ.get("PYPTO_BENCH_WARMUP", ""), "PYPTO_BENCH_WARMUP", BENCH_WARMUP, 0)
    copies = tuple(a.clone() if isinstance(a, torch.Tensor) else a for a in args)
    stats = benchmark(compiled, copies, rounds=rounds, warmup=warmup, config=quiet(config))
    us = stats.device_wall_us
    line = (f"[RUN] effective_us ({rounds} rounds) min={min(us):.3f} median={statistics.median(us):.3f} "
            f"mean={statistics.fmean(us):.3f} max={max(us):.3f} (simulated: {config.platform} cycles at "
            f"{backend(config.backend).chip.core_hz / 1e9:g} GHz)")
    if environ.get("PYPTO_BENCH_RAW", "0") not in ("", "0"):
        line += "\n[RUN] effective_us raw: " + " ".join(f"{u:.3f}" for u in us)
    return line


def quiet(config: RunConfig) -> RunConfig:
    """``config`` writing nothing: the extra rounds of a measurement leave the call's artifacts."""
    return dataclasses.replace(config, report=False, enable_l0_trace=False, enable_chip_swimlane=0,
                               enable_dep_gen=False, enable_scope_stats=False, enable_pmu=0)
