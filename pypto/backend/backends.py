"""The reference's backend objects, read off the SoC tables: ``Backend910B.instance()`` with
its ``soc`` (dies of clusters of cores, each core with its memories), its handler's figures,
and the process-wide backend choice (``set_backend_type`` / ``get_backend_type`` /
``reset_for_testing``).

The tables (``pypto.backend.soc``) stay the one place of every capacity and count; these
objects only present them as the reference's users read them:

    bk = Backend910B.instance()
    sum(n * m * k for die, n in bk.soc.die_counts.items()
        for cluster, m in die.cluster_counts.items()
        for core, k in cluster.core_counts.items() if core.core_type == CoreKind.VECTOR)  # 48

The process-wide choice is kept for code written against the reference, which sets it
before building passes by hand. Nothing here reads it: a compile takes its chip from
``RunConfig(backend_type=...)`` (configuration is passed, not ambient). Choosing a chip the
reference names but this package does not model is refused.
"""

from __future__ import annotations

import functools

import attrs
from pyrsistent import pmap

from pypto.backend.arch import CoreKind, MemorySpace
from pypto.backend.soc import BackendType, SoC, backend


@attrs.frozen
class Mem:
    mem_type: MemorySpace
    mem_size: int  # bytes the planner may use
    alignment: int


@attrs.frozen
class Core:
    core_type: CoreKind  # CoreKind.CUBE / CoreKind.VECTOR (the reference's CoreType names)
    mems: tuple  # of Mem


@attrs.frozen(eq=False)  # a dict key by identity: each chip's objects are made once
class Cluster:
    core_counts: pmap  # Core -> how many in one cluster

    def total_core_count(self) -> int:
        return sum(self.core_counts.values())


@attrs.frozen(eq=False)
class Die:
    cluster_counts: pmap  # Cluster -> how many on one die

    def total_cluster_count(self) -> int:
        return sum(self.cluster_counts.values())

    def total_core_count(self) -> int:
        return sum(c.total_core_count() * n for c, n in self.cluster_counts.items())


@attrs.frozen(eq=False)
class Chip:
    """The reference's ``SoC`` object (``Backend.soc``): the dies of the chip."""

    die_counts: pmap  # Die -> how many

    def total_die_count(self) -> int:
        return sum(self.die_counts.values())

    def total_cluster_count(self) -> int:
        return sum(d.total_cluster_count() * n for d, n in self.die_counts.items())

    def total_core_count(self) -> int:
        return sum(d.total_core_count() * n for d, n in self.die_counts.items())


def _chip(table: SoC) -> Chip:
    """``table.dies`` alike dies of alike clusters: a cluster holds its cube and vector cores
    together (the tables model clusters as the unit that shares flags; the reference's a2a3
    die lists its 24 AIC and 48 AIV as one-core clusters, the same cores)."""
    cores = {}
    for kind in (CoreKind.AIC, CoreKind.AIV):
        mems = tuple(Mem(s.space, s.capacity, s.align) for s in table.spaces.values() if s.core is kind)
        cores[Core(kind, mems)] = table.per_cluster(kind)
    cluster = Cluster(pmap(cores))
    die = Die(pmap({cluster: table.clusters_per_die}))
    return Chip(pmap({die: table.dies}))


class BackendHandler:
    """The figures of one chip the reference's passes ask its backend for."""

    def __init__(self, table: SoC):
        self._table = table

    def get_pto_target_arch(self) -> str:
        return self._table.name

    def get_default_sim_platform(self) -> str:
        return f"{self._table.name}sim"

    def get_launch_spec_core_count_method(self) -> str:
        return self._table.launch_core_count_method

    def requires_gm_pipe_buffer(self) -> bool:
        return self._table.requires_gm_pipe_buffer

    def supports_bf16_atomic_add(self) -> bool:
        return "bf16" not in self._table.lacks_atomic_add

    def get_gm_access_granularity_bytes(self) -> int:
        return self._table.gm_access_granularity

    def get_l2_cache_line_bytes(self) -> int:
        return self._table.l2_cache_line

    def get_recommended_innermost_dim_bytes(self) -> int:
        return self._table.recommended_transfer_bytes

    def _capacity(self, space: MemorySpace) -> int:
        return self._table.spec(space).capacity

    def get_l0a_capacity_bytes(self) -> int:
        return self._capacity(MemorySpace.Left)

    def get_l0b_capacity_bytes(self) -> int:
        return self._capacity(MemorySpace.Right)

    def get_l0c_capacity_bytes(self) -> int:
        return self._capacity(MemorySpace.Acc)

    def get_bias_capacity_bytes(self) -> int:
        return self._capacity(MemorySpace.Bias)

    def get_mat_capacity_bytes(self) -> int:
        return self._capacity(MemorySpace.Mat)


class Backend:
    """One modeled chip, as the reference's ``Backend``: ``Backend910B.instance()``."""

    backend_type: BackendType

    def __init__(self, backend_type: BackendType):
        self.backend_type = backend_type
        self.table = backend(backend_type)  # refuses a chip with no table here
        self.soc = _chip(self.table)

    def __repr__(self) -> str:
        return f"<{type(self).__name__}: the {self.table.name} SoC table>"

    def get_type_name(self) -> str:
        """The reference's short name: "910B", "950"."""
        return self.backend_type.name.removeprefix("Ascend")

    def get_handler(self) -> BackendHandler:
        return BackendHandler(self.table)

    def get_mem_size(self, mem_type: MemorySpace) -> int:
        return self.table.spec(mem_type).capacity

    def get_core_count(self, core_type: CoreKind) -> int:
        return self.table.aic_cores if core_type is CoreKind.AIC else self.table.aiv_cores

    def find_mem_path(self, from_mem: MemorySpace, to_mem: MemorySpace) -> list:
        """The spaces a tile passes through from ``from_mem`` to ``to_mem`` (both ends
        included), by the table's legal moves, shortest first; [] when there is no way."""
        paths = [[from_mem]]
        seen = {from_mem}
        while paths:
            path = paths.pop(0)
            if path[-1] is to_mem:
                return path
            for nxt in self.table.graph_from(path[-1]):
                if nxt not in seen:
                    seen.add(nxt)
                    paths.append([*path, nxt])
        return []


class Backend910B(Backend):
    @staticmethod
    @functools.cache
    def instance() -> Backend910B:
        return Backend910B(BackendType.Ascend910B)


class Backend950(Backend):
    @staticmethod
    @functools.cache
    def instance() -> Backend950:
        return Backend950(BackendType.Ascend950)


_CLASSES = {BackendType.Ascend910B: Backend910B, BackendType.Ascend950: Backend950}
_chosen: list = []  # the process-wide choice, once made: [BackendType]


def get_backend_instance(backend_type: BackendType) -> Backend:
    return _CLASSES[backend_type].instance()


def set_backend_type(backend_type: BackendType) -> None:
    """Choose the process-wide backend: again the same is a no-op, another is a ValueError
    (as the reference has it), a chip not modeled here a ConfigError."""
    if not isinstance(backend_type, BackendType):
        raise TypeError(f"set_backend_type takes a BackendType, got {backend_type!r}")
    backend(backend_type)
    if _chosen and _chosen[0] is not backend_type:
        raise ValueError(f"the backend is already {_chosen[0].name}; it cannot change to {backend_type.name} "
                         "(reset_for_testing() clears the choice)")
    _chosen[:] = [backend_type]


def get_backend_type() -> BackendType:
    if not _chosen:
        raise ValueError("no backend type is configured: call set_backend_type(BackendType.Ascend910B) first")
    return _chosen[0]


def is_backend_configured() -> bool:
    return bool(_chosen)


def get_handler() -> BackendHandler:
    return get_backend_instance(get_backend_type()).get_handler()


def reset_for_testing() -> None:
    """Clear the process-wide choice (the reference's name: tests call it between cases)."""
    _chosen.clear()
