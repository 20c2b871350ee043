"""Python's cyclic garbage collector paused around work that makes many objects with no
cycles among them — reading source into the IR, simulating a launch, cleaning a trace.
Each collection walks every object still alive, so over such work the collector costs
more with each object made: its time would grow faster than the work's."""

from __future__ import annotations

import contextlib
import gc


@contextlib.contextmanager
def collector_paused():
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
