"""The front end: kernel source (never run) into IR, and printed IR (pass dumps) back.

``parse(text)`` reads printed DSL text into a Program with ``ast`` only — dump text is
never run — with the front end's program reader and no module namespace but ``pl``, so a
dump parses exactly as a ``@pl.program`` class would.
"""

from __future__ import annotations

from pypto.backend import DEFAULT, SoC
from pypto.ir.nodes import Program


def parse(text: str, filename: str = "<string>", *, soc: SoC = DEFAULT) -> Program:
    """``soc``: the backend whose rules type the program's ops (the pipeline passes the
    one in force; the default is RunConfig's)."""
    from pypto.lang.text import parse_text

    return parse_text(text, filename, soc)
