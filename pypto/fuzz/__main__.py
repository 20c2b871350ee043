"""``python -m pypto.fuzz`` (also ``pypto fuzz``): a fuzz campaign from the command line.

    python -m pypto.fuzz --examples 10000 --jobs 2
    python -m pypto.fuzz --time 10m --properties simulator,passes --database redis://127.0.0.1:6379
    python -m pypto.fuzz --list

Exit 0 when every property held, 1 when one failed (its reproducers written), 2 when the
campaign could not start, stopped early (a worker died, the database went away) or could not
write its reproducers, 130 when interrupted — what the finished units found is written and
summed up first in every case.
"""

from __future__ import annotations

import argparse
import os
import re
import secrets
import shutil
import sys
import time
from pathlib import Path
from pypto.console import description

# the campaign's examples are the user's, kept across runs and directories: in their cache,
# not in whatever directory a campaign was started from
DEFAULT_DATABASE = str(Path.home() / ".cache" / "pypto" / "fuzz-examples")


def _duration(text: str) -> float:
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smh]?)\s*", text)
    if not m:
        raise argparse.ArgumentTypeError(f"{text!r} is not a duration (30s, 10m, 1.5h, or seconds)")
    return float(m.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600}[m.group(2)]


def _names(text: str) -> tuple:
    return tuple(dict.fromkeys(x.strip() for x in text.split(",") if x.strip()))  # each once, in order


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m pypto.fuzz", description=description(__doc__),
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="Properties: python -m pypto.fuzz --list")
    budget = p.add_argument_group("budget (either or both; default --examples 1000)")
    budget.add_argument("--examples", type=int, metavar="N", help="new examples in all, shared among the properties")
    budget.add_argument("--time", type=_duration, metavar="T", help="stop submitting work after T (30s, 10m, 1h)")
    p.add_argument("--properties", type=_names, metavar="A,B", help="which properties (default: all)")
    p.add_argument("--seed", type=int, help="of the draws (default: a fresh one, printed in the summary)")
    p.add_argument("--jobs", type=int, default=1, metavar="N", help="worker processes (default 1)")
    p.add_argument("--database", default=DEFAULT_DATABASE, metavar="DIR|redis://HOST:PORT|none",
                   help=f"where failing examples are saved and replayed first (default {DEFAULT_DATABASE}); "
                        "campaigns sharing one share their finds")
    p.add_argument("--replay-only", action="store_true", help="replay the database's examples, draw nothing new")
    p.add_argument("--out", type=Path, default=Path("fuzz_failures"), metavar="DIR",
                   help="where reproducers go (default fuzz_failures/)")
    knobs = p.add_argument_group("what to draw")
    knobs.add_argument("--families", type=_names, metavar="A,B",
                       help="program families (default: all); properties drawing none of them are left out")
    knobs.add_argument("--dtypes", type=_names, metavar="A,B", help="the elementwise family's dtypes (FP32,INT8,...)")
    knobs.add_argument("--max-steps", type=int, metavar="N", help="ops in a chain (default 6)")
    knobs.add_argument("--max-trips", type=int, metavar="N", help="iterations of a loop (default 5)")
    knobs.add_argument("--platform", choices=("a2a3sim", "a5sim"), default="a2a3sim",
                       help="the simulator the properties hold ref against (default a2a3sim)")
    p.add_argument("--list", action="store_true", help="list the properties, families and dtypes, and exit")
    p.add_argument("--quiet", action="store_true", help="no progress line")
    p.add_argument("--mutant", help=argparse.SUPPRESS)  # testing the campaign itself: a known bug planted
    return p


# hypothesis keeps caches of its own (the constants it mines from source) under ./.hypothesis
# of whatever directory a campaign runs in; they go beside the example database instead
HYPOTHESIS_HOME = str(Path.home() / ".cache" / "pypto" / "hypothesis")


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    os.environ.setdefault("HYPOTHESIS_STORAGE_DIRECTORY", HYPOTHESIS_HOME)  # the workers inherit it
    try:
        from pypto.fuzz.campaign import CampaignError, Plan, run
        from pypto.fuzz.mutants import MUTANTS
        from pypto.fuzz.properties import FAMILIES, PROPERTIES, Knobs
    except ImportError as exc:  # hypothesis, or redis: the extra to install
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.list:
        width = max(map(len, PROPERTIES))
        for name, prop in PROPERTIES.items():
            print(f"{name:<{width}}  {prop.summary}")
        print(f"\nfamilies: {', '.join(FAMILIES)}\ndtypes: {', '.join(d.name for d in Knobs().dtypes)}")
        return 0
    try:
        knobs, properties = _knobs(args, Knobs(), FAMILIES, PROPERTIES)
        if args.jobs < 1:
            raise CampaignError("--jobs must be at least 1")
        if args.examples is not None and args.examples < 1:
            raise CampaignError("--examples must be at least 1")
        if args.mutant is not None and args.mutant not in MUTANTS:
            raise CampaignError(f"no mutant {args.mutant!r}; there are {', '.join(MUTANTS)}")
        examples = args.examples if args.examples is not None or args.time is not None else 1000
        plan = Plan(properties=properties, knobs=knobs, examples=examples, seconds=args.time,
                    seed=args.seed if args.seed is not None else secrets.randbelow(2**31), jobs=args.jobs,
                    database=None if args.database.lower() == "none" else args.database, out=args.out,
                    replay_only=args.replay_only, mutant=args.mutant)
        line = Progress(sys.stderr, enabled=not args.quiet)
        result = run(plan, progress=line.update)
        line.done()
    except CampaignError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(summary(plan, result))
    for reason in (result.stopped, result.unwritten):
        if reason:
            print(f"error: {reason}", file=sys.stderr)
    if result.stopped or result.unwritten:
        return 2
    return 130 if result.interrupted else 1 if result.failures else 0


def _knobs(args, knobs, families: dict, properties: dict):
    """The knobs the options ask for, and the properties to run: those named, else all —
    leaving out, under --families, those that draw none of them."""
    import attrs

    from pypto.fuzz.campaign import CampaignError
    from pypto.ir.types import DataType

    knobs = attrs.evolve(knobs, platform=args.platform)
    chosen = args.properties or tuple(properties)
    for name in chosen:
        if name not in properties:
            raise CampaignError(f"no property {name!r}; there are {', '.join(properties)}")
    if args.families:
        bad = [f for f in args.families if f not in families]
        if bad:
            raise CampaignError(f"no family {bad[0]!r}; there are {', '.join(families)}")
        knobs = attrs.evolve(knobs, families=args.families)
        drawing = tuple(p for p in chosen if set(properties[p].families) & set(args.families))
        if args.properties and drawing != chosen:
            other = next(p for p in chosen if p not in drawing)
            own = ", ".join(properties[other].families) or "programs of its own"
            raise CampaignError(f"--families {','.join(args.families)}: property {other!r} draws none of them "
                                f"(it draws {own})")
        if not drawing:
            raise CampaignError(f"--families {','.join(args.families)}: no property draws them")
        chosen = drawing
    if args.dtypes:
        names = {d.name: d for d in DataType}
        bad = [d for d in args.dtypes if d.upper() not in names or names[d.upper()] not in knobs.dtypes]
        if bad:
            raise CampaignError(f"--dtypes {bad[0]}: one of {', '.join(d.name for d in knobs.dtypes)}")
        knobs = attrs.evolve(knobs, dtypes=tuple(names[d.upper()] for d in args.dtypes))
    for name in ("max_steps", "max_trips"):
        value = getattr(args, name)
        if value is not None:
            if value < 1:
                raise CampaignError(f"--{name.replace('_', '-')} must be at least 1")
            knobs = attrs.evolve(knobs, **{name: value})
    return knobs, chosen


class Progress:
    """One line on stderr: rewritten in place on a terminal (cut to its width), else every 10 s."""

    def __init__(self, stream, enabled: bool = True):
        self.stream, self.enabled = stream, enabled
        self.tty = enabled and hasattr(stream, "isatty") and stream.isatty()
        self.last = 0.0
        self.text = ""

    def update(self, result) -> None:
        if not self.enabled:
            return
        m, s = divmod(int(result.seconds), 60)
        counts = " ".join(f"{k} {v}" for k, v in result.examples.items())
        self.text = (f"[fuzz {m:02d}:{s:02d}] {result.total:,} examples ({result.rate():.1f}/s), "
                     f"{len(result.failures)} failing · {counts}")
        now = time.monotonic()
        if self.tty:
            try:
                width = os.get_terminal_size(self.stream.fileno()).columns - 1  # (stderr's, not stdout's)
            except (OSError, ValueError, AttributeError):
                width = shutil.get_terminal_size().columns - 1
            self.stream.write("\r\x1b[K" + self.text[:width])
            self.stream.flush()
        elif now - self.last >= 10:
            self.stream.write(self.text + "\n")
            self.stream.flush()
            self.last = now

    def done(self) -> None:
        if self.tty and self.text:
            self.stream.write("\n")
            self.stream.flush()


def summary(plan, result) -> str:
    m, s = divmod(int(result.seconds), 60)
    runs = sum(result.runs.values())
    asked = f" of {plan.examples:,}" if plan.examples is not None and result.total != plan.examples else ""
    lines = [f"pypto.fuzz: {result.total:,}{asked} examples in {m}:{s:02d} ({result.rate():.1f} examples/s; "
             f"{runs:,} checks with replays and shrinking), {plan.jobs} job{'s' if plan.jobs != 1 else ''}, "
             f"--seed {plan.seed}" + (" — interrupted" if result.interrupted else "")
             + (" — stopped early" if result.stopped else "")]
    failing = {}
    for sig, f in result.failures.items():
        failing.setdefault(f.prop, []).append(sig)
    width = max(map(len, result.examples))
    for prop, count in result.examples.items():
        state = f"{len(failing[prop])} failing" if prop in failing else "held" if result.runs[prop] else "not run"
        lines.append(f"  {prop:<{width}}  {count:>7,}  {state}")
    if result.failures:
        lines.append(f"\nfailures ({len(result.failures)} signature{'s' if len(result.failures) != 1 else ''}):")
        for sig, f in result.failures.items():
            lines.append(f"  {sig}")
            if sig in result.reproducers:
                lines.append(f"    reproducer: {result.reproducers[sig]}")
            if f.bisect:
                lines.append("    bisect: " + f.bisect.splitlines()[0])
                lines += [f"      {line}" for line in f.bisect.splitlines()[1:2]]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
