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
        return member_prefix(member, self.launches[member].kernel.name) + param


def member_prefix(member: int, kernel: str) -> str:
    """How a Group task names its members' parameters: apart, though two members run one kernel."""
    return f"{kernel}#{member}."


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


def check_pipes(kernels: list, span) -> dict:
    """Ring name -> [(member, its side's ring)]: a pipe one member pushes into another pops; both
    sides agree on its slots and tile; a split tile needs both vector cores on the AIV side."""
    from pypto.codegen.pipes import describe

    sides: dict = {}
    for k in kernels:
        for ring in k.pipes:
            sides.setdefault(ring.name, []).append((k, ring))
    for name, found in sides.items():
        ring = found[0][1]
        what = describe(ring.pipe, ring.direction)
        if len(found) != 2:
            users = " and ".join(f"'{k.name}'" for k, _ in found)
            raise PyptoError(f"{what}: {users} {'uses' if len(found) == 1 else 'use'} it, and a pipe joins one "
                             "producer to one consumer of the Group", span=span,
                             hint="push in one member and pop (and free) in the other, both initializing the pipe")
        (a, ra), (b, rb) = found
        if (ra.slots, ra.slot_size, ra.shape, ra.dtype, ra.split) != (rb.slots, rb.slot_size, rb.shape, rb.dtype,
                                                                       rb.split):
            raise PyptoError(f"{what}: '{a.name}' and '{b.name}' disagree on it ({ra.slots} and {rb.slots} slots of "
                             f"{ra.slot_size} and {rb.slot_size} bytes; tiles {ra.dtype.name} {list(ra.shape)} and "
                             f"{rb.dtype.name} {list(rb.shape)} over all slots; split {ra.split} and {rb.split})",
                             span=span, hint="give both initialize_pipe calls the same slot_num and slot_size, and "
                                             "push and pop the same tile with the same split=")
        if ra.split:
            vector = next(k for k, _ in found if any(p.core is CoreKind.AIV for p in k.programs))
            if vector.lanes < 2:
                raise PyptoError(f"{what} splits its tile between the cluster's two vector cores (split={ra.split}), "
                                 f"and '{vector.name}' runs on one", span=span,
                                 hint='@pl.function(type=pl.FunctionType.AIV, attrs={"dual_aiv_dispatch": True})')
    return sides


def pipes(kernels: list, lanes: list, span) -> tuple:
    """Each member's (GM rings of its hand-written pipes, the vector lanes its cube flags go
    to), made once per launch, for members whose pipes ``check_pipes`` accepts."""
    import torch

    from pypto.sim.ops.numerics import TORCH

    sides = check_pipes(kernels, span)
    vector_lanes = tuple(v for k, lane in zip(kernels, lanes) if k.pipes and any(p.core is CoreKind.AIV
                                                                                  for p in k.programs)
                         for v in range(lane, lane + k.lanes))
    rings = {name: torch.zeros(found[0][1].shape, dtype=TORCH[found[0][1].dtype]) for name, found in sides.items()}
    out = []
    for k in kernels:
        scratch = tuple((r.name, rings[r.name]) for r in k.pipes)
        cube_only = all(p.core is CoreKind.AIC for p in k.programs)
        out.append((scratch, vector_lanes if k.pipes and cube_only else ()))
    return tuple(out)


def check(program, kernels: dict, soc: SoC) -> None:
    """Each ``pl.cluster()`` of the program's orchestrations fits one cluster, counting the
    kernels its body calls where it calls them (a refusal on every platform, at compile time)."""
    from pypto.ir import nodes as n

    for fn in program.functions:
        for s in n.walk_stmts(fn.body):
            if isinstance(s, n.Cluster):
                calls = [x.value if isinstance(x.value, n.FuncCall) else x.value.call for x in n.walk_stmts(s.body)
                         if isinstance(getattr(x, "value", None), n.FuncCall)
                         or isinstance(getattr(x, "value", None), n.Submit) and x.value.call is not None]
                members = [kernels[c.callee] for c in calls if c.callee in kernels]
                place(members, soc, s.span)
                check_pipes(members, s.span)


def slots(kernels: list, lanes: list, soc: SoC) -> tuple:
    """Which of the cluster's cores (cube, vector 0, vector 1, ...) the members run on."""
    used = [False] * (1 + soc.aiv_per_cluster)
    for k, lane in zip(kernels, lanes):
        kinds = {p.core for p in k.programs}
        used[0] = used[0] or CoreKind.AIC in kinds
        if CoreKind.AIV in kinds:
            for v in range(lane, lane + k.lanes):
                used[1 + v] = True
    return tuple(used)


def _crowded(what: str, soc: SoC, span) -> PyptoError:
    return PyptoError(f"a pl.cluster() is one cluster of {soc.name}: 1 cube core and {soc.aiv_per_cluster} vector "
                      f"cores, and {what}", span=span,
                      hint="put at most one cube kernel and two vector kernels in one pl.cluster(), or split it "
                           "into clusters of their own")
