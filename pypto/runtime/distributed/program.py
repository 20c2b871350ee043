"""A host orchestrator compiled for a cluster (``DistributedProgram``): calling it walks the
host body for the arguments (``host.Dispatch``es), then runs every rank's dispatches — each
a per-device ``@pl.jit`` program run unchanged on its platform — on one ``Cluster``, and
reports each rank's clock (``DistributedReport``)."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import attrs

from pypto.backend import backend
from pypto.cluster.cluster import Cluster
from pypto.cluster.links import RankClock
from pypto.cluster.windows import WindowView
from pypto.errors import ConfigError
from pypto.log import logger
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

    def __init__(self, host, config: RunConfig | None, write: bool = False):
        self.host = host
        self.config = config
        self.distributed = _distributed(config)
        self.last_report: DistributedReport | None = None
        # (ir.compile writes the build; a @pl.jit.host call, compiled at each call, does not)
        self.output_dir = _write_build(host, config) if write else None

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
        return run_host(self.host, args, config, output_dir=self.output_dir)

    def prepare(self, config: RunConfig | None = None, *, extra_compiled=(), persistent: bool = False,
                reset_persistent_windows: bool | None = None, callbacks=None, sub_worker_overrides=None,
                startup_timeout_s: float | None = None):
        """A ``DistributedWorker`` for this program (and ``extra_compiled``). ``config`` only
        pre-warms in the reference (not kept); ``persistent`` keeps the windows across
        dispatches, zeroed before each unless ``reset_persistent_windows=False``.
        ``callbacks`` binds the SubWorkers whose body is ``...`` (each one must be bound),
        ``sub_worker_overrides`` replaces any SubWorker's body; both are called with the
        argument list. The startup deadline of the reference's forked workers has nothing to
        act on here (the ranks are threads of this process)."""
        from pypto.runtime.distributed.worker import DistributedWorker

        subs = getattr(self.host, "sub_workers", {})
        bound = {}
        for what, given in (("callbacks", callbacks), ("sub_worker_overrides", sub_worker_overrides)):
            unknown = sorted(set(given or {}) - set(subs))
            if unknown:
                raise ValueError(f"{what}: {', '.join(unknown)} are not sub-workers of {self.host.__name__} "
                                 f"(it has: {', '.join(sorted(subs)) or 'none'})")
            bound.update(given or {})
        unbound = sorted(name for name, fn in subs.items() if name not in bound and (fn is None or _abstract(fn)))
        if unbound:
            raise ValueError(f"sub-workers {', '.join(unbound)} have no body ('...'): bind each with "
                             f"prepare(callbacks={{'{unbound[0]}': fn}})")
        return DistributedWorker(self, persistent=persistent, extra_compiled=tuple(extra_compiled),
                                 reset_windows=reset_persistent_windows is not False, bound=bound)


def _write_build(host, config: RunConfig):
    """The program's build directory, as the reference lays it out: the host orchestrator's
    source under ``orchestration/``, and a ``next_levels/builtin.tensor.<variant>/`` for each
    host-level collective, whose ``kernel_config.py`` names what its builtin program runs
    (the program itself is made per shape at the call: ``builtins.text``)."""
    from pypto.runtime import build_dirs
    from pypto.runtime.compiled import _stamp, chosen_dir

    chosen = chosen_dir(config)
    out = Path(chosen) if chosen is not None else build_dirs.default_root() / f"{host.__name__}_{_stamp()}"
    try:
        (out / "orchestration").mkdir(parents=True, exist_ok=True)
        source, node = host.parsed()
        (out / "orchestration" / f"{host.__name__}.py").write_text(ast.unparse(node) + "\n")
        for variant, call in host.collective_calls(config.distributed_config.nranks):
            sub = out / "next_levels" / f"builtin.tensor.{variant}"
            sub.mkdir(parents=True, exist_ok=True)
            span = source.span(call)
            (sub / "kernel_config.py").write_text(
                f"# pypto host builtin builtin.tensor.{variant}: one task per rank running the InCore composite\n"
                f"VARIANT = {variant!r}\nCALLED_AT = {f'{span.file}:{span.line}'!r}\n"
                f"CALL = {ast.unparse(call)!r}\n")
    except OSError as exc:
        logger.warning(f"[build] cannot write the distributed build into {out} ({exc.strerror or exc})")
    return out.resolve()


def run_host(host, args: tuple, config: RunConfig, windows: dict | None = None,
             bound: dict | None = None, output_dir: Path | None = None) -> DistributedReport:
    """Walk ``host`` for ``args`` and run its dispatches on a cluster of the config's devices.
    A SubWorker call (``host.Callback``) runs on the host between phases: every dispatch
    before it has run, none after it has begun. ``bound``: the SubWorkers' Python as
    ``prepare`` bound it (called with the argument list)."""
    from pypto.runtime.distributed.host import Callback

    dist = config.distributed_config
    nranks = dist.nranks
    steps, returned = host.dispatches(tuple(args), nranks, windows)
    rank_config = dataclasses.replace(config, distributed_config=None)
    if rank_config.enable_chip_swimlane:  # (the swimlane of a rank's dispatch is read with its task graph)
        rank_config = dataclasses.replace(rank_config, enable_dep_gen=True)
    # each rank's k-th dispatch writes its chip's artifacts apart: dfx_outputs/rank{r}/d{k}
    dfx = output_dir / "dfx_outputs" if output_dir is not None and config.any_dfx_enabled() \
        and config.platform != "ref" else None
    reports: list = []
    soc = backend(config.backend)
    links = None
    events: list = []
    phase: list = []
    for seq, step in enumerate([*steps, None]):
        if step is not None and not isinstance(step, Callback):
            phase.append((seq, step))
            continue
        if phase or links is None:
            cluster = _run_phase(phase, nranks, soc, rank_config, config.platform, reports, links, dfx)
            links = cluster.links
            phase = []
        if step is not None:
            _call_back(step, bound or {})
    ranks = tuple(RankReport(r, dist.device_ids[r], links.clocks[r], soc.chip.core_hz) for r in range(nranks))
    return DistributedReport(ranks, returned, tuple(reports), tuple(links.events))


def _run_phase(dispatches: list, nranks: int, soc, rank_config: RunConfig, platform: str, reports: list,
               links, dfx: Path | None) -> Cluster:
    per_rank = [[(seq, d) for seq, d in dispatches if d.rank == r] for r in range(nranks)]

    def body(rank: int):
        def run():
            for seq, d in per_rank[rank]:
                PORT.get().step(seq)  # in the host's order, as far as the waits allow
                values = tuple(a.on(rank) if isinstance(a, WindowView) else a for a in d.args)
                # one build of a per-device program serves every rank (the simulated devices are alike)
                compiled = d.kernel.compile(*values, config=rank_config)
                port = PORT.get()
                port.dispatching()
                if dfx is None:
                    report = compiled.run(*values, config=rank_config)
                else:
                    k = sum(1 for r, _ in reports if r == rank)
                    report = compiled.run(*values, config=rank_config, dfx_dir=dfx / f"rank{rank}" / f"d{k}")
                port.dispatched(report.cycles if platform != "ref" else 0)
                reports.append((rank, report))
        return run

    cluster = Cluster(nranks, soc, links)  # (the interconnect's clocks go on from the phase before)
    cluster.run([body(r) for r in range(nranks)],
                [per_rank[r][0][0] if per_rank[r] else float("inf") for r in range(nranks)])
    return cluster


def _call_back(step, bound: dict) -> None:
    fn = bound.get(step.name)
    if fn is not None:
        fn(list(step.args))  # (the reference calls a bound sub-worker with its argument list)
        return
    if step.fn is None or _abstract(step.fn):
        raise ConfigError(f"sub-worker '{step.name}' has no body ('...') and none was bound", span=step.span,
                          hint=f"compiled.prepare(callbacks={{'{step.name}': fn}}) binds one")
    step.fn(*step.args)


def _abstract(fn) -> bool:
    """A SubWorker whose body is ``...``: bound at ``prepare(callbacks=...)``."""
    from pypto.lang.sources import source_of

    try:
        body = source_of(fn)[1].body
    except Exception:  # noqa: BLE001  (no source: a real function)
        return False
    body = body[1:] if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
        and isinstance(body[0].value.value, str) and len(body) > 1 else body
    return len(body) == 1 and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
        and body[0].value.value is Ellipsis


DistributedCompiledProgram = DistributedProgram  # the reference's name
