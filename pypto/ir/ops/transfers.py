"""Tile transfers and creation (``pl.tile.load`` / ``store`` / ``move`` / ``create`` /
``full``): GM to an on-chip space and back, between the spaces the SoC table connects,
and tiles made on chip; with the static part of a GM region's bounds check."""

from __future__ import annotations

from pypto.errors import MemorySpaceError, OutOfBoundsError, TypeCheckError
from pypto.ir.nodes import Const
from pypto.ir.ops.families import FLOATS
from pypto.ir.ops.registry import Kind, OpArgs, register, with_article
from pypto.ir.ops.type_rules import check_valid, fail, fmt_shape, static_ints
from pypto.ir.ops.registry import ParamSpec as P
from pypto.ir.types import ATOMIC_ADD_DTYPES, AtomicType, DataType, TensorType, TileType
from pypto.backend import MemorySpace as M
from pypto.backend import SoC, having

SHAPE_HINT = "give every extent as a positive compile-time constant"


def check_region(op: str, tensor: TensorType, offsets, shape, *, what: str, valid=None) -> None:
    """Static parts of a GM region check: ranks, and constant extents and offsets inside the
    tensor. ``valid`` (Exprs) narrows the extents actually moved: a tail tile may be larger
    than what is left of the tensor."""
    rank = len(tensor.shape)
    if len(offsets) != rank or len(shape) != rank:
        raise fail(op, f"offsets and shapes of the tensor's rank {rank}",
                   f"{len(offsets)} offsets and {len(shape)} extents")
    extents = list(shape)
    if valid is not None:
        extents = [v.value if isinstance(v, Const) else None for v in valid]
    for axis, (o, extent, dim) in enumerate(zip(offsets, extents, tensor.shape)):
        if not (isinstance(extent, int) and isinstance(dim, int)):  # known when the orchestration runs
            continue
        if extent > dim:
            raise OutOfBoundsError(
                f"{op} {what} extent {extent} on axis {axis} exceeds the tensor's {dim}",
                hint="shrink the tile shape or tile the tensor in a loop",
            )
        if isinstance(o, Const) and (o.value < 0 or o.value + extent > dim):
            raise OutOfBoundsError(
                f"{op} {what} [{o.value}, {o.value + extent}) on axis {axis} is outside the tensor's [0, {dim})",
                hint="check the offsets against the tensor shape",
            )


# --------------------------------------------------------------------------- movement


def _infer_load(a: OpArgs, soc: SoC) -> TileType:
    tensor: TensorType = a.type("tensor")
    shape = static_ints(a["shapes"])
    if shape is None or any(s <= 0 for s in shape):
        raise fail("tile.load", "static positive tile shapes", fmt_shape(a["shapes"]), SHAPE_HINT)
    target = a["target_memory"]
    if target is not None and not soc.can_move(M.DDR, target):
        legal = " or ".join(s.name for s in soc.targets_from(M.DDR))
        raise MemorySpaceError(
            f"tile.load cannot land a GM tensor in {target.name}: a load from DDR reaches only {legal}",
            hint=f"load into pl.Mem.Mat, then pl.move(tile, target_memory=pl.Mem.{target.name})"
            if target in (M.Left, M.Right, M.Bias) else "load into pl.Mem.Vec or pl.Mem.Mat",
        )
    valid = a["valid_shape"]
    check_region("tile.load", tensor, a["offsets"], shape, what="region", valid=valid)
    if tensor.mx_layout is not None:
        _check_mx_window(tensor, a["offsets"], shape, target, valid, a["transpose"])
    if valid is not None:
        valid = tuple(valid)
        if len(valid) != len(shape):
            raise fail("tile.load", f"valid_shape of rank {len(shape)}", f"{len(valid)} extents")
        check_valid("tile.load", valid, shape, f"valid_shape within the tile shape {fmt_shape(shape)}")
    if a["transpose"]:
        if len(shape) < 2:
            raise fail("tile.load", "a region of at least 2 dimensions to transpose (its last two swap)",
                       f"{len(shape)} dimension(s)")
        if target not in (None, M.Mat):
            raise fail("tile.load", "target_memory=pl.Mem.Mat for a transposing load",
                       f"target_memory=pl.Mem.{target.name}", "only the GM->L1 path transposes on the way in")
        shape = (*shape[:-2], shape[-1], shape[-2])
        valid = None if valid is None else (*valid[:-2], valid[-1], valid[-2])
    return TileType(shape=shape, dtype=tensor.dtype, space=target, valid_shape=valid)


def _check_mx_window(tensor: TensorType, offsets, shape, target, valid, transpose) -> None:
    """An MX scale tensor's bytes are packed (``mx_math.pack_a`` / ``pack_b``), so a load's
    row-major window of them is a window of the logical scales only where whole packing units
    lie in it: for pl.MX_A_ZZ, bands of 16 rows with every K group (each band's bytes are its
    rows); for pl.MX_B_NN, whose bands run down 16 columns, only the whole tensor. Anything
    else would hand the MX matmul other scales, silently: refused."""
    layout = tensor.mx_layout.name
    if target is not M.Mat or transpose or valid is not None:
        raise fail("tile.load", f"target_memory=pl.Mem.Mat (and no transpose or valid_shape) for a pl.{layout} "
                   "scale tensor", f"target_memory=pl.Mem.{target.name if target else 'Vec'}",
                   "scale tensors go GM -> Mat -> LeftScale / RightScale: pl.load(scale, offsets, shapes, "
                   "target_memory=pl.Mem.Mat)")
    from pypto.ir.affine import linear

    starts = [o.value if isinstance(o, Const) else None for o in offsets]
    rows, groups = tensor.shape if layout == "MX_A_ZZ" else tensor.shape[::-1]
    if layout == "MX_A_ZZ":
        row = linear(offsets[0])  # (loop variables are integers: i * 16 starts a band)
        banded = row is not None and row[0] % 16 == 0 and all(c % 16 == 0 for c in row[1].values())
        whole = starts[1] == 0 and shape[1] == groups and banded and shape[0] % 16 == 0
        need = f"whole 16-row bands with all {groups} K groups (offsets [16 * b, 0], shapes [16 * n, {groups}])"
        hint = ("load every K group of the bands (slice K in the data, not the scales), or pass the window's "
                "scales as their own tensor packed with mx_math.pack_a")
    else:
        whole = all(s == 0 for s in starts) and tuple(shape) == tuple(tensor.shape)
        need = f"the whole tensor (offsets [0, 0], shapes {fmt_shape(tensor.shape)}): its bands run down 16 columns"
        hint = ("load the whole scale tensor, or pass each window's scales as their own tensor packed with "
                "mx_math.pack_b")
    if not whole:
        offs = fmt_shape([o if s is None else s for o, s in zip(offsets, starts)])
        raise fail("tile.load", f"a window of a pl.{layout} scale tensor that its packing keeps whole: {need}",
                   f"offsets {offs} and shapes {fmt_shape(shape)}", hint)


register(
    "tile.load",
    [
        P("tensor", Kind.TENSOR),
        P("offsets", Kind.INDEX_LIST),
        P("shapes", Kind.SHAPE),
        P("valid_shape", Kind.INDEX_LIST, default=None, optional=True),
        P("target_memory", Kind.SPACE, default=M.Vec, optional=True, show=True),
        P("transpose", Kind.BOOL, default=False),
    ],
    _infer_load,
    doc="GM -> Vec|Mat: copy the region [offsets, offsets+shapes) of a tensor into a tile "
        "(its last two axes swapped on the way into Mat with transpose=True)",
)


def _infer_store(a: OpArgs, soc: SoC) -> TensorType:
    tile: TileType = a.tile("tile")
    out: TensorType = a.type("output_tensor")
    if tile.space is not None and not soc.can_move(tile.space, M.DDR):
        legal = " or ".join(s.name for s, d in sorted(soc.legal_moves, key=str) if d is M.DDR)
        others = having(lambda t: t.can_move(tile.space, M.DDR), soc)
        raise MemorySpaceError(
            f"tile.store cannot write {with_article(tile.space.name)} tile to GM on {soc.title}: only {legal} "
            "tiles store" + (f" there ({others[0]} stores {tile.space.name} tiles)" if others else ""),
            hint="pl.move the tile to a space that stores, or store from the vector core's Vec tile"
                 + (f"; or run on {others[1]}" if others else ""),
        )
    # The fixpipe converts the accumulator's FP32 on its way out of Acc; elsewhere dtypes match.
    converts = tile.space is M.Acc and tile.dtype is DataType.FP32 and out.dtype in FLOATS
    if tile.dtype is not out.dtype and not converts:
        raise fail("tile.store", "the tile's dtype to match the tensor's", f"{tile.dtype.name} into {out.dtype.name}",
                   f"cast first: pl.cast(tile, target_type=pl.{out.dtype.name})")
    if a["shapes"] is not None:
        shapes = static_ints(a["shapes"])
        if shapes != tuple(tile.shape):
            raise fail("tile.store", f"shapes equal to the tile's {fmt_shape(tile.shape)} (the region it writes)",
                       fmt_shape(a["shapes"]), "drop shapes=: the region written is the tile's shape")
    check_region("tile.store", out, a["offsets"], tile.shape, what="region", valid=tile.valid_shape)
    if a["atomic"] is AtomicType.Add and tile.dtype not in ATOMIC_ADD_DTYPES:
        raise TypeCheckError(f"The operator tile.store with atomic=AtomicType.Add requires an "
                             f"fp32/bf16/fp16/int32/int16/int8 tile (hardware atomic-add dtypes), but got {tile.dtype.name}",
                             hint="accumulate in FP32 (pl.cast the tile first) and cast the sum afterwards")
    if a["atomic"] is AtomicType.Add:
        check_atomic_add("tile.store", tile.dtype, soc)
    return out


def check_atomic_add(op: str, dtype: DataType, soc: SoC) -> None:
    """An atomic add of a dtype the ISA names but this chip's store pipe does not add (A5:
    bf16) is refused, naming the chips that do."""
    if dtype.short not in soc.lacks_atomic_add:
        return
    others = having(lambda t: dtype.short not in t.lacks_atomic_add, soc)
    raise TypeCheckError(f"{op} with atomic=AtomicType.Add cannot add {dtype.name} on {soc.title}: its store pipe "
                         f"adds no {dtype.name} atomically" + (f" ({others[0]}'s does)" if others else ""),
                         hint="accumulate into an FP32 tensor and cast the sum afterwards"
                              + (f", or run on {others[1]}" if others else ""))


register(
    "tile.store",
    [P("tile", Kind.TILE), P("offsets", Kind.INDEX_LIST), P("output_tensor", Kind.TENSOR),
     P("shapes", Kind.SHAPE, default=None, optional=True), P("atomic", Kind.ATOMIC, AtomicType.None_)],
    _infer_store,
    doc="Vec|Acc|Mat -> GM: write a tile's valid region at offsets of a tensor",
    writes_operand="output_tensor",
)


def _infer_move(a: OpArgs, soc: SoC) -> TileType:
    tile: TileType = a.tile("tile")
    target = a["target_memory"]
    # a move between the cube and the vector cores is a crossing: a mixed scope stages it
    # through GM (pypto.passes.outlining.crossings); anywhere else codegen refuses it with the reason
    if tile.space is not None and not soc.can_move(tile.space, target) and not soc.crosses(tile.space, target):
        legal = ", ".join(s.name for s in soc.targets_from(tile.space)) or "nowhere"
        others = having(lambda t: t.can_move(tile.space, target), soc)
        raise MemorySpaceError(
            f"tile.move cannot move {with_article(tile.space.name)} tile to {target.name} on {soc.title}: "
            f"from {tile.space.name} a tile moves to {legal}" + (f" ({others[0]} moves it)" if others else ""),
            hint="go through GM (store, then load), or through Mat for the cube's L0 buffers"
                 + (f"; or run on {others[1]}" if others else ""),
        )
    return TileType(shape=tile.shape, dtype=tile.dtype, space=target, valid_shape=tile.valid_shape)


register(
    "tile.move",
    [P("tile", Kind.TILE), P("target_memory", Kind.SPACE)],
    _infer_move,
    doc="copy a tile to another on-chip space (Mat->Left|Right|Bias, Acc->Mat; in a mixed scope also "
        "Acc|Mat->Vec and Vec->Mat, through GM)",
)


def _infer_create(a: OpArgs, soc: SoC) -> TileType:
    shape = static_ints(a["shape"])
    if shape is None or any(s <= 0 for s in shape):
        raise fail("tile.create", "static positive shapes", fmt_shape(a["shape"]), SHAPE_HINT)
    return TileType(shape=shape, dtype=a["dtype"], space=a["target_memory"])


register(
    "tile.create",
    [P("shape", Kind.SHAPE), P("dtype", Kind.DTYPE), P("target_memory", Kind.SPACE, default=M.Vec, show=True)],
    _infer_create,
    doc="a zero-filled tile",
    mnemonic="VDUP",
)


def _infer_full(a: OpArgs, soc: SoC) -> TileType:
    shape = static_ints(a["shape"])
    if shape is None or any(s <= 0 for s in shape):
        raise fail("tile.full", "static positive shapes", fmt_shape(a["shape"]), SHAPE_HINT)
    return TileType(shape=shape, dtype=a["dtype"], space=M.Vec)


register(
    "tile.full",
    [P("shape", Kind.SHAPE), P("dtype", Kind.DTYPE), P("value", Kind.SCALAR)],
    _infer_full,
    doc="a Vec tile filled with a scalar",
    mnemonic="VDUP",
)
