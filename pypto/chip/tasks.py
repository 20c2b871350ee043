"""A task: one kernel submission of an orchestration, with its arguments' directions, the
edges the runtime derived for it, and — once scheduled — where and when it ran."""

from __future__ import annotations

import attrs

from pypto.backend import CoreId
from pypto.errors import Span
from pypto.ir.types import ArgDirection

READS = frozenset({ArgDirection.Input, ArgDirection.InOut})  # producer lookup
REGISTERS = frozenset({ArgDirection.InOut, ArgDirection.OutputExisting})  # producer registration


@attrs.frozen
class TaskArg:
    """One tensor argument of a task: the callee parameter it binds, its direction, the
    tensor (a view: its bytes are what the tracker compares), and what the orchestration
    passed, as written (for messages)."""

    index: int
    param: str
    direction: ArgDirection
    tensor: object
    written: str


@attrs.frozen
class Edge:
    """``succ`` waits for ``pred``: through argument ``arg`` of ``succ`` and the tensor's
    tracker entry (``"tensormap"``), the tensor's creator (``"creator"``), or the user's
    ``deps=`` (``"explicit"``, ``arg`` -1)."""

    pred: int
    succ: int
    arg: int
    source: str


def task_id(ring: int, local: int) -> int:
    """The runtime's 64-bit task id: the ring in bits 39..32, the ring-local id below."""
    return (ring << 32) | local


@attrs.define
class Placement:
    """Where and when one block of a task ran (a task that is not SPMD has one)."""

    block: int
    core: CoreId | None
    dispatch: int
    start: int
    end: int
    finish: int


@attrs.define(eq=False)
class Task:
    number: int  # in submission order, from 0
    ring: int
    local: int
    kernel: str
    core_type: str  # "aic", "aiv", or "mix" (a cluster's cube and vector cores together)
    args: tuple  # TaskArg of each tensor argument
    span: Span | None
    submitted: int  # the orchestrator cycle its submission completed
    duration: int  # cycles it runs on its core(s)
    preds: tuple = ()  # task numbers it waits for
    early: bool = False  # allow_early_resolve: its consumers may be staged before it finishes
    manual: bool = False  # submitted in a manual scope: only its deps= order it
    durations: tuple = ()  # an SPMD task's: cycles of each block (else its one block runs ``duration``)
    sync_start: bool = False  # SPMD: every block takes its core at once, or none does
    predicate: object = None  # the dispatch predicate (``sim.tasks.Dispatch``): false retires it
    retired: bool = False  # its predicate was false: it ran nothing, on no core
    slots: tuple = ()  # a mix task's: whether it runs on its cluster's cube core, vector core 0, vector core 1
    # a task whose blocks meet at pl.system.syncall: each block's cores' arrivals, on its own
    # clock (``pypto.chip.barriers``)
    arrivals: tuple = ()
    # once scheduled: each block's placement, and the task's — its first block's core and
    # dispatch, its first start, its last end and finish
    placements: list = attrs.Factory(list)
    core: CoreId | None = None  # (a mix task: its cluster's cube core)
    dispatch: int = 0
    start: int = 0
    end: int = 0
    finish: int = 0

    @property
    def blocks(self) -> tuple:
        """Each block's duration."""
        return self.durations or (self.duration,)

    @property
    def id(self) -> int:
        return task_id(self.ring, self.local)

    @property
    def name(self) -> str:
        return f"r{self.ring}t{self.local}"

    def where(self) -> str:
        at = f" at {self.span}" if self.span is not None else ""
        return f"task {self.name} `{self.kernel}`{at}"
