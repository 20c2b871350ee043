"""The backend is the ground floor: the chip's cores, and the SoC table in force comes from
RunConfig.backend in every layer (front end, passes, codegen), never from a default."""

import attrs
import pytest
import torch

import pypto.backend.soc as soc_module
import pypto.language as pl
import pypto.runtime.config as config_module
from pypto.backend import A2A3, BackendType, CoreId, CoreKind, MemorySpace, backend
from pypto.errors import ConfigError, MemorySpaceError, TypeCheckError
from pypto.runtime import RunConfig


def test_a2a3_has_24_clusters_of_one_aic_and_two_aivs():
    assert (A2A3.aic_cores, A2A3.aiv_cores) == (24, 48)
    cores = A2A3.cores()
    assert len(cores) == len(set(cores)) == 72
    assert [c.name for c in A2A3.cluster_cores(3)] == ["aic3", "aiv6", "aiv7"]
    assert [c.name for c in A2A3.cores(CoreKind.AIV)][:4] == ["aiv0", "aiv1", "aiv2", "aiv3"]
    assert A2A3.cores(CoreKind.AIC)[-1] == CoreId(CoreKind.AIC, 23)
    with pytest.raises(ValueError, match="clusters 0..23"):
        A2A3.cluster_cores(24)


def test_the_two_aivs_of_a_cluster_are_different_cores():
    a, b = CoreId(CoreKind.AIV, 5, 0), CoreId(CoreKind.AIV, 5, 1)
    assert a != b and a.name != b.name and len({a, b}) == 2
    assert sorted([b, a]) == [a, b]


def test_the_reference_backend_names_are_accepted():
    assert backend(BackendType.Ascend910B) is A2A3
    assert RunConfig(backend=BackendType.Ascend910B).backend == "a2a3"
    with pytest.raises(ConfigError, match="unknown backend"):
        RunConfig(backend="b7")
    assert RunConfig(backend=BackendType.Ascend950).backend == "a5"


@pytest.fixture
def variants(monkeypatch):
    """Two made-up backends beside a2a3: one whose GM cannot load into Mat, one with a
    smaller UB."""
    no_mat = attrs.evolve(A2A3, name="no_mat", legal_moves=A2A3.legal_moves - {(MemorySpace.DDR, MemorySpace.Mat)})
    small = attrs.evolve(A2A3, name="small_vec", spaces=A2A3.spaces.set(
        MemorySpace.Vec, attrs.evolve(A2A3.spec(MemorySpace.Vec), capacity=16 * 1024, physical=0)))
    table = soc_module.BACKENDS.update({"no_mat": no_mat, "small_vec": small})
    monkeypatch.setattr(soc_module, "BACKENDS", table)
    monkeypatch.setattr(config_module, "BACKENDS", table)


@pl.jit
def big_exp(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [64, 128])
        pl.store(pl.exp(t), [0, 0], out)
    return out


def test_the_front_end_types_ops_by_the_backend_in_force(variants):
    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(a, [0, 0], [16, 128], target_memory=pl.Mem.Mat)
            u = pl.move(t, target_memory=pl.Mem.Left)  # noqa: F841
        return out

    a = torch.randn(16, 128, dtype=torch.float16)
    k.specialize(a, a)  # a2a3 loads GM into Mat
    with pytest.raises(TypeCheckError, match="Mat") as info:
        k.specialize(a, a, config=RunConfig(backend="no_mat"))
    assert info.value.span is not None and info.value.span.file == __file__


def test_the_passes_plan_memory_by_the_backend_in_force(variants):
    a = torch.randn(64, 128)
    out = torch.zeros(64, 128)
    big_exp(a, out, config=RunConfig(platform="a2a3sim", backend="a2a3"))
    assert torch.equal(out, torch.exp(a))
    with pytest.raises(MemorySpaceError, match="16384 B available"):
        big_exp(a, torch.zeros(64, 128), config=RunConfig(platform="a2a3sim", backend="small_vec"))
