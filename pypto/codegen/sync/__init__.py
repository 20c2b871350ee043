"""Sync insertion: set_flag / wait_flag pairs that order every cross-pipe RAW, WAR and WAW
hazard on the bytes instructions touch, and nothing else.

Per block (a function body, a branch, a loop body), an edge u -> v means "v's pipe waits
until u's pipe has finished u". A loop body is analysed over a window of consecutive
iterations (as many as its deepest slot rotation, at least two), so an edge may cross
iterations (distance d >= 1): then the first d waits are fed by sets placed before the
loop (prologue) and the last d sets are drained after it (epilogue). An edge whose
conflict is one slot of a rotating region (``i % 2``) gets one event per slot, so the
other slots keep flowing. Edges are kept only where nothing else already orders the pair
(in-order pipes, other edges, transitively): each one is needed. Nested loops and
branches count as one statement to their parent, whose edges wait before them or set
after them.
"""

from pypto.codegen.sync.edges import Edge
from pypto.codegen.sync.events import assign_events
from pypto.codegen.sync.inserter import insert_syncs

__all__ = ["Edge", "assign_events", "insert_syncs"]
