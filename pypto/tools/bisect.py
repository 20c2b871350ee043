"""Which step of the compiler breaks a program (``pypto.debug.bisect``), from the command line:

    python -m pypto.tools.bisect <reproducer.py | passes_dump/ | output_dir/> [--planner P] [--seed N]

A fuzz reproducer (``python -m pypto.fuzz`` writes them) brings its inputs and its oracle; a
dump directory is bisected on random inputs (its scalar parameters 3). It prints the
culprit — op semantics, a pass with the diff of its dumps, codegen or the simulator — or
that no step changes the result. Files are read, never run: a reproducer's values are
literals read with ``ast``, dumps are parsed. Exit 2, with one line, when there is nothing
to bisect.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pypto.debug.bisect import MAX_BYTES, BisectError, from_dumps
from pypto.errors import PyptoError
from pypto.tools import description


def from_reproducer(path: Path, planner: str | None):
    from pypto.fuzz.checks import bisect_example
    from pypto.fuzz.reproducer import NotAReproducer, read

    try:
        prop, example, _ = read(path)
    except NotAReproducer as exc:
        raise BisectError(str(exc)) from None
    if example.case is None or example.source is not None:
        raise BisectError(f"{path}: a '{prop}' reproducer holds a kernel module, not a program and its inputs: "
                          f"run it (python {path.name}) instead")
    return bisect_example(example, planner)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pypto.tools.bisect", description=description(__doc__))
    parser.add_argument("path", type=Path, help="a pypto.fuzz reproducer (.py), a passes_dump/ or a build's output_dir")
    parser.add_argument("--planner", choices=("PYPTO", "DSA_RP", "PTOAS"), help="default: the reproducer's or the dumps'")
    parser.add_argument("--seed", type=int, default=0, help="of a dump's random inputs")
    args = parser.parse_args(argv)
    from pypto.fuzz.checks import quietly  # (a build's perf hints are not the bisect's output)

    try:
        with quietly():
            if args.path.is_dir():
                verdict = from_dumps(args.path, args.planner, args.seed)
            elif args.path.is_file():
                if args.path.stat().st_size > MAX_BYTES:
                    raise BisectError(f"{args.path}: {args.path.stat().st_size} bytes is not a reproducer")
                verdict = from_reproducer(args.path, args.planner)
            else:
                raise BisectError(f"{args.path}: no such file or directory")
    except (BisectError, PyptoError, OSError, ImportError) as exc:
        if isinstance(exc, PyptoError):
            text = exc.message.splitlines()[0] + (f" --> {exc.span}" if exc.span is not None else "")
        else:
            text = str(exc) if not isinstance(exc, OSError) else f"{args.path}: {exc.strerror or exc}"
        print(f"error: {text}", file=sys.stderr)
        return 2
    print(verdict.report())
    return 0


if __name__ == "__main__":
    sys.exit(main())
