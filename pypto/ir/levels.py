"""How much the pass manager writes and checks between passes."""

from __future__ import annotations

import enum


class PassDumpLevel(enum.Enum):
    """Per-pass dumps: none, one snapshot per pass, or with every tile's full type."""

    NONE = 0
    CONCISE = 1
    EXPLICIT = 2

    @classmethod
    def coerce(cls, value) -> PassDumpLevel:
        if isinstance(value, cls):
            return value
        if isinstance(value, bool):
            return cls.CONCISE if value else cls.NONE
        if isinstance(value, str) and value.upper() in cls.__members__:
            return cls[value.upper()]
        raise ValueError(value)


class VerificationLevel(enum.Enum):
    """NONE: trust the passes; BASIC: run the verifier after each pass; ROUNDTRIP: also
    print each pass's output, parse it back and require a structurally equal program."""

    NONE = 0
    BASIC = 1
    ROUNDTRIP = 2

    @classmethod
    def coerce(cls, value) -> VerificationLevel:
        if isinstance(value, cls):
            return value
        if isinstance(value, str) and value.upper() in cls.__members__:
            return cls[value.upper()]
        raise ValueError(value)
