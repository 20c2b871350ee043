"""What ``tile.random`` / ``tensor.random`` compute: the Philox4x32 counter-based generator
(Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11), with 7 or 10 rounds.

One block maps a 128-bit counter ``(c0, c1, c2, c3)`` and a 64-bit key ``(k0, k1)`` to four
32-bit words. Each round multiplies two counter words by the Philox constants, keeps the
product halves and mixes them with the other two words and the key; the key is bumped by
the Weyl constants between rounds:

    hi0:lo0 = 0xD2511F53 * c0     hi1:lo1 = 0xCD9E8D57 * c2
    (c0, c1, c2, c3) = (hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0)
    (k0, k1) += (0x9E3779B9, 0xBB67AE85)

Element [r, c] of an [R, C] result is word 0 of the block for counter
``(counter0 + c, counter1 + r, counter2, counter3)`` (each word modulo 2**32), reinterpreted
as the result dtype (UINT32 as is, INT32 as its two's complement). So an element is a
function of the seeds and its position only: a window of a tensor is the tile generated at
the window's offset, and a narrower valid region writes the same values where it writes.
The reference leaves the device's lane schedule unspecified; this is this project's
definition, the one both platforms and ``torch_codegen`` compute.
"""

from __future__ import annotations

import numpy as np
import torch

from pypto.ir.types import DataType
from pypto.sim.ops import numerics as num
from pypto.sim.ops.fresh import fresh
from pypto.sim.ops.semantics import impl

MULTIPLIERS = (0xD2511F53, 0xCD9E8D57)
WEYL = (0x9E3779B9, 0xBB67AE85)
_LOW = np.uint64(0xFFFFFFFF)


def philox4x32(key: tuple, counter: tuple, rounds: int) -> tuple:
    """The four output words of each block: ``counter`` four arrays (or ints) of 32-bit
    words, ``key`` two ints; returns four uint64 arrays holding 32-bit words."""
    c = [np.asarray(w, dtype=np.uint64) & _LOW for w in counter]
    k0, k1 = (np.uint64(w & 0xFFFFFFFF) for w in key)
    m0, m1 = (np.uint64(m) for m in MULTIPLIERS)
    for r in range(rounds):
        if r:
            k0, k1 = (k0 + np.uint64(WEYL[0])) & _LOW, (k1 + np.uint64(WEYL[1])) & _LOW
        p0, p1 = m0 * c[0], m1 * c[2]  # < 2**64: exact in uint64
        c = [((p1 >> np.uint64(32)) ^ c[1] ^ k0) & _LOW, p1 & _LOW, ((p0 >> np.uint64(32)) ^ c[3] ^ k1) & _LOW,
             p0 & _LOW]
    return tuple(c)


def words(key0, key1, counter0, counter1, counter2, counter3, rows: int, cols: int, dtype: DataType,
          rounds: int) -> torch.Tensor:
    """The [rows, cols] words, in ``dtype``, of the generator at these seeds."""
    r = np.arange(rows, dtype=np.uint64)[:, None]
    c = np.arange(cols, dtype=np.uint64)[None, :]
    ctr = (np.uint64(counter0 & 0xFFFFFFFF) + c + 0 * r, np.uint64(counter1 & 0xFFFFFFFF) + r + 0 * c,
           np.full((rows, cols), counter2 & 0xFFFFFFFF, dtype=np.uint64),
           np.full((rows, cols), counter3 & 0xFFFFFFFF, dtype=np.uint64))
    out = philox4x32((key0, key1), ctr, rounds)[0].astype(np.uint32)
    return torch.from_numpy(out.view(np.int32) if dtype is DataType.INT32 else out).clone()


@impl("tile.random")
def random_tile(key0, key1, counter0, counter1, counter2, counter3, shape, valid_shape=None,
                dtype=DataType.UINT32, rounds=10):
    rows, cols = valid_shape if valid_shape is not None else shape
    data = fresh(tuple(shape), num.TORCH[dtype])  # past the valid region it writes nothing
    data[:rows, :cols] = words(key0, key1, counter0, counter1, counter2, counter3, rows, cols, dtype, rounds)
    return data


@impl("tensor.random")
def random_tensor(key0, key1, counter0, counter1, counter2, counter3, shape, dtype=DataType.UINT32, rounds=10):
    return words(key0, key1, counter0, counter1, counter2, counter3, *shape, dtype, rounds)
