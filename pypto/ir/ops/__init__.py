"""The op registry (``registry``) and the ops it holds, by level (``tile``, ``tensor``)."""

from pypto.ir.ops import array as _array  # noqa: F401  (registers array.*)
from pypto.ir.ops import pipes as _pipes  # noqa: F401  (registers the cross-core pipe ops)
from pypto.ir.ops import rings as _rings  # noqa: F401  (registers system.reserve_buffer)
from pypto.ir.ops import spmd as _spmd  # noqa: F401  (registers the block registers)
from pypto.ir.ops import tensor as _tensor  # noqa: F401  (registers tensor.*)
from pypto.ir.ops import tile as _tile  # noqa: F401  (registers tile.*)
from pypto.ir.ops import cube as _cube  # noqa: F401  (registers the cube's tile ops)
from pypto.ir.ops import mx as _mx  # noqa: F401  (registers the MX cube ops)
from pypto.ir.ops import compound as _compound  # noqa: F401  (registers prelu, addc, sels, ...)
from pypto.ir.ops import tile_windows as _tile_windows  # noqa: F401  (registers tile.slice, tile.assemble, ...)
from pypto.ir.ops import gathers as _gathers  # noqa: F401  (registers tile.gather)
from pypto.ir.ops import sorts as _sorts  # noqa: F401  (registers sort32, mrgsort, the mask moves)
from pypto.ir.ops import tensor_sorts as _tensor_sorts  # noqa: F401  (the tensor forms of sort and gather)
from pypto.ir.ops import row_gathers as _row_gathers  # noqa: F401  (registers tile.gather_row)
from pypto.ir.ops import l1_tensors as _l1_tensors  # noqa: F401  (create_l1, the tensor gather_row, paged_gather)
from pypto.ir.ops import elements as _elements  # noqa: F401  (registers read / write of one element)
from pypto.ir.ops import randoms as _randoms  # noqa: F401  (registers the counter-based random ops)
from pypto.ir.ops import tensor_forms as _tensor_forms  # noqa: F401  (tensor forms of tile ops: arg reductions, cmp, ...)
from pypto.ir.ops import comm as _comm  # noqa: F401  (registers the pld ops)
from pypto.ir.ops import barriers as _barriers  # noqa: F401  (registers system.syncall)
from pypto.ir.ops.registry import (
    REQUIRED,
    UNIFIED,
    Kind,
    OpArgs,
    OpDef,
    ParamSpec,
    Windows,
    all_ops,
    argument,
    lookup,
    op_call,
    resolve,
    spelled,
    unspelled,
    with_args,
)
from pypto.ir.ops.type_rules import infer_type

__all__ = ["UNIFIED", "Kind", "OpArgs", "OpDef", "ParamSpec", "REQUIRED", "Windows", "all_ops", "argument", "infer_type",
           "lookup", "op_call", "resolve", "spelled", "unspelled", "with_args"]
