"""A pypto error's traceback shows the user's frames and one line of pypto's (the entry
point's raise, which says how to see the rest); the message's ``help:`` line is the last
thing printed; ``PYPTO_TRACEBACK=full`` keeps every frame. Over every public entry point a
mistake can be made at."""

import os
import subprocess
import sys
import textwrap
import traceback
from pathlib import Path

import pytest
import torch

import pypto
import pypto.language as pl
from pypto.errors import PyptoError
from pypto.runtime import RunConfig

PACKAGE = str(Path(pypto.__file__).resolve().parent) + os.sep


@pl.jit
def bad_shapes(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [16, 64])
        u = pl.load(a, [0, 0], [16, 32])
        pl.store(pl.add(t, u), [0, 0], out)
    return out


@pl.jit
def fine(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        pl.store(pl.exp(pl.load(a, [0, 0], [16, 64])), [0, 0], out)
    return out


def _program():
    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[16, 64], pl.FP32], out: pl.Out[pl.Tensor[[16, 64], pl.FP32]]):
            t = pl.load(a, [0, 0], [16, 64])
            pl.store(pl.matmul(t, t, t), [0, 0], out)  # too many operands
            return out

    return P


def _decorator_option():
    @pl.jit(auto_scoop=True)
    def k(a: pl.Tensor):
        return a


A, OUT = torch.randn(16, 64), torch.zeros(16, 64)
MISTAKES = {
    "kernel call": lambda: bad_shapes(A, OUT),
    "compile": lambda: bad_shapes.compile(A, OUT),
    "lower": lambda: bad_shapes.lower(A, OUT),
    "a call with the wrong arguments": lambda: fine(A),
    "RunConfig": lambda: RunConfig(platfrom="ref"),
    "config of a call": lambda: fine(A, OUT, config=RunConfig(platform="ref", keep_builds=-1)),
    "pl.program": _program,
    "a decorator's option": _decorator_option,
    "a compiled program's run": lambda: fine.compile(A, OUT).run(A),
}


def _pypto_frames(err: BaseException) -> list:
    return [f for f in traceback.extract_tb(err.__traceback__) if os.path.abspath(f.filename).startswith(PACKAGE)]


@pytest.mark.parametrize("where", MISTAKES)
def test_the_traceback_holds_the_user_s_frames_and_one_line_of_pypto(where):
    with pytest.raises(PyptoError) as info:
        MISTAKES[where]()
    ours = _pypto_frames(info.value)
    assert len(ours) <= 1, [f"{f.filename}:{f.lineno}" for f in ours]
    assert all("PYPTO_TRACEBACK=full" in (f.line or "") for f in ours)
    assert traceback.extract_tb(info.value.__traceback__)[0].filename == __file__
    printed = "".join(traceback.format_exception(info.value)).rstrip("\n").splitlines()
    if info.value.hint:
        assert printed[-1].startswith("  help: ")


@pytest.mark.parametrize("where", ["kernel call", "RunConfig", "pl.program"])
def test_pypto_traceback_full_keeps_every_frame(monkeypatch, where):
    monkeypatch.setenv("PYPTO_TRACEBACK", "full")
    with pytest.raises(PyptoError) as info:
        MISTAKES[where]()
    assert len(_pypto_frames(info.value)) > 1


def test_a_script_s_error_prints_the_user_s_lines_and_ends_with_help(tmp_path):
    script = tmp_path / "user.py"
    script.write_text(textwrap.dedent('''
        import torch
        import pypto.language as pl


        @pl.jit
        def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
            with pl.at(level=pl.Level.CORE_GROUP):
                pl.store(pl.add(pl.load(a, [0, 0], [16, 64]), pl.load(a, [0, 0], [16, 32])), [0, 0], out)
            return out


        def main():
            k(torch.randn(16, 64), torch.zeros(16, 64))


        main()
    '''))
    env = {**os.environ, "PYTHONPATH": str(Path(PACKAGE).parent)}
    env.pop("PYPTO_TRACEBACK", None)
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, cwd=tmp_path)
    lines = run.stderr.rstrip("\n").splitlines()
    files = [x.split('"')[1] for x in lines if x.startswith('  File "')]
    assert files[:2] == [str(script)] * 2 and len(files) == 3 and files[2].startswith(PACKAGE)
    assert lines[-1].startswith("  help: ") and f"--> {script}:9:" in run.stderr
    full = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path,
                          env={**env, "PYPTO_TRACEBACK": "full"})
    assert full.stderr.count('  File "') > 10 and full.stderr.rstrip("\n").splitlines()[-1].startswith("  help: ")
