"""``RunConfig``: how a kernel is compiled and where it runs. Passed, never ambient."""

from __future__ import annotations

import attrs

from pypto.errors import ConfigError

# platform -> what runs the program
PLATFORMS = {
    "ref": "the reference interpreter (executes the IR with torch)",
}


def _check_platform(instance, attribute, value) -> None:
    if value not in PLATFORMS:
        raise ConfigError(
            f"Invalid platform {value!r}",
            hint=f"Expected one of: {', '.join(repr(p) for p in PLATFORMS)}",
        )


@attrs.frozen(kw_only=True)
class RunConfig:
    platform: str = attrs.field(default="ref", validator=_check_platform)
