"""The README's Python examples run as written, and its quick-start commands are the ones
CI runs."""

import re
import runpy
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()


def test_readme_python_blocks_run(tmp_path):
    blocks = re.findall(r"```python\n(.*?)```", README, re.S)
    assert len(blocks) >= 2
    path = tmp_path / "readme.py"  # one module: later blocks use what earlier ones define
    path.write_text("\n".join(blocks))
    runpy.run_path(str(path), run_name="readme")


def test_quick_start_has_the_two_commands_ci_runs():
    quick = README.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    commands = re.findall(r"```bash\n(.*?)\n```", quick, re.S)
    assert len(commands) == 2
    assert commands[0].endswith("python -m pypto.demo")
    ci = (ROOT / ".ci" / "run").read_text()
    assert commands[1] in ci


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
