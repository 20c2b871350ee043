"""``pl.system.syncall`` at the chip: which launches can reach their barrier, and when each
block goes on.

A hard barrier (FFTS) waits for every physical core of its kind, so the launch must fill
them all and be admitted at once (``sync_start=True``): anything less hangs the device
(AICore error 507018), which here is a located refusal at the launch. A soft barrier
counts ``used_cores`` arrivals in GM, so that many participants must be on cores
together: the launch's blocks must fit the chip at once, and an explicit count must be the
launch's own (fewer releases early, more never releases).

Timing: each block is simulated alone (``Timeline.arrivals``: where its cores reach each
barrier, on its own clock), then again with each core held at the barrier until its
release, the last participant's arrival plus the mechanism's release cost; the chip
corrects the first release for blocks that did not start together.

    syncalls(kernel) -> (Syncall, ...)             the barriers a kernel's programs reach
    check(program, kernels, soc)                   every launch whose block count is static
    check_launch(kernel, blocks, sync_start, capacity, soc, span)
    release_cost(kernel, costs) -> cycles from a barrier's last arrival to its release
    held(kernel, simulate, blocks, cost) -> each block's Timeline, held at its barriers
    released(starts, durations, arrivals) -> the blocks' end cycles
"""

from __future__ import annotations

import attrs

from pypto.backend import CoreKind, SoC
from pypto.codegen.isa import Instr, walk
from pypto.errors import PyptoError
from pypto.ir import nodes as n


@attrs.frozen
class Syncall:
    core_type: str
    mode: str
    used_cores: object  # an Expr (None: the launch's own count)
    span: object = None


def syncalls(kernel) -> tuple:
    """The kernel's barriers, once each (a mix barrier is one SYNCALL on each core)."""
    seen = {}
    for program in kernel.programs:
        for node in walk(program.body):
            if isinstance(node, Instr) and node.mnemonic == "SYNCALL":
                core_type, mode, _, used = node.args
                seen.setdefault((node.span, core_type, mode), Syncall(core_type, mode, used, node.span))
    return tuple(seen.values())


def participants(core_type: str, kernel, blocks: int, soc: SoC) -> int:
    """The cores of a ``blocks``-block launch of ``kernel`` a barrier of ``core_type`` counts:
    a mixed kernel's block is its whole cluster, whose every vector core runs the AIV
    program (a2a3 dispatches a mixed kernel's vector side to both, the second replaying
    the cross-core handshakes where the work is not split)."""
    kinds = {p.core for p in kernel.programs}
    aic = 1 if CoreKind.AIC in kinds else 0
    aiv = (soc.aiv_per_cluster if aic else kernel.lanes) if CoreKind.AIV in kinds else 0
    per_block = {"aiv_only": aiv, "aic_only": aic, "mix": aic + aiv}[core_type]
    return blocks * per_block


def physical(core_type: str, soc: SoC) -> int:
    """The chip's cores of the kind a hard barrier waits for."""
    aiv = soc.clusters * soc.aiv_per_cluster
    return {"aiv_only": aiv, "aic_only": soc.clusters, "mix": soc.clusters + aiv}[core_type]


_QUERY = {"aiv_only": "pl.system.available_aiv_count()", "aic_only": "pl.system.available_cluster_count()",
          "mix": "pl.system.available_cluster_count()"}


def capacity(kernel, soc: SoC) -> int:
    """How many blocks of the kernel the chip holds at once: a vector core each, or a cube
    core (with its cluster's vector cores, for a mixed kernel)."""
    kinds = {p.core for p in kernel.programs}
    if kinds == {CoreKind.AIV} and kernel.lanes == 1:
        return len(soc.cores(CoreKind.AIV))
    return len(soc.cores(CoreKind.AIC))


def check(program, kernels: dict, soc: SoC) -> None:
    """Every launch of a kernel that reaches a barrier, with a block count known when it
    compiles (a refusal on every platform; a count known only as the orchestration runs is
    checked by the chip when it launches)."""
    for fn in program.functions:
        for s in n.walk_stmts(fn.body):
            v = getattr(s, "value", None)
            submit = v if isinstance(v, n.Submit) else None
            call = submit.call if submit is not None else v
            if not isinstance(call, n.FuncCall) or call.callee not in kernels:
                continue
            blocks = submit.blocks if submit is not None and submit.blocks is not None else n.Const(1)
            if isinstance(blocks, n.Const):
                kernel = kernels[call.callee]
                check_launch(kernel, blocks.value, submit is not None and submit.sync_start, capacity(kernel, soc),
                             soc, s.span)


def check_launch(kernel, blocks: int, sync_start: bool, capacity: int, soc: SoC, span) -> None:
    """Refuse a launch whose barrier would never release (or release early) on the device.
    ``capacity``: how many blocks of the kernel the chip holds at once."""
    for s in syncalls(kernel):
        count = participants(s.core_type, kernel, blocks, soc)
        where = f"the pl.system.syncall(core_type={s.core_type!r}, mode={s.mode!r}) at {s.span}"
        if s.mode == "hard":
            want = physical(s.core_type, soc)
            if count != want or not sync_start:
                launch = f"pl.spmd({blocks}{', sync_start=True' if sync_start else ''})"
                raise PyptoError(f"{where} waits for every one of the {want} {s.core_type.split('_')[0].upper()} "
                                 f"core(s) of {soc.name}, all resident at once, and this {launch} launch "
                                 + (f"gives {count}" if count != want else "may admit its blocks in waves")
                                 + ": the device would hang (AICore error 507018)", span=span,
                                 hint=f"launch pl.spmd({_QUERY[s.core_type]}, sync_start=True), or use "
                                      "mode='soft' with gm_workspace= and used_cores= at partial occupancy")
            continue
        if blocks > capacity:
            raise PyptoError(f"{where} waits for all {count} participants of this launch at once, and "
                             f"{soc.name} holds {capacity} of its {blocks} blocks at a time: the blocks waiting "
                             "for a core would never arrive", span=span,
                             hint=f"launch at most {capacity} blocks")
        used = s.used_cores
        if isinstance(used, n.Const) and used.value not in (0, count):
            raise PyptoError(f"{where} counts used_cores={used.value} arrivals, and this launch of {blocks} "
                             f"block(s) has {count} participant(s): the barrier would "
                             + ("never release" if used.value > count else "release before all arrive"),
                             span=span, hint=f"used_cores={count} (for 'mix', the AIC and AIV cores together), "
                                             "or 0 for the launch's own count")


def release_cost(kernel, costs) -> int:
    """The cycles from a barrier's last arrival to its release: the FFTS signal of a hard
    one, the next poll of a soft one."""
    return costs.syncall_hard if all(b.mode == "hard" for b in syncalls(kernel)) else costs.scalar_gm_read


def held(kernel, simulate, blocks: int, cost: int) -> list:
    """Each block's Timeline with its barriers' holds: simulated alone, its cores reach
    barrier k at their own cycles; the barrier releases at the last arrival of any block
    (all started together) plus the release cost, and each core is simulated again held
    there till then — so what it issued before runs on while it waits, and what follows
    issues from the release. ``simulate(block, holds)`` -> Timeline."""
    runs = [simulate(b, ()) for b in range(blocks)]
    counts = {len(t.arrivals) for t in runs}
    if counts == {0}:
        return runs
    if len(counts) > 1:
        bars = syncalls(kernel)
        raise PyptoError(f"the blocks of '{kernel.name}' reach pl.system.syncall a different number of times "
                         f"({sorted(counts)}): the barrier would wait for ever", span=bars[0].span if bars else None,
                         hint="reach every syncall in every block (not under a condition some blocks skip)")
    holds = [()] * blocks
    for k in range(counts.pop()):
        release = max(at for t in runs for _, at in t.arrivals[k]) + cost
        holds = [h + (tuple((core, release - at) for core, at in t.arrivals[k]),) for h, t in zip(holds, runs)]
        runs = [simulate(b, holds[b]) for b in range(blocks)]
    return runs


def released(starts: list, durations: tuple, arrivals: tuple) -> list:
    """Each block's end when the blocks start at ``starts``: ``durations`` are held as if
    they started together, and the first barrier releases at the last arrival counted from
    the actual starts (after it, the blocks run in step)."""
    if not arrivals:
        return [s + d for s, d in zip(starts, durations)]
    first = [max(at for _, at in a[0]) for a in arrivals]
    late = max(s + a for s, a in zip(starts, first)) - max(first)
    return [late + d for d in durations]
