"""What ``pl.debug_print`` saw: a tile's valid region where the statement ran — on
``a2a3sim`` read by the scalar unit once the pipes had written it, with the simulated cycle
and the core — and the source line. Both platforms keep them on ``RunReport.prints``; the
runtime prints them when the run ends (in simulated-time order on ``a2a3sim``)."""

from __future__ import annotations

import attrs
import torch

from pypto.errors import Span


@attrs.frozen
class Print:
    label: str
    span: Span | None
    value: torch.Tensor = attrs.field(eq=False)
    core: str | None = None  # None on ref, which runs no cores
    cycle: int | None = None

    def at(self, start: int, core: str | None = None) -> Print:
        """The same print in a run that started this launch at ``start`` (on ``core``)."""
        return attrs.evolve(self, cycle=None if self.cycle is None else self.cycle + start, core=core or self.core)

    def __str__(self) -> str:
        where = f"{self.span.file}:{self.span.line}:{self.span.col}" if self.span is not None else "<kernel>"
        when = f" [{self.core} @ cycle {self.cycle}]" if self.cycle is not None else ""
        head = f"[debug_print] {where}{when} {self.label}".rstrip()
        shape = "x".join(map(str, self.value.shape))
        with _printing():
            body = str(self.value.float() if self.value.dtype in (torch.float16, torch.bfloat16) else self.value)
        return f"{head} ({shape} {_dtype(self.value)}):\n{body}"


def _dtype(t: torch.Tensor) -> str:
    return str(t.dtype).removeprefix("torch.")


class _printing:
    """torch's print options for a tile: every element of a small one, the corners of a big one."""

    def __enter__(self):
        torch.set_printoptions(precision=4, threshold=256, edgeitems=3, linewidth=120)

    def __exit__(self, *exc):
        torch.set_printoptions(profile="default")
