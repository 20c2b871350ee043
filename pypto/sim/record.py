"""What a simulation keeps of each issued record as it starts (``Record``): the race
check's view of its accesses, its trace item (``Items``: in columns, a fast-forwarded
loop's trips repeated as read), its data effect, the GM windows it moves (``Footprint``)
and the totals — everything a Timeline is made of."""

from __future__ import annotations

import array
import collections
import itertools

from pypto.codegen.pipes import is_ring
from pypto.backend import Pipe
from pypto.ir.types import AtomicType
from pypto.sim.data import effects as Effects
from pypto.sim.data.steps import Steps
from pypto.sim.ops import fresh
from pypto.sim.timing.hazards import RaceChecker
from pypto.sim.fastforward.steady import Steady


class Items:
    """Every issued item of a timeline, for the trace, in columns: times in integer
    arrays, equal flags and details one object (``steps.shareable``) — a kept timeline
    holds little per item.
    Iterates (node, core, pipe, flag, issue, scalar cost, start, end, detail)."""

    def __init__(self):
        self.shared: dict = {}
        self.nodes, self.cores, self.pipes, self.flags, self.details = [], [], [], [], []
        self.issue, self.scalar_cost, self.start, self.end = (array.array("q") for _ in range(4))
        # the trips of a fast-forwarded loop (``steady``): (where, first item, end, times, cycles):
        # items [first, end) again ``times`` times, each ``cycles`` later, after the first ``where``
        self.repeats: list[tuple] = []
        self.repeated = 0

    def scalar_busy(self) -> dict:
        """Core -> the cycles its scalar unit spent issuing, the fast-forwarded trips included."""
        out: dict = {}
        for core, cost in zip(self.cores, self.scalar_cost):
            out[core] = out.get(core, 0) + cost
        for _, first, end, times, _ in self.repeats:
            for core, cost in zip(self.cores[first:end], self.scalar_cost[first:end]):
                out[core] += cost * times
        return out

    def vector_lanes(self) -> dict:
        """Core -> (lane-repeats that held an element, repeats) of its vector instructions,
        the fast-forwarded trips included: how full the vector unit's 256 B repeats ran."""
        used: dict = {}
        times = [1] * len(self.nodes)
        for _, first, end, n, _ in self.repeats:
            for k in range(first, end):
                times[k] += n
        for core, pipe, detail, n in zip(self.cores, self.pipes, self.details, times):
            if pipe is not Pipe.VECTOR:
                continue
            fields = dict(detail)
            repeats, share = fields.get("repeats"), fields.get("vector_utilization_percentage")
            if repeats is None or share is None:
                continue
            full, total = used.get(core, (0.0, 0))
            used[core] = (full + n * repeats * share / 100, total + n * repeats)
        return used

    def repeat(self, first: int, end: int, times: int, cycles: int) -> None:
        self.repeats.append((len(self.nodes), first, end, times, cycles))
        self.repeated += (end - first) * times

    def add(self, d) -> None:
        self.nodes.append(d.node)
        self.cores.append(d.core)
        self.pipes.append(d.pipe)
        self.flags.append(self.shared.setdefault(d.flag, d.flag))  # cores, pipes and an int event
        detail = d.detail  # (name, value) pairs
        for _, v in detail:
            if type(v) is not int and type(v) is not str:
                break
        else:
            detail = self.shared.setdefault(detail, detail)
        self.details.append(detail)
        self.issue.append(d.issue)
        self.scalar_cost.append(d.scalar_cost)
        self.start.append(d.start)
        self.end.append(d.end)

    def __len__(self) -> int:
        return len(self.nodes) + self.repeated

    def stored(self) -> int:
        """Items held (a repeated trip's are made as they are read)."""
        return len(self.nodes)

    def __iter__(self):
        rows = zip(self.nodes, self.cores, self.pipes, self.flags, self.issue, self.scalar_cost, self.start,
                   self.end, self.details)
        if not self.repeats:
            return rows
        return self._with_repeats(rows)

    def _with_repeats(self, rows):
        done = 0
        for where, first, end, times, cycles in self.repeats:
            yield from itertools.islice(rows, where - done)
            done = where
            for j in range(1, times + 1):
                shift = j * cycles
                for k in range(first, end):
                    yield (self.nodes[k], self.cores[k], self.pipes[k], self.flags[k], self.issue[k] + shift,
                           self.scalar_cost[k], self.start[k] + shift, self.end[k] + shift, self.details[k])
        yield from rows


class Record:
    """What a simulation keeps of each record as it starts: the race check's view of its
    accesses, its trace item, its data effect (compiled; or, unsafe, the record itself, to
    be applied at its start and end), and the totals."""

    def __init__(self, launches, unsafe: bool, steady: bool = False, live=None):
        """``live``: an ``effects.Live`` to perform each record's effect on as it starts,
        where the scalar unit reads values the pipes compute."""
        self.live = live
        self.launches = len(launches)
        self.races = None if unsafe else RaceChecker()
        # checking reads of unwritten bytes: each effect performed as it is, by ``apply``
        self.steps = None if unsafe or fresh.checking() else Steps([launch.tensors() for launch in launches])
        self.effects: list = []
        self.extents = Effects.Extents()
        self.footprint = Footprint()
        self.items = Items()
        self.cycles = self.instructions = self.syncs = 0
        self.arrivals: list = []  # the start of each SYNCALL, in order of start
        self.busy: dict = collections.defaultdict(int)  # (core name, pipe name) -> cycles occupied
        self.steady = Steady(self) if steady else None

    def started(self, d) -> None:
        if self.steady is not None:
            self.steady.watch(d)
        self.items.add(d)
        if d.end > self.cycles:
            self.cycles = d.end
        self.busy[(d.core.name, d.pipe.value)] += d.cost
        if d.flag is not None:
            self.syncs += 1
            return
        self.instructions += 1
        if d.pipe is Pipe.SCALAR and getattr(d.node, "mnemonic", "") == "SYNCALL":
            self.arrivals.append((d.start, d.core))
        if self.live is not None:
            self.live.perform(d)
        self.extents.add(d)
        if d.gm is not None:
            self.footprint.add(d)
        if self.steps is None:
            self.effects.append((d.start, 1, d.launch, d.order, d))
            self.effects.append((d.end, 0, d.launch, d.order, d))
            return
        self.races.started(d)
        self.steps.add(d)
        # the hazard check may keep the record as a segment's writer or reader: only what
        # its message needs stays
        d.args = d.accesses = d.detail = d.order = None


ATOMIC_ADD = 2  # a footprint's mode for an atomic-add store (False: a load, True: a store)


class Footprint:
    """The GM windows a timeline's loads and stores move, each distinct window once: what
    a task reads and writes, for the chip's race check (by parameter and element offsets,
    so a timeline reused for other tensors says where in them)."""

    def __init__(self):
        self.seen: dict = {}

    def add(self, d) -> None:
        key = self.key(d, d.args)
        if key is not None:
            self.seen[key] = None

    @staticmethod
    def key(d, args: dict) -> tuple | None:
        """The window a load or store (its arguments ``args``) moves; None for a pipe's ring."""
        if is_ring(d.gm[0]):  # a pipe's GM ring: the Group's own, no tensor of the program
            return None
        if d.whole is not None:  # by index: anywhere in the tensor
            return d.launch, d.gm[0], "output_tensor" in args, (0,) * len(d.whole), d.whole
        if d.node.op in ("tensor.write", "tensor.read"):  # one element, by the scalar unit
            return (d.launch, d.gm[0], d.node.op == "tensor.write", tuple(args["indices"]),
                    (1,) * len(args["indices"]))
        if "output_tensor" in args:  # a store writes; an atomic one adds (ATOMIC_ADD), which commutes with itself
            mode = ATOMIC_ADD if args.get("atomic") is AtomicType.Add else True
            return d.launch, d.gm[0], mode, tuple(args["offsets"]), tuple(args["tile"].valid)
        shapes = args["shapes"] if args["valid_shape"] is None else args["valid_shape"]
        offsets = args["src_offset"] if d.node.op == "tile.gather_row" else args["offsets"]
        return d.launch, d.gm[0], False, tuple(offsets), tuple(shapes)

    def windows(self) -> tuple:
        return tuple(self.seen)
