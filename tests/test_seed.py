"""The seed document's code, taken from the document itself, runs as written."""

import runpy
import sys

import pytest
from seed import code_blocks, runnable_program


def test_seed_has_the_kernel_blocks():
    blocks = code_blocks()
    text = "\n".join(blocks)
    for name in ("single_buffer", "pipelined", "explicit_slots"):
        assert f"def {name}(" in text
        assert f"check({name})" in text


@pytest.mark.parametrize("platform", ["ref", "a2a3sim"])
def test_seed_kernels_run(platform, tmp_path, monkeypatch):
    # Written to a file: kernels are parsed from their source, which must be on disk.
    path = tmp_path / "seed_kernels.py"
    path.write_text(runnable_program(platform))
    monkeypatch.setattr(sys, "argv", [str(path)])
    ns = runpy.run_path(str(path), run_name="seed_kernels")
    for name in ("single_buffer", "pipelined", "explicit_slots"):
        assert name in ns
