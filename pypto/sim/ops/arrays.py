"""What an orchestration's small arrays compute (``pypto.ir.ops.array``): a tuple of
scalars or TaskIds, each ``array.set`` a new tuple; an index outside it is a run-time
error."""

from __future__ import annotations

from pypto.ir.types import DataType
from pypto.sim.ops.semantics import OutOfRange, impl


@impl("array.create")
def array_create(size, dtype):
    return (None if dtype is DataType.TASK_ID else 0,) * size


def _slot(array, index) -> int:
    if not 0 <= index < len(array):
        raise OutOfRange(f"index {index} is outside the array's {len(array)} elements")
    return index


@impl("array.get")
def array_get(array, index):
    return array[_slot(array, index)]


@impl("array.set")
def array_set(array, index, value):
    k = _slot(array, index)
    return array[:k] + (value,) + array[k + 1:]
