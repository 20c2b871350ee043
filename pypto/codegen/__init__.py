"""Codegen: each InCore function of a lowered program becomes a ``Kernel`` — one
instruction program per core kind it uses — through instruction selection, sync
insertion and the split into per-core programs. ``listing`` writes them as text."""

from __future__ import annotations

from pypto.codegen.isa import (
    Buf,
    Cond,
    Instr,
    Kernel,
    Loop,
    Program,
    ScalarAssign,
    ScalarArray,
    ScalarLoad,
    SetFlag,
    WaitFlag,
    walk,
)
from pypto.codegen.select import CodegenError, select
from pypto.codegen.sync import insert_syncs
from pypto.ir import nodes as n
from pypto.ir.collector import collector_paused
from pypto.ir.ops.spmd import LANE_REGISTER
from pypto.passes.context import PassContext
from pypto.backend import CoreKind


def generate(program: n.Program, ctx: PassContext) -> dict[str, Kernel]:
    """name -> Kernel for every InCore function of ``program``."""
    with collector_paused():
        return {fn.name: generate_function(fn, ctx) for fn in program.functions if fn.type.is_kernel}


def generate_function(fn: n.Function, ctx: PassContext) -> Kernel:
    body, allocs, returns, lanes, pipes = select(fn, ctx)
    _refuse_laned_cube(body)
    body, _ = insert_syncs(body, ctx.soc)
    body = number(body)
    params = tuple((p.name, p.type) for p in fn.params)
    cores = [c for c in CoreKind if any(isinstance(x, Instr) and x.core is c for x in walk(body))]
    programs = tuple(Program(fn.name, c, params, tuple(a for a in allocs if ctx.soc.spec(a.space).core is c),
                             _project(body, c)) for c in cores)
    return Kernel(fn.name, params, programs, returns, lanes, pipes)


def number(body, counter=None) -> tuple:
    """Every node with its pre-order position: the cluster program's order, which each
    core's projection keeps (the simulator checks hazards against it)."""
    import itertools

    import attrs

    counter = counter or itertools.count()
    out = []
    for node in body:
        pos = next(counter)
        if isinstance(node, Loop):
            node = attrs.evolve(node, body=number(node.body, counter), pos=pos)
        elif isinstance(node, Cond):
            node = attrs.evolve(node, then_body=number(node.then_body, counter),
                                else_body=number(node.else_body, counter), pos=pos)
        else:
            node = attrs.evolve(node, pos=pos)
        out.append(node)
    return tuple(out)


def _project(body, core: CoreKind, foreign: set | None = None) -> tuple:
    """What one core runs: its instructions and flags, every scalar, the control flow —
    but not the scalars computed from an element another core's scalar unit read of its
    own tile (``foreign``), which this core cannot have; using one is refused."""
    foreign = set() if foreign is None else foreign
    out = []
    for node in body:
        if isinstance(node, Instr) and node.core is not core and node.result is not None:
            foreign.add(node.result)
        if isinstance(node, ScalarAssign) and n.expr_vars(node.value) & foreign \
                or isinstance(node, ScalarArray) and set().union(*map(n.expr_vars, node.args)) & foreign:
            foreign.add(node.name)
            continue
        _refuse_foreign(node, core, foreign)
        if isinstance(node, Instr):
            if node.core is core:
                out.append(node)
        elif isinstance(node, SetFlag):
            if node.src_core is core:
                out.append(node)
        elif isinstance(node, WaitFlag):
            if node.dst_core is core:
                out.append(node)
        elif isinstance(node, (ScalarAssign, ScalarLoad, ScalarArray)):
            out.append(node)
        elif isinstance(node, Loop):
            inner = _project(node.body, core, foreign)
            if inner:
                out.append(Loop(node.var, node.start, node.stop, node.step, inner, span=node.span, pos=node.pos,
                                cond=node.cond))
        elif isinstance(node, Cond):
            then_b, else_b = _project(node.then_body, core, foreign), _project(node.else_body, core, foreign)
            if then_b or else_b:
                out.append(Cond(node.cond, then_b, else_b, pos=node.pos, span=node.span))
    return tuple(out)


def _refuse_foreign(node, core: CoreKind, foreign: set) -> None:
    if not foreign:
        return
    if isinstance(node, Instr):
        used = node.core is core and set().union(*(n.expr_vars(e) for e in _exprs(node.args)))
    elif isinstance(node, Loop):
        used = set().union(*(n.expr_vars(e) for e in (node.start, node.stop, node.step, node.cond) if e is not None))
        used = used if any(isinstance(x, Instr) and x.core is core for x in walk(node.body)) else set()
    elif isinstance(node, Cond):
        used = n.expr_vars(node.cond) if any(isinstance(x, Instr) and x.core is core
                                             for x in walk(node.then_body + node.else_body)) else set()
    else:
        used = set()
    if used and used & foreign:
        name = sorted(used & foreign)[0]
        raise CodegenError(f"the {core.value} core uses '{name}', which the other core's scalar unit read (an "
                           "element of its own tile, or of GM in its place among that core's work): a core's scalar "
                           "registers are its own", span=getattr(node, "span", None),
                           hint="pl.read an element of a kernel input (read as the kernel starts, by every core), or "
                                "compute the value on the core that uses it")


def _refuse_laned_cube(body, laned: frozenset = frozenset({LANE_REGISTER}), under: bool = False) -> frozenset:
    """The cube has no lane: it runs a lane region as lane 0 (its part there is a crossing's
    store, which no lane places). Cube work a lane places — an address, an offset, a trip
    count or a branch computed from the lane — would be done for lane 0 alone, leaving the
    other half of its result silently unwritten; the lane split keeps such work out of its
    regions, and this refuses what slips through. ``under``: inside a loop or branch the
    lane decides. Returns the scalars computed from the lane so far."""
    for node in body:
        if isinstance(node, ScalarAssign) and (under or n.expr_vars(node.value) & laned):
            laned |= {node.name}
        elif isinstance(node, Instr) and node.core is CoreKind.AIC \
                and (under or set().union(*(n.expr_vars(e) for e in _exprs(node.args))) & laned):
            raise CodegenError(f"cube instruction {node.mnemonic} ({node.op}) depends on a vector core's lane; the "
                               "cube runs it once, for lane 0 only", span=node.span,
                               hint="this is a compiler fault (the lane split left cube work in a pl.split_aiv "
                                    "region); use pl.split(pl.SplitMode.NONE) meanwhile and report it")
        elif isinstance(node, Loop):
            bounds = set().union(*(n.expr_vars(e) for e in (node.start, node.stop, node.step)))
            laned = _refuse_laned_cube(node.body, laned, under or bool(bounds & laned))
        elif isinstance(node, Cond):
            decided = under or bool(n.expr_vars(node.cond) & laned)
            laned = _refuse_laned_cube(node.else_body, _refuse_laned_cube(node.then_body, laned, decided), decided)
    return laned


def _exprs(args):
    for a in args:
        if isinstance(a, tuple):
            yield from _exprs(a)
        elif isinstance(a, Buf):  # its address and valid extents
            yield a.addr
            yield from (a.valid or ())
        elif isinstance(a, n.Expr):
            yield a


__all__ = ["CodegenError", "Kernel", "generate", "generate_function"]
