"""The layers read top to bottom (DESIGN §3): a package imports only the packages below it.

Every import counts — module level or inside a function — since a deferred import is the
same dependency, paid later."""

import ast
import functools
import pathlib

import pytest

import pypto

ROOT = pathlib.Path(pypto.__file__).parent

# Each package may import those before it; ``errors`` is the floor under everything.
# The tools come last of the libraries: they read every artifact on disk, fuzz reproducers too.
ORDER = ("errors", "log", "console", "backend", "ir", "lang", "passes", "codegen", "sim", "chip", "cluster", "runtime", "pypto_core", "language", "debug", "fuzz",
         "tools", "examples", "demo", "cli", "__main__")
ALSO = {"backend": set()}  # the ground floor imports nothing of ours but errors


def _package(path: pathlib.Path, root: pathlib.Path = ROOT) -> str:
    return path.relative_to(root).parts[0].removesuffix(".py")


def _imports(path: pathlib.Path, root: pathlib.Path):
    """(imported pypto module, line) of every import in one file, relative ones resolved."""
    parts = list(path.relative_to(root.parent).parts[:-1])  # the file's package
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            yield from ((a.name, node.lineno) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = parts[: len(parts) - node.level + 1]
                yield ".".join(base + ([node.module] if node.module else [])), node.lineno
            else:
                yield node.module, node.lineno


@functools.cache
def _edges(root: pathlib.Path = ROOT) -> tuple:
    return tuple(_walk(root))


def _walk(root: pathlib.Path):
    for path in sorted(root.rglob("*.py")):
        src = _package(path, root)
        for module, line in _imports(path, root):
            if module == "pypto" or not module.startswith("pypto."):
                continue
            dst = module.split(".")[1]
            if dst != src:
                yield src, dst, f"{path.relative_to(root.parent)}:{line}"


def test_every_package_is_in_the_order():
    packages = {_package(p) for p in ROOT.rglob("*.py")} - {"__init__"}
    assert packages <= set(ORDER), f"place {sorted(packages - set(ORDER))} in ORDER"


@pytest.mark.parametrize("package", ORDER)
def test_a_package_imports_only_the_layers_below_it(package):
    below = set(ORDER[:ORDER.index(package)])
    allowed = ALSO.get(package, below) | {"errors"}
    wrong = [f"{where} imports pypto.{dst}" for src, dst, where in _edges() if src == package and dst not in allowed]
    assert not wrong, "\n".join(wrong)


def test_the_checker_sees_deferred_and_relative_imports(tmp_path):
    root = tmp_path / "pypto"
    (root / "ir").mkdir(parents=True)
    (root / "ir" / "probe.py").write_text(
        "import pypto.ir.nodes\ndef g():\n    from pypto.runtime import RunConfig\n    from ..sim import numerics\n"
        "    from . import types\n")
    assert sorted(_edges(root)) == [("ir", "runtime", "pypto/ir/probe.py:3"), ("ir", "sim", "pypto/ir/probe.py:4")]
