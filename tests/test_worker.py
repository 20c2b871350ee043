"""The simulated device as the reference's runtime hands it out: ``ChipWorker`` (memory,
registration, explicit dispatch, the active worker of a ``with`` block), ``DeviceTensor``
(resident buffers no dispatch copies), ``pypto.ir.compile`` and ``pypto.runtime.run``."""

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.errors import ConfigError
from pypto.runtime import ChipWorker, DeviceTensor, RegistrationHandle, RunConfig, run

R, C = 32, 64


@pl.jit
def add(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        pl.store(pl.add(pl.load(a, [0, 0], [R, C]), pl.load(b, [0, 0], [R, C])), [0, 0], out)
    return out


@pl.jit
def bump(w: pl.InOut[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        pl.store(pl.adds(pl.load(w, [0, 0], [R, C]), 1.0), [0, 0], w)
    return w


def _compiled(platform="a2a3sim", kernel=add, n=3):
    return ir.compile(kernel.lower(*[torch.zeros(R, C)] * n), platform=platform, dump_passes=False)


@pytest.mark.parametrize("platform", ["ref", "a2a3sim"])
def test_a_resident_tensor_is_read_where_it_lies(platform):
    a, b = torch.randn(R, C), torch.randn(R, C)
    compiled = _compiled(platform)
    with ChipWorker(config=RunConfig(platform=platform)) as w:
        resident = w.alloc_tensor((R, C), torch.float32, init=b)
        b.zero_()  # the device keeps its own copy
        for _ in range(2):
            out = torch.zeros(R, C)
            w.run(compiled, a, resident, out)
            assert torch.equal(out, a + resident.buffer)
        out = torch.zeros(R, C)
        compiled(a, resident, out)  # inside the block, a plain call finds the worker
        assert torch.equal(out, a + resident.buffer)
        w.free_tensor(resident)
        w.free_tensor(resident)  # a second free does nothing


def test_a_kernel_writes_a_device_tensor_in_place_and_the_host_reads_it_back():
    compiled = _compiled(kernel=bump, n=1)
    with ChipWorker() as w:
        t = w.alloc_tensor((R, C), torch.float32, init=torch.ones(R, C))
        for _ in range(3):
            w.run(compiled, t)
        host = torch.zeros(R, C)
        w.copy_from(host.data_ptr(), t.data_ptr, t.nbytes)
        assert torch.equal(host, torch.full((R, C), 4.0))
        src = torch.full((R, C), 7.0)
        w.copy_to(t.data_ptr, src.data_ptr(), t.nbytes)
        w.run(compiled, t)
        w.copy_from(host.data_ptr(), t.data_ptr, t.nbytes)
        assert torch.equal(host, torch.full((R, C), 8.0))


def test_registration_handles_alias_one_registration_and_close_with_the_worker():
    compiled = _compiled()
    a, b = torch.randn(R, C), torch.randn(R, C)
    worker = ChipWorker(config=RunConfig(platform="a2a3sim"))
    h1 = worker.register(compiled)
    h2 = worker.register(compiled)
    assert isinstance(h1, RegistrationHandle) and h1.cid == h2.cid and worker.aicpu_dlopen_count == 1
    out = torch.zeros(R, C)
    for _ in range(3):
        h1(a, b, out)
    assert torch.equal(out, a + b) and worker.aicpu_dlopen_count == 1
    with h2:
        h2(a, b, out)
    assert h2.closed and not h1.closed
    worker.close()
    assert h1.closed and not worker.initialized
    with pytest.raises(RuntimeError, match="RegistrationHandle has been unregistered"):
        h1(a, b, out)
    with pytest.raises(RuntimeError, match=r"ChipWorker.run\(\) requires an initialized ChipWorker"):
        worker.run(compiled, a, b, out)
    worker.init()  # a fresh device
    worker.run(compiled, a, b, out)
    worker.close()
    worker.close()


def test_the_worker_refuses_what_the_reference_refuses():
    with pytest.raises(ValueError, match="ChipWorker only supports level=2; got level=3"):
        ChipWorker(level=3)
    compiled = _compiled("ref")
    with ChipWorker(config=RunConfig(platform="a2a3sim")) as w:
        with pytest.raises(ValueError, match="CompiledProgram.platform='ref' does not match "
                                             "ChipWorker.platform='a2a3sim'"):
            w.run(compiled, *[torch.zeros(R, C)] * 3)
        with pytest.raises(ValueError, match="already active in an enclosing scope"):
            with ChipWorker(config=RunConfig(platform="a2a3sim")):
                pass
        with ChipWorker(config=RunConfig(platform="a2a3sim", device_id=1)):
            pass  # another device is another binding
        with pytest.raises(ValueError, match="init must be a torch.Tensor of shape"):
            w.alloc_tensor((R, C), torch.float32, init=torch.zeros(R, C, dtype=torch.float16))
        t = w.alloc_tensor((R, C), torch.float32)
    other = ChipWorker()
    with pytest.raises(ValueError, match="bound to the worker that allocated it"):
        other.run(_compiled(), torch.zeros(R, C), t, torch.zeros(R, C))
    with pytest.raises(ConfigError, match="no ChipWorker active"):
        _compiled()(torch.zeros(R, C), t, torch.zeros(R, C))


def test_a_device_tensor_checks_what_it_is_made_of():
    t = DeviceTensor(0x1000, (4, 8), torch.float16)
    assert t.nbytes == 64 and repr(t) == "DeviceTensor(data_ptr=0x1000, shape=(4, 8), dtype=torch.float16)"
    for bad in ((0, (4,), torch.float32), (16, (4, 0), torch.float32), (16, (4,), "float32")):
        with pytest.raises(ValueError):
            DeviceTensor(*bad)


def test_ir_compile_and_runtime_run_build_what_a_call_runs(tmp_path):
    a, b = torch.randn(R, C), torch.randn(R, C)
    compiled = ir.compile(add.lower(a, b, torch.zeros(R, C)), output_dir=tmp_path / "build", platform="ref")
    assert compiled.param_names == ["a", "b", "out"] and compiled.platform == "ref"
    assert (tmp_path / "build" / "passes_dump").is_dir()
    out = torch.zeros(R, C)
    compiled(a, b, out)
    assert torch.equal(out, a + b)
    out = torch.zeros(R, C)
    again = run(add.lower(a, b, out), a, b, out, config=RunConfig(platform="a2a3sim", output_dir=tmp_path / "run"))
    assert torch.equal(out, a + b) and again.platform == "a2a3sim"
    with pytest.raises(ConfigError, match="ir.compile takes a Program"):
        ir.compile(add)


def test_as_python_names_the_module_as_asked_and_reads_back():
    from pypto.lang import parse

    program = add.lower(*[torch.zeros(R, C)] * 3)
    text = program.as_python(prefix="ptl", concise=True)
    assert "import pypto.language as ptl" in text and "@ptl.program" in text and " pl." not in text
    assert parse(text) == program
    fn = program.functions[0]
    assert fn.as_python().lstrip().startswith("@pl.function(") and f"def {fn.name}(" in fn.as_python()
    with pytest.raises(ValueError, match="prefix='not a name'"):
        program.as_python(prefix="not a name")


def test_the_reference_compile_options_are_accepted_and_an_npu_platform_is_refused():
    from pypto.backend import BackendType
    from pypto.ir.pass_manager import OptimizationStrategy

    config = RunConfig(strategy=OptimizationStrategy.Default, backend_type=BackendType.Ascend910B, device_id=3)
    assert config.backend == "a2a3" and config.device_id == 3
    for npu in ("a2a3", "a5"):
        with pytest.raises(ConfigError, match=f"platform '{npu}' runs on an Ascend NPU.*use platform='{npu}sim'"):
            RunConfig(platform=npu)
    with pytest.raises(ConfigError, match="strategy='fast' is not an OptimizationStrategy"):
        RunConfig(strategy="fast")
    with pytest.raises(ConfigError, match="device_id=-1 is not a device number"):
        RunConfig(device_id=-1)


def test_a_compiled_program_tells_its_call_shape_and_takes_a_return_style_call(tmp_path):
    import os

    from pypto.backend import BackendType

    a, b = torch.randn(R, C), torch.randn(R, C)
    compiled = ir.compile(add.lower(a, b, torch.zeros(R, C)), output_dir=tmp_path / "b", dump_passes=False)
    assert compiled.output_indices == [2] and compiled.has_return
    assert compiled.backend_type is BackendType.Ascend910B and compiled.runtime_name == "tensormap_and_ringbuffer"
    assert os.fspath(compiled) == str(tmp_path / "b")
    assert torch.equal(compiled(a, b), a + b)  # the Out tensor allocated and returned
    out = torch.zeros(R, C)
    compiled(a, b, out)  # or written in place
    assert torch.equal(out, a + b)


@pl.jit
def fill(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        pl.store(pl.adds(pl.load(a, [0, 0], [R, C]), 3.0), [0, 0], out)


def test_what_the_adversarial_review_found():
    # a tensor of another worker (or a stale one) is never freed in another's place
    wa, wb = ChipWorker(), ChipWorker(config=RunConfig(device_id=1))
    ta = wa.alloc_tensor((4, 4), torch.float32)
    tb = wb.alloc_tensor((4, 4), torch.float32, init=torch.ones(4, 4))
    assert ta.data_ptr != tb.data_ptr
    with pytest.raises(ValueError, match="not a tensor of this ChipWorker"):
        wb.free_tensor(ta)
    assert torch.equal(wb.storage(tb), torch.ones(4, 4))
    with pytest.raises(ValueError, match="a copy's byte count is an int >= 0, got -16"):
        wb.copy_from(torch.zeros(4).data_ptr(), tb.data_ptr, -16)
    # a return-style call of an entry that returns nothing gives back the Outs it allocated
    compiled = ir.compile(fill.lower(torch.zeros(R, C), torch.zeros(R, C)), dump_passes=False, platform="ref")
    assert not compiled.has_return and torch.equal(compiled(torch.zeros(R, C)), torch.full((R, C), 3.0))
    # a plain call with a DeviceTensor checks the platform as worker.run does
    with ChipWorker() as w:
        t = w.alloc_tensor((R, C), torch.float32)
        with pytest.raises(ValueError, match="does not match ChipWorker.platform='a2a3sim'"):
            compiled(t)


def test_host_code_renames_what_would_shadow_its_own_names():
    from pypto.debug import torch_codegen

    @pl.jit
    def shadows(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            prelude = pl.load(a, [0, 0], [R, C])
            for range in pl.range(2):  # noqa: A001
                tuple = pl.exp(prelude)  # noqa: A001
                pl.store(tuple, [0, 0], out)
        return out

    a = torch.randn(R, C)
    program = shadows.lower(a, torch.zeros(R, C))
    scope = {}
    exec(torch_codegen(program, check_shapes=True), scope)
    out = torch.zeros(R, C)
    scope["shadows"](a, out)
    assert torch.equal(out, torch.exp(a))


def test_the_worker_owns_what_it_allocated_until_it_is_freed_or_closed():
    """``_owned_tensors``: the reference's private name for a worker's live tensors, read by
    its tests (the sustained-dispatch loop neither leaks nor double-allocates)."""
    worker = ChipWorker()
    a = worker.alloc_tensor((R, C), torch.float32, init=torch.ones(R, C))
    b = worker.alloc_tensor((R, C), torch.float32)
    assert set(map(id, worker._owned_tensors)) == {id(a), id(b)}
    out = torch.zeros(R, C)
    handle = worker.register(_compiled())
    for _ in range(3):
        handle(a, b, out)
    assert len(worker._owned_tensors) == 2
    worker.free_tensor(b)
    assert worker._owned_tensors == (a,)
    worker.close()
    assert worker._owned_tensors == ()
