"""Cross-rank races: two ranks touching the same bytes of one rank's copy of a window, one of
them writing, with no signal ordering them. Happens-before across ranks is what the signals
carry: each rank keeps a vector clock; a notify ticks its rank's own entry and carries the
clock to the cell; a wait that holds joins the clocks its cell received. An access by rank p
at its epoch e is ordered before rank q's later access when q's clock has reached past e in
p's entry — q waited on a notify p sent after the access. Within a rank, program order (and
the chip's task edges) orders its accesses: those are the chip's own race check's."""

from __future__ import annotations

import attrs

from pypto.errors import ExecutionError, Span


class CrossRankRace(ExecutionError):
    """Two ranks' accesses to one window's bytes, one writing, with no signal between them."""


@attrs.frozen
class Access:
    rank: int  # who accessed
    epoch: int  # its own clock entry then
    view: tuple  # (shape, element bytes) of the window view it went through
    box: tuple  # ((offset, extent), ...) in that view
    write: bool
    what: str  # "remote_store", "load", ...
    span: Span | None = attrs.field(default=None, eq=False)

    def bytes(self) -> tuple[int, int]:
        """[lo, hi): the bytes of the copy from its first element to past its last."""
        shape, size = self.view
        first = last = 0
        for (o, e), d in zip(self.box, shape):
            first, last = first * d + o, last * d + o + e - 1
        return first * size, (last + 1) * size

    def overlaps(self, other: Access) -> bool:
        if self.view == other.view:  # the same view: boxes (exact)
            return all(a < b + f and b < a + e for (a, e), (b, f) in zip(self.box, other.box))
        (a, b), (c, d) = self.bytes(), other.bytes()  # views of another shape: their byte spans
        return a < d and c < b


class Clocks:
    def __init__(self, nranks: int):
        self.nranks = nranks
        self.vc = [[0] * nranks for _ in range(nranks)]
        self.accesses: dict[tuple, list[Access]] = {}  # (buffer id, owner rank) -> accesses

    def released(self, rank: int) -> tuple:
        """A notify by ``rank``: its clock, ticked, to travel with the signal."""
        self.vc[rank][rank] += 1
        return tuple(self.vc[rank])

    def acquired(self, rank: int, clocks) -> None:
        """A wait by ``rank`` that holds: what its cell's notifies carried is now ordered before it."""
        mine = self.vc[rank]
        for clock in clocks:
            for k, c in enumerate(clock):
                mine[k] = max(mine[k], c)

    def access(self, copy: tuple, name: str, new: Access) -> None:
        """Record ``new`` on a window copy (buffer id, owner rank) named ``name``; a race with an
        earlier access is raised."""
        log = self.accesses.setdefault(copy, [])
        for old in log:
            if old.rank == new.rank or not (old.write or new.write) or not old.overlaps(new) or \
                    old.what.startswith("atomic ") and new.what.startswith("atomic "):  # (adds commute, up to rounding)
                continue
            if self.vc[new.rank][old.rank] > old.epoch:
                continue  # a notify old's rank sent after it reached new's rank before new
            raise race_error(name, copy[1], old, new)
        log.append(new)
        if len(log) >= 64 and len(log) & (len(log) - 1) == 0:  # now and then: drop what every rank is past
            log[:] = [a for a in log if not all(self.vc[q][a.rank] > a.epoch for q in range(self.nranks))]

    def epoch(self, rank: int) -> int:
        return self.vc[rank][rank]


def _where(a: Access) -> str:
    return f"{a.span.file}:{a.span.line}" if a.span is not None else "?"


def race_error(name: str, owner: int, old: Access, new: Access) -> CrossRankRace:
    region = ", ".join(f"{o}:{o + e}" for o, e in new.box)
    return CrossRankRace(
        f"cross-rank race on rank {owner}'s copy of window '{name}' [{region}]: rank {old.rank}'s "
        f"{old.what} at {_where(old)} and rank {new.rank}'s {new.what} at {_where(new)}, with no signal between "
        "them", span=new.span,
        hint=f"order them: rank {old.rank} notifies after its {old.what}, and rank {new.rank} waits for that notify "
             f"before its {new.what}")
