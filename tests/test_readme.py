"""The README is what a visitor needs and no more: what it is, the two commands CI runs,
one example that runs as written, a picture, links that resolve. Everything else lives on
the docs site (tests/test_docs.py runs its pages)."""

import re
import runpy
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()


def test_the_readme_is_at_most_8_kb():
    assert len(README.encode()) <= 8 * 1024


def test_readme_example_runs(tmp_path, monkeypatch):
    (block,) = re.findall(r"```python\n(.*?)```", README, re.S)
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "readme.py"  # a kernel needs its source on disk
    path.write_text(block)
    runpy.run_path(str(path), run_name="readme")


def test_quick_start_has_the_two_commands_ci_runs_and_install_repeats_them():
    quick = README.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    commands = re.findall(r"```bash\n(.*?)\n```", quick, re.S)
    assert len(commands) == 2
    assert commands[0].endswith("python -m pypto.demo")
    assert commands[1].endswith("python -m pytest -q")
    ci = (ROOT / ".ci" / "run").read_text()
    assert commands[1] in ci
    install = (ROOT / "docs" / "install.md").read_text()
    assert all(f"```bash\n{c}\n```" in install for c in commands)


def test_the_readme_links_and_picture_resolve():
    targets = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", README)
    local = [t for t in targets if not t.startswith("http")]
    assert any(t.endswith(".png") for t in local) and len(local) > 10
    for target in local:
        assert (ROOT / target).is_file(), target


def test_demo_runs_the_seed_kernels():
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "pypto.demo"], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    for name in ("single_buffer", "pipelined", "explicit_slots"):
        line = next(x for x in done.stdout.splitlines() if x.startswith(name))
        assert "bit for bit: True" in line and "cycles" in line
    assert "MTE2 overlaps VECTOR: True" in done.stdout and "MTE2 overlaps VECTOR: False" in done.stdout
