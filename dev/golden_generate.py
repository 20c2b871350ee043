"""Draw the generated part of the golden corpus once: a few programs of each fuzz family,
written as DSL text to tests/golden/generated/<family>_<k>.py, headed by the recipe and the
entry function. Run it only to change the corpus; the tests read the committed files,
never the strategies (whose draws change with hypothesis' version).

    python dev/golden_generate.py [--per-family 2]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from hypothesis import HealthCheck, given, settings

from pypto.fuzz import strategies as ps

OUT = Path(__file__).resolve().parent.parent / "tests" / "golden" / "generated"


def draw(strategy, count: int) -> list:
    """The ``count`` largest of the distinct programs hypothesis draws in 60 tries,
    derandomized (the same draws on the same hypothesis version): the first draws are the
    smallest a strategy makes, and a corpus wants loops that run."""
    got: dict[str, ps.Case] = {}

    @settings(max_examples=60, database=None, derandomize=True, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(strategy)
    def collect(case):
        got.setdefault(case.program.as_python(), case)

    collect()
    return [got[text] for text in sorted(got, key=lambda t: (-len(t), t))[:count]]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-family", type=int, default=2)
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    for old in OUT.glob("*.py"):
        old.unlink()
    for family, strategy in sorted(ps.families().items()):
        for k, case in enumerate(draw(strategy, args.per_family)):
            text = f"# {family}: {case.recipe}\n# entry: {case.entry}\n" + case.program.as_python()
            (OUT / f"{family}_{k}.py").write_text(text)
            print(f"{family}_{k}: {case.recipe}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
