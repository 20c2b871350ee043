"""A host orchestrator compiled for a cluster (``DistributedProgram``): calling it walks the
host body for the arguments (``host.Dispatch``es), then runs every rank's dispatches — each
a per-device ``@pl.jit`` program run unchanged on its platform — on one ``Cluster``, and
reports each rank's clock (``DistributedReport``)."""

from __future__ import annotations

import dataclasses

import attrs

from pypto.backend import backend
from pypto.cluster.cluster import Cluster
from pypto.cluster.links import RankClock
from pypto.cluster.windows import WindowView
from pypto.errors import ConfigError
from pypto.runtime.callsite import located
from pypto.runtime.config import RunConfig
from pypto.sim.ops.comm import PORT


@attrs.frozen
class RankReport:
    rank: int
    device: int
    clock: RankClock = attrs.field(eq=False)
    core_hz: int

    @property
    def eff_us(self) -> float:
        """The rank's simulated time, start to end, in µs."""
        return self.clock.now * 1e6 / self.core_hz

    def line(self) -> str:
        c = self.clock
        return (f"rank {self.rank} (device {self.device}): {self.eff_us:.3f} us, comm {c.comm * 1e6 / self.core_hz:.3f}"
                f" us, waited {c.waited * 1e6 / self.core_hz:.3f} us, {c.sent} bytes moved, {c.notifies} notifies, "
                f"{c.waits} waits")


@attrs.frozen
class DistributedReport:
    ranks: tuple  # RankReport per rank
    outputs: object = None  # what the host orchestrator returned
    reports: tuple = ()  # per dispatch: (rank, the kernel's RunReport)
    events: tuple = ()  # every cross-rank act (``pypto.cluster.links.Event``)

    def write_swimlane(self, path):
        """The ranks' acts as a Chrome / Perfetto trace: a process per rank, an arrow from
        each notify to the wait it ended. The path written."""
        from pypto.cluster import swimlane

        return swimlane.write(path, list(self.events), len(self.ranks), self.ranks[0].core_hz)

    @property
    def eff_us(self) -> float:
        """The round's time: the slowest rank's."""
        return max(r.eff_us for r in self.ranks)

    def __str__(self) -> str:
        return "\n".join([f"eff_us {self.eff_us:.3f} (max over {len(self.ranks)} ranks)",
                          *(r.line() for r in self.ranks)])


def _distributed(config: RunConfig | None):
    if config is None or config.distributed_config is None:
        raise ConfigError("a @pl.jit.host orchestrator runs on a cluster of devices, and this config names none",
                          hint="config=RunConfig(platform='a2a3sim', distributed_config=DistributedConfig("
                               "device_ids=[0, 1]))")
    return config.distributed_config


class DistributedProgram:
    """The reference's ``DistributedCompiledProgram``: call it with the host's arguments, or
    ``prepare()`` a worker that runs it again and again."""

    def __init__(self, host, config: RunConfig | None):
        self.host = host
        self.config = config
        self.distributed = _distributed(config)
        self.last_report: DistributedReport | None = None

    def __repr__(self) -> str:
        return f"<pypto DistributedProgram {self.host.__name__} on devices {list(self.distributed.device_ids)}>"

    def _config(self, config: RunConfig | None) -> RunConfig:
        if config is None:
            return self.config
        if config.distributed_config is None:  # the devices are the compiled ones
            return dataclasses.replace(config, distributed_config=self.distributed)
        return config

    @located
    def __call__(self, *args, config: RunConfig | None = None):
        """Run on the cluster (Out tensors written in place); returns what the host returns."""
        return self.run(*args, config=config).outputs

    @located
    def run(self, *args, config: RunConfig | None = None) -> DistributedReport:
        config = self._config(config)
        return run_host(self.host, args, config)

    def prepare(self, config: RunConfig | None = None, *, extra_compiled=(), persistent: bool = False,
                reset_persistent_windows: bool | None = None, callbacks=None, sub_worker_overrides=None,
                startup_timeout_s: float | None = None):
        """A ``DistributedWorker`` for this program (and ``extra_compiled``). ``config`` only
        pre-warms in the reference (not kept); ``persistent`` keeps the windows across
        dispatches, zeroed before each unless ``reset_persistent_windows=False``. The host
        callbacks, sub-worker overrides and startup deadline of the reference's forked
        workers have nothing to act on here (the ranks are threads of this process)."""
        from pypto.runtime.distributed.worker import DistributedWorker

        return DistributedWorker(self, persistent=persistent, extra_compiled=tuple(extra_compiled),
                                 reset_windows=reset_persistent_windows is not False)


def run_host(host, args: tuple, config: RunConfig, windows: dict | None = None) -> DistributedReport:
    """Walk ``host`` for ``args`` and run its dispatches on a cluster of the config's devices."""
    dist = config.distributed_config
    nranks = dist.nranks
    dispatches, returned = host.dispatches(tuple(args), nranks, windows)
    rank_config = dataclasses.replace(config, distributed_config=None)
    per_rank = [[d for d in dispatches if d.rank == r] for r in range(nranks)]
    reports: list = []

    def body(rank: int):
        def run():
            for d in per_rank[rank]:
                values = tuple(a.on(rank) if isinstance(a, WindowView) else a for a in d.args)
                # one build of a per-device program serves every rank (the simulated devices are alike)
                compiled = d.kernel.compile(*values, config=rank_config)
                port = PORT.get()
                port.dispatching()
                report = compiled.run(*values, config=rank_config)
                port.dispatched(report.cycles if config.platform != "ref" else 0)
                reports.append((rank, report))
        return run

    soc = backend(config.backend)
    cluster = Cluster(nranks, soc)
    cluster.run([body(r) for r in range(nranks)])
    ranks = tuple(RankReport(r, dist.device_ids[r], cluster.links.clocks[r], soc.chip.core_hz) for r in range(nranks))
    return DistributedReport(ranks, returned, tuple(reports), tuple(cluster.links.events))


DistributedCompiledProgram = DistributedProgram  # the reference's name
