"""Instructions of the PTO ISA the simulated chip does not have (``SoC.lacks``: ``pto.trandom``
exists on Ascend950, not on a2a3): a kernel holding one is refused where its source writes
the op, before any of it runs, naming the chips that have it — and the ``ref`` platform,
which interprets the IR, computes it."""

from __future__ import annotations

import weakref

from pypto.backend import SoC, having
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
                others = having(lambda t, m=node.mnemonic: m not in t.lacks, soc)
                raise CodegenError(
                    f"pl.{op[0]}.{op[1]} lowers to pto.{node.mnemonic.lower()}, which exists on "
                    f"{others[0] if others else 'no modeled chip'} only, and the simulated backend is {soc.title}: "
                    f"'{kernel.name}' cannot run on platform='{soc.name}sim'", span=node.span,
                    hint=(f"run it on the chip that has it, {others[1]}, or " if others else "run it ")
                         + "with RunConfig(platform='ref'), whose interpreter computes it")
    ident = id(kernel)
    seen = entry[1] if entry is not None and entry[0]() is kernel else frozenset()
    _CHECKED[ident] = (weakref.ref(kernel, lambda _: _CHECKED.pop(ident, None)), seen | {soc.name})
