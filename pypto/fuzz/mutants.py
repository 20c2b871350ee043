"""Bugs planted on purpose, for testing the campaign itself (never for users): each one
edits one function of the compiler in a small way — a loop bound off by one, a sync
dropped, an op's operands swapped — in this process only, and can be taken out again. A
campaign run with ``--mutant NAME`` must find it, shrink it to a small kernel, and the
bisect must name its layer.

The edit is made to the function's own source text (so it reads as the bug it is) and the
new function takes the old one's place wherever a module of this package holds it.
"""

from __future__ import annotations

import ast
import contextlib
import importlib
import inspect
import sys
import textwrap

import attrs

from pypto.fuzz.properties import Knobs


@attrs.frozen
class Mutant:
    name: str
    layer: str  # what the bisect should name
    module: str
    function: str  # "name" or "Class.method"
    old: str  # text of the function's source, found exactly once
    new: str
    knobs: Knobs = Knobs()  # what draws it soon
    properties: tuple = ()  # which properties see it


MUTANTS = {m.name: m for m in (
    Mutant("pipeline-tail", "LowerPipelineLoops", "pypto.passes.lower_pipeline_loops", "_Lowering.lower",
           "for j in range(static_trip % f):", "for j in range(static_trip % f - 1):",
           Knobs(families=("elementwise",), max_steps=2, max_trips=7), ("passes",)),
    Mutant("dropped-sync", "codegen", "pypto.codegen.sync.analysis", "BlockAnalysis.analyse",
           "for key in sorted(pattern, key=order)]", "for key in sorted(pattern, key=order)[1:]]",
           Knobs(families=("elementwise", "carried"), max_steps=2), ("simulator", "syncs")),
    Mutant("swapped-select", "op semantics", "pypto.sim.ops.semantics", "sel",
           "torch.where(pred, lhs.data, rhs.data)", "torch.where(pred, rhs.data, lhs.data)",
           Knobs(families=("elementwise",), max_steps=3), ("oracle",)),
)}


class MutantError(ValueError):
    pass


def plant(name: str):
    """Plant the named bug; returns the function that takes it out again."""
    m = MUTANTS.get(name)
    if m is None:
        raise MutantError(f"no mutant {name!r}; there are {', '.join(MUTANTS)}")
    module = importlib.import_module(m.module)
    owner_name, _, attr = m.function.rpartition(".")
    owner = getattr(module, owner_name) if owner_name else module
    old = inspect.unwrap(getattr(owner, attr))
    source = textwrap.dedent(inspect.getsource(old))
    if source.count(m.old) != 1:
        raise MutantError(f"mutant {name!r} no longer applies: {m.old!r} is not once in {m.module}.{m.function}")
    tree = ast.parse(source.replace(m.old, m.new))
    tree.body[0].decorator_list = []  # what a decorator did with the old one (a table entry), _swap redoes
    ast.increment_lineno(tree, old.__code__.co_firstlineno - 1)
    scope: dict = {}
    exec(compile(tree, inspect.getsourcefile(old), "exec"), module.__dict__, scope)  # noqa: S102  (our own source)
    new = scope[old.__name__]
    return _swap(owner, attr, old, new)


def _swap(owner, attr: str, old, new):
    """Put ``new`` wherever ``old`` is held: its owner, other pypto modules' globals and the
    dicts among them (an op table)."""
    places = [(owner, attr)]
    for mod_name, mod in list(sys.modules.items()):
        if not mod_name.startswith("pypto") or mod is None:
            continue
        for key, value in list(vars(mod).items()):
            if value is old and (mod, key) != (owner, attr):
                places.append((mod, key))
            elif isinstance(value, dict):
                places += [(value, k) for k, v in list(value.items()) if v is old]
    for holder, key in places:
        _set(holder, key, new)

    def undo():
        for holder, key in places:
            _set(holder, key, old)
    return undo


def _set(holder, key, value) -> None:
    if isinstance(holder, dict):
        holder[key] = value
    else:
        setattr(holder, key, value)


@contextlib.contextmanager
def planted(name: str | None):
    """The named bug while the block runs (none: nothing planted)."""
    undo = plant(name) if name is not None else None
    try:
        yield
    finally:
        if undo is not None:
            undo()
