"""The UB slots of a mixed scope's cross-core rings, cut to the blocks that cross.

OutlineIncoreScopes reserves each ring (``system.reserve_buffer``) for the whole tensor
that crosses from the cube to the vector cores; ConvertTensorToTileOps then computes that
tensor block by block, and a pop carries one block. So the conversion is tried with the
slots as reserved and, when its tiles do not fit beside them, with slots of half the size
and so on down, until the blocks it picks beside the slots fit in them; the slots finally
reserved hold the largest block the vector cores load from the ring. Rings a kernel
reserves by hand (a pipe's, named for no parameter) are left as they are.
"""

from __future__ import annotations

import attrs

from pypto.errors import MemorySpaceError
from pypto.ir import nodes as n
from pypto.ir.ops import argument, with_args
from pypto.ir.ops.rings import reserved
from pypto.ir.types import TensorType, TileType
from pypto.passes.tile_conversion.tensor_graph import TensorGraph

SMALLEST = 512  # bytes: a slot is not cut below one UB block of 512


def convert_fitting_rings(fn: n.Function, convert) -> n.Function:
    """``convert(fn)`` (ConvertTensorToTileOps on one kernel) with the kernel's crossing
    rings sized to the blocks it computes; the first attempt's error when none fits."""
    params = {p.name for p in fn.params if isinstance(p.type, TensorType)}
    rings = {name: (size, slots) for name, (_, size, slots) in reserved(fn.body).items() if name in params}
    if not rings:
        return convert(fn)
    slot = {name: size // slots for name, (size, slots) in rings.items()}
    roots = TensorGraph(fn).roots
    cap, first = max(slot.values()), None
    while True:
        sized = {name: min(slot[name], cap) for name in rings}
        try:
            out = convert(_resized(fn, sized))
        except MemorySpaceError as err:
            first = first or err
        else:  # planned beside slots of ``sized``: taken when what a pop carries fits one
            popped = _largest_loads(out, roots, set(rings))
            if all(popped.get(name, 0) <= sized[name] for name in rings):
                return _resized(out, {name: popped.get(name) or sized[name] for name in rings})
        if cap <= SMALLEST:  # (the whole slots never fail that way: the first attempt raised)
            raise first
        cap = max(SMALLEST, cap // 2)


def _largest_loads(fn: n.Function, roots: dict, rings: set) -> dict:
    """Ring name -> the bytes of the largest Vec tile loaded from it."""
    out: dict = {}
    for s in n.walk_stmts(fn.body):
        call = getattr(s, "value", None)
        if isinstance(call, n.Call) and call.op == "tile.load" and isinstance(s.type, TileType):
            tensor = argument(call, "tensor")
            root = roots.get(tensor.name, tensor.name) if isinstance(tensor, n.Var) else None
            if root in rings:
                out[root] = max(out.get(root, 0), s.type.nbytes)
    return out


def _resized(fn: n.Function, slot: dict) -> n.Function:
    """The kernel with ring ``name``'s slots ``slot[name]`` bytes each, the reservations
    laid end to end from UB's base in the order they are made."""
    base = 0

    def resize(stmt):
        nonlocal base
        call = getattr(stmt, "value", None)
        if not (isinstance(call, n.Call) and call.op == "system.reserve_buffer" and argument(call, "name") in slot):
            return stmt
        size = slot[argument(call, "name")] * argument(call, "slot_num")
        stmt = attrs.evolve(stmt, value=with_args(call, size=size, base=base))
        base += size
        return stmt

    return attrs.evolve(fn, body=tuple(resize(s) for s in fn.body))
