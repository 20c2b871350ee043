"""Constant loop bounds against the loop index's type.

A loop's index is INDEX, a signed 64-bit integer: the reference's loop variables are INDEX
("semantically similar to INT64"), and the device's scalar registers hold 64 bits. A constant
bound INDEX cannot hold, a trip count past its greatest value, or a step that takes the index
past it after the last trip (the device adds the step, then compares with the stop) would
wrap on the device, and the loop would not be the one written: each is refused where it is
written. A count INDEX holds is compiled however large — what running it costs is the run's
to say (the progress line; README, "Long loops").

    bound(value, what)          the message for a bound INDEX cannot hold, or None
    trips(start, stop, step)    the message for constant bounds whose loop INDEX cannot count, or None
"""

from __future__ import annotations

from pypto.ir.types import INDEX

LOWEST, HIGHEST = INDEX.dtype.int_range
HINT = (f"a loop index is a signed 64-bit integer (INDEX, {LOWEST}..{HIGHEST}): keep the bounds, the trip count "
        "and the index's last step inside it")


def bound(value: int, what: str, index: str = "the loop index") -> str | None:
    """Why ``what`` (a loop's start, stop or step; a block count, ``index`` the block
    index) cannot be ``value``."""
    if LOWEST <= value <= HIGHEST:
        return None
    return f"{what} is {value}, which does not fit {index}'s INDEX ({LOWEST}..{HIGHEST})"


def trips(start: int, stop: int, step: int) -> str | None:
    """Why the loop ``start, stop, step`` (each in INDEX, ``step`` not 0) cannot run on an
    INDEX index: more trips than it counts, or a last step past its end."""
    count = len_of(start, stop, step)
    if count > HIGHEST:
        return f"the loop runs {count} trips, more than the loop index's INDEX counts ({HIGHEST})"
    if count == 0:
        return None
    last = start + (count - 1) * step
    after = last + step
    if not LOWEST <= after <= HIGHEST:
        return (f"after its last trip (the index at {last}) the loop steps its index to {after}, past INDEX's "
                f"{HIGHEST if after > 0 else LOWEST}: the index would wrap on the device and the loop not end")
    return None


def len_of(start: int, stop: int, step: int) -> int:
    """How many trips ``range(start, stop, step)`` makes, however large (``len`` of a range
    stops at the C size)."""
    if step > 0:
        return max(0, (stop - start + step - 1) // step)
    return max(0, (start - stop - step - 1) // -step)
