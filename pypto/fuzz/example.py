"""What a fuzz property is made of: the knobs of its draws (``Knobs``), what it draws
(``Example``) and the property itself (a name, a summary, a strategy and a check)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

import attrs

from pypto.fuzz.data import FLOATS, INTS, Case

if TYPE_CHECKING:  # (drawing needs hypothesis; reading a reproducer does not)
    from hypothesis import strategies as st


@attrs.frozen
class Knobs:
    """What to draw: ``families`` (names from ``FAMILIES``; empty: all a property takes),
    ``dtypes`` (the element dtypes of the elementwise family), ``max_steps`` (ops in a
    chain), ``max_trips`` (iterations of a loop); ``platform``, the simulator the
    properties hold ``ref`` against (its chip's table types and plans the programs)."""

    families: tuple = ()
    dtypes: tuple = FLOATS + INTS
    max_steps: int = 6
    max_trips: int = 5
    platform: str = "a2a3sim"


@attrs.frozen
class Example:
    """What a property checks: a case (a program, its inputs, its oracle) under a planner;
    or a kernel module's ``source`` (task graphs, bad programs) with ``detail``, the data
    its check needs (a literal: tuples, strings, numbers)."""

    case: Case | None = None
    planner: str = "PYPTO"
    source: str | None = None
    detail: object = None
    platform: str = "a2a3sim"  # the simulator it is checked on (the campaign's Knobs.platform)

    @property
    def soc(self):
        """The SoC table of the chip the platform simulates."""
        from pypto.backend import backend
        from pypto.runtime.config import SIM_BACKENDS

        return backend(SIM_BACKENDS[self.platform])

    def describe(self) -> str:
        head = self.case.recipe if self.case is not None else ""
        return f"{head} [{self.planner}]" if self.case is not None else f"{head}{self.detail!r}"


def ref_of(platform: str):
    """The ``RunConfig`` of ``ref`` interpreting a program as ``platform``'s chip compiles it:
    what the compiler decides by capacity (a reduction's fold blocks: A5's larger Vec folds
    in wider ones, so its sums add in another order) is the chip's, so ``ref`` of the default
    chip (a2a3) need not give an a5sim run's bits."""
    from pypto.runtime import RunConfig
    from pypto.runtime.config import SIM_BACKENDS

    return RunConfig(platform="ref", backend=SIM_BACKENDS[platform])


@attrs.frozen
class Property:
    name: str
    summary: str  # what must hold, one line
    examples: Callable[[Knobs], st.SearchStrategy]  # of Example
    check: Callable[[Example], None]
    families: tuple = ()  # the program families it draws (``Knobs.families`` narrows them); () for its own
