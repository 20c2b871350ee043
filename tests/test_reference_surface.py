"""The reference's module paths and API forms, as code written against the reference imports
and uses them: ``pypto.runtime.runner``, ``pypto.ir.compiled_program``, ``Worker``, the
backend objects and the process-wide backend choice, ``pypto.pypto_core``, a ``RunConfig``
that ``dataclasses.replace`` takes, ``kernel._cache``, the three memory planners by their
``MemoryPlanner`` names; and what is refused here (the vendor toolchain's steps), each with a
located error."""

import dataclasses
import logging
import threading

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

import pypto
import pypto.language as pl
from pypto import backend, ir
from pypto.backend import A2A3, BackendType, CoreKind, MemorySpace
from pypto.errors import ConfigError
from pypto.log import logger
from pypto.runtime import ChipWorker, RunConfig

R, C = 32, 64


@pl.jit
def twice(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        pl.store(pl.add(pl.load(a, [0, 0], [R, C]), pl.load(a, [0, 0], [R, C])), [0, 0], out)
    return out


@pl.program
class Twice:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[R, C], pl.FP32], out: pl.Out[pl.Tensor[[R, C], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            out = pl.assemble(out, pl.add(a, a), [0, 0])
        return out


def test_the_reference_paths_name_this_package_objects():
    import pypto.runtime as rt
    from pypto.ir.compiled_program import CompiledProgram
    from pypto.pypto_core import LogLevel, _clear_thread_log_level, _set_thread_log_level  # noqa: F401
    from pypto.pypto_core import ir as core_ir
    from pypto.pypto_core.passes import MemoryPlanner  # noqa: F401
    from pypto.runtime.runner import RunConfig as RunnerConfig
    from pypto.runtime.runner import RunResult, compile_program, execute_compiled, run  # noqa: F401
    from pypto.runtime.tensor_spec import ScalarSpec, TensorSpec  # noqa: F401

    assert RunnerConfig is RunConfig and run is rt.run and CompiledProgram is rt.CompiledProgram
    assert ir.CompiledProgram is CompiledProgram  # the reference's `ir.CompiledProgram.from_dir(...)`
    assert LogLevel is pypto.LogLevel and core_ir.CoreType.VECTOR is CoreKind.AIV
    assert core_ir.CoreType.CUBE is CoreKind.AIC and list(CoreKind) == [CoreKind.AIC, CoreKind.AIV]
    assert isinstance(ChipWorker(), rt.Worker) and isinstance(ir.compile(Twice, dump_passes=False), CompiledProgram)
    for name in rt.__all__:  # every name the package lists resolves (most on first use)
        assert getattr(rt, name) is not None


LOADER = """
import sys
import pypto.language
first = sorted(m for m in sys.modules if m.startswith("pypto."))
from pypto.language import *  # noqa: F403
from pypto.runtime import *  # noqa: F403
from pypto.ir import compile, PassDumpLevel  # noqa: F401
print(" ".join(first))
"""


def test_import_pypto_language_leaves_the_compiler_simulator_and_chip_for_the_first_compile():
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", LOADER], capture_output=True, text=True, check=True)
    loaded = set(done.stdout.split())
    packages = {m.split(".")[1] for m in loaded}
    assert packages.isdisjoint({"codegen", "chip", "tools", "debug", "fuzz"}), sorted(packages)
    # of the simulator and the passes, only the dtype table (and its subpackage's docstring) and the
    # planners' names a config checks
    assert {m for m in loaded if m.startswith(("pypto.sim.", "pypto.passes."))} <= {
        "pypto.sim.ops", "pypto.sim.ops.numerics", "pypto.passes.context"}
    assert "pypto.runtime.compiled" not in loaded and "pypto.runtime.jit" in loaded


def test_run_result_reads_as_a_harness_line():
    from pypto.runtime.runner import RunResult

    assert str(RunResult(True, "add_128", execution_time=0.4242)) == "PASS: add_128 (0.42s)"
    assert str(RunResult(False, "add_128", error="max diff 3.0")) == "FAIL: add_128 - max diff 3.0"
    assert str(RunResult(False, error="boom")) == "FAIL: boom" and str(RunResult(True)) == "PASS"


# --------------------------------------------------------------------- dataclasses.replace

GOOD = {"platform": ["ref", "a2a3sim", "a5sim"], "device_id": [0, 3], "dump_passes": [True, False],
        "memory_planner": ["PYPTO", "DSA_RP", "PTOAS"], "disabled_diagnostics": [(), "PH001", ["PH001"]],
        "enable_chip_swimlane": [0, 2, True], "ring_heap": [None, 1024, [2048, 0, 0, 0]], "rtol": [0, 1e-3],
        "codegen_only": [True, False], "uninitialized_memory": ["zero", "nan", 0xA5]}
BAD = {"platform": "cuda", "device_id": -1, "memory_planner": "LINEAR_SCAN", "ring_heap": 1000, "rtol": -1.0,
       "codegen_only": "yes", "enable_chip_swimlane": 5, "backend_type": "Ascend950"}


@given(st.dictionaries(st.sampled_from(sorted(GOOD)), st.none(), min_size=1).flatmap(
    lambda keys: st.fixed_dictionaries({k: st.sampled_from(GOOD[k]) for k in keys})),
    st.sampled_from(sorted(GOOD)), st.data())
def test_replace_is_the_config_built_with_the_change(base, field, data):
    value = data.draw(st.sampled_from(GOOD[field]))
    replaced = dataclasses.replace(RunConfig(**base), **{field: value})
    assert replaced == RunConfig(**{**base, field: value})
    assert hash(replaced) == hash(RunConfig(**{**base, field: value}))
    assert dataclasses.replace(replaced) == replaced and dataclasses.is_dataclass(replaced)


@pytest.mark.parametrize("field", sorted(BAD))
def test_a_bad_value_given_to_replace_is_refused_at_the_replace(field):
    with pytest.raises(ConfigError) as info:
        dataclasses.replace(RunConfig(platform="ref"), **{field: BAD[field]})  # MARK-replace
    assert info.value.span.file == __file__ and "MARK-replace" in info.value.span.text
    with pytest.raises(dataclasses.FrozenInstanceError):
        RunConfig().platform = "ref"


# ------------------------------------------------------------------------------ _cache

def test_cache_holds_one_compiled_program_per_argument_types_and_clear_compiles_again():
    from pypto.ir.compiled_program import CompiledProgram

    config = RunConfig(platform="ref")
    twice._cache.clear()
    a = torch.randn(R, C)
    for _ in range(2):
        out = torch.zeros(R, C)
        twice(a, out, config=config)
        assert torch.equal(out, a + a)
    assert len(twice._cache) == 1
    (first,) = twice._cache.values()
    assert isinstance(first, CompiledProgram)
    twice(torch.randn(2 * R, C), torch.zeros(2 * R, C), config=config)
    assert len(twice._cache) == 2  # another shape: another entry
    twice._cache.clear()
    twice(a, torch.zeros(R, C), config=config)
    (again,) = twice._cache.values()
    assert again is not first  # compiled again


# ------------------------------------------------------------- compile_program / execute

@pytest.mark.parametrize("platform", ["ref", "a2a3sim"])
def test_a_build_compiled_into_a_directory_runs_from_it(tmp_path, platform):
    from pypto.runtime.runner import compile_program, execute_compiled

    compiled = compile_program(Twice, tmp_path / "twice", strategy=ir.OptimizationStrategy.Default,
                               backend_type=BackendType.Ascend910B)
    assert compiled.output_dir.resolve() == (tmp_path / "twice").resolve()
    a, out = torch.randn(R, C), torch.zeros(R, C)
    execute_compiled(tmp_path / "twice", [a, out], platform=platform, device_id=1)
    assert torch.equal(out, a + a)
    with pytest.raises(ConfigError, match="runs one chip"):
        execute_compiled(tmp_path / "twice", [a, out], platform=platform, level=3)


@pytest.mark.parametrize("planner", ["PYPTO", "DSA_RP", "PTOAS"])
def test_the_pass_manager_runs_the_pipeline_a_compile_runs(tmp_path, planner):
    from pypto.ir.pass_manager import OptimizationStrategy, PassManager

    config = RunConfig(memory_planner=planner)
    manager = PassManager(OptimizationStrategy.Default, config=config)
    lowered = manager.run_passes(Twice, dump_ir=True, output_dir=tmp_path)
    compiled = ir.compile(Twice, memory_planner=planner, dump_passes=False)
    assert lowered == compiled.lowered
    dumps = sorted(p.name for p in (tmp_path / "passes_dump").iterdir())
    assert [d.split("_after_")[1].removesuffix(".py") for d in dumps[1:]] == manager.get_pass_names()
    assert ("AllocateMemoryAddr" in manager.pass_names) == (planner != "PTOAS")
    assert ("MemoryReuse" in manager.pass_names) == (planner == "PYPTO")
    assert PassManager.get_strategy().run_passes(Twice) == ir.compile(Twice, dump_passes=False).lowered


# ------------------------------------------------------------------------------ backend

def test_the_backend_objects_count_what_the_soc_table_holds():
    bk = backend.Backend910B.instance()
    assert bk is backend.Backend910B.instance() and bk.get_type_name() == "910B"

    def count(kind):
        return sum(n * m * k for die, n in bk.soc.die_counts.items() for cluster, m in die.cluster_counts.items()
                   for core, k in cluster.core_counts.items() if core.core_type == kind)

    assert (count(CoreKind.VECTOR), count(CoreKind.CUBE)) == (A2A3.aiv_cores, A2A3.aic_cores)
    assert bk.soc.total_core_count() == A2A3.aic_cores + A2A3.aiv_cores and bk.soc.total_cluster_count() == A2A3.clusters
    assert bk.get_core_count(CoreKind.VECTOR) == A2A3.aiv_cores
    for space in A2A3.spaces:
        assert bk.get_mem_size(space) == A2A3.spec(space).capacity
    mems = {m.mem_type for die in bk.soc.die_counts for cl in die.cluster_counts for core in cl.core_counts
            for m in core.mems}
    assert mems == set(A2A3.spaces)
    handler = bk.get_handler()
    assert handler.get_pto_target_arch() == "a2a3" and handler.get_l0c_capacity_bytes() == A2A3.spec(MemorySpace.Acc).capacity


@pytest.mark.parametrize("src", list(MemorySpace))
@pytest.mark.parametrize("dst", list(MemorySpace))
def test_a_memory_path_is_legal_moves_end_to_end(src, dst):
    path = backend.Backend910B.instance().find_mem_path(src, dst)
    if path:
        assert path[0] is src and path[-1] is dst and len(set(path)) == len(path)
        assert all(A2A3.can_move(x, y) for x, y in zip(path, path[1:]))
    else:
        assert src is not dst


def test_the_process_wide_backend_choice():
    backend.reset_for_testing()
    assert not backend.is_backend_configured()
    with pytest.raises(ValueError, match="no backend type is configured"):
        backend.get_backend_type()
    backend.set_backend_type(BackendType.Ascend910B)
    backend.set_backend_type(BackendType.Ascend910B)  # again the same: nothing changes
    assert backend.get_backend_type() is BackendType.Ascend910B
    assert backend.get_handler().get_default_sim_platform() == "a2a3sim"
    with pytest.raises(ValueError, match="already Ascend910B"):
        backend.set_backend_type(BackendType.Ascend950)
    backend.reset_for_testing()
    backend.set_backend_type(BackendType.Ascend950)
    handler = backend.get_handler()
    assert (handler.get_default_sim_platform(), handler.get_pto_target_arch()) == ("a5sim", "a5")
    assert (handler.get_recommended_innermost_dim_bytes(), handler.get_gm_access_granularity_bytes()) == (128, 128)
    assert handler.get_launch_spec_core_count_method() == "set_core_num" and not handler.requires_gm_pipe_buffer()
    backend.reset_for_testing()
    assert not backend.is_backend_configured()


def test_the_platform_chooses_the_chip_as_the_reference_has_it():
    """a5sim is Ascend950 whatever backend_type says (the reference keeps them in step the
    same way), a chip named with no platform runs on its own simulator, ref on the one named."""
    a5 = RunConfig(platform="a5sim")
    assert (a5.backend, a5.backend_type) == ("a5", BackendType.Ascend950)
    assert RunConfig(platform="a5sim", backend_type=BackendType.Ascend910B).backend == "a5"
    assert RunConfig(backend_type=BackendType.Ascend950).platform == "a5sim"
    assert RunConfig(platform="ref", backend_type=BackendType.Ascend950).backend == "a5"
    assert dataclasses.replace(a5, platform="a2a3sim").backend == "a2a3"
    assert dataclasses.replace(a5, platform="ref").backend == "a5"
    assert ir.compile(Twice, platform="a5sim", dump_passes=False).config.backend == "a5"
    assert ir.compile(Twice, backend_type=BackendType.Ascend950, dump_passes=False).config.platform == "a5sim"
    with pytest.raises(ConfigError, match="platform 'a5' runs on an Ascend NPU") as info:
        RunConfig(platform="a5")  # MARK-a5
    assert "MARK-a5" in info.value.span.text and "platform='a5sim'" in info.value.hint


def test_the_a5_backend_object_counts_what_the_reference_gives():
    bk = backend.Backend950.instance()
    assert bk is backend.Backend950.instance() and bk.get_type_name() == "950"
    assert (bk.soc.total_die_count(), bk.soc.total_cluster_count(), bk.soc.total_core_count()) == (2, 36, 108)
    M = MemorySpace
    assert bk.find_mem_path(M.DDR, M.Left) == [M.DDR, M.Mat, M.Left]
    assert bk.find_mem_path(M.Mat, M.RightScale) == [M.Mat, M.RightScale]
    assert bk.find_mem_path(M.Acc, M.Vec) == [M.Acc, M.Vec]  # the cluster's own path, which a2a3 lacks
    assert backend.Backend910B.instance().find_mem_path(M.Acc, M.Vec) == [M.Acc, M.DDR, M.Vec]
    handler = bk.get_handler()
    assert (handler.get_l0c_capacity_bytes(), handler.get_bias_capacity_bytes()) == (256 * 1024, 4 * 1024)
    assert bk.get_mem_size(M.Vec) == 240 * 1024 and bk.get_core_count(CoreKind.VECTOR) == 72


def test_every_memory_planner_name_is_taken_and_an_unknown_one_refused_with_the_three():
    from pypto.pypto_core.passes import MemoryPlanner

    for planner in MemoryPlanner:
        assert RunConfig(memory_planner=planner).memory_planner.value == planner.value
    assert RunConfig(memory_planner="dsa-rp").memory_planner.value == "DSA_RP"  # the reference's CLI spelling
    with pytest.raises(ConfigError, match="unknown memory_planner 'DSA'") as info:
        RunConfig(memory_planner="DSA")  # MARK-planner
    assert "MARK-planner" in info.value.span.text
    assert all(name in info.value.hint for name in ('"PYPTO"', '"DSA_RP"', '"PTOAS"'))


# -------------------------------------------------------------- the vendor toolchain's

def test_the_vendor_toolchain_steps_are_refused_with_what_to_run_instead():
    from pypto.backend.pto_backend import _preprocess_ptoas_output, _run_ptoas
    from pypto.runtime import ensure_pto_isa_root, pto_isa_include_dir
    from pypto.runtime.device_runner import build_orch_args_from_inputs, compile_and_assemble, execute_on_device

    for step in (lambda: _run_ptoas("k.pto", "k.cpp", ptoas_flags=[]), lambda: _preprocess_ptoas_output(""),
                 ensure_pto_isa_root, pto_isa_include_dir, lambda: compile_and_assemble("build", "a2a3"),
                 lambda: build_orch_args_from_inputs([], set()), lambda: execute_on_device(None, None, "a2a3", "rt", 0)):
        with pytest.raises(ConfigError) as info:
            step()
        assert "a2a3sim" in info.value.hint


@given(st.lists(st.sampled_from([0.0, 1.0, -2.5, 3e-6]), min_size=1, max_size=8), st.data())
def test_validate_golden_ignores_nan_goldens_and_names_a_mismatch(values, data):
    from pypto.runtime.device_runner import validate_golden

    golden = torch.tensor(values)
    care = torch.tensor(data.draw(st.lists(st.booleans(), min_size=len(values), max_size=len(values))))
    marked = torch.where(care, golden, torch.nan)
    noise = torch.where(care, torch.zeros_like(golden), torch.full_like(golden, 7.0))
    validate_golden({"out": golden + noise}, {"out": marked})  # what differs is don't-care only
    if bool(care.any()):
        wrong = golden + torch.where(care, torch.ones_like(golden), torch.zeros_like(golden))
        with pytest.raises(AssertionError, match=f"Output 'out' does not match golden.\nMismatched elements: "
                                                 f"{int(care.sum())}/{len(values)}"):
            validate_golden({"out": wrong}, {"out": marked})


# ------------------------------------------------------------------------ thread levels

def test_a_thread_logs_at_its_own_level_and_the_others_at_the_process_level():
    from pypto.pypto_core import LogLevel, _clear_thread_log_level, _set_thread_log_level

    records = []
    handler = logging.Handler()
    handler.emit = records.append
    logger.addHandler(handler)
    before = pypto.get_log_level()
    pypto.set_log_level(LogLevel.WARN)
    try:
        def worker():
            _set_thread_log_level(LogLevel.DEBUG)
            logger.debug("mine")
            assert pypto.get_log_level() is LogLevel.WARN  # the process-wide level, still
            _clear_thread_log_level()
            logger.debug("mine, cleared")

        thread = threading.Thread(target=worker)
        thread.start()
        thread.join()
        logger.debug("the main thread's")
        _set_thread_log_level(LogLevel.ERROR)
        logger.warning("quietened")
        _clear_thread_log_level()
        logger.warning("heard")
    finally:
        logger.removeHandler(handler)
        pypto.set_log_level(before)
    assert [r.getMessage() for r in records] == ["mine", "heard"]
