"""``kernel_config.py`` of a build: the manifest the reference's builds carry beside their
kernels, in its layout — ``RUNTIME_CONFIG``, ``ORCHESTRATION`` (the entry) and ``KERNELS``
(one entry per program of each kernel: ``func_id``, ``name``, ``source``, ``core_type``) —
so tools that read a build's kernels from it find ours. The sources it names are this
package's ``.pto`` listings (there is no C++ here); ``CompiledProgram.from_dir`` rebuilds
from ``compiled_meta.json``, not from this file.
"""

from __future__ import annotations

import json

NAME = "kernel_config.py"


def manifest(compiled, runtime: dict) -> str:
    """The text of ``kernel_config.py`` for ``compiled`` (its kernels in the order they were
    compiled; a mixed kernel has an aic and an aiv entry under one name)."""
    lines = ["# Kernel and orchestration configuration of this build (pypto: the sources are .pto listings)",
             "from pathlib import Path", "", "_ROOT_DIR = Path(__file__).parent", "",
             f"RUNTIME_CONFIG = {_literal(runtime)}", "",
             "ORCHESTRATION = {",
             f'\t"name": {json.dumps(compiled.entry)},',
             f'\t"source": str(_ROOT_DIR / {json.dumps(_program_text())}),',
             f'\t"function_name": {json.dumps(compiled.entry)},',
             "}", "", "KERNELS = ["]
    func_id = 0
    for kernel in compiled.kernels.values():
        for p in kernel.programs:
            core = p.core.value
            lines.append(f'\t{{"func_id": {func_id}, "name": {json.dumps(kernel.name)}, '
                         f'"source": str(_ROOT_DIR / "kernels" / {json.dumps(core)} / {json.dumps(kernel.name + ".pto")}), '
                         f'"core_type": {json.dumps(core)}}},')
            func_id += 1
    lines.append("]")
    return "\n".join(lines) + "\n"


def _literal(d: dict) -> str:
    """A dict of the runtime's settings as Python source (None, numbers and strings)."""
    return "{" + ", ".join(f"{json.dumps(k)}: {v!r}" for k, v in d.items()) + "}"


def _program_text() -> str:
    from pypto.runtime.compiled import PROGRAM_TEXT

    return PROGRAM_TEXT
