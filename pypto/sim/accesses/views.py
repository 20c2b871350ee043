"""GM tensors as the bytes they occupy. A torch tensor is a view: the address of its first
element, a shape and strides into memory other tensors may see too (``base[0:96]`` and
``base[16:112]``; ``x[:, 0:64]``, whose rows are not contiguous; ``w.T``, whose rows are not
rows). The simulator's hazards and the call check compare these real addresses, never
parameter names or shapes.

    runs(address, shape, strides, esize)   the [lo, hi) byte ranges of a strided window
    check_call(callee, params, args, span) refuse a call whose written tensor argument
                                           shares bytes with another argument (or itself)
"""

from __future__ import annotations

import itertools

import torch

from pypto.errors import SpecializationError, Span
from pypto.ir.types import ParamDirection, TensorType

WRITTEN = (ParamDirection.Out, ParamDirection.InOut)


def runs(address: int, shape, strides, esize: int) -> list[tuple[int, int]]:
    """The byte ranges [lo, hi) holding the elements of the view whose element 0 is at
    ``address`` (``strides`` in bytes), stretches that continue each other merged. They
    come in address order unless the view overlaps itself (a stride-0 axis, say)."""
    if 0 in shape:
        return []
    moving = sorted((st, sz) for st, sz in zip(strides, shape) if sz != 1 and st != 0)
    outer = [(0, sz) for st, sz in zip(strides, shape) if sz != 1 and st == 0]
    run, k = esize, 0
    while k < len(moving) and moving[k][0] == run:  # the axes that continue one contiguous run
        run *= moving[k][1]
        k += 1
    outer += moving[k:]
    starts = [address]
    for st, sz in sorted(outer, reverse=True):  # the largest stride outermost: address order
        starts = [s + i * st for s in starts for i in range(sz)]
    out: list[tuple[int, int]] = []
    for s in starts:
        if out and out[-1][1] == s:
            out[-1] = (out[-1][0], s + run)
        else:
            out.append((s, s + run))
    return out


def layout(t: torch.Tensor) -> tuple[int, tuple, tuple, int]:
    """(address of element 0, shape, strides in bytes, element size) of a CPU tensor."""
    esize = t.element_size()
    return t.data_ptr(), tuple(t.shape), tuple(s * esize for s in t.stride()), esize


def tensor_runs(t: torch.Tensor) -> list[tuple[int, int]]:
    return runs(*layout(t))


def window_runs(t: torch.Tensor, offsets, extents) -> list[tuple[int, int]]:
    """The byte ranges of ``t[offsets : offsets + extents]``."""
    address, _, strides, esize = layout(t)
    address += sum(o * s for o, s in zip(offsets, strides))
    return runs(address, tuple(extents), strides, esize)


def span_of(t: torch.Tensor) -> tuple[int, int]:
    """[first byte, last byte + 1) of a non-empty tensor: every byte it holds is inside."""
    address, shape, strides, esize = layout(t)
    return address, address + sum((sz - 1) * st for sz, st in zip(shape, strides)) + esize


def _span(t: torch.Tensor) -> tuple[int, int]:
    return span_of(t) if t.numel() else (t.data_ptr(), t.data_ptr())


def overlap_groups(tensors) -> list[int]:
    """Each tensor's group, numbered in argument order: tensors whose byte spans overlap,
    directly or through others, share one — by the memory they hold, whatever torch
    storage (or numpy array) they came from."""
    spans = [_span(t) for t in tensors]
    group, fresh, current, reach = [0] * len(spans), 0, None, None
    for k in sorted(range(len(spans)), key=lambda k: spans[k]):
        lo, hi = spans[k]
        if lo == hi:  # no bytes: overlaps nothing
            group[k], fresh = fresh, fresh + 1
            continue
        if reach is None or lo >= reach:
            current, fresh, reach = fresh, fresh + 1, hi
        else:
            reach = max(reach, hi)
        group[k] = current
    first: dict[int, int] = {}
    return [first.setdefault(x, len(first)) for x in group]


def overlaps_any(t: torch.Tensor, others) -> bool:
    """Whether ``t``'s byte span meets any of ``others``'."""
    lo, hi = _span(t)
    return any(a < hi and lo < b for a, b in map(_span, others))


def _union(rs: list) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for lo, hi in sorted(rs):
        if out and lo <= out[-1][1]:
            out[-1] = (out[-1][0], max(hi, out[-1][1]))
        else:
            out.append((lo, hi))
    return out


def shared(a: torch.Tensor, b: torch.Tensor) -> list[tuple[int, int]]:
    """The byte ranges two tensors both hold (empty when they share no memory)."""
    if a.numel() == 0 or b.numel() == 0:
        return []
    (alo, ahi), (blo, bhi) = span_of(a), span_of(b)
    lo, hi = max(alo, blo), min(ahi, bhi)
    if lo >= hi:
        return []
    if a.is_contiguous() and b.is_contiguous():
        return [(lo, hi)]
    ra, rb = _union(tensor_runs(a)), _union(tensor_runs(b))
    out, i, j = [], 0, 0
    while i < len(ra) and j < len(rb):
        lo, hi = max(ra[i][0], rb[j][0]), min(ra[i][1], rb[j][1])
        if lo < hi:
            out.append((lo, hi))
        if ra[i][1] < rb[j][1]:
            i += 1
        else:
            j += 1
    return out


def self_overlap(t: torch.Tensor) -> int | None:
    """The first address two elements of ``t`` share, or None when its elements are distinct."""
    if t.numel() <= 1 or t.is_contiguous():
        return None
    reach = None
    for lo, hi in sorted(tensor_runs(t)):
        if reach is not None and lo < reach:
            return lo
        reach = hi if reach is None else max(reach, hi)
    return None


def element_at(t: torch.Tensor, addr: int) -> tuple | None:
    """The index of the element of ``t`` holding byte ``addr`` (None when no element does)."""
    base, shape, strides, esize = layout(t)
    rem = addr - base
    index = [0] * len(shape)
    for k in sorted(range(len(shape)), key=lambda k: -strides[k]):
        if strides[k] > 0 and shape[k] > 1 and rem > 0:
            index[k] = min(rem // strides[k], shape[k] - 1)
            rem -= index[k] * strides[k]
    return tuple(index) if 0 <= rem < esize else None


def _element(name: str, t: torch.Tensor, addr: int) -> str:
    index = element_at(t, addr)
    if index is None:
        return f"byte {addr - t.data_ptr()} from the start of '{name}'"
    return f"{name}[{', '.join(map(str, index))}]"


def check_call(callee: str, params, args, span: Span | None, passed=tuple) -> None:
    """Refuse a call of ``callee`` (``params``: its ``n.Param``s) where a tensor it writes
    (pl.Out / pl.InOut) shares memory with another tensor argument, or where the elements of
    one it writes overlap each other: the compiler orders each tensor's own accesses, never
    one tensor's against another's, so such a call would give each platform its own result.
    Tensors it only reads may share memory freely. ``passed()``: what the caller wrote for
    each argument, when that says more than the parameter's name (asked for only to report)."""
    tensors = [(p, a) for p, a in zip(params, args)
               if isinstance(p.type, TensorType) and isinstance(a, torch.Tensor) and a.numel() > 0]
    for p, a in tensors:
        if p.direction in WRITTEN:
            addr = self_overlap(a)
            if addr is not None:
                raise SpecializationError(
                    f"'{callee}' writes its parameter '{p.name}' (pl.{p.direction.name}), but elements of the "
                    f"tensor passed for it are the same memory: {_element(p.name, a, addr)} is shared (shape "
                    f"{list(a.shape)}, strides {list(a.stride())}: an expanded or overlapping view)",
                    span=span, hint=f"pass a tensor whose elements are distinct for '{p.name}', e.g. "
                                    f"{p.name}.contiguous()")
    for i, (p, a) in enumerate(tensors):
        for q, b in tensors[i + 1:]:
            if p.direction not in WRITTEN and q.direction not in WRITTEN:
                continue
            common = shared(a, b)
            if common:
                raise _overlap(callee, p, a, q, b, common, span, _labels(params, passed()))


def _labels(params, passed: tuple) -> dict:
    return {p.name: f"'{p.name}'" + (f" (given {x})" if x and x != p.name else "")
            for p, x in itertools.zip_longest(params, passed[:len(params)])}


def _overlap(callee, p, a, q, b, common, span, labels) -> SpecializationError:
    total = sum(hi - lo for lo, hi in common)
    first = common[0][0]
    written = " and ".join(f"'{x.name}' (pl.{x.direction.name})" for x in (p, q) if x.direction in WRITTEN)
    read = next((x for x in (p, q) if x.direction not in WRITTEN), None)
    copy = read.name if read is not None else q.name
    return SpecializationError(
        f"arguments {labels[p.name]} and {labels[q.name]} of '{callee}' overlap in memory, and '{callee}' "
        f"writes {written}: "
        f"they share {total} byte{'s' * (total != 1)}, starting at {_element(p.name, a, first)}, which is "
        f"{_element(q.name, b, first)}",
        span=span,
        hint=f"pass tensors that share no memory, e.g. a copy: {copy}.clone(); to update a tensor in place, "
             "declare its parameter pl.InOut and pass the tensor once")
