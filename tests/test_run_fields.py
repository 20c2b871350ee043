"""The reference's RunConfig fields beyond the ones that steer compiling and simulating:
``pypto.runtime.run``'s (``codegen_only``, ``save_kernels_dir``, ``compile_profiling``),
``diagnostic_phase``, and the harness and device fields accepted with no effect here —
each checked where it is written."""

import json
import re

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.errors import ConfigError
from pypto.ir.pass_manager import DiagnosticPhase
from pypto.runtime import RunConfig, run


@pl.program
class Twice:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[16, 64], pl.FP32], out: pl.Out[pl.Tensor[[16, 64], pl.FP32]]):
        out = pl.store(pl.muls(pl.load(x, [0, 0], [16, 64]), 2.0), [0, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[16, 64], pl.FP32], out: pl.Out[pl.Tensor[[16, 64], pl.FP32]]):
        out = self.k(x, out)
        return out


def test_codegen_only_compiles_and_does_not_run(tmp_path):
    x, out = torch.randn(16, 64), torch.zeros(16, 64)
    compiled = run(Twice, x, out, config=RunConfig(platform="ref", codegen_only=True, output_dir=tmp_path))
    assert torch.equal(out, torch.zeros(16, 64)) and (tmp_path / "kernels").is_dir()
    compiled(x, out)
    assert torch.equal(out, x * 2)


def test_save_kernels_dir_is_where_the_build_goes(tmp_path):
    compiled = run(Twice, config=RunConfig(platform="ref", save_kernels=True, save_kernels_dir=tmp_path / "b"))
    assert compiled.output_dir == (tmp_path / "b").resolve() and (tmp_path / "b" / "kernels").is_dir()
    chosen = run(Twice, config=RunConfig(save_kernels_dir=tmp_path / "b", output_dir=tmp_path / "c"))
    assert chosen.output_dir == (tmp_path / "c").resolve()  # output_dir, ours, wins


@pytest.mark.parametrize("how", ["run", "ir.compile"])
def test_compile_profiling_writes_each_pass_time(tmp_path, how):
    if how == "run":
        compiled = run(Twice, config=RunConfig(platform="ref", compile_profiling=True, output_dir=tmp_path))
    else:
        compiled = ir.compile(Twice, output_dir=tmp_path, profiling=True, platform="ref")
    profile = json.loads((tmp_path / "report" / "pipeline_profile.json").read_text())
    assert [r["stage"] for r in profile["stages"]] == [name for name, _ in compiled.timings]
    assert profile["total_seconds"] == pytest.approx(sum(t for _, t in compiled.timings))
    text = (tmp_path / "report" / "pipeline_profile.txt").read_text().splitlines()
    assert text[0].split() == ["stage", "ms", "%"] and text[-1].split()[0] == "total"
    assert len(text) == len(profile["stages"]) + 2


def test_no_profile_unless_asked(tmp_path):
    run(Twice, config=RunConfig(platform="ref", output_dir=tmp_path))
    assert not (tmp_path / "report" / "pipeline_profile.json").exists()


def test_diagnostic_phase_none_gathers_no_hints(tmp_path):
    hinted = run(Twice, config=RunConfig(platform="ref", output_dir=tmp_path / "a"))
    quiet = run(Twice, config=RunConfig(platform="ref", output_dir=tmp_path / "b", diagnostic_phase=DiagnosticPhase.NONE))
    named = RunConfig(diagnostic_phase="post_pipeline")
    assert hinted.diagnostics and quiet.diagnostics == () and named.diagnostic_phase is DiagnosticPhase.POST_PIPELINE
    assert (tmp_path / "b" / "report" / "perf_hints.log").read_text() == ""


def test_fields_without_an_effect_here_are_accepted_and_kept():
    config = RunConfig(rtol=1e-3, atol=0, golden_data_dir="data", enable_dump_args=1, enable_pmu=2,
                       aicpu_thread_num=4, dump_ptoas_passes=True, analyze_auto_scopes_for_deps=True)
    assert (config.rtol, config.atol, config.enable_pmu, config.aicpu_thread_num) == (1e-3, 0.0, 2, 4)
    x, out = torch.randn(16, 64), torch.zeros(16, 64)
    run(Twice, x, out, config=config)
    assert torch.equal(out, x * 2)


@pytest.mark.parametrize("field, value, message", [
    ("rtol", -1.0, "rtol=-1.0 is not a tolerance"),
    ("atol", "tight", "atol='tight' is not a tolerance"),
    ("codegen_only", 1, "codegen_only=1 is not a bool"),
    ("compile_profiling", "yes", "compile_profiling='yes' is not a bool"),
    ("save_kernels_dir", 3, "save_kernels_dir=3 is not a path"),
    ("enable_pmu", -2, "enable_pmu=-2 is not a level"),
    ("aicpu_thread_num", 0, "aicpu_thread_num=0 is not a thread count"),
    ("diagnostic_phase", "sometimes", "diagnostic_phase='sometimes' is not a DiagnosticPhase"),
    ("distributed_config", {"ranks": 2}, "distributed_config={'ranks': 2} is not a DistributedConfig"),
])
def test_bad_values_are_refused_at_the_field(field, value, message):
    with pytest.raises(ConfigError, match=re.escape(message)) as info:
        RunConfig(**{field: value})
    assert info.value.span is not None and info.value.span.file == __file__
