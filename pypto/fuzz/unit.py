"""One unit of a campaign's work: up to N examples of one property drawn and checked by
hypothesis in this process, failures shrunk and replayed, each grouped by its signature
(``Found``); and where the examples are kept between campaigns (``database``)."""

from __future__ import annotations

import hashlib
import re
import unittest
from pathlib import Path

import attrs

from pypto.fuzz.example import Example, Knobs


class CampaignError(ValueError):
    """A campaign that cannot start or finish (a bad option, a database it cannot reach, a
    directory it cannot write): one line."""


@attrs.frozen
class Unit:
    prop: str
    examples: int
    seed: int
    reuse: bool = True  # replay the database's saved examples first (a property's first unit of a campaign)


@attrs.frozen
class Found:
    prop: str
    signature: str
    message: str
    example: Example
    size: int  # of its source: the smallest of a signature is the one kept
    bisect: str = ""  # the step of the compiler that breaks it (``pypto.debug.bisect``), where it has a program

    @classmethod
    def of(cls, prop: str, exc: BaseException, example: Example) -> Found:
        text = example.source or (example.case.program.as_python() if example.case is not None else "")
        return cls(prop, signature(prop, exc), f"{type(exc).__name__}: {exc}", example, len(text))


@attrs.frozen
class UnitResult:
    prop: str
    examples: int  # drawn afresh (hypothesis's generate phase)
    runs: int  # every check, replays and shrinking included
    found: tuple


_PACKAGE = Path(__file__).resolve().parent.parent  # pypto/
_KEPT = re.compile(r"\b(a2a3sim|a2a3|b?float(?:16|32|64)|u?int(?:8|16|32|64))\b")


def signature(prop: str, exc: BaseException) -> str:
    """What failures are grouped by: the property, the exception's class and its message's
    first line with paths, numbers and quoted names blurred (one bug drawn at two sizes, in
    two temporary directories, is one), and for an exception of the compiler's own (not a
    property's finding, not a pypto error) the function it escaped from (two internal
    KeyErrors in two places are two)."""
    first = (getattr(exc, "message", None) or str(exc) or "").strip().splitlines()
    line = first[0] if first else ""
    line = re.sub(r"(?<![\w.])\.{0,2}/[^\s:'\"]+", "<path>", line)  # (not 3/4, not FP32/FP16)
    line = re.sub(r"'[^']*'", "'_'", line)
    # when two unordered tasks ran (together, or the wrong way round) is the schedule's, not the bug's
    line = re.sub(r" \(block \d+\)|: they ran (at the same time|out of program order).*", "", line)
    # numbers, and the numbers in generated names (aiv0, r0t1, y0), but not in a dtype's, a pipe's
    # or the platform's name (FP32, int64, MTE2, a2a3sim)
    parts = _KEPT.split(line)
    line = "".join(p if k % 2 else re.sub(r"(?<![A-Z0-9])-?\d+(\.\d+)?(e-?\d+)?", "N", p)
                   for k, p in enumerate(parts))
    where = _escaped_from(exc)
    return f"{prop}: {type(exc).__name__}: {line}"[:300] + (f" @ {where}" if where else "")


def _escaped_from(exc: BaseException) -> str:
    """module:function of the innermost frame of the compiler (not of pypto.fuzz) an
    internal exception — or the one a finding wraps — was raised in; '' for the rest."""
    from pypto.errors import PyptoError
    from pypto.fuzz.checks import Failure

    root = exc.__cause__ if isinstance(exc, Failure) and exc.__cause__ is not None else exc
    if isinstance(root, (Failure, PyptoError)) and not isinstance(root, _internal()):
        return ""
    where, tb = "", root.__traceback__
    while tb is not None:
        path = Path(tb.tb_frame.f_code.co_filename)
        if path.is_relative_to(_PACKAGE) and not path.is_relative_to(_PACKAGE / "fuzz"):
            where = f"{'.'.join(path.relative_to(_PACKAGE).with_suffix('').parts)}:{tb.tb_frame.f_code.co_name}"
        tb = tb.tb_next
    return where


def _internal():
    from pypto.errors import InternalError

    return InternalError


# ----------------------------------------------------------------------------- databases


def database(spec: str | None):
    """The hypothesis example database a spec names: None; a directory (made if missing);
    or redis://HOST:PORT[/DB] (rediss:// over TLS), reached now."""
    if spec is None:
        return None
    scheme = re.match(r"([A-Za-z][A-Za-z0-9+.-]*)://", spec)
    if scheme:
        if scheme.group(1).lower() not in ("redis", "rediss"):
            raise CampaignError(f"--database {spec}: a directory, or redis://HOST:PORT (rediss:// for TLS)")
        return _redis(spec)
    path = Path(spec)
    if path.exists() and not path.is_dir():
        raise CampaignError(f"--database {spec}: not a directory")
    from hypothesis.database import DirectoryBasedExampleDatabase

    return DirectoryBasedExampleDatabase(path)


def _redis(spec: str):
    try:
        import redis
        from hypothesis.extra.redis import RedisExampleDatabase
    except ImportError:
        raise CampaignError(f"--database {spec} needs the redis package: pip install 'redis>=5' (in a clone of "
                            "this repository: pip install -e '.[fuzz]')") from None
    db = re.match(r"[^:]+://[^/]*(?:/(.*))?$", spec).group(1)
    if db not in (None, "") and not db.isdigit():
        raise CampaignError(f"--database {spec}: the database after the port is a number (redis://HOST:PORT/0)")
    try:
        client = redis.Redis.from_url(spec, socket_connect_timeout=5)
        client.ping()
    except (ValueError, redis.exceptions.RedisError) as exc:
        raise CampaignError(f"--database {spec}: cannot reach it ({exc})") from None
    return RedisExampleDatabase(client)


def database_key(prop: str, knobs: Knobs) -> bytes:
    """Where a property's examples are saved: the same on every machine that runs the same
    property with the same knobs (hypothesis would key on the test function's source)."""
    return f"pypto.fuzz/{prop}/{hashlib.sha256(repr(knobs).encode()).hexdigest()[:12]}".encode()


# ----------------------------------------------------------------------------- running one


def run_unit(unit: Unit, knobs: Knobs, db_spec: str | None, replay_only: bool) -> UnitResult:
    """Up to ``unit.examples`` new examples of one property (after the database's saved
    ones, when ``unit.reuse``), failures shrunk; how many ran and each failure's minimal
    example, bisected."""
    from hypothesis import HealthCheck, Phase, Verbosity, given, settings
    from hypothesis.control import current_build_context
    from hypothesis.statistics import collector

    from pypto.fuzz.properties import PROPERTIES

    prop = PROPERTIES[unit.prop]
    found: dict[str, Found] = {}
    runs = 0
    # Replaying first only in a property's first unit: a saved failure replayed in every unit
    # would stop each from drawing anything new (hypothesis generates nothing once one fails).
    phases = (Phase.reuse,) if replay_only else ((Phase.reuse,) if unit.reuse else ()) + (
        Phase.generate, Phase.target, Phase.shrink)

    @settings(max_examples=max(unit.examples, 1), database=database(db_spec), deadline=None, phases=phases,
              verbosity=Verbosity.quiet, suppress_health_check=list(HealthCheck), report_multiple_bugs=True,
              print_blob=False)
    @given(prop.examples(knobs))
    def test(example):
        nonlocal runs
        runs += 1
        example = attrs.evolve(example, platform=knobs.platform)
        try:
            prop.check(example)
        except Exception as exc:
            if current_build_context().is_final:  # the shrunk example, replayed to report it
                f = Found.of(unit.prop, exc, example)
                if f.signature not in found or f.size < found[f.signature].size:
                    found[f.signature] = f
            raise

    # hypothesis's own @seed would turn the database off: the seed and the key are set as it keeps them
    test._hypothesis_internal_use_seed = unit.seed
    test._hypothesis_internal_database_key = database_key(unit.prop, knobs)
    stats: list[dict] = []
    try:
        with collector.with_value(stats.append):
            test()
    except unittest.SkipTest:  # replaying only, and the database holds nothing for this property
        pass
    except Exception as exc:
        if not found:  # a failure hypothesis could not replay (flaky) or an error of its own
            found["?"] = Found(unit.prop, signature(unit.prop, exc), f"{type(exc).__name__}: {exc}", Example(), 0)
    drawn = sum(tc.get("status") in ("valid", "interesting")  # (not draws the strategy rejected)
                for s in stats for tc in s.get("generate-phase", {}).get("test-cases", ()))
    # bisected here, where the failure happened (a planted bug lives in this process only)
    return UnitResult(unit.prop, drawn, runs, tuple(attrs.evolve(f, bisect=_bisect(f.example))
                                                     for f in found.values()))


def _bisect(example: Example) -> str:
    if example.case is None or example.source is not None:  # (a planted mistake's program is its source)
        return ""
    from pypto.fuzz.checks import bisect_example

    try:
        return bisect_example(example).report()
    except Exception as exc:  # the bisect is a diagnosis: its own failure must not hide the finding
        return f"the bisect failed: {type(exc).__name__}: {exc}"
