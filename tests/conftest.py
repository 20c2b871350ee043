import os
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

sys.path.insert(0, str(Path(__file__).resolve().parent))

# `ci` keeps the suite inside its time budget on 2 cores (derandomized: the same draws each
# run, so a red run reproduces); `fuzz` is for campaigns:
#   HYPOTHESIS_PROFILE=fuzz python -m pytest tests -k property
# No test pins max_examples: one that must cost less than the rest takes a share of the
# active profile's budget (`settings().max_examples // k`), so `fuzz` scales it too. Strong
# draws come from the strategies (every family, dtype and special value drawn), not from
# more examples.
settings.register_profile("ci", max_examples=40, deadline=None, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile("dev", max_examples=100, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile("fuzz", max_examples=5000, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def pytest_addoption(parser):
    parser.addoption("--update-golden", action="store_true",
                     help="rewrite tests/golden/<case>/ from this run (test_golden.py)")


# The variables the package reads (pypto.log at import, pypto.runtime per build and run;
# test_environment.py keeps the list whole). A user's own (PYPTO_LOG_LEVEL=warn silences the
# notes tests read, PYPTO_KEEP_BUILDS prunes builds tests hold, PTO2_RING_* resize the rings)
# must change no test: they are dropped here, before pypto is imported or any test runs a
# subprocess, and a test that depends on one sets it.
PACKAGE_ENV = ("PYPTO_PROG_BUILD_DIR", "PYPTO_KEEP_BUILDS", "PYPTO_LOG_LEVEL",
               "PTO2_RING_TASK_WINDOW", "PTO2_RING_HEAP", "PTO2_RING_DEP_POOL",
               "PYPTO_REPORT", "PYPTO_BENCH", "PYPTO_BENCH_ROUNDS", "PYPTO_BENCH_WARMUP", "PYPTO_BENCH_RAW",
               "PYPTO_TRACEBACK")
ENV_PREFIXES = ("PYPTO_", "PTO2_")
for _name in [name for name in os.environ if name.startswith(ENV_PREFIXES)]:
    del os.environ[_name]


@pytest.fixture(autouse=True)
def _environment(tmp_path_factory, monkeypatch):
    """Each test starts from the package's defaults: no PYPTO_*/PTO2_* variable but the build
    directory, which is kept out of the tree (compile() without an output_dir writes there),
    and the log at INFO (a test that set another level is not seen by the next)."""
    from pypto.log import LogLevel, logger

    for name in [name for name in os.environ if name.startswith(ENV_PREFIXES)]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("PYPTO_PROG_BUILD_DIR", str(tmp_path_factory.getbasetemp() / "builds"))
    logger.setLevel(LogLevel.INFO)


@pytest.fixture(scope="session")
def seed(tmp_path_factory):
    """The seed document's kernels, from the document's own code (run once, on the
    simulated core, which checks each against torch as it defines it)."""
    import runpy

    from seed import runnable_program

    path = tmp_path_factory.mktemp("seed") / "seed_kernels.py"
    path.write_text(runnable_program("a2a3sim"))
    argv, sys.argv = sys.argv, [str(path)]
    try:
        return runpy.run_path(str(path), run_name="seed_kernels")
    finally:
        sys.argv = argv
