"""The modeled AI core's instruction programs: what codegen emits, the listing writes and
the simulator runs.

    Program  = (name, core: CoreKind, params, allocs: Alloc*, body: Node*)
    Node     = Instr | SetFlag | WaitFlag | ScalarAssign | ScalarLoad | ScalarArray | Loop | Cond
    Loop     = (var, start, stop, step, body: Node*, cond?)    cond: a while loop's (stop None)
    Instr    = (mnemonic, pipe, core, op, args, reads: Loc*, writes: Loc*, span, note, dst?, result?)
    Loc      = BufLoc(space, core, addr: Expr, size, region?) | GmLoc(tensor, offsets: Expr*, extents, region?)

An instruction is one tile op at the hardware's granularity (its cost counts 256 B
repeats or 16x16x16 fractals); ``op`` names the registry op whose semantics it runs and
``args`` are that op's arguments with tiles as ``Buf`` operands. Addresses and flag event
ids may be expressions (a slot ``i % 2``), evaluated by the scalar unit when it issues.
"""

from __future__ import annotations

import attrs

from pypto.errors import Span
from pypto.ir import nodes as n
from pypto.ir.types import DataType
from pypto.backend import CoreKind, MemorySpace, Pipe


@attrs.frozen
class Region:
    """A slotted allocation: ``slots`` equal slots from ``base``; ``slot`` picks one."""

    name: str
    base: int
    slot_size: int
    slots: int
    slot: object  # Expr
    guarded: bool = True  # False: a PTOAS second co-live get, which the assembler does not sync


@attrs.frozen
class Buf:
    """A tile operand in on-chip memory."""

    space: MemorySpace
    addr: object  # Expr: byte address in the space
    shape: tuple
    dtype: DataType
    valid: tuple | None = None  # Exprs, None = whole tile
    tile: str = ""  # the IR name, for listings and messages
    region: Region | None = None

    @property
    def nbytes(self) -> int:
        size = 1
        for s in self.shape:
            size *= s
        return size * self.dtype.nbytes


@attrs.frozen
class TensorArg:
    """A GM tensor operand: a parameter of the kernel."""

    name: str


@attrs.frozen
class BufLoc:
    space: MemorySpace
    core: CoreKind
    addr: object  # Expr
    size: int
    region: Region | None = None


@attrs.frozen
class GmLoc:
    tensor: str
    offsets: tuple  # Exprs
    extents: tuple  # ints
    # a slot of a cross-core ring (system.reserve_buffer): which one ``region.slot`` picks,
    # the offsets then being within it — accesses to different slots never overlap
    region: Region | None = None


@attrs.frozen
class Instr:
    mnemonic: str
    pipe: Pipe
    core: CoreKind
    op: str  # registry op whose semantics this runs
    args: tuple  # the op's arguments: Buf / TensorArg / Expr / tuple of Expr / static values
    reads: tuple = ()
    writes: tuple = ()
    span: Span | None = attrs.field(default=None, eq=False)
    note: str = ""  # e.g. the tile it defines, for the listing
    dst: Buf | None = None  # the tile it writes (None for a store to GM)
    pos: int = attrs.field(default=-1, eq=False)  # pre-order position in the cluster program
    # the scalar it defines: an element the scalar unit reads from a tile (``tile.read``),
    # known only when it has run — the scalar unit waits for it
    result: str | None = None


@attrs.frozen
class SetFlag:
    src: Pipe
    dst: Pipe
    event: object  # Expr
    src_core: CoreKind
    dst_core: CoreKind
    edge: int = -1  # which sync edge it belongs to (for tests that remove one)
    pos: int = attrs.field(default=-1, eq=False)
    # a hand-written pipe's flag (edge -1): ("ready" | "free", the pipe), what deadlock messages name
    note: tuple = ()

    @property
    def pipe(self) -> Pipe:
        return self.src

    @property
    def core(self) -> CoreKind:
        return self.src_core


@attrs.frozen
class WaitFlag:
    src: Pipe
    dst: Pipe
    event: object
    src_core: CoreKind
    dst_core: CoreKind
    edge: int = -1
    pos: int = attrs.field(default=-1, eq=False)
    note: tuple = ()

    @property
    def pipe(self) -> Pipe:
        return self.dst

    @property
    def core(self) -> CoreKind:
        return self.dst_core


@attrs.frozen
class ScalarAssign:
    name: str
    value: object  # Expr
    pos: int = attrs.field(default=-1, eq=False)
    span: Span | None = attrs.field(default=None, eq=False)  # the source's, for an error where it runs


@attrs.frozen
class ScalarLoad:
    """The scalar unit reads one element of a GM tensor (a parameter) into ``name``: a
    value of the data, known only when it runs (``pl.read`` in a kernel)."""

    name: str
    tensor: str
    indices: tuple  # Exprs
    is_int: bool
    span: Span | None = attrs.field(default=None, eq=False)
    pos: int = attrs.field(default=-1, eq=False)


@attrs.frozen
class ScalarArray:
    """A small array of integers on the scalar unit's stack (``pl.array`` in a kernel):
    ``op`` "create" (``args``: size), "get" (array, index) or "set" (array, index, value,
    binding the updated array to ``name``)."""

    name: str
    op: str
    args: tuple  # Exprs (create: an int)
    span: Span | None = attrs.field(default=None, eq=False)
    pos: int = attrs.field(default=-1, eq=False)


def assigned_scalars(body) -> set[str]:
    """The scalar names a program body (re)binds: by expression, or by a read of GM or of a tile."""
    return {x.name for x in walk(body) if isinstance(x, (ScalarAssign, ScalarLoad, ScalarArray))} | \
        {x.result for x in walk(body) if isinstance(x, Instr) and x.result is not None}


@attrs.frozen
class Loop:
    """``for var = start to stop step step``; a while loop (``cond`` set, ``stop`` None)
    checks ``cond`` before each trip, ``var`` counting the trips: how many is known only
    as it runs."""

    var: str
    start: object
    stop: object
    step: object
    body: tuple = attrs.field(converter=tuple)
    span: Span | None = attrs.field(default=None, eq=False)
    pos: int = attrs.field(default=-1, eq=False)
    cond: object = None  # Expr

    @property
    def bounded(self) -> bool:
        """Whether its trips are counted from its bounds (not a while loop's)."""
        return self.cond is None


@attrs.frozen
class Cond:
    cond: object
    then_body: tuple = attrs.field(converter=tuple)
    else_body: tuple = attrs.field(default=(), converter=tuple)
    pos: int = attrs.field(default=-1, eq=False)
    span: Span | None = attrs.field(default=None, eq=False)


@attrs.frozen
class Alloc:
    """A buffer the listing declares: alloc_tile (fixed address) or alloc_multi_tile."""

    name: str
    space: MemorySpace
    addr: int | None
    size: int
    slots: int = 1


@attrs.frozen
class Program:
    name: str
    core: CoreKind
    params: tuple  # (name, Type)
    allocs: tuple
    body: tuple = attrs.field(converter=tuple)


@attrs.frozen
class Kernel:
    """One InCore function's programs: one per core kind it uses (a mixed function has both)."""

    name: str
    params: tuple  # (name, Type) in call order
    programs: tuple  # Program per core
    returns: tuple = ()  # the parameters (GM tensors) the function returns
    lanes: int = 1  # the cluster's vector cores its AIV program runs on, each with its lane register
    pipes: tuple = ()  # PipeBuffer: the GM slots of each hand-written cross-core pipe it pushes or pops

    def program(self, core: CoreKind) -> Program | None:
        return next((p for p in self.programs if p.core is core), None)


def walk(body):
    for node in body:
        yield node
        if isinstance(node, Loop):
            yield from walk(node.body)
        elif isinstance(node, Cond):
            yield from walk(node.then_body)
            yield from walk(node.else_body)


def expr_text(e) -> str:
    from pypto.ir.printer import expr

    return expr(e) if isinstance(e, (n.Var, n.Const, n.BinOp, n.UnaryOp)) else str(e)
