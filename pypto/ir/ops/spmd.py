"""The registers a kernel reads to find its share of the work: which block of how many of
an SPMD task it is (``pl.spmd(n)``; outside one they read 0 and 1), and which of its
cluster's two vector cores runs it (a ``pl.split_aiv`` region's lane; 0 elsewhere); and the
named crossings of a ``pl.split_aiv`` region's edge (``pl.aiv_shard`` / ``pl.aic_gather``)."""

from __future__ import annotations

from pypto.backend import MemorySpace, SoC
from pypto.errors import TypeCheckError
from pypto.ir.ops.registry import Kind, OpArgs, ParamSpec as P, register, unify
from pypto.ir.ops.type_rules import fail, fmt_shape
from pypto.ir.types import DataType, ScalarType, SplitMode, TileType

# what the code generator and the simulator call the registers (not names a program can bind)
BLOCK_REGISTERS = {"tile.get_block_idx": "%block_idx", "tile.get_block_num": "%block_num"}
LANE_REGISTER = "%subblock_idx"
CORE_REGISTERS = {**BLOCK_REGISTERS, "tile.get_subblock_idx": LANE_REGISTER}


def _index(a: OpArgs, soc: SoC) -> ScalarType:
    return ScalarType(DataType.INDEX)


register("tile.get_block_idx", [], _index, doc="this block's index in its SPMD task, 0..get_block_num() - 1",
         scalar=True)
register("tile.get_block_num", [], _index, doc="how many blocks the SPMD task running this kernel has", scalar=True)
register("tile.get_subblock_idx", [], _index,
         doc="which vector core of its cluster runs this code: 0 or 1 in a pl.split_aiv region, else 0",
         scalar=True)


def _shard(a: OpArgs, soc: SoC):
    return a.type("x")


# Names a cube value a pl.split_aiv region reads (the crossing the compiler stages); a
# data-parallel region halves it like any operand it reads from GM.
register("tensor.aiv_shard", [P("x", Kind.TENSOR)], _shard,
         doc="the cube value x, read on the vector lane: names a crossing into a pl.split_aiv region")
unify("aiv_shard", tile="tile.aiv_shard", tensor="tensor.aiv_shard")
# Names a vector value the cube reads after the pl.split_aiv region that computes it: the
# lanes' halves rejoined (the crossing the compiler stages: each lane stores its half of the
# cube's GM copy).
register("tensor.aic_gather", [P("x", Kind.TENSOR)], _shard,
         doc="the vector value x, handed to the cube after its pl.split_aiv region: names a crossing out of it")
unify("aic_gather", tile="tile.aic_gather", tensor="tensor.aic_gather")

# The Tile forms (the reference's @pl.program form): a region's tile code is each lane's own,
# so the crossing itself halves (shards) and rejoins (gathers) along the region's split axis.
# ``split`` is the region's mode as the reference encodes it (0 NONE, 1 UP_DOWN, 2 LEFT_RIGHT);
# the front end fills it from the enclosing ``pl.split_aiv`` region.
SPLITS = (SplitMode.NONE, SplitMode.UP_DOWN, SplitMode.LEFT_RIGHT)
LANED = ("tile.aiv_shard", "tile.aic_gather")  # what they compute depends on the lane running them
REGION_HINT = "write it inside the region: for aiv_id in pl.split_aiv(2, mode=pl.SplitMode.UP_DOWN): ..."


def split_mode(op: str, split) -> SplitMode:
    if split is None:
        raise TypeCheckError(f"pl.{op.split('.')[1]} must be used inside a 'for aiv_id in pl.split_aiv(...)' loop, "
                             "which supplies the split mode", hint=REGION_HINT)
    if split not in range(len(SPLITS)):
        raise fail(op, "split 0 (NONE), 1 (UP_DOWN) or 2 (LEFT_RIGHT)", str(split))
    return SPLITS[split]


def lane_window(shape, split: SplitMode, lane: int) -> tuple[tuple, tuple]:
    """(offsets, extents) of lane ``lane``'s half of a ``shape`` tile: the rows (UP_DOWN) or
    columns (LEFT_RIGHT) it owns; the whole tile in a NONE region."""
    if split is SplitMode.NONE:
        return (0,) * len(shape), tuple(shape)
    axis = 0 if split is SplitMode.UP_DOWN else 1
    half = shape[axis] // 2
    offsets = tuple(lane * half if k == axis else 0 for k in range(len(shape)))
    return offsets, tuple(half if k == axis else d for k, d in enumerate(shape))


def _resized(op: str, x: TileType, split: SplitMode, factor: float) -> tuple:
    """x's shape halved (factor 1/2) or doubled (2) along the split axis."""
    if split is SplitMode.NONE:
        return x.shape
    if len(x.shape) != 2:
        raise fail(op, "a 2D tile (its split axis is rows or columns)", f"{len(x.shape)} dimensions")
    axis = 0 if split is SplitMode.UP_DOWN else 1
    if factor < 1 and x.shape[axis] % 2:
        raise fail(op, f"an even extent on the split axis ({'rows' if axis == 0 else 'columns'}) to halve",
                   fmt_shape(x.shape), "pad the tile to an even extent, or use a NONE region")
    if x.valid_shape is not None:
        raise fail(op, "a tile valid everywhere (each lane owns a declared half)", "a valid region cut short",
                   "pl.tile.fillpad it first, or use a NONE region")
    return tuple(int(d * factor) if k == axis else d for k, d in enumerate(x.shape))


def _tile_shard(a: OpArgs, soc: SoC) -> TileType:
    x = a.tile("x")
    split = split_mode("tile.aiv_shard", a["split"])
    if a["lane_stride"] is not None:
        raise fail("tile.aiv_shard", "no lane_stride (the reference's compiler sets it balancing a ragged axis)",
                   str(a["lane_stride"]), "leave lane_stride out")
    shape = _resized("tile.aiv_shard", x, split, 0.5)
    return TileType(shape=shape, dtype=x.dtype, space=MemorySpace.Vec,
                    valid_shape=x.valid_shape if split is SplitMode.NONE else None)


def _tile_gather(a: OpArgs, soc: SoC) -> TileType:
    x = a.tile("x")
    split = split_mode("tile.aic_gather", a["split"])
    return TileType(shape=_resized("tile.aic_gather", x, split, 2), dtype=x.dtype, space=MemorySpace.Mat,
                    valid_shape=x.valid_shape if split is SplitMode.NONE else None)


# (a cube tile reaches a lane through GM, as a tile.move does: the cube's store, the lane's load of its half)
register("tile.aiv_shard", [P("x", Kind.TILE, spaces=(MemorySpace.Acc, MemorySpace.Mat)),
                            P("split", Kind.INT, default=None, optional=True),
                            P("lane_stride", Kind.INT, default=None, optional=True)], _tile_shard,
         doc="this lane's half of the cube tile x (its rows under UP_DOWN, columns under LEFT_RIGHT; all of it "
             "under NONE), in Vec: names a crossing into a pl.split_aiv region")
# (each lane stores its half into GM, the cube loads the whole into L1 after the region)
register("tile.aic_gather", [P("x", Kind.TILE, spaces=(MemorySpace.Vec,)),
                             P("split", Kind.INT, default=None, optional=True)], _tile_gather,
         doc="the lanes' halves x rejoined along the split axis, in Mat for the cube after the pl.split_aiv "
             "region (under NONE lane 0's x): names a crossing out of it")
