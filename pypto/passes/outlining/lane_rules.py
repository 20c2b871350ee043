"""What a scope whose vector work runs on both of its cluster's vector cores may hold: a
hand-written ``pl.split_aiv`` region puts the scope in the reference's manual mode (every
vector op in a region, every crossing into one named with ``pl.aiv_shard``, out of one with
``pl.aic_gather``), and no kernel split over the lanes holds cube work in a region, or a
lane register or a named crossing outside one."""

from __future__ import annotations

from pypto.errors import UnsupportedSyntaxError
from pypto.ir import nodes as n
from pypto.ir.ops import lookup
from pypto.ir.types import ForKind


def check_regions(body: tuple, split) -> None:
    """A scope as written (``split``: its ``pl.split`` mode, or None): its hand-written
    ``pl.split_aiv`` regions, where it has any, and the crossings it names."""
    regions = [s for s in n.walk_stmts(body) if is_region(s)]
    if regions and split is not None:
        raise refused(regions[0], f"scope combines a function-level pl.split(pl.SplitMode.{split.name}) "
                       "(optimizations=[pl.split(...)]) with a pl.split_aiv region; these are mutually exclusive "
                       "AIV-split mechanisms — the function-level split would be silently dropped (the per-region "
                       "split governs the lanes)", "Remove optimizations=[pl.split(...)] or the pl.split_aiv region. "
                       "To pin a custom cross-core slot count, use optimizations=[pl.cross_core_slot(slot_num=N)], "
                       "which is orthogonal to splitting.")
    if regions:
        check_manual(body)  # the regions place the vector work
    if regions or any(call.op in ("tensor.aiv_shard", "tensor.aic_gather") for _, call, _, _ in _calls(body)):
        check_lanes(body)


_VECTOR_KINDS = ("elementwise", "row_reduce", "col_reduce", "row_broadcast", "col_broadcast", "transpose", "whole")


def check_manual(body: tuple) -> None:
    """A scope with hand-written ``pl.split_aiv`` regions places its vector work by them:
    vector compute outside every region is refused, and so is a cube value read inside one
    without ``pl.aiv_shard`` naming the crossing (the reference's manual-mode rules)."""
    cube: set = set()
    for stmt, call, kind, inside in _calls(body):
        if not inside and kind in _VECTOR_KINDS:
            raise refused(stmt, f"vector op '{call.op}' sits outside every pl.split_aiv region",
                           "move it into a region (mode=pl.SplitMode.NONE runs its body as written on both lanes)")
        read = next((a.name for a in call.args if isinstance(a, n.Var) and a.name in cube), None)
        if inside and call.op != "tensor.aiv_shard" and read is not None:
            raise refused(stmt, f"'{read}' is produced on the CUBE lane and read on the VECTOR lane inside a "
                                 "pl.split_aiv region without naming the crossing",
                           f"read it through pl.aiv_shard({read}) at the top of the region")
        if not inside and (kind == "cube" or kind == "slice" and read is not None):
            cube.add(getattr(stmt, "target", None))


def check_lanes(body: tuple) -> None:
    """A kernel split over both vector cores: no cube work inside a region (the cube is no
    vector core), and no lane register read nor named crossing outside one (only a region
    has a lane, and a crossing into it)."""
    for stmt, call, kind, inside in _calls(body):
        if inside and kind == "cube":
            raise refused(stmt, f"cube op '{call.op}' inside a pl.split_aiv region",
                           "compute it before the region and read its result there")
        if not inside and call.op == "tensor.aiv_shard":
            raise refused(stmt, "pl.aiv_shard names a crossing into a pl.split_aiv region, and this is outside "
                                 "every region", "read the cube value through pl.aiv_shard(x) inside the region")
        if not inside and call.op == "tensor.aic_gather":
            raise refused(stmt, "pl.aic_gather names a crossing out of a pl.split_aiv region, and this is outside "
                                 "every region", "gather the vector value inside the region that computes it")
        if not inside and call.op == "tile.get_subblock_idx":
            raise refused(stmt, "pl.tile.get_subblock_idx() outside a pl.split_aiv region: only a region's code "
                                 "runs on each vector core with a lane of its own",
                           "read it inside the region (its loop variable is the lane)")


def _calls(body, inside: bool = False):
    """(statement, call, its op's window kind, whether a region holds it) for every op call."""
    for stmt in body:
        call = getattr(stmt, "value", None)
        if isinstance(call, n.Call):
            windows = lookup(call.op).windows
            yield stmt, call, windows.kind if windows is not None else None, inside
        for block in n.stmt_children(stmt):
            yield from _calls(block, inside or is_region(stmt))


def is_region(stmt) -> bool:
    return isinstance(stmt, n.For) and stmt.kind is ForKind.SplitAiv


def refused(stmt, message: str, hint: str) -> UnsupportedSyntaxError:
    return UnsupportedSyntaxError(message, span=getattr(stmt, "span", None), hint=hint)
