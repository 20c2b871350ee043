"""Each build gets its own output directory: concurrent compiles of one kernel in the same
second (threads here; mkdir is as atomic between processes) never share one, and neither
do the L0 trace directories of concurrent launches."""

import threading

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.ir import PassDumpLevel
from pypto.runtime import RunConfig
from pypto.runtime import compiled as compiled_module

THREADS = 8


@pl.jit
def exp_rows(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        pl.store(pl.exp(pl.load(a, [0, 0], [16, 128])), [0, 0], out)
    return out


def in_threads(fn, n=THREADS) -> list:
    """``fn()`` from ``n`` threads released together; what each returned."""
    barrier, results, errors = threading.Barrier(n), [None] * n, []

    def work(k):
        barrier.wait()
        try:
            results[k] = fn()
        except Exception as exc:  # noqa: BLE001 (reported below, with the others)
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    return results


@pytest.fixture
def one_second(monkeypatch):
    """Every build stamped with the same second: the names collide, the directories must not."""
    monkeypatch.setattr(compiled_module, "_stamp", lambda: "20260101_000000")


def test_concurrent_compiles_each_get_their_own_directory(tmp_path, monkeypatch, one_second):
    monkeypatch.setenv("PYPTO_PROG_BUILD_DIR", str(tmp_path))
    a, out = torch.randn(16, 128), torch.zeros(16, 128)
    program = exp_rows.specialize(a, out)  # (ir.compile builds each time; kernel.compile once per key)
    builds = in_threads(lambda: ir.compile(program, dump_passes=PassDumpLevel.EXPLICIT))
    dirs = [b.output_dir for b in builds]
    assert len(set(dirs)) == THREADS
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["exp_rows_20260101_000000"] + [f"exp_rows_20260101_000000_{k}" for k in range(1, THREADS)])
    dumps = {d: sorted(p.name for p in (d / "passes_dump").iterdir()) for d in dirs}
    assert len({tuple(v) for v in dumps.values()}) == 1  # every build wrote its whole set, once
    for d in dirs:
        assert (d / "report" / "perf_hints.log").read_text() == ""  # one build's log, not eight appended


def test_a_directory_left_by_an_earlier_build_is_not_reused(tmp_path, monkeypatch, one_second):
    monkeypatch.setenv("PYPTO_PROG_BUILD_DIR", str(tmp_path))
    (tmp_path / "exp_rows_20260101_000000").mkdir()
    (tmp_path / "exp_rows_20260101_000000_1").write_text("a file, not a directory")
    a, out = torch.randn(16, 128), torch.zeros(16, 128)
    built = exp_rows.compile(a, out)
    assert built.output_dir == (tmp_path / "exp_rows_20260101_000000_2").resolve()


def test_concurrent_launches_write_their_own_l0_traces(tmp_path, one_second):
    a = torch.randn(16, 128)
    built = exp_rows.compile(a, torch.zeros(16, 128), config=RunConfig(enable_l0_trace=True, output_dir=tmp_path))
    reports = in_threads(lambda: built.run(a, torch.zeros(16, 128)), n=4)
    traces = [r.trace_dir for r in reports]
    assert len(set(traces)) == 4
    assert all((t / "simulator" / "visualize_data.bin").is_file() for t in traces)


def test_an_output_dir_that_cannot_be_made_is_a_config_error(tmp_path):
    from pypto.errors import ConfigError

    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(ConfigError, match="cannot create the output directory") as info:
        exp_rows.compile(torch.randn(16, 128), torch.zeros(16, 128),
                         config=RunConfig(output_dir=blocker / "build"))  # MARK-blocked
    assert info.value.span.file == __file__
