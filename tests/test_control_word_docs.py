"""``help()`` of every control word, decorator and annotation of the kernel language shows
its own text — not its kind's (``DslName``), not nothing — and a control word's signature
is the one the front end accepts."""

import inspect
import pydoc

import pytest

import pypto.language as pl
from pypto.errors import PyptoError
from pypto.lang.vocabulary.names import BUILTINS, DECORATORS, ENUMS, TYPE_CTORS

WORDS = sorted(BUILTINS)
DECORATED = ["jit", "jit.incore", "jit.inline", "function", "program"]
ANNOTATIONS = sorted(TYPE_CTORS)
ENUM_NAMES = sorted(ENUMS)


def _get(dotted: str):
    obj = pl
    for part in dotted.split("."):
        obj = getattr(obj, part)
    return obj


def _own_doc(obj) -> str | None:
    """What help() shows first: a function's or class's docstring, an instance's class's."""
    return inspect.getdoc(obj) if inspect.isfunction(obj) or isinstance(obj, type) else inspect.getdoc(type(obj))


def _kinds(obj) -> list:
    return list((obj if isinstance(obj, type) else type(obj)).__mro__[1:])


def _help(obj) -> str:
    return pydoc.render_doc(obj, renderer=pydoc.plaintext)


def test_the_lists_cover_what_the_front_end_knows():
    assert {d.split(".")[0] for d in DECORATED} == set(DECORATORS)
    for name in [*WORDS, *ANNOTATIONS, *ENUM_NAMES]:
        assert hasattr(pl, name), f"pl.{name} is a kernel-language name Python cannot reach (help(pl.{name}) fails)"


@pytest.mark.parametrize("name", WORDS + DECORATED + ANNOTATIONS + ENUM_NAMES)
def test_help_shows_the_names_own_text(name):
    obj = _get(name)
    doc = _own_doc(obj)
    text = _help(obj)
    assert doc and len(doc) > 40, f"pl.{name} has no docstring of its own"
    assert doc.splitlines()[0] in text
    generic = {inspect.getdoc(k) for k in _kinds(obj) if inspect.getdoc(k)}
    assert doc not in generic, f"help(pl.{name}) shows its kind's text"
    assert "A kernel-language name: an op, a loop form, a scope." not in text


@pytest.mark.parametrize("name", WORDS)
def test_a_control_word_documents_itself_and_refuses_to_run_on_the_host(name):
    word = getattr(pl, name)
    assert inspect.isfunction(word) and word.__pypto_path__ == (name,)
    assert f"pl.{name}" in word.__doc__ or name in ("min", "max", "const")
    with pytest.raises(PyptoError) as err:
        word(1)
    assert "only has meaning inside a @pl.jit" in str(err.value)


@pytest.mark.parametrize("name, parameters", [
    ("range", ["start", "stop", "step", "init_values"]),
    ("pipeline", ["start", "stop", "step", "stage", "init_values"]),
    ("at", ["level", "name_hint", "deps", "no_dep_args", "allow_early_resolve", "optimizations", "dumps"]),
    ("spmd", ["core_num", "sync_start", "name_hint", "deps", "optimizations", "allow_early_resolve", "predicate"]),
    ("cluster", ["name_hint"]),
    ("split_aiv", ["lanes", "mode"]),
])
def test_signatures_name_the_keywords_the_front_end_reads(name, parameters):
    assert list(inspect.signature(getattr(pl, name)).parameters) == parameters


def test_documented_keywords_are_accepted_by_the_front_end():
    """The keywords the signatures name compile (and an unknown one is refused), so the
    signatures cannot drift from the parser."""
    import torch

    from pypto.runtime import RunConfig

    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="scaled", allow_early_resolve=False):
            for i in pl.pipeline(0, 4, 1, stage=2):
                pl.store(pl.mul(pl.load(a, [i * 8, 0], [8, 16]), 2.0), [i * 8, 0], out)
        return out

    a, out = torch.randn(32, 16), torch.zeros(32, 16)
    k(a, out, config=RunConfig(platform="ref"))
    assert torch.equal(out, a * 2)
