"""Ops that address memory by positions a tile holds, each position an index into the
elements in row-major order: on chip, ``tile.gather`` reads ``dst[i, j] = src[indices[i, j]]``
and ``tile.scatter`` writes ``dst.flat[indexes[i, j]] = src[i, j]`` in place; between GM and
Vec, ``tile.mgather`` reads rows (or elements) of a tensor by an index tile and
``tile.mscatter`` writes a tile's elements to positions of a tensor."""

from __future__ import annotations

from pypto.backend import MemorySpace as M
from pypto.backend import SoC
from pypto.ir.ops.registry import TENSOR_OPERAND_FORMS, Kind, OpArgs, register, unify
from pypto.ir.ops.type_rules import check_valid, fail, fmt_shape, static_ints
from pypto.ir.ops.registry import ParamSpec as P
from pypto.ir.ops.tile import _require_2d, _require_dtype, _same_valid, _vec_result
from pypto.ir.nodes import Const, Expr
from pypto.ir.types import DataType, TensorType, TileType

VEC = (M.Vec,)
GATHERED = (DataType.FP16, DataType.FP32, DataType.INT16, DataType.INT32)
_SIXTEEN = (DataType.FP16, DataType.INT16)


def _infer_gather(a: OpArgs, soc: SoC) -> TileType:
    src, idx = a.tile("src"), a.tile("indices")
    _require_2d("tile.gather", src, "src")
    _require_2d("tile.gather", idx, "indices")
    _require_dtype("tile.gather", src, GATHERED, "a dtype the gather moves")
    allowed = (DataType.INT32, DataType.INT16) if src.dtype in _SIXTEEN else (DataType.INT32,)
    if idx.dtype not in allowed:
        raise fail("tile.gather", f"indices of {' or '.join(d.name for d in allowed)} for a {src.dtype.name} src",
                   idx.dtype.name, "pl.cast(indices, target_type=pl.INT32)")
    if src.valid_shape is not None:
        raise fail("tile.gather", "a fully valid src tile (an index reads any of its elements)",
                   "a partial valid shape", "pl.fillpad the src tile first")
    return _vec_result(idx, shape=idx.shape, dtype=src.dtype, valid_shape=idx.valid_shape)


# tmp: the vector unit's workspace (any Vec tile; the simulator needs none)
register("tile.gather", [P("src", Kind.TILE, spaces=VEC), P("indices", Kind.TILE, spaces=VEC),
                         P("tmp", Kind.TILE, spaces=VEC)], _infer_gather,
         doc="dst[i, j] = src[indices[i, j]], the index into src's elements in row-major order", mnemonic="VGATHER")
unify("gather", tile="tile.gather")


BLOCKED = (DataType.INT8, DataType.UINT8, DataType.INT16, DataType.UINT16, DataType.INT32, DataType.UINT32,
           DataType.FP16, DataType.BF16, DataType.FP32)
BLOCK_BYTES = 32


def _infer_gatherb(a: OpArgs, soc: SoC) -> TileType:
    op, src, offset = "tile.gatherb", a.tile("src"), a.tile("offset")
    out = a["output_dtype"] or src.dtype
    for t, what in ((src.dtype, "src dtype"), (out, "output_dtype")):
        if t not in BLOCKED:
            raise fail(op, f"{what} to be an 8/16/32-bit int/uint or FP16/BF16/FP32", t.name)
    if offset.dtype is not DataType.UINT32:
        raise fail(op, "offset dtype to be UINT32 (byte offsets into src)", offset.dtype.name,
                   "load the offsets from a pl.UINT32 tensor")
    _require_2d(op, src, "a 2D src tile")
    _require_2d(op, offset, "a 2D offset tile")
    if offset.shape[1] % 8:
        raise fail(op, "offset columns to be a positive multiple of 8 (32-byte UINT32 row)", str(offset.shape[1]))
    per = BLOCK_BYTES // out.nbytes
    valid = None if offset.valid_shape is None else (
        offset.valid_shape[0], Const(offset.valid_shape[1].value * per) if isinstance(offset.valid_shape[1], Const)
        else offset.valid_shape[1] * per)
    return _vec_result(offset, shape=(offset.shape[0], offset.shape[1] * per), dtype=out, valid_shape=valid)


# an offset outside src's bytes, or not at a block's start, is a run-time error here (undefined on the device)
register("tile.gatherb", [P("src", Kind.TILE, spaces=VEC), P("offset", Kind.TILE, spaces=VEC),
                          P("output_dtype", Kind.DTYPE, default=None, optional=True)], _infer_gatherb,
         doc="32-byte blocks of src by byte offset: offset[i, j] is the block that fills the result's row i, "
             "elements 32/size * j on, read as output_dtype", mnemonic="VGATHERB")
unify("gatherb", tile="tile.gatherb")

SCATTERED = (DataType.FP16, DataType.FP32, DataType.BF16, DataType.INT8, DataType.INT16, DataType.INT32)


def _infer_scatter(a: OpArgs, soc: SoC) -> TileType:
    dst, src, idx = a.tile("dst"), a.tile("src"), a.tile("indexes")
    for t, what in ((dst, "dst"), (src, "src"), (idx, "indexes")):
        _require_2d("tile.scatter", t, what)
    _require_dtype("tile.scatter", src, SCATTERED, "a dtype the scatter moves")
    if dst.dtype is not src.dtype:
        raise fail("tile.scatter", "dst of src's dtype", f"{dst.dtype.name} and {src.dtype.name}",
                   "pl.cast(src, target_type=...) first")
    want = DataType.INT32 if src.dtype.nbytes == 4 else DataType.INT16  # the element width decides
    if idx.dtype is not want:
        raise fail("tile.scatter", f"{want.name} indexes for a {src.dtype.nbytes}-byte dst", idx.dtype.name,
                   f"pl.cast(indexes, target_type=pl.{want.name})")
    if idx.shape != src.shape:
        raise fail("tile.scatter", f"indexes of src's shape {list(src.shape)}", str(list(idx.shape)))
    _same_valid("tile.scatter", src, idx)  # (each element written has its index)
    return _vec_result(dst)


# dst is rewritten in place (the result is it); of two elements that name one position the
# later one in row-major order is the one written
register("tile.scatter", [P("dst", Kind.TILE, spaces=VEC), P("src", Kind.TILE, spaces=VEC),
                          P("indexes", Kind.TILE, spaces=VEC)], _infer_scatter,
         doc="dst.flat[indexes[i, j]] = src[i, j] (in place)", in_place=True, mnemonic="VSCATTER")
unify("scatter", tile="tile.scatter")



def _infer_scatter_update(a: OpArgs, soc: SoC):
    """Rows of ``input`` replaced: row ``index.flat[k]`` takes row ``k`` of ``src``."""
    op = f"{a.op.split('.')[0]}.scatter_update"
    x, idx, src = a.type("input"), a.type("index"), a.type("src")
    if len(x.shape) != 2:
        raise fail(op, "a 2D input (rows of d elements)", f"rank {len(x.shape)}",
                   "pl.reshape a [blocks, block_size, 1, d] cache to [blocks * block_size, d] first")
    if a["dim"] not in (-2, 0):
        raise fail(op, "dim=-2 (rows are updated)", f"dim={a['dim']}")
    if idx.dtype is not DataType.INT32 or len(idx.shape) != 2:
        raise fail(op, "a 2D INT32 index [b, s]", f"{idx.dtype.name} {fmt_shape(idx.shape)}",
                   "pl.cast(index, target_type=pl.INT32)")
    want = (idx.shape[0] * idx.shape[1], x.shape[1])
    if tuple(src.shape) != want or src.dtype is not x.dtype:
        raise fail(op, f"a src of shape {fmt_shape(want)} and dtype {x.dtype.name} (one row per index)",
                   f"{src.dtype.name} {fmt_shape(src.shape)}")
    if isinstance(x, TileType):
        for t, what in ((x, "input"), (idx, "index"), (src, "src")):
            if t.valid_shape is not None:
                raise fail(op, f"a fully valid {what}", fmt_shape(t.valid_shape), "pl.fillpad the tile first")
        return _vec_result(x)
    return x


# Of two indices naming one row, the later (row-major) is the one written; an index outside
# input's rows is a run-time error. The tensor form is computed on all of input at once.
register("tile.scatter_update", [P("input", Kind.TILE, spaces=VEC), P("dim", Kind.INT, default=-2),
                                 P("index", Kind.TILE, spaces=VEC), P("src", Kind.TILE, spaces=VEC)],
         _infer_scatter_update, doc="input with row index.flat[k] set to src's row k", in_place=True,
         mnemonic="VSCATTERU")

MGATHERED = (DataType.INT8, DataType.UINT8, DataType.INT16, DataType.UINT16, DataType.INT32, DataType.UINT32,
             DataType.FP16, DataType.BF16, DataType.FP32)
COALESCE = ("row", "elem")  # a row of mem per index, or one element per index
GATHER_OOB = ("undefined", "clamp", "wrap", "zero")  # an index past mem: an error here, or the policy


def _expr(extent):
    return extent if isinstance(extent, Expr) else Const(extent)


def _infer_mgather(a: OpArgs, soc: SoC) -> TileType:
    mem, idx = a.type("mem"), a.tile("idx")
    if a["coalesce"] not in COALESCE:
        raise fail("tile.mgather", f"coalesce one of {', '.join(map(repr, COALESCE))}", repr(a["coalesce"]))
    if a["gather_oob"] not in GATHER_OOB:
        raise fail("tile.mgather", f"gather_oob one of {', '.join(map(repr, GATHER_OOB))}", repr(a["gather_oob"]))
    if a["target_memory"] is not M.Vec:
        raise fail("tile.mgather", "target_memory=pl.Mem.Vec with an idx tile (the Mat form takes the indices as a GM "
                   "tensor)", f"pl.Mem.{a['target_memory'].name}", "pass the index tensor itself: "
                   "pl.tile.mgather(mem, idx_tensor, target_memory=pl.Mem.Mat)")
    for key, why in (("scratch", "only the Mat element gather stages through GM"),
                     ("valid_shape", "the Vec form's valid region is the idx tile's")):
        if a[key] is not None:
            raise fail("tile.mgather", f"no {key} for a Vec gather ({why})", f"{key}=...", f"drop {key}=")
    if mem.dtype not in MGATHERED:
        raise fail("tile.mgather", f"a mem dtype it moves ({', '.join(d.name for d in MGATHERED)})", mem.dtype.name)
    _require_2d("tile.mgather", idx, "a 2D idx tile")
    if idx.dtype is not DataType.INT32:
        raise fail("tile.mgather", "an INT32 idx tile", idx.dtype.name, "pl.cast(idx, target_type=pl.INT32)")
    if a["coalesce"] == "elem":
        return TileType(shape=idx.shape, dtype=mem.dtype, space=M.Vec, valid_shape=idx.valid_shape)
    if len(mem.shape) < 2:
        raise fail("tile.mgather", "a mem of rank >= 2 in row mode (rows of its last axis)",
                   f"rank {len(mem.shape)}", 'coalesce="elem" gathers single elements')
    if 1 not in idx.shape:
        raise fail("tile.mgather", "a [1, R] or [R, 1] idx tile in row mode", fmt_shape(idx.shape))
    axis = 1 if idx.shape[0] == 1 else 0
    valid = None if idx.valid_shape is None else (idx.valid_shape[axis], _expr(mem.shape[-1]))
    return TileType(shape=(idx.shape[axis], mem.shape[-1]), dtype=mem.dtype, space=M.Vec, valid_shape=valid)


_MGATHER_TAIL = [P("coalesce", Kind.STR, default="row"), P("gather_oob", Kind.STR, default="undefined")]
register("tile.mgather", [P("mem", Kind.TENSOR), P("idx", Kind.TILE, spaces=VEC), *_MGATHER_TAIL,
                          P("target_memory", Kind.SPACE, default=M.Vec),
                          P("scratch", Kind.TENSOR, default=None, optional=True),
                          P("valid_shape", Kind.INDEX_LIST, default=None, optional=True)], _infer_mgather,
         doc='GM -> Vec by index: row r of the result is row idx[r] of mem (coalesce="elem": element '
             "[i, j] is mem's element idx[i, j] in row-major order); an index tensor gathers into Mat "
             "(tile.mgather_mat)", mnemonic="MGATHER")


def _infer_mgather_mat(a: OpArgs, soc: SoC) -> TileType:
    op, mem, idx, scratch = "tile.mgather_mat", a.type("mem"), a.type("idx"), a.type("scratch")
    for key, allowed in (("coalesce", COALESCE), ("gather_oob", GATHER_OOB)):
        if a[key] not in allowed:
            raise fail(op, f"{key} one of {', '.join(map(repr, allowed))}", repr(a[key]))
    if a["target_memory"] is not M.Mat:
        raise fail(op, "target_memory=pl.Mem.Mat for an index tensor", f"pl.Mem.{a['target_memory'].name}",
                   "load the indices into a Vec tile for a Vec gather")
    if mem.dtype not in MGATHERED:
        raise fail(op, f"a mem dtype it moves ({', '.join(d.name for d in MGATHERED)})", mem.dtype.name)
    if len(idx.shape) != 2 or idx.dtype is not DataType.INT32:
        raise fail(op, "a 2D INT32 index tensor", f"{idx.dtype.name}{fmt_shape(idx.shape)}")
    if a["coalesce"] == "elem":
        shape = tuple(idx.shape)
        if scratch is None:
            raise fail(op, "a scratch tensor for the element gather (it stages the elements in GM)", "none",
                       f"scratch=pl.create_tensor([{shape[0] * shape[1]}], dtype=pl.{mem.dtype.name})")
        count = 1
        for d in scratch.shape:
            count *= d
        if scratch.dtype is not mem.dtype or count < shape[0] * shape[1]:
            raise fail(op, f"a {mem.dtype.name} scratch tensor of at least {shape[0] * shape[1]} elements",
                       f"{scratch.dtype.name}{fmt_shape(scratch.shape)}")
    else:
        if scratch is not None:
            raise fail(op, "no scratch tensor for the row gather (only the element gather stages through GM)",
                       "scratch=...", "drop scratch=")
        if len(mem.shape) < 2 or 1 not in idx.shape:
            raise fail(op, "a mem of rank >= 2 and a [1, R] or [R, 1] index tensor in row mode",
                       f"mem {fmt_shape(mem.shape)} and idx {fmt_shape(idx.shape)}")
        shape = (idx.shape[1] if idx.shape[0] == 1 else idx.shape[0], mem.shape[-1])
    valid = a["valid_shape"]
    if valid is not None:
        if len(valid) != 2:
            raise fail(op, "a 2D valid_shape", fmt_shape(valid))
        check_valid(op, valid, shape, f"valid_shape within the result's {fmt_shape(shape)}")
        if static_ints(valid) == shape:
            valid = None
    return TileType(shape=shape, dtype=mem.dtype, space=M.Mat, valid_shape=None if valid is None else tuple(valid))


# the cube core's MTE2 gathers straight into L1 (the element form through the GM scratch tensor)
register("tile.mgather_mat", [P("mem", Kind.TENSOR), P("idx", Kind.TENSOR), *_MGATHER_TAIL,
                              P("target_memory", Kind.SPACE, default=M.Mat),
                              P("scratch", Kind.TENSOR, default=None, optional=True),
                              P("valid_shape", Kind.INDEX_LIST, default=None, optional=True)], _infer_mgather_mat,
         doc="GM -> Mat by an index tensor: as pl.tile.mgather, into L1 for the cube; valid_shape: the region "
             "written (zeros past it); the element gather stages through scratch, a GM tensor of mem's dtype",
         mnemonic="MGATHER")
TENSOR_OPERAND_FORMS["tile.mgather"] = ("idx", "tile.mgather_mat")


def _infer_mscatter(a: OpArgs, soc: SoC) -> TensorType:
    src, idx, out = a.tile("src"), a.tile("idx"), a.type("output_tensor")
    _require_dtype("tile.mscatter", src, GATHERED, "a src dtype it moves")
    if idx.dtype is not DataType.INT32:
        raise fail("tile.mscatter", "an INT32 idx tile", idx.dtype.name, "pl.cast(idx, target_type=pl.INT32)")
    if idx.shape != src.shape:
        raise fail("tile.mscatter", f"an idx tile of src's shape {fmt_shape(src.shape)}", fmt_shape(idx.shape))
    _same_valid("tile.mscatter", src, idx)
    if out.dtype is not src.dtype:
        raise fail("tile.mscatter", "an output_tensor of src's dtype", f"{out.dtype.name} and {src.dtype.name}",
                   f"pl.cast(src, target_type=pl.{out.dtype.name}) first")
    return out


# Of two elements that name one position the later one in row-major order is the one written.
# Where it writes is known only as it runs, so the chip takes all of the tensor as written:
# two blocks of an SPMD task scattering into one tensor are a race here.
register("tile.mscatter", [P("src", Kind.TILE, spaces=VEC), P("idx", Kind.TILE, spaces=VEC),
                           P("output_tensor", Kind.TENSOR)], _infer_mscatter,
         doc="Vec -> GM by index: output_tensor's element idx[i, j] (row-major) = src[i, j]",
         writes_operand="output_tensor", mnemonic="MSCATTER")
unify("mgather", tile="tile.mgather")
unify("mscatter", tile="tile.mscatter")
