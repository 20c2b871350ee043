"""kernel.compile / kernel.lower, the per-pass dumps, and what the seed promises of them."""

import re

import pytest
import torch
from helpers import assert_matches_oracle, run_case
from hypothesis import given, settings
from hypothesis import strategies as st

from pypto.errors import ConfigError, MemorySpaceError
from pypto.fuzz import strategies as ps
from pypto.ir import PassDumpLevel, VerificationLevel
from pypto.lang import parse
from pypto.passes.context import PassContext, Planner
from pypto.passes.pipeline import lower
from pypto.runtime import CompiledProgram, RunConfig
from pypto.sim.reference import interpreter
from pypto.backend import A2A3


def compile_seed(seed, name, tmp_path, **config):
    a, out = seed["A"], torch.zeros(512, 128)
    return seed[name].compile(a, out, config=RunConfig(output_dir=tmp_path / name, **config))


def allocation_dump(compiled: CompiledProgram) -> str:
    (dump,) = (compiled.output_dir / "passes_dump").glob("*_after_AllocateMemoryAddr.py")
    return dump.read_text()


def load_memrefs(text: str) -> list[str]:
    return re.findall(r"pl\.MemRef\([^)]*\)(?:\[[^\]]*\])?(?=, pl\.Mem\.Vec\] = pl\.tile\.load)", text)


def test_compile_returns_the_program_before_and_after_and_writes_its_directory(seed, tmp_path):
    compiled = compile_seed(seed, "pipelined", tmp_path, dump_passes=True)
    assert isinstance(compiled, CompiledProgram)
    assert compiled.output_dir == (tmp_path / "pipelined").resolve()
    assert compiled.param_names == ["a", "out"] and compiled.platform == "a2a3sim"
    assert sorted(p.name for p in (compiled.output_dir / "kernels" / "aiv").iterdir()) == ["pipelined_incore_0.pto"]
    assert "pl.pipeline(8, stage=2)" in compiled.program.as_python()
    assert "pl.pipeline" not in compiled.lowered.as_python()
    names = sorted(p.name for p in (compiled.output_dir / "passes_dump").iterdir())
    assert names == ["00_frontend.py", "01_after_OutlineIncoreScopes.py", "02_after_FuseCreateAssembleToSlice.py",
                     "03_after_ConvertTensorToTileOps.py", "04_after_AutoTileMatmulL0.py",
                     "05_after_InferTileMemorySpace.py", "06_after_CanonicalizeTileSlice.py",
                     "07_after_LowerPipelineLoops.py", "08_after_InsertAliasCopies.py", "09_after_InitMemRef.py",
                     "10_after_MemoryReuse.py", "11_after_AllocateMemoryAddr.py"]
    assert (compiled.output_dir / "report").is_dir()


def test_seed_pipelined_has_two_load_buffers_at_different_addresses(seed, tmp_path):
    refs = load_memrefs(allocation_dump(compile_seed(seed, "pipelined", tmp_path, dump_passes=True)))
    assert refs == ['pl.MemRef("pipe_tile", 0, 65536, slots=2)[0]', 'pl.MemRef("pipe_tile", 0, 65536, slots=2)[1]']


def test_seed_single_buffer_has_one_load_buffer(seed, tmp_path):
    refs = load_memrefs(allocation_dump(compile_seed(seed, "single_buffer", tmp_path, dump_passes=True)))
    assert refs == ['pl.MemRef("mem_vec_0", 0, 32768)']


def test_seed_explicit_slots_has_one_two_slot_allocation(seed, tmp_path):
    refs = load_memrefs(allocation_dump(compile_seed(seed, "explicit_slots", tmp_path, dump_passes=True)))
    assert refs == ['pl.MemRef("ub", 0, 65536, slots=2)[i % 2]']


@pytest.mark.parametrize("name", ["pipelined", "explicit_slots", "single_buffer"])
def test_ptoas_compiles_the_seed_and_its_dumps_carry_no_offsets(seed, tmp_path, name):
    compiled = compile_seed(seed, name, tmp_path, dump_passes=PassDumpLevel.EXPLICIT, memory_planner="PTOAS")
    dumps = sorted((compiled.output_dir / "passes_dump").iterdir())
    assert not any("AllocateMemoryAddr" in p.name or "MemoryReuse" in p.name for p in dumps)
    last = dumps[-1].read_text()
    assert "pl.MemRef(" in last
    assert not re.search(r'pl\.MemRef\("\w+", \d+', last)  # sized, never placed
    if name != "single_buffer":
        assert re.search(r'pl\.MemRef\("\w+", size=65536, slots=2\)\[i % 2\]', last)
    out = torch.zeros(512, 128)
    compiled.run(seed["A"], out)
    assert torch.equal(out, torch.exp(seed["A"]))


def test_explicit_dumps_annotate_every_tile_and_concise_ones_only_what_inference_cannot(seed, tmp_path):
    concise = compile_seed(seed, "single_buffer", tmp_path / "c", dump_passes=True)
    explicit = compile_seed(seed, "single_buffer", tmp_path / "e", dump_passes=PassDumpLevel.EXPLICIT)
    c_text = (concise.output_dir / "passes_dump" / "01_after_OutlineIncoreScopes.py").read_text()
    e_text = (explicit.output_dir / "passes_dump" / "01_after_OutlineIncoreScopes.py").read_text()
    assert "exp = pl.tile.exp(tile)" in c_text
    assert "exp: pl.Tile[[64, 128], pl.FP32, pl.Mem.Vec] = pl.tile.exp(tile)" in e_text
    assert parse(c_text) == parse(e_text)


def test_every_dump_computes_what_the_kernel_computes(seed, tmp_path):
    for name in ("single_buffer", "pipelined", "explicit_slots"):
        for planner in ("PYPTO", "DSA_RP", "PTOAS"):
            compiled = compile_seed(seed, name, tmp_path / planner, dump_passes=True, memory_planner=planner,
                                    verification_level="ROUNDTRIP")
            for dump in sorted((compiled.output_dir / "passes_dump").iterdir()):
                program = parse(dump.read_text(), filename=str(dump))
                out = torch.zeros(512, 128)
                interpreter.run(program, name, (seed["A"], out))
                assert torch.equal(out, torch.exp(seed["A"])), dump.name


def test_lower_writes_nothing(seed, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PYPTO_PROG_BUILD_DIR", str(tmp_path / "builds"))
    lowered = seed["pipelined"].lower(seed["A"], torch.zeros(512, 128))
    assert "pipe_tile" in lowered.as_python()
    assert list(tmp_path.iterdir()) == []


def test_default_output_dir_is_under_the_build_dir_env_var(seed, tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_PROG_BUILD_DIR", str(tmp_path / "builds"))
    compiled = seed["single_buffer"].compile(seed["A"], torch.zeros(512, 128))
    assert compiled.output_dir.parent == (tmp_path / "builds").resolve()
    assert re.fullmatch(r"single_buffer_\d{8}_\d{6}(_\d+)?", compiled.output_dir.name)
    again = seed["single_buffer"].compile(seed["A"], torch.zeros(512, 128))
    assert again is compiled  # the same key: the build made for it


def test_calls_are_cached_per_config_and_write_nothing_by_default(seed, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    kernel, out = seed["pipelined"], torch.zeros(512, 128)
    kernel(seed["A"], out, config=RunConfig())
    kernel(seed["A"], out, config=RunConfig())
    kernel(seed["A"], out, config=RunConfig(memory_planner="PTOAS"))
    assert len([k for k in kernel._cache if k[0][0].shape == (512, 128)]) >= 2
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("platform", ["ref", "a2a3sim"])
@pytest.mark.parametrize("where", ["default", "output_dir", "save_kernels_dir"])
def test_a_codegen_only_call_writes_the_build_and_runs_nothing(seed, tmp_path, monkeypatch, platform, where):
    monkeypatch.setenv("PYPTO_PROG_BUILD_DIR", str(tmp_path / "builds"))
    fields = {"default": {}, "output_dir": {"output_dir": tmp_path / "o"},
              "save_kernels_dir": {"save_kernels": True, "save_kernels_dir": tmp_path / "s"}}[where]
    config = RunConfig(platform=platform, codegen_only=True, **fields)
    kernel, a, out = seed["pipelined"], seed["A"], torch.zeros(512, 128)
    built = kernel(a, out, config=config)  # as pypto.runtime.run: the compiled program, not run
    assert isinstance(built, CompiledProgram) and not out.any()
    place = {"default": (tmp_path / "builds").resolve(), "output_dir": tmp_path, "save_kernels_dir": tmp_path}[where]
    assert built.output_dir.parent == place and list((built.output_dir / "kernels").rglob("*.pto"))
    assert kernel(a, out, config=config) is built is kernel.compile(a, out, config=config)  # cached, as compile()
    assert not out.any()
    built(a, out)  # called, it runs
    assert torch.equal(out, torch.exp(a))


@pytest.mark.parametrize("field, value, message", [
    ("memory_planner", "LINEAR", "unknown memory_planner 'LINEAR'"),
    ("dump_passes", "loud", "dump_passes='loud' is not a dump level"),
    ("verification_level", "paranoid", "verification_level='paranoid' is not a verification level"),
    ("disabled_diagnostics", ["PH999"], "unknown diagnostic check 'PH999'"),
    ("backend", "a9", "unknown backend 'a9'"),
])
def test_run_config_rejects_unknown_values(field, value, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        RunConfig(**{field: value})


def test_tiles_that_do_not_fit_are_reported_at_the_users_line():
    import pypto.language as pl

    @pl.jit
    def big(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            x = pl.load(a, [0, 0], [256, 128])  # 128 KiB
            y = pl.load(a, [0, 0], [256, 128])  # another 128 KiB, live with x
            pl.store(pl.add(x, y), [0, 0], out)
        return out

    with pytest.raises(MemorySpaceError) as info:
        big.lower(torch.zeros(256, 128), torch.zeros(256, 128))
    assert info.value.span.file == __file__
    assert "Vec cannot hold the tiles of 'big_incore_0': 262144 B needed, 188416 B available" in str(info.value)
    assert "x = pl.load(a, [0, 0], [256, 128])  # 128 KiB" in str(info.value)


@settings(max_examples=max(5, settings().max_examples * 5 // 8))  # a share of the profile's budget
@given(ps.tile_programs(), st.sampled_from(list(Planner)))
def test_property_every_pass_roundtrips_and_preserves_results(case, planner):
    lowering = lower(case.program, PassContext(soc=A2A3, planner=planner), verification=VerificationLevel.ROUNDTRIP)
    expected = run_case(case)
    for name, program in lowering.stages:
        got = run_case(case, parse(program.as_python()))
        for x, y in zip(got, expected):
            assert ps.bits_equal(x, y), f"{case.recipe}: {name} changed the result"
    assert_matches_oracle(case, run_case(case, lowering.program))


def test_compile_returns_the_same_compiled_program_for_the_same_key(tmp_path):
    import pypto.language as pl
    import torch

    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            out[:] = pl.add(a, 1.0)
        return out

    config = RunConfig(platform="ref", output_dir=tmp_path)
    first = k.compile(torch.zeros(16, 128), torch.zeros(16, 128), config=config)
    assert k.compile(torch.ones(16, 128), torch.ones(16, 128), config=RunConfig(platform="ref", output_dir=tmp_path)) \
        is first
    assert k.compile(torch.zeros(32, 128), torch.zeros(32, 128), config=config) is not first
    assert k.compile(torch.zeros(16, 128), torch.zeros(16, 128), config=RunConfig(platform="a2a3sim")) is not first
