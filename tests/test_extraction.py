"""The extraction surface of a CompiledProgram (``chip_callable``, ``runtime_name``,
``runtime_config``, ``build_orch_args``, ``build_call_config``) and the runtime's worker
that takes it (``simpler.worker.Worker``): a dispatch driven by hand computes what the
direct call does, on both platforms."""

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pypto.language as pl
from pypto.errors import ConfigError
from pypto.runtime import RunConfig
from simpler.worker import Worker


@pl.jit
def scale_add(a: pl.Tensor[[16, 64], pl.FP32], b: pl.Tensor[[16, 64], pl.FP32],
              out: pl.Out[pl.Tensor[[16, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        pl.store(pl.add(pl.mul(pl.load(a, [0, 0], [16, 64]), 3.0), pl.load(b, [0, 0], [16, 64])), [0, 0], out)
    return out


def _compiled(platform: str):
    return scale_add.compile(torch.zeros(16, 64), torch.zeros(16, 64), torch.zeros(16, 64),
                             config=RunConfig(platform=platform))


def _dispatch(compiled, *args, call_config=None):
    w = Worker(level=2, device_id=0, platform=compiled.platform, runtime=compiled.runtime_name)
    w.init()
    try:
        orch_args, coerced, return_style = compiled.build_orch_args(*args, worker=w)
        cid = w.register(compiled.chip_callable)
        w.run(cid, orch_args, call_config if call_config is not None else compiled.build_call_config())
        w.unregister(cid)
    finally:
        w.close()
    return coerced, return_style


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(platform=st.sampled_from(["ref", "a2a3sim"]), seed=st.integers(0, 2 ** 16), return_style=st.booleans())
def test_a_hand_driven_dispatch_computes_the_direct_calls_bits(platform, seed, return_style):
    torch.manual_seed(seed)
    a, b = torch.randn(16, 64), torch.randn(16, 64)
    compiled = _compiled(platform)
    direct = compiled(a, b)
    args = (a, b) if return_style else (a, b, torch.zeros(16, 64))
    coerced, style = _dispatch(compiled, *args)
    assert style is return_style
    assert torch.equal(coerced[compiled.output_indices[0]], direct)
    if not return_style:  # in place: the tensor passed is the one written
        assert coerced[2] is args[2]


def test_the_handles_and_the_call_config():
    compiled = _compiled("ref")
    assert compiled.chip_callable is compiled.chip_callable
    assert isinstance(compiled.runtime_name, str) and compiled.runtime_name
    assert compiled.runtime_config == {"aicpu_thread_num": None} and compiled.orchestration_names == []
    assert compiled.build_call_config().aicpu_thread_num is None
    assert compiled.build_call_config(RunConfig(platform="ref", aicpu_thread_num=2)).aicpu_thread_num == 2
    cfg = compiled.build_call_config(RunConfig(platform="ref", aicpu_thread_num=2), aicpu_thread_num=3)
    assert cfg.aicpu_thread_num == 3 and cfg.config.platform == "ref"
    a, b = torch.randn(16, 64), torch.randn(16, 64)
    coerced, _ = _dispatch(compiled, a, b, call_config=cfg)
    assert torch.equal(coerced[2], compiled(a, b))
    with pytest.raises(ConfigError, match="aicpu_thread_num=0 is not a thread count"):
        compiled.build_call_config(aicpu_thread_num=0)


def test_dispatch_mistakes_are_refused():
    compiled, other = _compiled("ref"), _compiled("a2a3sim")
    a, b = torch.randn(16, 64), torch.randn(16, 64)
    with pytest.raises(TypeError, match=r"'scale_add' takes 3 arguments \(a, b, out\), or the 2 inputs alone; got 1"):
        compiled.build_orch_args(a)
    with Worker(level=2, device_id=0, platform="ref", runtime=compiled.runtime_name) as w:
        orch_args, _, _ = compiled.build_orch_args(a, b)
        with pytest.raises(ValueError, match="7 is no registration of this worker"):
            w.run(7, orch_args)
        with pytest.raises(TypeError, match="takes a compiled program's chip_callable"):
            w.register(compiled)
        cid = w.register(compiled.chip_callable)
        assert w.register(compiled.chip_callable) == cid
        with pytest.raises(ValueError, match=f"orch_args were not built for registration {cid}"):
            w.run(cid, other.build_orch_args(a, b)[0])
        with pytest.raises(ValueError, match="the CallConfig runs platform 'a2a3sim' and this Worker is a 'ref'"):
            w.run(cid, orch_args, other.build_call_config())
    with pytest.raises(ValueError, match="does not match"):
        with Worker(level=2, device_id=0, platform="ref", runtime=compiled.runtime_name) as w:
            w.register(other.chip_callable)
