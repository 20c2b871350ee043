"""The suite does not depend on the user's environment: every variable the package reads is
one the suite clears before a test runs (conftest.PACKAGE_ENV), and tests that depend on the
package's defaults pass with each of them set otherwise."""

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import conftest

ROOT = Path(__file__).resolve().parent.parent
NAME = re.compile(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+")


def _read_names(tree: ast.AST, constants: dict) -> set[str]:
    """The names of the environment variables a module reads: the argument of each
    ``environ.get`` / ``environ[...]`` / ``getenv``, a literal or a module constant; a loop over
    a table of names (``for field, var in _RING_ENV.items()``) reads the table's values."""
    found = set()
    for node in ast.walk(tree):
        target = None
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.args and (
                node.func.attr == "getenv" or (node.func.attr == "get" and "environ" in ast.unparse(node.func.value))):
            target = node.args[0]
        elif isinstance(node, ast.Subscript) and "environ" in ast.unparse(node.value):
            target = node.slice
        elif isinstance(node, ast.Compare) and any(isinstance(c, ast.Name) and c.id == "environ" or
                                                   isinstance(c, ast.Attribute) and c.attr == "environ"
                                                   for c in node.comparators):
            target = node.left
        if target is None:
            continue
        value = target.value if isinstance(target, ast.Constant) else constants.get(ast.unparse(target))
        if value is None:
            raise AssertionError(f"an environment read the test cannot name: {ast.unparse(node)}")
        found.update([value] if isinstance(value, str) else value)
    return found


def _constants(tree: ast.AST) -> dict:
    """Module-level names bound to a string or to a table of strings; a loop variable over
    such a table's values (or items' second) stands for all of them."""
    out = {}
    for node in tree.body if isinstance(tree, ast.Module) else ():
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            value = node.value
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                out[node.targets[0].id] = value.value
            elif isinstance(value, ast.Dict):
                out[node.targets[0].id] = [v.value for v in value.values if isinstance(v, ast.Constant)]
    for node in ast.walk(tree):
        if isinstance(node, ast.For) and isinstance(node.iter, ast.Call) and isinstance(node.iter.func, ast.Attribute):
            table = out.get(ast.unparse(node.iter.func.value))
            if isinstance(table, list) and isinstance(node.target, ast.Tuple):
                out[ast.unparse(node.target.elts[-1])] = table
    return out


def test_every_variable_the_package_reads_is_one_the_suite_clears():
    read = set()
    for path in sorted((ROOT / "pypto").rglob("*.py")):
        tree = ast.parse(path.read_text())
        read |= _read_names(tree, _constants(tree))
    assert read == set(conftest.PACKAGE_ENV)
    assert all(name.startswith(conftest.ENV_PREFIXES) and NAME.fullmatch(name) for name in read)


HOSTILE = {"PYPTO_LOG_LEVEL": "warn", "PYPTO_KEEP_BUILDS": "1", "PTO2_RING_TASK_WINDOW": "4",
           "PTO2_RING_HEAP": "1024", "PTO2_RING_DEP_POOL": "4", "PYPTO_REPORT": "1", "PYPTO_TRACEBACK": "full",
           "PYPTO_BENCH": "1", "PYPTO_BENCH_ROUNDS": "2", "PYPTO_BENCH_WARMUP": "0", "PYPTO_BENCH_RAW": "1"}
SENSITIVE = ["tests/passes/test_memory_reuse.py::test_a_pipeline_deeper_than_fits_gets_ph_mr_001_and_stays_correct",
             "tests/test_progress.py::test_a_long_run_says_how_far_it_is_then_that_it_is_done",
             "tests/test_build_retention.py::test_a_build_still_in_use_is_never_removed",
             "tests/test_log.py"]


def test_tests_that_read_the_defaults_pass_under_any_exported_setting(tmp_path):
    assert set(conftest.PACKAGE_ENV) - {"PYPTO_PROG_BUILD_DIR"} <= set(HOSTILE)
    env = {**os.environ, **HOSTILE, "PYPTO_PROG_BUILD_DIR": str(tmp_path / "the_users_builds"),
           "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           *SENSITIVE], cwd=ROOT, env=env, capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert not (tmp_path / "the_users_builds").exists()  # the suite's builds are its own
