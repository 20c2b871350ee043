"""The tensor forms of the sort and gather family (``pl.tensor.sort32``, ``mrgsort``,
``gather``, ``scatter``): each row of the result is computed from the same rows of its
operands, so ConvertTensorToTileOps blocks them by rows — a gather or scatter by column
index a row at a time, as its tile form indexes a tile's elements. ``gather`` and
``scatter`` written with ``mask_pattern=`` are the mask forms (``KEYWORD_FORMS``)."""

from __future__ import annotations

from pypto.backend import SoC
from pypto.ir.ops.registry import KEYWORD_FORMS, Kind, OpArgs, Windows, op_call, register, unify
from pypto.ir.ops.type_rules import fail, fmt_shape
from pypto.ir.ops.registry import ParamSpec as P
from pypto.ir.ops.sorts import INDICES, MASKED, _one_row, _pairs, _pattern, check_block_len
from pypto.ir.ops.gathers import GATHERED, SCATTERED, _infer_scatter_update
from pypto.ir.nodes import Const, Var
from pypto.ir.types import DataType, TensorType, TileType


def _rows(op: str, t: TensorType, what: str) -> None:
    """Rows along the last axis: rank 2 or more (the leading axes count the rows)."""
    if len(t.shape) < 2:
        raise fail(op, f"a {what} of rank 2 or more (rows along its last axis)", f"rank {len(t.shape)}")


def _folded(tile_op: str, **operands):
    """A ``Windows.lower`` of a tile op on 2D tiles: each tile operand's leading axes folded
    into rows, the result unfolded to the first one's."""
    def lower(args: dict, low):
        def tile(a) -> bool:
            return isinstance(a, Var) and isinstance(low.type_of(a), TileType)

        like = low.type_of(args[next(iter(operands.values()))]).shape
        values = {k: v(args, low) if callable(v) else low.rows(args[v]) if tile(args[v]) else args[v]
                  for k, v in operands.items()}
        return low.unfold(op_call(tile_op, **values), like)
    return lower


def _sort32(a: OpArgs, soc: SoC) -> TensorType:
    src, idx = a.type("src"), a.type("idx")
    _rows("tensor.sort32", src, "src")
    _pairs("tensor.sort32", src, "src")
    if idx.dtype not in INDICES:
        raise fail("tensor.sort32", "a UINT32 idx (each element's index, carried with it)", idx.dtype.name)
    if tuple(idx.shape) != tuple(src.shape):
        raise fail("tensor.sort32", f"an idx of src's shape {fmt_shape(src.shape)}", fmt_shape(idx.shape))
    return TensorType((*src.shape[:-1], 2 * src.shape[-1]), DataType.FP32)


register("tensor.sort32", [P("src", Kind.TENSOR), P("idx", Kind.TENSOR)], _sort32,
         doc="each row's 32-element blocks sorted descending into (value, index) pairs (tile.sort32)",
         windows=Windows("rows", lower=_folded("tile.sort32", src="src", idx="idx")))


def _mrgsort(a: OpArgs, soc: SoC) -> TensorType:
    op = "tensor.mrgsort"
    lists = [a.type(k) for k in ("src0", "src1", "src2", "src3") if a[k] is not None]
    for k, t in enumerate(lists):
        _one_row(op, t, f"src{k}")  # (the tile rule: its tile form reads the same)
    if a["block_len"] is not None:
        if len(lists) > 1 or a["exhausted"]:
            raise fail(op, "either format 1 (block_len=...) or format 2 (src1, ...)", "both")
        check_block_len(op, a["block_len"], lists[0].shape[1])
        return lists[0]
    if len(lists) < 2:
        raise fail(op, "block_len=<int> for format 1, or at least (src0, src1) for format 2", "one tensor")
    if a["src3"] is not None and a["src2"] is None:
        raise fail(op, "src2 before src3", "src3 alone")
    return TensorType((1, sum(t.shape[1] for t in lists)), DataType.FP32)


def _lower_mrgsort(args: dict, low):
    srcs = {k: args[k] for k in ("src0", "src1", "src2", "src3")}
    if args["block_len"] is not None:
        return op_call("tile.mrgsort", src0=srcs["src0"], block_len=args["block_len"])
    total = sum(low.type_of(t).shape[1] for t in srcs.values() if t is not None)
    return op_call("tile.mrgsort", **srcs, tmp=low.scratch((1, total), DataType.FP32), exhausted=args["exhausted"])


# format 2's workspace (tile.mrgsort's tmp) is made where it is computed
register("tensor.mrgsort", [P("src0", Kind.TENSOR), P("src1", Kind.TENSOR, default=None, optional=True),
                            P("src2", Kind.TENSOR, default=None, optional=True),
                            P("src3", Kind.TENSOR, default=None, optional=True),
                            P("exhausted", Kind.BOOL, default=False),
                            P("block_len", Kind.SCALAR, default=None, optional=True, integer=True)], _mrgsort,
         doc="merge sorted runs of (value, index) pairs (tile.mrgsort; format 2's tmp made here)",
         windows=Windows("rows", lower=_lower_mrgsort))


def _last_axis(op: str, dim, rank: int) -> None:
    if dim not in (-1, rank - 1):
        raise fail(op, "dim=-1 (the last axis; the other axes are not gathered along here)", f"dim={dim}")


def _gather(a: OpArgs, soc: SoC) -> TensorType:
    op, x, idx = "tensor.gather", a.type("input"), a.type("index")
    if x.dtype not in GATHERED:
        raise fail(op, "input dtype to be FP16, FP32, INT16, or INT32", x.dtype.name)
    _rows(op, x, "input")
    rank, dim = len(x.shape), a["dim"]
    if not isinstance(dim, int) or isinstance(dim, bool) or not -rank <= dim < rank:
        raise fail(op, f"dim in [-{rank}, {rank})", f"dim={dim}")
    d = dim % rank
    allowed = (DataType.INT32, DataType.INT16) if x.dtype.nbytes == 2 else (DataType.INT32,)
    if idx.dtype not in allowed:
        raise fail(op, "index dtype INT32 (any input), or INT16 with a 16-bit input", idx.dtype.name,
                   "pl.cast(index, target_type=pl.INT32)")
    if len(idx.shape) != len(x.shape):
        raise fail(op, f"index rank ({len(idx.shape)}) to match input rank ({len(x.shape)})", fmt_shape(idx.shape))
    for i, (e, extent) in enumerate(zip(idx.shape, x.shape)):
        if i != d and e > extent:
            raise fail(op, f"index.shape[{i}] ({e}) <= input.shape[{i}] ({extent}) on non-gather axes",
                       fmt_shape(idx.shape))
    if d != rank - 1 and idx.dtype is DataType.INT16 and x.shape[d] * x.shape[-1] > 2 ** 15:
        raise fail(op, f"INT32 indices along axis {d} (each is flattened to a position among "
                       f"{x.shape[d] * x.shape[-1]} elements)", "INT16", "pl.cast(index, target_type=pl.INT32)")
    return TensorType(tuple(idx.shape), x.dtype)


def _lower_gather(args: dict, low):
    """Along the last axis, row by row (tile.gather by column index). Along a leading axis
    d, each row of the result reads the input's rows along d (its window, whole along d):
    the index flattened to that block of rows, index * columns + column, then gathered."""
    x, index = args["input"], args["index"]
    shape = low.type_of(x).shape
    d = args["dim"] % len(shape)
    if d == len(shape) - 1:
        return _folded("tile.gather", src="input", indices="index", tmp=_gather_tmp)(args, low)
    like = low.type_of(index).shape
    cols = shape[-1]
    rows = low.rows(index)
    dtype = low.type_of(rows).dtype
    scaled = low.bind(op_call("tile.muls", lhs=rows, rhs=Const(cols)))
    where = low.bind(op_call("tile.ci", start=Const(0), shape=(Const(1), Const(cols)), dtype=dtype))
    flat = low.bind(op_call("tile.add", lhs=scaled, rhs=where))
    return low.unfold(op_call("tile.gather", src=low.rows(x), indices=flat, tmp=_gather_tmp(args, low)), like)


def _gather_tmp(args: dict, low):
    return low.scratch((1, low.type_of(args["index"]).shape[-1]), DataType.INT32)


register("tensor.gather", [P("input", Kind.TENSOR), P("dim", Kind.INT), P("index", Kind.TENSOR)], _gather,
         doc="torch.gather along dim: output[b, k] = input[b, index[b, k]] for dim=-1, input[index[i, j], j] for "
             "dim=0 (any axis); with mask_pattern= the mask form",
         windows=Windows("row", lower=_lower_gather, along=("input", "dim")))


def _gather_mask(a: OpArgs, soc: SoC) -> TensorType:
    op, x = "tensor.gather_mask", a.type("input")
    if x.dtype not in MASKED:
        raise fail(op, f"input dtype to be {', '.join(d.name for d in MASKED)}", x.dtype.name)
    _rows(op, x, "input")
    pattern = _pattern(op, a["mask_pattern"])
    if x.shape[-1] % pattern.stride:
        raise fail(op, f"src columns divisible by {pattern.stride} with mask_pattern={int(pattern)}",
                   str(x.shape[-1]))
    out = a["output_dtype"] or x.dtype
    if out.nbytes != x.dtype.nbytes:
        raise fail(op, f"an output_dtype of the input's bit width ({x.dtype.bits} bits)", out.name)
    return TensorType((*x.shape[:-1], x.shape[-1] // pattern.stride), out)


register("tensor.gather_mask", [P("input", Kind.TENSOR), P("mask_pattern", Kind.INT),
                                P("output_dtype", Kind.DTYPE, default=None, optional=True)], _gather_mask,
         doc="the columns a mask pattern selects (tile.gather_mask)",
         windows=Windows("rows", lower=_folded("tile.gather_mask", src="input", mask_pattern="mask_pattern",
                                               output_dtype="output_dtype")))


def _scatter(a: OpArgs, soc: SoC) -> TensorType:
    op, x, idx, src = "tensor.scatter", a.type("input"), a.type("index"), a.type("src")
    if x.dtype not in SCATTERED:
        raise fail(op, "input dtype in {I8, I16, I32, FP16, FP32, BF16}", x.dtype.name)
    _rows(op, x, "input")
    _last_axis(op, a["dim"], len(x.shape))
    if src.dtype is not x.dtype:
        raise fail(op, f"src dtype ({src.dtype.name}) to match input dtype ({x.dtype.name})", src.dtype.name)
    want = DataType.INT32 if x.dtype.nbytes == 4 else DataType.INT16
    if idx.dtype is not want:
        raise fail(op, f"an index dtype of {want.nbytes} bytes for a {x.dtype.name} input", idx.dtype.name,
                   f"pl.cast(index, target_type=pl.{want.name})")
    if tuple(idx.shape) != tuple(src.shape):
        raise fail(op, f"index of src's shape {fmt_shape(src.shape)}", fmt_shape(idx.shape))
    if len(src.shape) != len(x.shape) or tuple(src.shape[:-1]) != tuple(x.shape[:-1]):
        raise fail(op, f"src rows equal to input rows ({fmt_shape(x.shape[:-1])})", fmt_shape(src.shape[:-1]),
                   "pl.slice the rows of input it scatters into, then pl.assemble them back")
    return x


register("tensor.scatter", [P("input", Kind.TENSOR), P("dim", Kind.INT), P("index", Kind.TENSOR),
                            P("src", Kind.TENSOR)], _scatter,
         doc="output = input; output[b, index[b, k]] = src[b, k] (dim=-1); with mask_pattern= the mask form",
         windows=Windows("row", lower=_folded("tile.scatter", dst="input", src="src", indexes="index")))


def _scatter_mask(a: OpArgs, soc: SoC) -> TensorType:
    op, x, dst = "tensor.scatter_mask", a.type("input"), a.type("dst")
    if x.dtype not in MASKED:
        raise fail(op, f"input dtype to be {', '.join(d.name for d in MASKED)}", x.dtype.name)
    _rows(op, x, "input")
    pattern = _pattern(op, a["mask_pattern"])
    want = (*x.shape[:-1], x.shape[-1] * pattern.stride)
    if tuple(dst.shape) != want or dst.dtype is not x.dtype:
        raise fail(op, f"a {x.dtype.name} dst of {fmt_shape(want)} (input's columns times the pattern's stride)",
                   f"{dst.dtype.name} {fmt_shape(dst.shape)}")
    return dst


register("tensor.scatter_mask", [P("input", Kind.TENSOR), P("mask_pattern", Kind.INT), P("dst", Kind.TENSOR)],
         _scatter_mask, doc="dst with the columns a mask pattern selects set to input's (tile.scatter_mask)",
         windows=Windows("rows", lower=_folded("tile.scatter_mask", dst="dst", src="input",
                                               mask_pattern="mask_pattern")))

register("tensor.scatter_update", [P("input", Kind.TENSOR), P("dim", Kind.INT, default=-2), P("index", Kind.TENSOR),
                                   P("src", Kind.TENSOR)], _infer_scatter_update,
         doc="input with row index.flat[k] set to src's row k (tile.scatter_update, on all of input)",
         windows=Windows("whole", tile="tile.scatter_update"))
unify("scatter_update", tile="tile.scatter_update", tensor="tensor.scatter_update")

unify("gather", tile="tile.gather", tensor="tensor.gather")
unify("scatter", tile="tile.scatter", tensor="tensor.scatter")
unify("sort32", tile="tile.sort32", tensor="tensor.sort32")
unify("mrgsort", tile="tile.mrgsort", tensor="tensor.mrgsort")
KEYWORD_FORMS.update({"tensor.gather": (("mask_pattern", "tensor.gather_mask"),),
                      "tensor.scatter": (("mask_pattern", "tensor.scatter_mask"),),
                      "tile.gather": (("mask_pattern", "tile.gather_mask"),),
                      "tile.scatter": (("mask_pattern", "tile.scatter_mask"),)})
