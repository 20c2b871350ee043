"""What ``torch_codegen``'s source calls: each op through the interpreter's own semantics
table (``pypto.sim.ops.semantics.IMPLS``), so the generated program means what the reference
interpreter computes — one definition, read by both."""

from __future__ import annotations

import contextlib
import itertools

from pypto.errors import ExecutionError
from pypto.ir.ops.spmd import BLOCK_REGISTERS, LANED
from pypto.ir.simplify import divide  # noqa: F401  (a scalar '/', in the generated code)
from pypto.sim.ops import numerics as num
from pypto.sim.ops.crossings import rejoin  # noqa: F401  (what a region hands the cube, in the generated code)
from pypto.sim.ops.numerics import TORCH  # noqa: F401  (the generated shape checks read it)
from pypto.sim.ops.semantics import IMPLS, VIEWS, OutOfRange, TileVal

_registers = [(0, 1, 0)]  # (block index, blocks, vector lane) of the code running
_tasks = itertools.count()  # task ids, in submission order


def op(name: str, *, _tile: bool = False, _valid=None, _kernel: bool = True, **args):
    """``name`` on ``args``, by the op's parameter names (tiles as ``TileVal``s); a tile
    result's valid extents are ``_valid`` (its shape unless given); on the host
    (``_kernel=False``), a view of a tensor is that tensor's memory."""
    if name in BLOCK_REGISTERS:
        block, count, _ = _registers[-1]
        return count if name == "tile.get_block_num" else block
    if name == "tile.get_subblock_idx":
        return _registers[-1][2]
    if name in LANED:  # a region's crossing: this lane's half
        args["lane"] = _registers[-1][2]
    try:
        data = (VIEWS[name] if name in VIEWS and not _kernel else IMPLS[name])(**args)
    except (OutOfRange, num.ArithmeticError_) as exc:  # the interpreter's error, without a place
        raise ExecutionError(f"{name}: {exc}", hint=getattr(exc, "hint", None)) from None
    if not _tile:
        return data
    return TileVal(data, tuple(int(v) for v in _valid) if _valid is not None else tuple(data.shape))


def host(value):
    """A value as the kernel's source names it in a debugger: a tile as the torch tensor of
    its valid region (a view: what the tile holds), anything else as it is."""
    return value.region() if isinstance(value, TileVal) else value


def task(run, when=None) -> int:
    """A submitted task, run now (program order meets every dependency): its id. A task
    whose dispatch predicate ``when()`` is false is retired without running."""
    if when is None or when():
        run()
    return next(_tasks)


def run_block(index: int, count: int, run) -> None:
    with block(index, count):
        run()


@contextlib.contextmanager
def block(index: int, count: int):
    """One block of an SPMD task: the code inside reads ``index`` as its block index."""
    _registers.append((index, count, _registers[-1][2]))
    try:
        yield
    finally:
        _registers.pop()


@contextlib.contextmanager
def lane(index: int):
    """One vector core's pass over a pl.split_aiv region."""
    _registers.append((*_registers[-1][:2], index))
    try:
        yield
    finally:
        _registers.pop()
