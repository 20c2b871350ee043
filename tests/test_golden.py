"""The golden corpus (``golden_corpus``): each case's pass dumps, ``.pto`` listings, perf
hints and simulated cycles are byte-identical to the files under ``tests/golden/<case>/``.
After a change meant to alter them: ``python -m pytest tests/test_golden.py --update-golden``."""

import difflib
import shutil

import pytest

from golden_corpus import GOLDEN, cases, outputs

CASES = cases()


def _kept(case: str) -> dict[str, str]:
    root = GOLDEN / case
    return {str(p.relative_to(root)): p.read_text() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_compiler_gives_the_golden_outputs(case, tmp_path, request, capsys):
    got = outputs(case, CASES[case], tmp_path / case)
    capsys.readouterr()  # perf-hint summaries
    if request.config.getoption("--update-golden"):
        shutil.rmtree(GOLDEN / case, ignore_errors=True)
        for name, text in got.items():
            (GOLDEN / case / name).parent.mkdir(parents=True, exist_ok=True)
            (GOLDEN / case / name).write_text(text)
        return
    kept = _kept(case)
    assert kept, f"no golden files for {case}: run with --update-golden"
    assert sorted(got) == sorted(kept), f"{case}: files differ"
    for name in sorted(got):
        if got[name] != kept[name]:
            diff = "".join(list(difflib.unified_diff(kept[name].splitlines(True), got[name].splitlines(True),
                                                     f"golden/{case}/{name}", "now"))[:60])
            pytest.fail(f"{case}: {name} differs from its golden file\n{diff}")


def test_every_golden_directory_is_a_case():
    stale = sorted(p.name for p in GOLDEN.iterdir() if p.is_dir() and p.name != "generated" and p.name not in CASES)
    assert not stale, f"golden directories with no case (remove them): {stale}"
