"""What must hold after each stage of the pipeline, beyond what the verifier checks of every
program: from the pass that establishes it on, for the rest of the pipeline. A later pass
relies on it without looking; a pass that breaks it fails here, naming the stage, the
function and the statement, with the lines around it.

    no Scope               after OutlineIncoreScopes    every pl.at body is a function of its own
    no tensor ops in       after ConvertTensorToTileOps kernels compute on tiles
      kernels
    every tile placed      after InferTileMemorySpace   each tile's memory space is known
    every tile has a       after InitMemRef             each tile names the buffer it lives in
      MemRef
    every MemRef           after AllocateMemoryAddr     each buffer has its bytes (under
      addressed                                         PTOAS the assembler places them)
"""

from __future__ import annotations

from collections.abc import Callable

import attrs

from pypto.errors import VerificationError
from pypto.ir import nodes as n
from pypto.ir.ops.elements import GM_ELEMENTS
from pypto.ir.types import ScalarType, TileType
from pypto.ir.verifier import context


@attrs.frozen
class Invariant:
    name: str
    since: tuple  # the passes establishing it (either, where the planners differ)
    kernels_only: bool
    broken: Callable  # statement -> what is wrong with it, or None
    hint: str


def _scope(stmt):
    return "a pl.at scope is still in place" if isinstance(stmt, n.Scope) else None


def _tensor_op(stmt):
    call = stmt.value if isinstance(stmt, (n.Assign, n.Eval)) else None
    if isinstance(stmt, n.Assign) and isinstance(stmt.type, ScalarType) or \
            isinstance(call, n.Call) and call.op in GM_ELEMENTS:
        return None  # a scalar, or an element the scalar unit writes in GM: no tile to compute on
    if isinstance(call, n.Call) and call.op.startswith("tensor."):
        return f"'{call.op}' is still a tensor op in a kernel"
    return None


def _tiles(stmt):
    """(name, TileType) of each tile the statement binds."""
    if isinstance(stmt, n.Assign):
        bindings = [(stmt.target, stmt.type)]
    elif isinstance(stmt, n.LOOPS):
        bindings = [(a.name, a.type) for a in stmt.iter_args] + [(b.name, b.type) for b in stmt.results]
    elif isinstance(stmt, n.If):
        bindings = [(b.name, b.type) for b in stmt.results]
    else:
        bindings = []
    return [(name, t) for name, t in bindings if isinstance(t, TileType)]


def _unplaced(stmt):
    return next((f"tile '{name}' has no memory space" for name, t in _tiles(stmt) if t.space is None), None)


def _no_memref(stmt):
    return next((f"tile '{name}' has no MemRef" for name, t in _tiles(stmt) if t.memref is None), None)


def _unaddressed(stmt):
    return next((f"tile '{name}' is in MemRef '{t.memref.name}', which has no address"
                 for name, t in _tiles(stmt) if t.memref is not None and t.memref.addr is None), None)


INVARIANTS = (
    Invariant("no Scope", ("OutlineIncoreScopes",), False, _scope,
              "OutlineIncoreScopes outlines every scope into an InCore function"),
    Invariant("kernels compute on tiles", ("ConvertTensorToTileOps",), True, _tensor_op,
              "ConvertTensorToTileOps lowers every tensor op of a kernel"),
    Invariant("every tile placed", ("InferTileMemorySpace",), True, _unplaced,
              "InferTileMemorySpace gives every tile a memory space"),
    Invariant("every tile has a MemRef", ("InitMemRef",), True, _no_memref,
              "InitMemRef gives every tile a buffer"),
    Invariant("every MemRef addressed", ("AllocateMemoryAddr",), True, _unaddressed,
              "AllocateMemoryAddr addresses every buffer"),
)


def in_force(done: list[str]) -> tuple[Invariant, ...]:
    """The invariants that hold once the passes ``done`` have run."""
    return tuple(inv for inv in INVARIANTS if any(p in done for p in inv.since))


def check(program: n.Program, stage: str, done: list[str], soc) -> None:
    """Raise a VerificationError at the first statement of ``program`` breaking an
    invariant in force after ``stage`` (``done``: the passes run so far)."""
    active = in_force(done)
    if not active:
        return
    for fn in program.functions:
        for inv in active:
            if inv.kernels_only and not fn.type.is_kernel:
                continue
            for stmt in n.walk_stmts(fn.body):
                wrong = inv.broken(stmt)
                if wrong is not None:
                    raise VerificationError(
                        f"after {stage}: in function '{fn.name}': {wrong} ({inv.name} holds from "
                        f"{' or '.join(inv.since)} on)\n{context(program, fn, stmt, soc)}",
                        span=getattr(stmt, "span", None), hint=inv.hint)
