"""A Group task (``with pl.cluster():``): the kernels one cluster body calls, started
together on one physical cluster — each AIC program on its cube core, each AIV program on
a vector core of its own — and simulated on one clock (``simulate_together``). Nothing
orders one member against another: GM bytes two of them share, one writing, are a hazard.

    placed = place(kernels, soc, span)       # each member's vector lane
    group = GroupLaunch(tuple(Launch(k, args, lane=lane) ...), name)
"""

from __future__ import annotations

import attrs

from pypto.backend import CoreKind, SoC
from pypto.errors import PyptoError


@attrs.frozen
class Named:
    name: str


@attrs.frozen
class GroupLaunch:
    """The members' launches of one block of a Group task."""

    launches: tuple
    name: str

    @property
    def kernel(self) -> Named:  # what the L0 trace writer names its directory after
        return Named(self.name)

    def maps(self) -> tuple:
        """Each member's tensors by parameter name, in member order (what ``apply`` takes)."""
        return tuple(launch.tensors() for launch in self.launches)

    def key(self, member: int, param: str) -> str:
        """A member's parameter as the Group task names it."""
        return f"{self.launches[member].kernel.name}.{param}"


def place(kernels: list, soc: SoC, span) -> list[int]:
    """The vector lane of each member (its AIV program's core; 0 for a cube-only member):
    a cluster has one cube core and ``aiv_per_cluster`` vector cores, and members may not
    share one."""
    cube, lane, lanes = None, 0, []
    for k in kernels:
        kinds = {p.core for p in k.programs}
        if CoreKind.AIC in kinds:
            if cube is not None:
                raise _crowded(f"'{cube}' and '{k.name}' both run on the cube core", soc, span)
            cube = k.name
        need = k.lanes if CoreKind.AIV in kinds else 0
        lanes.append(lane if need else 0)
        lane += need
        if lane > soc.aiv_per_cluster:
            raise _crowded(f"its members' vector programs need {lane} vector cores", soc, span)
    return lanes


def _crowded(what: str, soc: SoC, span) -> PyptoError:
    return PyptoError(f"a pl.cluster() is one cluster of {soc.name}: 1 cube core and {soc.aiv_per_cluster} vector "
                      f"cores, and {what}", span=span,
                      hint="put at most one cube kernel and two vector kernels in one pl.cluster(), or split it "
                           "into clusters of their own")
