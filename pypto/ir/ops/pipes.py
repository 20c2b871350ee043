"""The hand-written cross-core pipe of a Group's AIC and AIV functions: each side
initializes pipe ``id`` (``system.aic_initialize_pipe`` / ``aiv_initialize_pipe``:
directions ``dir_mask`` — 1 cube to vector, 2 vector to cube — with ``slot_num`` slots of
``slot_size`` bytes); the producer pushes a tile (``tile.tpush_to_aiv`` / ``tpush_to_aic``),
which waits for a free slot; the consumer pops it (``tile.tpop_from_aic`` /
``tpop_from_aiv``), which waits for a ready one, and frees the slot when done
(``system.tfree_to_aic`` / ``tfree_to_aiv``). ``split`` says how the cluster's two vector
cores share a tile: 0 whole, 1 by rows, 2 by columns. The consumer keeps the slots'
bytes with ``system.reserve_buffer``; the producer names them with
``system.import_peer_buffer``."""

from __future__ import annotations

from pypto.backend import MemorySpace as M
from pypto.backend import SoC
from pypto.errors import TypeCheckError
from pypto.ir.ops.registry import Kind, OpArgs, ParamSpec as P, register, unify
from pypto.ir.types import DataType, ScalarType, TileType

C2V, V2C = 1, 2  # dir_mask bits
SPLITS = (0, 1, 2)  # none, up/down (rows), left/right (columns)
# the slots a pipe has when initialize_pipe does not say: PTOAS's defaults
DEFAULT_SLOTS = {1: 8, 2: 8, 3: 4}

PUSHES = {"tile.tpush_to_aiv": "tile.tpop_from_aic", "tile.tpush_to_aic": "tile.tpop_from_aiv"}
POPS = {pop: push for push, pop in PUSHES.items()}
FREES = {"system.tfree_to_aic": "tile.tpop_from_aic", "system.tfree_to_aiv": "tile.tpop_from_aiv"}
INITS = ("system.aic_initialize_pipe", "system.aiv_initialize_pipe")
PIPE_OPS = frozenset({*PUSHES, *POPS, *FREES, *INITS})


def direction(op: str) -> int:
    """The pipe direction a push, pop or free moves data in."""
    return C2V if op in ("tile.tpush_to_aiv", "tile.tpop_from_aic", "system.tfree_to_aic") else V2C


def _split(a: OpArgs, op: str) -> int:
    split = a["split"]
    if split not in SPLITS:
        raise TypeCheckError(f"{op} split must be 0 (NONE/no split axis), 1 (UP_DOWN/axis0) or 2 (LEFT_RIGHT/axis1), "
                             f"but got {split}",
                             hint="the odd-extent codes 3 and 4 are not modeled: give the split axis an even extent")
    return split


def _id(a: OpArgs, op: str) -> None:
    pipe = a["id"]
    if pipe is not None and not 0 <= pipe < 8:
        raise TypeCheckError(f"{op}: pipe id {pipe} is not one of the cluster's 8 per direction (0..7)")


def _push(space: M | None):
    def infer(a: OpArgs, soc: SoC):
        t: TileType = a.tile("tile")
        if len(t.shape) != 2:
            raise TypeCheckError(f"{a.op} requires a 2D tile, but got rank {len(t.shape)}")
        split = _split(a, a.op)
        if split and t.shape[split - 1] % 2 and a.op == "tile.tpush_to_aiv":
            raise TypeCheckError(f"{a.op}: split {split} halves axis {split - 1} of a {list(t.shape)} tile, which "
                                 "is odd", hint="give the split axis an even extent")
        _id(a, a.op)
        return None
    return infer


def _pop(space: M):
    def infer(a: OpArgs, soc: SoC) -> TileType:
        shape, dtype = a["shape"], a["dtype"]
        if shape is None or dtype is None:
            raise TypeCheckError(f"{a.op} needs the tile it receives: shape= and dtype=, or an annotation",
                                 hint=f"x: pl.Tile[[16, 16], pl.FP32, pl.Mem.{space.name}] = pl.{a.op.split('.')[1]}"
                                      "(split=0)")
        if len(shape) != 2:
            raise TypeCheckError(f"{a.op} receives a 2D tile, not rank {len(shape)}")
        _split(a, a.op)
        _id(a, a.op)
        return TileType(shape=tuple(int(s.value) if hasattr(s, "value") else int(s) for s in shape), dtype=dtype,
                        space=space)
    return infer


def _free(a: OpArgs, soc: SoC):
    _id(a, a.op)
    return None


def _init(a: OpArgs, soc: SoC):
    op = a.op
    if a["dir_mask"] not in (1, 2, 3):
        raise TypeCheckError(f"'{op}' requires valid 'dir_mask' attribute: 1 (cube to vector), 2 (vector to cube) or "
                             f"3 (both), not {a['dir_mask']}")
    if a["slot_size"] <= 0:
        raise TypeCheckError(f"'{op}' requires positive 'slot_size' attribute, not {a['slot_size']}")
    slots, local = a["slot_num"], a["local_slot_num"]
    if slots is not None and slots <= 0:
        raise TypeCheckError(f"'{op}' 'slot_num' attribute must be positive when set, not {slots}")
    if local is not None:
        effective = slots if slots is not None else DEFAULT_SLOTS[a["dir_mask"]]
        if local <= 0:
            raise TypeCheckError(f"'{op}' 'local_slot_num' attribute must be positive when set, not {local}")
        if local > effective:
            raise TypeCheckError(f"'{op}' 'local_slot_num' ({local}) must be <= effective slot_num ({effective})")
    _id(a, op)
    return None


def _buffer(a: OpArgs, soc: SoC) -> ScalarType:
    return ScalarType(DataType.INT32)


register("tile.tpush_to_aiv", [P("tile", Kind.TILE), P("split", Kind.INT, show=True),
                               P("lane_stride", Kind.INT, default=None, optional=True),
                               P("id", Kind.INT, default=None, optional=True)], _push(None), effect=True,
         doc="cube -> vector cores: wait for a free slot of pipe id, send the tile (halved by split)")
register("tile.tpush_to_aic", [P("tile", Kind.TILE, spaces=(M.Vec,)), P("split", Kind.INT, show=True),
                               P("id", Kind.INT, default=None, optional=True)], _push(M.Vec), effect=True,
         doc="vector core -> cube: wait for a free slot of pipe id, send the tile (this lane's half by split)")
register("tile.tpop_from_aic", [P("shape", Kind.SHAPE, default=None, optional=True),
                                P("dtype", Kind.DTYPE, default=None, optional=True),
                                P("split", Kind.INT, default=0, show=True),
                                P("lane_stride", Kind.INT, default=None, optional=True),
                                P("id", Kind.INT, default=None, optional=True)], _pop(M.Vec), effect=True,
         doc="on a vector core: wait for a ready slot of pipe id from the cube, receive its tile in Vec")
register("tile.tpop_from_aiv", [P("shape", Kind.SHAPE, default=None, optional=True),
                                P("dtype", Kind.DTYPE, default=None, optional=True),
                                P("split", Kind.INT, default=0, show=True),
                                P("id", Kind.INT, default=None, optional=True)], _pop(M.Mat), effect=True,
         doc="on the cube: wait for a ready slot of pipe id from the vector core(s), receive the tile in Mat")
for _op, _doc in (("system.tfree_to_aic", "the vector core is done with a popped tile: its slot is the cube's again"),
                  ("system.tfree_to_aiv", "the cube is done with a popped tile: its slot is the vector cores' again")):
    register(_op, [P("tile", Kind.TILE), P("split", Kind.INT, default=None, optional=True),
                   P("id", Kind.INT, default=None, optional=True)], _free, effect=True, doc=_doc)
for _op in INITS:
    register(_op, [P("c2v_consumer_buf", Kind.SCALAR, default=0), P("v2c_consumer_buf", Kind.SCALAR, default=0),
                   P("dir_mask", Kind.INT), P("slot_size", Kind.INT),
                   P("slot_num", Kind.INT, default=None, optional=True),
                   P("local_slot_num", Kind.INT, default=None, optional=True),
                   P("id", Kind.INT, default=None, optional=True)], _init, effect=True,
             doc="set up pipe id on this side: its directions, slot size and depth, and the consumer's buffer")
register("system.import_peer_buffer", [P("name", Kind.STR), P("peer_func", Kind.STR)], _buffer,
         doc="the buffer a peer function of the Group reserved under 'name' (the producer's side of a pipe)",
         scalar=True)

for _name in ("tpush_to_aiv", "tpush_to_aic", "tpop_from_aic", "tpop_from_aiv"):
    unify(_name, tile=f"tile.{_name}")
for _name in ("tfree_to_aic", "tfree_to_aiv", "aic_initialize_pipe", "aiv_initialize_pipe", "import_peer_buffer",
              "reserve_buffer"):
    unify(_name, only=f"system.{_name}")
