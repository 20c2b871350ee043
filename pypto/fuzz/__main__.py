"""``python -m pypto.fuzz`` (also ``pypto fuzz``): a fuzz campaign from the command line.

    python -m pypto.fuzz --examples 10000 --jobs 2
    python -m pypto.fuzz --time 10m --properties simulator,passes --database redis://127.0.0.1:6379
    python -m pypto.fuzz --list

Exit 0 when every property held, 1 when one failed (its reproducers written), 2 when the
campaign could not start.
"""

from __future__ import annotations

import argparse
import contextlib
import re
import sys
import time
from pathlib import Path

DEFAULT_DATABASE = ".hypothesis/examples"  # where hypothesis keeps a project's examples


def _duration(text: str) -> float:
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smh]?)\s*", text)
    if not m:
        raise argparse.ArgumentTypeError(f"{text!r} is not a duration (30s, 10m, 1.5h, or seconds)")
    return float(m.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600}[m.group(2)]


def _names(text: str) -> tuple:
    return tuple(x.strip() for x in text.split(",") if x.strip())


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m pypto.fuzz", description=__doc__.splitlines()[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="Properties: python -m pypto.fuzz --list")
    budget = p.add_argument_group("budget (either or both; default --examples 1000)")
    budget.add_argument("--examples", type=int, metavar="N", help="examples in all, shared among the properties")
    budget.add_argument("--time", type=_duration, metavar="T", help="stop submitting work after T (30s, 10m, 1h)")
    p.add_argument("--properties", type=_names, metavar="A,B", help="which properties (default: all)")
    p.add_argument("--seed", type=int, default=0, help="of the draws (default 0)")
    p.add_argument("--jobs", type=int, default=1, metavar="N", help="worker processes (default 1)")
    p.add_argument("--database", default=DEFAULT_DATABASE, metavar="DIR|redis://HOST:PORT|none",
                   help=f"where failing examples are saved and replayed first (default {DEFAULT_DATABASE}); "
                        "campaigns sharing one share their finds")
    p.add_argument("--replay-only", action="store_true", help="replay the database's examples, draw nothing new")
    p.add_argument("--out", type=Path, default=Path("fuzz_failures"), metavar="DIR",
                   help="where reproducers go (default fuzz_failures/)")
    knobs = p.add_argument_group("what to draw")
    knobs.add_argument("--families", type=_names, metavar="A,B", help="program families (default: all)")
    knobs.add_argument("--dtypes", type=_names, metavar="A,B", help="the elementwise family's dtypes (FP32,INT8,...)")
    knobs.add_argument("--max-steps", type=int, metavar="N", help="ops in a chain (default 6)")
    knobs.add_argument("--max-trips", type=int, metavar="N", help="iterations of a loop (default 5)")
    p.add_argument("--list", action="store_true", help="list the properties, families and dtypes, and exit")
    p.add_argument("--quiet", action="store_true", help="no progress line")
    p.add_argument("--mutant", help=argparse.SUPPRESS)  # testing the campaign itself: a known bug planted
    return p


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    from pypto.fuzz.campaign import CampaignError, Plan, run
    from pypto.fuzz.mutants import MUTANTS
    from pypto.fuzz.properties import FAMILIES, PROPERTIES, Knobs
    from pypto.ir.types import DataType

    if args.list:
        width = max(map(len, PROPERTIES))
        for name, prop in PROPERTIES.items():
            print(f"{name:<{width}}  {prop.summary}")
        print(f"\nfamilies: {', '.join(FAMILIES)}\ndtypes: {', '.join(d.name for d in Knobs().dtypes)}")
        return 0
    try:
        knobs = Knobs()
        if args.families:
            bad = [f for f in args.families if f not in FAMILIES]
            if bad:
                raise CampaignError(f"no family {bad[0]!r}; there are {', '.join(FAMILIES)}")
            knobs = _evolve(knobs, families=args.families)
        if args.dtypes:
            names = {d.name: d for d in DataType}
            bad = [d for d in args.dtypes if d.upper() not in names or names[d.upper()] not in Knobs().dtypes]
            if bad:
                raise CampaignError(f"--dtypes {bad[0]}: one of {', '.join(d.name for d in Knobs().dtypes)}")
            knobs = _evolve(knobs, dtypes=tuple(names[d.upper()] for d in args.dtypes))
        for name in ("max_steps", "max_trips"):
            value = getattr(args, name)
            if value is not None:
                if value < 1:
                    raise CampaignError(f"--{name.replace('_', '-')} must be at least 1")
                knobs = _evolve(knobs, **{name: value})
        if args.jobs < 1:
            raise CampaignError("--jobs must be at least 1")
        if args.examples is not None and args.examples < 1:
            raise CampaignError("--examples must be at least 1")
        if args.mutant is not None and args.mutant not in MUTANTS:
            raise CampaignError(f"no mutant {args.mutant!r}; there are {', '.join(MUTANTS)}")
        examples = args.examples if args.examples is not None or args.time is not None else 1000
        plan = Plan(properties=args.properties or tuple(PROPERTIES), knobs=knobs, examples=examples,
                    seconds=args.time, seed=args.seed, jobs=args.jobs,
                    database=None if args.database.lower() == "none" else args.database, out=args.out,
                    replay_only=args.replay_only, mutant=args.mutant)
        line = Progress(sys.stderr, enabled=not args.quiet)
        with _quiet_logs():
            result = run(plan, progress=line.update)
        line.done()
    except CampaignError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("\ninterrupted", file=sys.stderr)
        return 130
    print(summary(plan, result))
    return 1 if result.failures else 0


def _evolve(knobs, **changes):
    import attrs

    return attrs.evolve(knobs, **changes)


@contextlib.contextmanager
def _quiet_logs():
    """A campaign compiles thousands of kernels: their perf-hint lines are not its output."""
    from pypto.log import LogLevel, get_log_level, set_log_level

    level = get_log_level()
    set_log_level(max(level, LogLevel.WARN))
    try:
        yield
    finally:
        set_log_level(level)


class Progress:
    """One line on stderr: rewritten in place on a terminal, else every 10 s."""

    def __init__(self, stream, enabled: bool = True):
        self.stream, self.enabled = stream, enabled
        self.tty = enabled and hasattr(stream, "isatty") and stream.isatty()
        self.last = 0.0
        self.text = ""

    def update(self, result) -> None:
        if not self.enabled:
            return
        m, s = divmod(int(result.seconds), 60)
        counts = " · ".join(f"{k} {v}" for k, v in result.ran.items())
        self.text = (f"[fuzz {m:02d}:{s:02d}] {result.total:,} examples ({result.rate():.1f}/s) · {counts} · "
                     f"{len(result.failures)} failing")
        now = time.monotonic()
        if self.tty:
            self.stream.write("\r\x1b[K" + self.text)
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
    lines = [f"pypto.fuzz: {result.total:,} examples in {m}:{s:02d} ({result.rate():.1f} examples/s, "
             f"{plan.jobs} job{'s' if plan.jobs != 1 else ''}, seed {plan.seed})"]
    failing = {}
    for sig, f in result.failures.items():
        failing.setdefault(f.prop, []).append(sig)
    width = max(map(len, result.ran))
    for prop, count in result.ran.items():
        state = f"{len(failing[prop])} failing" if prop in failing else "held"
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
