"""A task's chain of accumulating MMADs applied as one: ``run_steps`` holds back a
``tile.matmul`` / ``tile.matmul_acc`` whose accumulator is its own destination, keeps a copy
of each later MMAD's operands that accumulates into the same tile, and computes the chain
with one ``numerics.matmul`` over the operands joined along K when something else would
see the tile (or the steps end).

Why the bits do not move: the cube's contract (DESIGN §8, ``cube_math``) cuts K into
32-byte blocks from each MMAD's own k = 0 and adds the rounded block sums into the fp32
accumulator in K order; an MMAD over a piece of K that is a whole number of blocks
therefore leaves the accumulator exactly where the joined product has reached after the
same blocks. So a chain is joined only while every piece but the last is whole blocks
(a hand-written odd slice keeps its own alignment: it ends the chain), of one dtype. The
NaN policy is applied once at the end, as after each MMAD: a NaN stays NaN through later
adds, and every NaN becomes the canonical one either way.

Why the order holds: between the MMADs of a chain, only copies into other buffers may run
(``_move`` and window loads whose destination does not overlap the tile): the operands are
copied when their MMAD is reached, the starting accumulator too, so later writes to L0A/L0B
do not matter; any other step, or a copy touching the tile, makes the chain computed first.
Where one MMAD costs ~40 small torch calls of fixed overhead, a task's chain of K/128 of
them becomes one call with K blocks.
"""

from __future__ import annotations

import torch

from pypto.sim.ops import numerics as num
from pypto.sim.ops.cube_math import block_elems

CHAINED = ("tile.matmul", "tile.matmul_acc")


class Chain:
    """A held-back chain of MMADs into buffer ``out``: the accumulator it started from (a
    copy, or None) and each MMAD's operands (copies)."""

    __slots__ = ("out", "acc", "lhs", "rhs", "dtype", "whole", "touches")

    def __init__(self, out, acc, lhs, rhs, touches):
        self.out, self.acc, self.lhs, self.rhs, self.dtype = out, acc, [lhs], [rhs], lhs.dtype
        self.whole = lhs.shape[1] % block_elems(lhs.dtype) == 0  # every piece so far whole blocks
        self.touches = touches  # buffer number -> whether it overlaps ``out``

    def extend(self, template, varying, views) -> bool:
        """Take one more MMAD into the chain, if it accumulates into the same tile with
        operands the joined product computes bit for bit (the module doc)."""
        if not self.whole or template.chain != "tile.matmul_acc":
            return False
        values, reads, out = varying
        if out != self.out or dict(zip(template.value_names, values)).get("init_cond"):
            return False
        operands = dict(zip(template.read_names, (i for i, _ in reads)))
        if operands.get("acc") != out or not _whole_k(template, reads, views):
            return False
        lhs, rhs = views[operands["lhs"]], views[operands["rhs"]]
        if lhs is None or rhs is None or lhs.dtype != self.dtype or rhs.dtype != self.dtype \
                or lhs.dim() != 2 or rhs.dim() != 2 or lhs.shape[0] != self.lhs[0].shape[0] \
                or rhs.shape[1] != self.rhs[0].shape[1] or lhs.shape[1] != rhs.shape[0]:
            return False
        self.lhs.append(lhs.clone())
        self.rhs.append(rhs.clone())
        self.whole = lhs.shape[1] % block_elems(self.dtype) == 0
        return True

    def spares(self, template, varying, buffers) -> bool:
        """Whether a step may run before the chain is computed: a copy whose source and
        destination both lie apart from the tile."""
        copies = getattr(template, "copies", None)  # (a copy step's buffer numbers; ``steps``)
        return copies is not None and not any(self._touches(i, buffers) for i in copies(varying))

    def _touches(self, i, buffers) -> bool:
        got = self.touches.get(i)
        if got is None:
            (core, b), (out_core, o) = buffers[i], buffers[self.out]
            got = self.touches[i] = core == out_core and b.space == o.space \
                and b.addr < o.addr + o.nbytes and o.addr < b.addr + b.nbytes
        return got

    def compute(self, views) -> None:
        lhs = self.lhs[0] if len(self.lhs) == 1 else torch.cat(self.lhs, 1)
        rhs = self.rhs[0] if len(self.rhs) == 1 else torch.cat(self.rhs, 0)
        views[self.out].copy_(num.matmul(lhs, rhs, self.acc))


def start(template, varying, views):
    """A chain begun by this MMAD, or None where it must run as it is (an operand or its
    destination not viewable as the plain 2-D tiles ``matmul`` reads and writes)."""
    values, reads, out = varying
    operands = dict(zip(template.read_names, (i for i, _ in reads)))
    if out is None or "lhs" not in operands or "rhs" not in operands or not _whole_k(template, reads, views):
        return None
    lhs, rhs, dst = views[operands["lhs"]], views[operands["rhs"]], views[out]
    if lhs is None or rhs is None or dst is None or lhs.dtype != rhs.dtype or lhs.dim() != 2 or rhs.dim() != 2 \
            or lhs.shape[1] != rhs.shape[0] or lhs.dtype not in _RESULT \
            or dst.dtype != _RESULT[lhs.dtype] or tuple(dst.shape) != (lhs.shape[0], rhs.shape[1]):
        return None
    acc = None
    if template.chain == "tile.matmul_acc" and not dict(zip(template.value_names, values)).get("init_cond"):
        held = views[operands["acc"]] if "acc" in operands else None
        if held is None or held.dtype != dst.dtype or held.shape != dst.shape:
            return None
        acc = held.clone()
    return Chain(out, acc, lhs.clone(), rhs.clone(), {})


def _whole_k(template, reads, views) -> bool:
    """Whether the MMAD's left operand is valid on all of K (else it contracts over fewer
    columns: ``semantics.contracted``, which the joined product does not know of)."""
    i, valid = dict(zip(template.read_names, reads))["lhs"]
    v = views[i]
    return v is not None and tuple(valid)[-1] == v.shape[-1]


_RESULT = {torch.float16: torch.float32, torch.bfloat16: torch.float32, torch.float32: torch.float32,
           torch.int8: torch.int32}