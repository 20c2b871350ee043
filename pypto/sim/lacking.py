"""Instructions of the PTO ISA the simulated chip does not have (``SoC.lacks``: ``pto.trandom``
exists on Ascend950, not on a2a3): a kernel holding one is refused where its source writes
the op, before any of it runs — the ``ref`` platform, which interprets the IR, computes it."""

from __future__ import annotations

import weakref

from pypto.backend import SoC
from pypto.codegen.isa import Instr, Kernel, walk
from pypto.errors import CodegenError

_CHECKED: dict[int, tuple] = {}  # id(kernel) -> (weak reference, the SoC names it was checked against)


def refuse(kernel: Kernel, soc: SoC) -> None:
    entry = _CHECKED.get(id(kernel))
    if entry is not None and entry[0]() is kernel and soc.name in entry[1]:
        return
    for program in kernel.programs:
        for node in walk(program.body):
            if isinstance(node, Instr) and node.mnemonic in soc.lacks:
                op = node.op.split(".", 1)
                raise CodegenError(
                    f"pl.{op[0]}.{op[1]} lowers to pto.{node.mnemonic.lower()}, which exists on "
                    f"{soc.lacks[node.mnemonic]} only, and the simulated backend is {soc.name} ({soc.product}): "
                    f"'{kernel.name}' cannot run on platform='{soc.name}sim'", span=node.span,
                    hint="run it with RunConfig(platform='ref'), whose interpreter computes it (the A5 backend is "
                         "not simulated here)")
    ident = id(kernel)
    seen = entry[1] if entry is not None and entry[0]() is kernel else frozenset()
    _CHECKED[ident] = (weakref.ref(kernel, lambda _: _CHECKED.pop(ident, None)), seen | {soc.name})
