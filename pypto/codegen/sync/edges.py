"""What sync insertion works on and produces: an ``Edge`` (v's pipe waits until u's pipe
has finished u, within one block, possibly across loop iterations) and a ``Node`` (one
pipe's part of one statement, in one iteration of the analysis window)."""

from __future__ import annotations

import attrs

from pypto.backend import Pipe
from pypto.codegen.isa import Region

UNKNOWN = object()  # an address or offset that depends on a name bound inside a compound


@attrs.frozen
class Edge:
    id: int
    u: int  # statement index of the producer in its block
    v: int  # statement index of the consumer
    src: tuple  # (core, pipe)
    dst: tuple
    distance: int
    base: int  # first event id
    region: Region | None = None  # set when the conflict is one slot of a rotating region
    slot_u: object = None  # the slot expressions, as the body spells them
    slot_v: object = None
    block: int = 0  # which block (function body, branch, loop body) u and v index
    passage: str | None = None  # "entry"/"exit": no sync, what a nested loop's syncs pass on (``passages``)


@attrs.define
class Node:
    t: int
    j: int
    key: tuple  # (core, pipe)
    accesses: list  # (loc, write), as seen in window iteration t
    original: list  # the same accesses as the body spells them
    seq: int = 0


def rank(key: tuple) -> tuple:
    core, pipe = key
    return core.value, list(Pipe).index(pipe)


def merge(into: dict, other: dict) -> None:
    for key, seq in other.items():
        if seq > into.get(key, -1):
            into[key] = seq
