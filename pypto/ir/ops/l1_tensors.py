"""Tensors that live on chip, whole, filled row by row from GM — the paged gather of a KV
cache at tensor level. ``pl.create_l1`` is an empty L1 (Mat) buffer seen as a tensor;
``pl.gather_row`` copies one GM window into part of it (the kernel works out each row's
physical place itself); ``pl.paged_gather`` does the whole gather through a block table,
into Mat or Vec. Their results compose with tensor code (a matmul reads a Mat one as an
operand, an assemble stores one); ConvertTensorToTileOps lowers them to ``tile.create`` and
``tile.gather_row`` (``pypto.passes.tile_conversion.expand_l1``)."""

from __future__ import annotations

from pypto.backend import MemorySpace as M
from pypto.backend import SoC
from pypto.ir.ops.registry import Kind, OpArgs, register, unify
from pypto.ir.ops.type_rules import fail, fmt_shape, static_ints
from pypto.ir.ops.registry import ParamSpec as P
from pypto.ir.ops.row_gathers import check_row_window
from pypto.ir.ops.transfers import SHAPE_HINT
from pypto.ir.types import DataType, TensorType

PAGED = (DataType.FP16, DataType.BF16, DataType.FP32, DataType.INT8)


def _create_l1(a: OpArgs, soc: SoC) -> TensorType:
    shape = static_ints(a["shape"])
    if shape is None or not shape or any(s <= 0 for s in shape):
        raise fail("tensor.create_l1", "static positive shapes", fmt_shape(a["shape"]), SHAPE_HINT)
    if len(shape) != 2:
        raise fail("tensor.create_l1", "a 2D shape (an L1 buffer of rows)", fmt_shape(shape))
    return TensorType(shape, a["dtype"])


register("tensor.create_l1", [P("shape", Kind.SHAPE), P("dtype", Kind.DTYPE), P("transpose", Kind.BOOL, default=False)],
         _create_l1, doc="a zero-filled tensor held whole in L1 (Mat), for pl.gather_row to fill "
                         "(transpose: the layout that gathers with transpose=True fill)")


def _gather_row(a: OpArgs, soc: SoC) -> TensorType:
    op = "tensor.gather_row"
    acc, src = a.type("acc"), a.type("src")
    if acc.dtype is not src.dtype:
        raise fail(op, "acc and src to share dtype (the DMA converts nothing)", f"{acc.dtype.name} and {src.dtype.name}")
    check_row_window(op, acc, src, a, space=M.Mat)
    return acc


register("tensor.gather_row", [P("acc", Kind.TENSOR), P("src", Kind.TENSOR), P("dst_offset", Kind.INDEX_LIST),
                               P("src_offset", Kind.INDEX_LIST), P("shapes", Kind.SHAPE),
                               P("transpose", Kind.BOOL, default=False),
                               P("valid_shape", Kind.INDEX_LIST, default=None, optional=True)], _gather_row,
         doc="GM -> part of an L1 tensor from pl.create_l1: src's window [src_offset, +shapes) written into acc at "
             "dst_offset (as a column with transpose=True)")


def _index_rows(op: str, t: TensorType, what: str) -> int:
    """The entries of a 1D ``[n]`` or ``[1, n]`` INT32 index tensor."""
    if t.dtype is not DataType.INT32:
        raise fail(op, f"{what} dtype to be INT32", t.dtype.name)
    if len(t.shape) not in (1, 2):
        raise fail(op, f"1D or 2D {what}", f"rank {len(t.shape)}")
    if len(t.shape) == 2 and t.shape[0] != 1:
        raise fail(op, f"2D {what} to have shape [1, n]", f"first dim {t.shape[0]}")
    return t.shape[-1]


def _paged_gather(a: OpArgs, soc: SoC) -> TensorType:
    op = "tensor.paged_gather"
    src = a.type("src")
    if src.dtype not in PAGED:
        raise fail(op, "src dtype in {FP16, BF16, FP32, INT8}", src.dtype.name)
    if len(src.shape) != 2:
        raise fail(op, "2D src", f"rank {len(src.shape)}")
    count = _index_rows(op, a.type("indices"), "indices")
    _index_rows(op, a.type("block_table"), "block_table")
    for key in ("block_size", "size", "max_indices"):
        if a[key] <= 0:
            raise fail(op, f"{key} > 0", str(a[key]))
    if a["col_off"] < 0:
        raise fail(op, "col_off >= 0", str(a["col_off"]))
    if a["space"] not in (M.Mat, M.Vec):
        raise fail(op, "space=pl.Mem.Mat (L1) or pl.Mem.Vec (UB)", f"pl.Mem.{a['space'].name}")
    if a["is_trans"] and a["space"] is not M.Mat:
        raise fail(op, "space=MemorySpace::Mat (L1) when is_trans=true", f"space=pl.Mem.{a['space'].name}")
    if a["col_off"] + a["size"] > src.shape[1]:
        raise fail(op, f"col_off + size ({a['col_off'] + a['size']}) <= src columns ({src.shape[1]})",
                   f"col_off={a['col_off']}, size={a['size']}")
    if count > a["max_indices"]:
        raise fail(op, f"max_indices >= the {count} indices (it sizes the on-chip buffer)",
                   f"max_indices={a['max_indices']}", f"max_indices={count}")
    rows, size = a["max_indices"], a["size"]
    return TensorType((size, rows) if a["is_trans"] else (rows, size), src.dtype)


register("tensor.paged_gather",
         [P("src", Kind.TENSOR), P("indices", Kind.TENSOR), P("block_table", Kind.TENSOR), P("block_size", Kind.INT),
          P("size", Kind.INT), P("max_indices", Kind.INT), P("space", Kind.SPACE, default=M.Mat),
          P("col_off", Kind.INT, default=0), P("is_trans", Kind.BOOL, default=False),
          P("is_b_matrix", Kind.BOOL, default=False)], _paged_gather,
         doc="rows of a paged 2D pool into an on-chip tensor [max_indices, size]: row i is "
             "src[block_table[idx // block_size] * block_size + idx % block_size, col_off:col_off + size] "
             "(transposed with is_trans); rows past the indices stay zero")

unify("create_l1", tensor="tensor.create_l1")
unify("paged_gather", tensor="tensor.paged_gather")

