"""The checks the fuzz properties make, as functions over data: outputs against a case's
oracle or against another platform's bits, the planners' placement contract, and whether
every sync the compiler inserted is needed. Each raises ``Failure`` (an AssertionError
whose first line says what broke) or returns what it counted; the tests and the campaign
runner share them."""

from __future__ import annotations

import contextlib
import os
import tempfile

import attrs
import torch

from pypto.backend import SoC
from pypto.fuzz.data import Case, bits_equal, within_bounds
from pypto.ir import nodes as n
from pypto.ir.types import TileType


class Failure(AssertionError):
    """A property that does not hold. The message's first line is what a campaign groups
    failures by (``signature``); the rest is detail."""


# ----------------------------------------------------------------------------- outputs


def against_oracle(case: Case, outputs, what: str = "the interpreter") -> None:
    """``outputs`` hold what the case's torch oracle computed (bit for bit, or within its bounds)."""
    for k, (got, want) in enumerate(zip(outputs, case.expected)):
        if case.check == "exact":
            if not bits_equal(got, want):
                raise Failure(f"{what}: output {k} differs from the torch oracle\n{case.recipe}\n"
                              f"{_first_difference(got, want)}")
        elif not within_bounds(got, want, case.bounds[k]):
            err = (got.double() - want.double()).abs().max().item()
            raise Failure(f"{what}: output {k} is beyond the oracle's error bound\n{case.recipe}\nerror {err}")


def same_bits(got, want, what: str, recipe: str = "") -> None:
    """Each output of ``got`` has the bits of ``want``'s."""
    for k, (x, y) in enumerate(zip(got, want)):
        if not bits_equal(x, y):
            raise Failure(f"{what}: output {k} differs\n{recipe}\n{_first_difference(x, y)}")


def _first_difference(got: torch.Tensor, want: torch.Tensor) -> str:
    if got.shape != want.shape or got.dtype != want.dtype:
        return f"got {got.dtype}{list(got.shape)}, want {want.dtype}{list(want.shape)}"
    bits = {2: torch.int16, 4: torch.int32, 8: torch.int64}
    a, b = (t.contiguous().view(bits[t.element_size()]) if t.is_floating_point() else t for t in (got, want))
    where = (a != b).nonzero()
    if not len(where):
        return ""
    at = tuple(where[0].tolist())
    return f"first at {list(at)}: got {got[at].item()!r}, want {want[at].item()!r} ({len(where)} elements differ)"


# ----------------------------------------------------------------------------- placements


def placement_problems(fn: n.Function, soc: SoC) -> list[str]:
    """What breaks AllocateMemoryAddr's contract in a lowered function: a MemRef placed two
    ways, without an address, off its space's alignment, smaller than its largest tile, past
    the space's end, or overlapping another one live at the same time."""
    from pypto.passes.allocation.memory import buffers

    placed, problems = {}, []
    for t in n.symbols(fn).values():
        if isinstance(t, TileType) and t.memref is not None:
            m = t.memref
            where = (t.space, m.addr, m.size, m.slots)
            if placed.setdefault(m.name, where) != where:
                problems.append(f"MemRef '{m.name}' placed two ways: {placed[m.name]} and {where}")
    live = buffers(fn, lambda s: soc.spec(s).align)
    for name, (space, addr, size, slots) in placed.items():
        spec = soc.spec(space)
        if addr is None or size is None:
            problems.append(f"'{name}' has no address")
            continue
        if addr % spec.align or size % slots or (size // slots) % spec.align:
            problems.append(f"'{name}' at {addr}, {slots} slot(s) of {size // slots} B, is off the {spec.align} B "
                            "alignment")
        if size // slots < live[name].slot_size:
            problems.append(f"'{name}' is smaller than its largest tile ({size // slots} < {live[name].slot_size} B)")
        if addr + size > spec.capacity:
            problems.append(f"'{name}' ends at {addr + size}, past {space.name}'s {spec.capacity} B")
    names = sorted(k for k, v in placed.items() if v[1] is not None and v[2] is not None)
    for i, x in enumerate(names):
        for y in names[i + 1:]:
            (sx, ax, zx, _), (sy, ay, zy, _) = placed[x], placed[y]
            if sx is sy and live[x].overlaps(live[y]) and not (ax + zx <= ay or ay + zy <= ax):
                problems.append(f"'{x}' [{ax}, {ax + zx}) and '{y}' [{ay}, {ay + zy}) in {sx.name} are live at once "
                                "and overlap")
    return problems


def declared_memrefs(program: n.Program) -> set[str]:
    """The MemRefs a program declares in its source (``pl.MemRef(...)`` on a tile)."""
    return {t.memref.name for fn in program.functions for t in n.symbols(fn).values()
            if isinstance(t, TileType) and t.memref is not None}


def declared_overlaps(fn: n.Function, declared: set[str]) -> list[str]:
    """DSA_RP's rule for declared allocations (``declared``, from the source): each shares
    no byte with any other buffer of its space, live at the same time or not."""
    placed = {}
    for t in n.symbols(fn).values():
        if isinstance(t, TileType) and t.memref is not None and t.memref.addr is not None:
            placed[t.memref.name] = (t.space, t.memref.addr, t.memref.size)
    out = []
    for name in sorted(declared & set(placed)):
        space, at, size = placed[name]
        for other, (s2, a2, z2) in sorted(placed.items()):
            if other != name and s2 is space and at < a2 + z2 and a2 < at + size:
                out.append(f"the declared '{name}' [{at}, {at + size}) and '{other}' [{a2}, {a2 + z2}) in "
                           f"{space.name} share bytes")
    return out


# ----------------------------------------------------------------------------- syncs


def sync_edges(kernel) -> list[int]:
    """The sync edges of a generated kernel (each a set_flag / wait_flag pair, or a barrier)."""
    from pypto.codegen.isa import SetFlag, WaitFlag, walk

    return sorted({x.edge for p in kernel.programs for x in walk(p.body) if isinstance(x, (SetFlag, WaitFlag))})


def without_edge(kernel, edge: int):
    """The kernel with one sync edge's set_flag and wait_flag taken out, wherever they are."""
    from pypto.codegen.isa import Cond, Loop, SetFlag, WaitFlag

    def strip(body):
        out = []
        for node in body:
            if isinstance(node, (SetFlag, WaitFlag)) and node.edge == edge:
                continue
            if isinstance(node, Loop):
                node = attrs.evolve(node, body=strip(node.body))
            elif isinstance(node, Cond):
                node = attrs.evolve(node, then_body=strip(node.then_body), else_body=strip(node.else_body))
            out.append(node)
        return tuple(out)

    return attrs.evolve(kernel, programs=tuple(attrs.evolve(p, body=strip(p.body)) for p in kernel.programs))


def unneeded_syncs(kernel, args, soc: SoC) -> list[int]:
    """The sync edges the kernel runs on ``args`` just as well without: taken out one at a
    time, the simulator sees no hazard where the edge stood. The kernel as it is runs first:
    a hazard there (a sync missing) raises ``SimulatorHazard`` — else every edge would look
    needed."""
    from pypto.sim.timing.hazards import SimulatorHazard
    from pypto.sim.simulator import run_kernel

    run_kernel(kernel, tuple(a.clone() if isinstance(a, torch.Tensor) else a for a in args), soc)
    spare = []
    for edge in sync_edges(kernel):
        try:
            run_kernel(without_edge(kernel, edge), tuple(a.clone() if isinstance(a, torch.Tensor) else a
                                                         for a in args), soc)
        except SimulatorHazard:
            continue
        spare.append(edge)
    return spare


# ----------------------------------------------------------------------------- diagnosing


def bisect_example(ex, planner: str | None = None):
    """Which step of the compiler breaks the example's program (``pypto.debug.bisect``):
    its oracle first, then each pass, then its simulator (a2a3sim or a5sim)."""
    from pypto.debug.bisect import bisect_program

    def oracle(tensors: dict) -> str | None:  # the inputs, then the Out tensors, by name
        try:
            against_oracle(ex.case, tuple(tensors.values())[len(ex.case.inputs):])
        except Failure as f:
            return str(f).splitlines()[0]
        return None

    return bisect_program(ex.case.program, ex.case.entry, ex.case.args(), planner or ex.planner, oracle,
                          ex.platform)


@contextlib.contextmanager
def quietly():
    """While checks run by the thousand: perf-hint lines kept out of the output (WARN), and
    builds of kernels compiled without an output_dir in a temporary directory, not the
    user's (unless $PYPTO_PROG_BUILD_DIR says where)."""
    from pypto.log import LogLevel, get_log_level, set_log_level

    level, mine = get_log_level(), "PYPTO_PROG_BUILD_DIR" not in os.environ
    with tempfile.TemporaryDirectory(prefix="pypto-fuzz-") as builds:
        if mine:
            os.environ["PYPTO_PROG_BUILD_DIR"] = builds
        set_log_level(max(level, LogLevel.WARN))
        try:
            yield
        finally:
            set_log_level(level)
            if mine:
                os.environ.pop("PYPTO_PROG_BUILD_DIR", None)
