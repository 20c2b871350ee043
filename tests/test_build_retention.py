"""Build outputs: a build with no output_dir goes to $PYPTO_PROG_BUILD_DIR (or ./build_output)
and the newest few of each kernel are kept there (never one still in use); a reused output_dir
holds the latest build's own report, not an earlier build's lines."""

import gc
import itertools

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.errors import ConfigError
from pypto.runtime import RunConfig
from pypto.runtime import compiled as compiled_module
from pypto.runtime.build_dirs import BUILD_MARK, DEFAULT_KEEP


@pl.jit
def exp_rows(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        pl.store(pl.exp(pl.load(a, [0, 0], [16, 128])), [0, 0], out)
    return out


@pl.jit
def narrow_rows(a: pl.Tensor, out: pl.Out[pl.Tensor]):  # 64 fp32 = 256 B rows: one PH001 hint per transfer
    with pl.at(level=pl.Level.CORE_GROUP):
        pl.store(pl.exp(pl.load(a, [0, 0], [16, 64])), [0, 0], out)
    return out


@pytest.fixture
def root(tmp_path, monkeypatch):
    """The default build directory, each build stamped a second after the one before."""
    monkeypatch.setenv("PYPTO_PROG_BUILD_DIR", str(tmp_path / "builds"))
    monkeypatch.delenv("PYPTO_KEEP_BUILDS", raising=False)
    seconds = itertools.count()
    monkeypatch.setattr(compiled_module, "_stamp", lambda: f"20260101_{next(seconds):06d}")
    return tmp_path / "builds"


def build(program, **config):
    """A fresh build (ir.compile builds every time), dropped at once as a user's would be."""
    ir.compile(program, **config)
    gc.collect()


def names(root, kernel="exp_rows") -> list[str]:
    return sorted(d.name for d in root.iterdir() if d.name.startswith(kernel))


def test_the_newest_five_builds_of_a_kernel_are_kept(root):
    program = exp_rows.specialize(torch.randn(16, 128), torch.zeros(16, 128))
    other = narrow_rows.specialize(torch.randn(16, 64), torch.zeros(16, 64))
    build(other)
    mine = root / "exp_rows_19990101_000000"  # named like a build, but not one: no compiled_meta.json
    mine.mkdir()
    for _ in range(DEFAULT_KEEP + 3):
        build(program)
    assert DEFAULT_KEEP == 5
    assert names(root) == ["exp_rows_19990101_000000"] + [f"exp_rows_20260101_{k:06d}" for k in range(4, 9)]
    assert names(root, "narrow_rows") == ["narrow_rows_20260101_000000"]  # another kernel's: not counted
    assert all((root / n / BUILD_MARK).is_file() for n in names(root)[1:])


def test_a_build_still_in_use_is_never_removed(root):
    program = exp_rows.specialize(torch.randn(16, 128), torch.zeros(16, 128))
    held = [ir.compile(program) for _ in range(7)]
    assert len(names(root)) == 7 and all(c.output_dir.is_dir() for c in held)
    first = held[0]
    del held
    gc.collect()
    build(program)  # the eighth: of the seven dropped, the oldest three go; `first` is still held
    assert names(root)[0] == first.output_dir.name and len(names(root)) == 6
    a, out = torch.randn(16, 128), torch.zeros(16, 128)
    first(a, out)  # and still runs from its directory
    assert torch.equal(out, torch.exp(a))


def test_keep_builds_and_the_environment_set_how_many(root, monkeypatch):
    program = exp_rows.specialize(torch.randn(16, 128), torch.zeros(16, 128))
    for _ in range(3):
        build(program)
    assert len(names(root)) == 3
    monkeypatch.setenv("PYPTO_KEEP_BUILDS", "0")  # 0: every one kept
    for _ in range(4):
        build(program)
    assert len(names(root)) == 7
    monkeypatch.setenv("PYPTO_KEEP_BUILDS", "2")
    build(program)
    assert names(root) == ["exp_rows_20260101_000006", "exp_rows_20260101_000007"]
    compiled = exp_rows.compile(torch.randn(16, 128), torch.zeros(16, 128), config=RunConfig(keep_builds=1))
    assert names(root) == [compiled.output_dir.name]  # the field wins over the environment


def test_a_bad_keep_count_is_refused_before_anything_is_written(root, monkeypatch):
    with pytest.raises(ConfigError, match="keep_builds=-1 is not a count") as info:
        RunConfig(keep_builds=-1)
    assert info.value.span.file == __file__
    with pytest.raises(ConfigError, match="keep_builds=True"):
        RunConfig(keep_builds=True)
    monkeypatch.setenv("PYPTO_KEEP_BUILDS", "five")
    with pytest.raises(ConfigError, match=r"\$PYPTO_KEEP_BUILDS='five' is not a count"):
        exp_rows.compile(torch.randn(16, 128), torch.zeros(16, 128))
    assert not root.exists()


def test_an_output_dir_of_the_users_is_never_pruned(root, tmp_path):
    program = exp_rows.specialize(torch.randn(16, 128), torch.zeros(16, 128))
    for k in range(DEFAULT_KEEP + 2):
        build(program, output_dir=root / f"exp_rows_20250101_{k:06d}")  # named like default builds
    assert len(names(root)) == DEFAULT_KEEP + 2


def test_a_reused_output_dir_holds_only_the_latest_builds_hints_and_profile(tmp_path):
    out = tmp_path / "o"
    narrow = (torch.randn(16, 64), torch.zeros(16, 64))
    log = out / "report" / "perf_hints.log"
    first = ir.compile(narrow_rows.specialize(*narrow), output_dir=out, profiling=True)
    hints = log.read_text().splitlines()
    assert len(hints) == len(first.perf_hints) == 2 and all("PH001" in h for h in hints)
    ir.compile(narrow_rows.specialize(*narrow), output_dir=out)
    assert log.read_text().splitlines() == hints  # the same two, not four
    assert not (out / "report" / "pipeline_profile.txt").exists()  # the first build's profile: gone
    (out / "kernels" / "notes.txt").write_text("the user's")
    ir.compile(exp_rows.specialize(torch.randn(16, 128), torch.zeros(16, 128)), output_dir=out)
    assert log.read_text() == ""  # a build without hints: an empty log, not the last one's
    assert sorted(p.name for p in (out / "kernels" / "aiv").iterdir()) == ["exp_rows_incore_0.pto"]
    assert (out / "kernels" / "notes.txt").read_text() == "the user's"
