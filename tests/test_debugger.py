"""A kernel under ``RunConfig(platform="ref", debug=True)`` or ``@pl.jit(debug=True)`` runs
as host Python: ``breakpoint()`` stops pdb at the user's own line with the kernel's values
under the names the source gives them (tiles as torch tensors), ``print`` prints them, and
the results are ref's bits. Anywhere else, both calls are a located error that names
``pl.debug_print`` and ``debug=True``."""

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

import pypto.language as pl
from pypto.errors import PyptoError, UnsupportedSyntaxError
from pypto.runtime import RunConfig

ROOT = Path(__file__).resolve().parent.parent
HOST = RunConfig(platform="ref", debug=True)

KERNEL = textwrap.dedent('''
    import torch
    import pypto.language as pl
    from pypto.runtime import RunConfig


    @pl.jit
    def scaled(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            for i in pl.range(2):
                tile = pl.load(a, [i * 16, 0], [16, 64])
                tile = pl.mul(tile, tile)
                breakpoint()
                pl.store(tile, [i * 16, 0], out)
        return out


    a = torch.arange(32 * 64, dtype=torch.float32).reshape(32, 64) / 64
    out = torch.zeros(32, 64)
    scaled(a, out, config=RunConfig(platform="ref", debug=True))
    print("RESULT", torch.equal(out, a * a))
''')


def _pdb(tmp_path, commands: str) -> str:
    script = tmp_path / "user_kernel.py"
    script.write_text(KERNEL)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("PYTHONBREAKPOINT", None)
    done = subprocess.run([sys.executable, str(script)], input=commands, capture_output=True, text=True,
                          env=env, cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def _stops(out: str) -> list:
    """The (file, line) of every place pdb stopped at, in order."""
    return [(f, int(k)) for f, k in re.findall(r"^(?:\(Pdb\) )*> (\S+)\((\d+)\)scaled\(\)$", out, re.M)]


def _answers(out: str) -> list:
    """The first line pdb printed for each command."""
    return [chunk.splitlines()[0] if chunk else "" for chunk in out.split("(Pdb) ")[1:]]


def test_breakpoint_stops_pdb_at_the_user_s_line_with_tiles_as_torch_tensors(tmp_path):
    out = _pdb(tmp_path, "p type(tile).__name__, tuple(tile.shape)\np tile[1, 3].item()\np i\nc\n"
                         "p i\np tile[1, 3].item()\nc\n")
    # pdb stops at the statement after breakpoint(), in the user's file, twice (one per trip)
    assert _stops(out) == [(str(tmp_path / "user_kernel.py"), 14)] * 2
    assert "-> pl.store(tile, [i * 16, 0], out)" in out
    values = _answers(out)
    # row 1, column 3 of trip i: a = (64 * (16 i + 1) + 3) / 64, squared
    assert values[:3] == ["('Tensor', (16, 64))", repr(((64 + 3) / 64) ** 2), "0"]
    assert values[4:6] == ["1", repr(((64 * 17 + 3) / 64) ** 2)]
    assert "RESULT True" in out


def test_pdb_steps_through_the_user_s_lines_and_lists_their_source(tmp_path):
    out = _pdb(tmp_path, "n\nn\nn\nll\nc\nc\n")
    file = str(tmp_path / "user_kernel.py")
    assert _stops(out)[:4] == [(file, k) for k in (14, 10, 11, 12)]
    assert "def scaled(a: pl.Tensor, out: pl.Out[pl.Tensor]):" in out  # ll lists the kernel's own source


@pl.jit
def printed(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(2):
            t = pl.load(a, [i * 16, 0], [16, 64])
            print("trip", i, t)
            pl.store(pl.exp(t), [i * 16, 0], out)
    return out


def test_print_prints_the_values_where_the_kernel_runs_on_the_host(capsys):
    a = torch.randn(32, 64)
    out = torch.zeros(32, 64)
    printed(a, out, config=HOST)
    lines = capsys.readouterr().out.splitlines()
    assert "\n".join(lines) == f"trip 0 {a[:16]}\ntrip 1 {a[16:]}"
    assert torch.equal(out, torch.exp(a))


@pl.jit.incore
def squared(x: pl.Tensor, y: pl.Out[pl.Tensor]):
    t = pl.load(x, [0, 0], [16, 64])
    pl.store(pl.mul(t, t), [0, 0], y)
    return y


@pl.jit
def carried(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor], sq: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        acc = pl.load(a, [0, 0], [16, 64])
        for i in pl.range(1, 4):
            t = pl.load(a, [i * 16, 0], [16, 64])
            if i > 1:
                acc = pl.add(acc, t)
            else:
                acc = pl.sub(acc, pl.exp(t))
        pl.store(acc, [0, 0], out)
    sq = squared(b, sq)
    return out, sq


@pl.jit(debug=True)
def carried_debug(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor], sq: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        acc = pl.load(a, [0, 0], [16, 64])
        for i in pl.range(1, 4):
            t = pl.load(a, [i * 16, 0], [16, 64])
            if i > 1:
                acc = pl.add(acc, t)
            else:
                acc = pl.sub(acc, pl.exp(t))
        pl.store(acc, [0, 0], out)
    sq = squared(b, sq)
    return out, sq


@pytest.mark.parametrize("how", ["RunConfig(debug=True)", "pl.jit(debug=True)"])
def test_the_host_run_gives_ref_s_bits_through_loops_branches_and_kernel_calls(how):
    a, b = torch.randn(64, 64), torch.randn(16, 64)
    want = torch.zeros(16, 64), torch.zeros(16, 64)
    carried(a, b, *want, config=RunConfig(platform="ref"))
    got = torch.zeros(16, 64), torch.zeros(16, 64)
    if how == "pl.jit(debug=True)":
        carried_debug(a, b, *got)
    else:
        carried(a, b, *got, config=HOST)
    assert all(torch.equal(x, y) for x, y in zip(got, want))


def _kernel(tmp_path, body: str):
    path = tmp_path / "k.py"
    path.write_text("import pypto.language as pl\n\n\n@pl.jit\ndef k(a: pl.Tensor, out: pl.Out[pl.Tensor]):\n"
                    "    with pl.at(level=pl.Level.CORE_GROUP):\n        t = pl.load(a, [0, 0], [16, 64])\n"
                    f"        {body}\n        pl.store(t, [0, 0], out)\n    return out\n")
    import runpy

    return runpy.run_path(str(path))["k"], path


@pytest.mark.parametrize("body", ["breakpoint()", "print(t)", 'print("t is", t)'])
@pytest.mark.parametrize("config", [RunConfig(platform="ref"), RunConfig(platform="a2a3sim")], ids=["ref", "sim"])
def test_elsewhere_breakpoint_and_print_name_debug_print_and_debug_true(tmp_path, body, config):
    k, path = _kernel(tmp_path, body)
    with pytest.raises(UnsupportedSyntaxError) as info:
        k(torch.randn(16, 64), torch.zeros(16, 64), config=config)
    text = str(info.value)
    assert f"--> {path}:8:9" in text and "pl.debug_print" in text and "debug=True" in text
    with pytest.raises(UnsupportedSyntaxError):
        k.compile(torch.randn(16, 64), torch.zeros(16, 64))


def test_an_error_on_the_host_names_the_kernel_s_line(tmp_path):
    path = tmp_path / "oob.py"
    path.write_text(textwrap.dedent('''
        import pypto.language as pl


        @pl.jit
        def k(a: pl.Tensor, out: pl.Out[pl.Tensor], n: pl.Scalar[pl.INT32]):
            with pl.at(level=pl.Level.CORE_GROUP):
                t = pl.load(a, [n, 0], [16, 64])
                pl.store(t, [0, 0], out)
            return out
    '''))
    import runpy

    k = runpy.run_path(str(path))["k"]
    with pytest.raises(PyptoError) as info:
        k(torch.randn(16, 64), torch.zeros(16, 64), 8, config=HOST)
    assert f"{path}:8:" in str(info.value)


def test_debug_options_are_checked_where_written():
    from pypto.errors import ConfigError, TypeCheckError

    with pytest.raises(TypeCheckError, match="debug=...") as info:
        pl.jit(debug="yes")
    assert "test_debugger.py" in str(info.value)
    with pytest.raises(ConfigError, match="platform='ref'"):
        RunConfig(platform="a2a3sim", debug=True)
