"""The layers read top to bottom (DESIGN §3): a package imports only the packages below it;
inside the three largest (sim, passes, lang) their units — a subpackage, or a module at the
package's top — read the same way.

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


# Inside a package, each unit may import the units before it (docs/architecture.md draws them).
# sim: what a run reports, then what each op computes (both platforms), then who touched which
#   bytes in what order; the reference interpreter on those; the simulator's timing core, the
#   data its timelines move, the fast-forward of steady loops, and the simulator over them all.
# passes: the context every pass takes; the subpackages of the passes with helpers of their own
#   (the memory model first: ConvertTensorToTileOps sizes its blocks around the rings it
#   reserves); the one-module passes; the invariants and the pipeline that orders them all.
# lang: the names of the kernel language; the checks over converted IR (whose call-site record
#   the converter keeps); expressions, control flow, statements and the orchestration's forms,
#   each reading the ones before; the function converter; reading source; a program class
#   converted, the decorators and program objects users get; @pl.jit kernels; dump text.
UNITS = {
    "sim": ("reports", "ops", "accesses", "reference", "timing", "data", "fastforward", "lacking", "record",
            "simulator"),
    "passes": ("context", "allocation", "tile_conversion", "outlining", "l0_tiling", "canonicalize_tile_slice",
               "fuse_create_assemble_to_slice", "infer_tile_memory_space", "legalize_tile_cast", "lower_pipeline_loops",
               "lower_pipeline_to_slots", "tile_innermost_dim_granularity", "invariants", "pipeline"),
    "lang": ("vocabulary", "checks", "expressions", "flow", "statements", "orchestration", "converter", "sources",
             "program_builder", "program", "jit", "text"),
}
# Units beside each other rather than above: no import either way. The reference interpreter
# is the oracle the simulator is checked against, so neither is built on the other.
BESIDE = {("sim", "reference"): {"timing", "data", "fastforward", "lacking", "record", "simulator"}}


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


def _unit(path: pathlib.Path, package: str, root: pathlib.Path = ROOT) -> str:
    return path.relative_to(root / package).parts[0].removesuffix(".py")


@functools.cache
def _unit_edges(package: str, root: pathlib.Path = ROOT) -> tuple:
    """(unit, unit it imports, where) inside one package; ``from pypto.sim import timing``
    names the unit it imports."""
    out = []
    for path in sorted((root / package).rglob("*.py")):
        src = _unit(path, package, root)
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                modules = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                modules = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            else:
                continue
            for module in modules:
                parts = module.split(".")
                if parts[:2] == ["pypto", package] and len(parts) > 2 and parts[2] != src:
                    out.append((src, parts[2], f"{path.relative_to(root.parent)}:{node.lineno}"))
    return tuple(dict.fromkeys(out))


@pytest.mark.parametrize("package", sorted(UNITS))
def test_every_unit_is_in_its_package_order(package):
    units = {_unit(p, package) for p in (ROOT / package).rglob("*.py")} - {"__init__"}
    assert units == set(UNITS[package]), f"place {sorted(units - set(UNITS[package]))} in UNITS[{package!r}]" \
        + (f"; drop {sorted(set(UNITS[package]) - units)}" if set(UNITS[package]) - units else "")


@pytest.mark.parametrize("package, unit", [(p, u) for p, units in sorted(UNITS.items()) for u in units])
def test_a_unit_imports_only_the_units_below_it(package, unit):
    order = UNITS[package]
    below = set(order[:order.index(unit)]) - BESIDE.get((package, unit), set())
    for (p, other), apart in BESIDE.items():
        if p == package and unit in apart:
            below.discard(other)
    wrong = [f"{where} imports pypto.{package}.{dst}" for src, dst, where in _unit_edges(package)
             if src == unit and dst in order and dst not in below]
    assert not wrong, "\n".join(wrong)


def test_the_unit_checker_sees_deferred_and_package_imports(tmp_path):
    root = tmp_path / "pypto"
    (root / "sim" / "ops").mkdir(parents=True)
    (root / "sim" / "ops" / "probe.py").write_text(
        "import pypto.sim.ops.numerics\nfrom pypto.sim import reports\ndef g():\n    from pypto.sim.timing.issue import Issuer\n"
        "    from pypto.sim import simulator as s\n    import pypto.ir.nodes\n")
    (root / "sim" / "record.py").write_text("from pypto.sim.ops import semantics\n")
    assert sorted(_unit_edges("sim", root)) == [
        ("ops", "reports", "pypto/sim/ops/probe.py:2"), ("ops", "simulator", "pypto/sim/ops/probe.py:5"),
        ("ops", "timing", "pypto/sim/ops/probe.py:4"), ("record", "ops", "pypto/sim/record.py:1")]
