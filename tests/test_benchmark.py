"""``pypto.runtime.benchmark``: ``warmup + rounds`` launches of a compiled program on the
simulated chip, each timed as the device takes it (its simulated cycles at the SoC table's
clock), the host's copies around it modeled from the table (a ``DeviceTensor`` pays none)."""

import math

import pytest
import torch

import pypto.language as pl
from pypto.backend import A2A3
from pypto.runtime import BenchmarkStats, ChipWorker, RunConfig, benchmark

SIM = RunConfig(platform="a2a3sim")


@pl.jit
def add(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        c = pl.assemble(c, pl.add(a, b), [0, 0])
    return c


@pl.jit
def accumulate(a: pl.Tensor, acc: pl.InOut[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        acc = pl.assemble(acc, pl.add(acc, a), [0, 0])
    return acc


def _copy_us(nbytes: int) -> float:
    chip = A2A3.chip
    return (chip.host_copy + math.ceil(nbytes / chip.host_link_bytes_per_cycle)) * 1e6 / chip.core_hz


def test_a_round_is_the_simulated_time_and_the_host_adds_its_copies():
    a, b, c = torch.randn(128, 256), torch.randn(128, 256), torch.zeros(128, 256)
    compiled = add.compile(a, b, c, config=SIM)
    stats = benchmark(compiled, (a, b, c), rounds=5, warmup=2)
    assert isinstance(stats, BenchmarkStats) and (stats.rounds, stats.warmup, stats.invocations) == (5, 2, 7)
    cycles = compiled.run(a, b, c).cycles
    assert stats.samples == stats.device_wall_us == [cycles * 1e6 / A2A3.chip.core_hz] * 5
    nbytes = 128 * 256 * 4
    assert stats.h2d_us == pytest.approx(_copy_us(2 * nbytes)) and stats.d2h_us == pytest.approx(_copy_us(nbytes))
    assert stats.per_round("host") == pytest.approx([stats.h2d_us + d + stats.d2h_us for d in stats.device_wall_us])
    assert stats.device_us_min == stats.device_us_median == stats.device_us_max and stats.device_us_stdev == 0
    assert not stats.all_zero_device
    assert "5 rounds (+2 warm-up)" in str(stats)


def test_every_launch_runs_and_device_tensors_pay_no_copy():
    a, acc = torch.ones(16, 128), torch.zeros(16, 128)
    compiled = accumulate.compile(a, acc, config=SIM)
    stats = benchmark(compiled, (a, acc), rounds=4, warmup=1)
    assert torch.equal(acc, torch.full((16, 128), 5.0))  # in place, as the device's launches would
    with ChipWorker(config=SIM) as worker:
        on_device = worker.alloc_tensor((16, 128), torch.float32, init=a)
        resident = benchmark(compiled, (on_device, acc), rounds=1, warmup=0)
    assert resident.h2d_us == pytest.approx(_copy_us(16 * 128 * 4))  # acc only: a lives on the device
    assert resident.h2d_us < stats.h2d_us
    assert resident.device_wall_us == stats.device_wall_us[:1]


def test_a_return_style_call_and_the_interpreter_s_zero_time():
    a, b = torch.randn(16, 128), torch.randn(16, 128)
    compiled = add.compile(a, b, torch.zeros(16, 128), config=RunConfig(platform="ref"))
    stats = benchmark(compiled, (a, b), rounds=2, warmup=0)
    assert stats.all_zero_device and stats.d2h_us > 0


@pytest.mark.parametrize("kwargs, match", [({"rounds": 0}, "rounds must be a positive int"),
                                           ({"warmup": -1}, "warmup must be an int >= 0"),
                                           ({"config": SIM, "platform": "ref"}, "either config= or platform=")])
def test_bad_benchmark_arguments_say_what_to_pass(kwargs, match):
    a, b, c = torch.randn(16, 128), torch.randn(16, 128), torch.zeros(16, 128)
    with pytest.raises(ValueError, match=match):
        benchmark(add.compile(a, b, c, config=SIM), (a, b, c), **kwargs)


def test_per_round_names_its_metrics():
    stats = BenchmarkStats([1.0], [2.0], 1, 0, 0.5, 0.5)
    assert stats.per_round() == [1.0] and stats.per_round("host") == [2.0]
    with pytest.raises(ValueError, match="'device' or 'host'"):
        stats.per_round("effective")


def test_a_build_directory_is_compiled_again_by_from_dir(tmp_path):
    from pypto.runtime import CompiledProgram

    a, b, c = torch.randn(16, 128), torch.randn(16, 128), torch.zeros(16, 128)
    add.compile(a, b, c, config=RunConfig(platform="a2a3sim", output_dir=tmp_path / "build"))
    again = CompiledProgram.from_dir(tmp_path / "build")
    assert (again.param_names, again.platform, again.output_indices) == (["a", "b", "c"], "a2a3sim", [2])
    again(a, b, c)
    assert torch.equal(c, a + b)
    on_ref = CompiledProgram.from_dir(tmp_path / "build", platform="ref")
    assert on_ref.platform == "ref" and torch.equal(on_ref(a, b), a + b)
    assert benchmark(again, (a, b, c), rounds=1).device_wall_us == benchmark(
        add.compile(a, b, c, config=SIM), (a, b, c), rounds=1).device_wall_us


def test_from_dir_reads_and_never_runs_what_it_finds(tmp_path):
    from pypto.runtime import CompiledProgram

    with pytest.raises(FileNotFoundError, match="compiled_meta.json not found"):
        CompiledProgram.from_dir(tmp_path)
    a, b, c = torch.randn(16, 128), torch.randn(16, 128), torch.zeros(16, 128)
    build = tmp_path / "build"
    add.compile(a, b, c, config=RunConfig(platform="a2a3sim", output_dir=build))
    text = (build / "program.pypto").read_bytes()
    marker = tmp_path / "ran"
    (build / "program.pypto").write_bytes(text + f"\nopen({str(marker)!r}, 'w')\n".encode())
    with pytest.raises(ValueError, match="cannot be read back"):
        CompiledProgram.from_dir(build)
    assert not marker.exists()
    (build / "compiled_meta.json").write_text('{"schema": 99}')
    with pytest.raises(ValueError, match="schema 99, this pypto reads 1"):
        CompiledProgram.from_dir(build)


def test_a_program_with_dynamic_axes_is_benchmarked_at_the_call_s_extents():
    from pypto import ir

    N = pl.dynamic("N")

    @pl.program
    class Dyn:
        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, a: pl.Tensor[[N, 128], pl.FP32], out: pl.Out[pl.Tensor[[N, 128], pl.FP32]]):
            with pl.at(level=pl.Level.CORE_GROUP):
                out = pl.assemble(out, pl.exp(a), [0, 0])
            return out

    compiled = ir.compile(Dyn, platform="a2a3sim", dump_passes=False)
    a, out = torch.randn(32, 128), torch.zeros(32, 128)
    stats = benchmark(compiled, (a, out), rounds=2, warmup=0)
    assert torch.equal(out, torch.exp(a)) and stats.device_us_min > 0
