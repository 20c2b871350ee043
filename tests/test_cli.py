"""The ``pypto`` command and the package around it: the trace and memory-map how-to's
commands run as pasted, ``pypto clean`` removes only builds, a bad command is one line, and a wheel
built from the tree installs and runs the demo."""

import importlib.util
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import pypto
from pypto import cli

ROOT = Path(__file__).resolve().parent.parent
SEEING_IT = (ROOT / "docs" / "how-to" / "trace-and-memory-map.md").read_text()


def _pypto() -> list[str]:
    found = shutil.which("pypto")
    return [found] if found else [sys.executable, "-m", "pypto"]


def _run(args, cwd, timeout=300):
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=timeout)


def test_the_seeing_it_commands_run_as_pasted(tmp_path):
    block = re.findall(r"```bash\n(.*?)\n```", SEEING_IT, re.S)[0]
    commands = [line.split("  #")[0].strip() for line in block.splitlines() if line.strip()]
    assert [c.split()[:2] for c in commands] == [["pypto", "demo"], ["pypto", "trace"], ["pypto", "memory-map"],
                                               ["pypto", "clean"]]
    for command in commands:
        args = shlex.split(command)
        done = _run(_pypto() + args[1:], tmp_path)
        assert done.returncode == 0, (command, done.stderr)
        if args[1] == "trace":
            pages = list((tmp_path / "demo-trace").glob("OPPROF_*/trace.clean.html"))
            assert pages and all(p.stat().st_size > 1000 for p in pages)
            assert "without an arrow" in done.stdout and "priming and draining" in done.stdout
        if args[1] == "memory-map":
            assert "<html" in (tmp_path / "demo-map.html").read_text()[:500].lower()
    assert not (tmp_path / "demo-build").exists()  # clean took the builds and the emptied directory


def test_version_help_and_a_bad_command(tmp_path):
    done = _run([sys.executable, "-m", "pypto", "--version"], tmp_path)
    assert done.stdout.strip() == f"pypto {pypto.__version__}" and done.returncode == 0
    assert re.fullmatch(r"\d+\.\d+\.\d+", pypto.__version__)
    assert "pypto clean" in _run([sys.executable, "-m", "pypto", "--help"], tmp_path).stdout
    done = _run([sys.executable, "-m", "pypto", "sim"], tmp_path)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1
    assert "unknown command 'sim'" in done.stderr and "memory-map" in done.stderr


def _build(root: Path, name: str, age: int = 0) -> Path:
    d = root / name
    (d / "report").mkdir(parents=True)
    (d / "compiled_meta.json").write_text("{}")
    os.utime(d, (1_700_000_000 + age, 1_700_000_000 + age))
    return d


def test_clean_removes_only_builds_and_keeps_the_newest(tmp_path, capsys, monkeypatch):
    root = tmp_path / "build_output"
    old = _build(root, "scale_20261201_100000", age=0)
    new = _build(root, "scale_20261201_110000", age=10)
    other = _build(root, "add_20261201_090000", age=5)
    mine = root / "notes"  # not a build: no compiled_meta.json (a report/ or kernels/ of the user's own)
    (mine / "report").mkdir(parents=True)
    (mine / "kernels").write_text("x")
    (mine / "keep.txt").write_text("x")
    assert cli.main(["clean", str(root), "--keep", "1", "--dry-run"]) == 0
    assert old.exists()
    assert cli.main(["clean", str(root), "--keep", "1"]) == 0
    assert not old.exists() and new.exists() and other.exists() and (mine / "keep.txt").exists()
    assert cli.main(["clean", str(root)]) == 0
    assert not new.exists() and not other.exists() and root.exists()  # notes/ keeps the root
    out = capsys.readouterr().out
    assert f"removed {old}" in out and "2 build(s) removed" in out
    assert cli.main(["clean", str(mine / "keep.txt")]) == 2
    capsys.readouterr()
    assert cli.main(["clean", str(tmp_path / "absent")]) == 2  # a directory named and missing: a typo
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "absent does not exist" in err
    monkeypatch.setenv("PYPTO_PROG_BUILD_DIR", str(tmp_path / "never_built"))
    assert cli.main(["clean"]) == 0  # the default directory, before any build: nothing to do
    assert capsys.readouterr().out.strip() == f"no builds: {tmp_path / 'never_built'} does not exist"
    empty = tmp_path / "empty"
    empty.mkdir()
    assert cli.main(["clean", str(empty)]) == 0 and empty.is_dir()  # not emptied by clean: kept


def test_a_demo_into_a_file_is_one_line(tmp_path):
    (tmp_path / "afile").write_text("x")
    done = _run(_pypto() + ["demo", "--platform", "ref", "-o", "afile"], tmp_path)
    assert done.returncode == 1 and done.stderr.startswith("error: ") and "Traceback" not in done.stderr


def test_kernel_names_drop_their_time_stamps():
    assert cli._kernel_of("scale_20261203_101500") == "scale"
    assert cli._kernel_of("my_kernel_20261203_101500_2") == "my_kernel"
    assert cli._kernel_of("pipelined") == "pipelined"
    assert cli._kernel_of("layer_1_20261203_101500") == "layer_1" != cli._kernel_of("layer_20261203_101500")


def test_fuzz_names_the_extra_it_needs(tmp_path):
    block = "import sys; sys.modules['hypothesis'] = None\n"
    done = _run([sys.executable, "-c", block + "import pypto.fuzz, pypto.fuzz.reproducer\n"
                 "try:\n    import pypto.fuzz.strategies\nexcept ImportError as e:\n    print(e)\n"], tmp_path)
    # (not 'pip install pypto[fuzz]': "pypto" on the package index is another project)
    assert done.returncode == 0 and done.stdout.strip() == \
        "pypto.fuzz needs hypothesis: pip install 'hypothesis>=6.90' (in a clone of this repository: pip install -e '.[fuzz]')"
    for code in (block + "from pypto.cli import main\nsys.exit(main(['fuzz', '--list']))",
                 block + "import runpy\nsys.argv = ['pypto.fuzz', '--list']\n"
                 "runpy.run_module('pypto.fuzz', run_name='__main__')"):
        done = _run([sys.executable, "-c", code], tmp_path)
        assert done.returncode == 2 and done.stderr.count("\n") == 1 and "pip install 'hypothesis" in done.stderr


def test_fuzz_is_a_subcommand(tmp_path):
    done = _run([sys.executable, "-m", "pypto", "fuzz", "--list"], tmp_path)
    assert done.returncode == 0 and "simulator" in done.stdout and "errors" in done.stdout


def _site_dirs() -> list[str]:
    """The directories this interpreter imports installed packages from (torch among them): a
    virtual environment's own, or the system's — a venv made from ``sys.executable`` is made
    from the base interpreter, whose site-packages may have none of them."""
    return [p for p in sys.path if Path(p).name in ("site-packages", "dist-packages") and Path(p).is_dir()]


def _isolation() -> list[str]:
    """Build without isolation (offline, at once) where this environment has the setuptools
    the build needs; else in isolation, as ``pip install -e .`` just did."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        new_enough = int(version("setuptools").split(".")[0]) >= 77
    except (PackageNotFoundError, ValueError):
        new_enough = False
    return ["--no-build-isolation"] if new_enough else []


@pytest.mark.skipif(importlib.util.find_spec("pip") is None, reason="no pip for this interpreter")
def test_a_wheel_installs_and_runs_the_demo(tmp_path, monkeypatch):
    monkeypatch.delenv("PYTHONPATH", raising=False)  # the venv's own copy, not a tree's
    done = _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", *_isolation(), "-w",
                 str(tmp_path / "dist"), str(ROOT)], tmp_path)
    assert done.returncode == 0, done.stderr
    (wheel,) = (tmp_path / "dist").glob("pypto-*.whl")
    assert wheel.name.startswith(f"pypto-{pypto.__version__}-")
    venv = tmp_path / "venv"
    done = _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], tmp_path)
    assert done.returncode == 0, done.stderr
    python = venv / "bin" / "python"
    # the dependencies (torch, attrs, ...) as this interpreter has them, after the venv's own
    # site-packages: a .pth line adds a directory (without running the .pth files in it, so an
    # editable install of the tree there stays out)
    (site,) = _run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                   tmp_path).stdout.split()
    Path(site, "dependencies.pth").write_text("".join(d + "\n" for d in _site_dirs()))
    done = _run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps", "--no-index",
                 str(wheel)], tmp_path)
    assert done.returncode == 0, done.stderr
    where = _run([str(python), "-c", "import pypto; print(pypto.__file__)"], tmp_path)
    assert where.stdout.startswith(str(venv)), where.stderr  # the wheel's copy, not the tree's
    done = _run([str(venv / "bin" / "pypto"), "demo", "--platform", "ref"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("bit for bit: True") == 3
