"""Scalars that only move a kernel's GM windows (``pypto.sim.fastforward.offsets``): one timeline serves
every value, its effects and footprint moved — exactly what simulating each value gives."""

from __future__ import annotations

import functools

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import pypto.language as pl
from pypto.backend import A2A3
from pypto.codegen.isa import Instr, Loop, ScalarAssign
from pypto.errors import PyptoError
from pypto.sim.timing.hazards import SimulatorHazard
from pypto.fuzz.data import bits_equal
from pypto.ir import nodes as n
from pypto.sim.fastforward import offsets
from pypto.sim.simulator import Launch, _timelines, apply, simulate, simulate_together

R, C = 16, 128


@pl.jit.incore
def band(a: pl.Tensor, out: pl.Out[pl.Tensor], i: pl.Scalar[pl.INDEX], j: pl.Scalar[pl.INDEX]):
    for k in pl.range(2):
        t = pl.load(a, [(i + k) * R, j * 64], [R, 64])
        pl.store(pl.add(pl.exp(t), t), [(2 * i + k) * R, j * 64], out)
    return out


@functools.cache
def _compiled():
    a, out = torch.randn(64 * R, C), torch.zeros(128 * R, C)
    (kernel,) = band.compile(a, out, 0, 0).kernels.values()
    return kernel, a, out


@pl.jit.incore
def first_into_band(x: pl.InOut[pl.Tensor], i: pl.Scalar[pl.INDEX]):
    pl.store(pl.exp(pl.load(x, [0, 0], [R, C])), [i * R, 0], x)
    return x


@pl.jit.incore
def long_band(a: pl.Tensor, out: pl.Out[pl.Tensor], i: pl.Scalar[pl.INDEX]):
    for k in pl.range(32):  # fast-forwarded: its trips are one effect, which moves by more than ints
        pl.store(pl.exp(pl.load(a, [i * R, k * 4], [R, 4 * 16])), [i * R, 0], out)
    return out


@pl.jit.incore
def spill(a: pl.Tensor, z: pl.InOut[pl.Tensor], x: pl.Out[pl.Tensor], i: pl.Scalar[pl.INDEX]):
    t = pl.load(a, [0, 0], [R, 64])
    pl.store(t, [i * R, 0], x)
    pl.store(pl.add(pl.load(z, [0, 0], [R, 64]), t), [0, 0], z)
    return z, x


@pl.jit.incore
def twice(a: pl.Tensor, out: pl.Out[pl.Tensor], i: pl.Scalar[pl.INDEX]):
    pl.store(pl.add(pl.load(a, [i * R, 0], [R, 64]), pl.load(a, [2 * R, 0], [R, 64])), [0, 0], out)
    return out


BLOCKS = 16


@pl.jit
def blocks(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.spmd(BLOCKS):
        i = pl.tile.get_block_idx()
        pl.store(pl.exp(pl.load(a, [i * R, 0], [R, C])), [i * R, 0], out)
    return out


def _kernel():
    kernel, a, out = _compiled()
    return kernel, a, out.clone()


def _direct(kernel, args):
    """The launch simulated on its own, nothing shared."""
    copies = tuple(x.clone() if isinstance(x, torch.Tensor) else x for x in args)
    launch = Launch(kernel, copies)
    timeline = simulate_together((launch,), A2A3)
    apply(timeline, launch.tensors())
    return timeline, copies


def test_a_kernels_index_scalars_only_move_its_windows():
    kernel, *_ = _kernel()
    got = offsets.moving(kernel)
    assert set(got) == {"i", "j"}
    assert sorted(got["i"]) == [("a", (R, 0), False), ("out", (2 * R, 0), True)]  # elements per unit of i


@settings(deadline=None)
@given(st.lists(st.tuples(st.integers(0, 40), st.integers(0, 1)), min_size=1, max_size=6))
def test_property_every_value_gets_the_timeline_simulating_it_gives(values):
    kernel, a, out = _kernel()
    _timelines(kernel).clear()
    for i, j in values:
        args = (a, out.clone(), i, j)
        timeline = simulate(kernel, args, A2A3)
        direct, copies = _direct(kernel, args)
        assert (timeline.cycles, timeline.pipe_cycles, timeline.footprint) == \
               (direct.cycles, direct.pipe_cycles, direct.footprint)
        assert [e for e in timeline.report().events] == [e for e in direct.report().events]
        mine = (a.clone(), out.clone(), i, j)
        apply(timeline, Launch(kernel, mine).tensors())
        assert all(bits_equal(x, y) for x, y in zip(mine[:2], copies[:2]))
    assert len(_timelines(kernel)) == 1  # one family for all the values


G = 3


@pl.jit.incore
def grouped(q: pl.Tensor, kv: pl.Tensor, out: pl.Out[pl.Tensor], h: pl.Scalar[pl.INDEX]):
    # a query head h reads its group's KV rows (h // G) and a half chosen by h % 2: offsets
    # affine in h's atoms, not in h
    t = pl.load(q, [h * R, 0], [R, 64])
    u = pl.load(kv, [(h // G) * R, (h % 2) * 64], [R, 64])
    pl.store(pl.add(pl.exp(t), u), [h * R, 64 - (h % 2) * 64], out)
    return out


def test_a_scalar_moving_windows_through_its_atoms_is_moving():
    q, kv, out = torch.randn(16 * R, 64), torch.randn(6 * R, C), torch.zeros(16 * R, C)
    (kernel,) = grouped.compile(q, kv, out, 0).kernels.values()
    got = offsets.moving(kernel)
    assert set(got) == {"h"}
    assert offsets.atoms(got["h"])[0] is None and len(offsets.atoms(got["h"])) == 3  # h, h // G, h % 2


@settings(deadline=None, max_examples=25)
@given(st.lists(st.integers(0, 15), min_size=1, max_size=6))
def test_property_every_value_of_a_scalar_moving_through_atoms_gets_the_timeline_simulating_it_gives(values):
    q, kv, out = torch.randn(16 * R, 64), torch.randn(6 * R, C), torch.zeros(16 * R, C)
    (kernel,) = grouped.compile(q, kv, out, 0).kernels.values()
    _timelines(kernel).clear()
    for h in values:
        args = (q, kv, out.clone(), h)
        timeline = simulate(kernel, args, A2A3)
        direct, copies = _direct(kernel, args)
        assert (timeline.cycles, timeline.pipe_cycles, timeline.footprint) == \
               (direct.cycles, direct.pipe_cycles, direct.footprint)
        mine = (q.clone(), kv.clone(), out.clone(), h)
        apply(timeline, Launch(kernel, mine).tensors())
        assert all(bits_equal(x, y) for x, y in zip(mine[:3], copies[:3]))
    assert len(_timelines(kernel)) == 1  # one family for all the values


def test_a_window_out_of_range_for_one_value_fails_as_simulating_it_does():
    kernel, a, out = _kernel()
    simulate(kernel, (a, out, 0, 0), A2A3)
    timeline = simulate(kernel, (a, out, 63, 0), A2A3)  # reads rows 63 * R.. of a 64 * R tensor
    with pytest.raises(Exception) as shared:
        apply(timeline, Launch(kernel, (a, out.clone(), 63, 0)).tensors())
    with pytest.raises(Exception) as alone:
        _direct(kernel, (a, out, 63, 0))
    assert type(shared.value) is type(alone.value) and str(shared.value) == str(alone.value)


def _outcome(kernel, timeline_of, args):
    """What a launch gives: its figures — or its error, at simulate or apply time."""
    try:
        timeline = timeline_of(args)
        apply(timeline, Launch(kernel, args).tensors())
        return "ok", timeline.cycles, timeline.footprint
    except PyptoError as exc:
        return type(exc).__name__, str(exc)


def test_a_window_moved_out_of_its_tensor_onto_anothers_bytes_is_that_values_hazard():
    # x and z are neighbours in one storage: x's store moved past its end lands on z
    def args(i):
        base = torch.zeros(5 * R, 64)
        return (torch.randn(R, 64), base[4 * R:], base[:4 * R], i)

    (kernel,) = spill.compile(*args(0)).kernels.values()
    _timelines(kernel).clear()
    for i in (0, 1, 4):
        alone = _outcome(kernel, lambda a: simulate_together((Launch(kernel, a),), A2A3), args(i))
        shared = _outcome(kernel, lambda a: simulate(kernel, a, A2A3), args(i))
        assert shared == alone, i
    assert alone[0] == "SimulatorHazard"


def test_windows_that_meet_at_one_value_are_listed_once_as_simulating_it_does():
    a = torch.randn(4 * R, 64)
    (kernel,) = twice.compile(a, torch.zeros(R, 64), 0).kernels.values()
    _timelines(kernel).clear()
    for i in (0, 1, 2):
        args = (a, torch.zeros(R, 64), i)
        assert simulate(kernel, args, A2A3).footprint == simulate_together((Launch(kernel, args),), A2A3).footprint


def test_views_of_one_storage_moving_apart_are_simulated_per_value():
    # out is a view of a: how the load and the store overlap changes with i, so no sharing
    kernel, *_ = _kernel()
    base = torch.randn(256 * R, C)
    a, out = base[: 64 * R], base[: 128 * R]
    moving = offsets.moving(kernel)
    tensors = {"a": a, "out": out}
    assert not offsets.shifts(moving["i"], tensors, {"a": 0, "out": 0})
    assert offsets.shifts(moving["j"], tensors, {"a": 0, "out": 0})  # j moves both alike


def test_the_blocks_of_an_spmd_task_share_one_timeline(monkeypatch):
    import pypto.sim.simulator as sim

    a, out = torch.randn(BLOCKS * R, C), torch.zeros(BLOCKS * R, C)
    compiled = blocks.compile(a, out)
    calls = []
    real = sim.simulate_together
    monkeypatch.setattr(sim, "simulate_together", lambda *args, **kw: calls.append(1) or real(*args, **kw))
    report = compiled.run(a, out)
    assert torch.equal(out, torch.exp(a))
    assert len(calls) == 2  # block 0, and block 1 to learn how a block's effects move
    assert len(report.tasks) == BLOCKS


def test_a_window_moving_against_a_fixed_one_of_the_same_tensor_is_not_shared():
    x = torch.randn(8 * R, C)
    (kernel,) = first_into_band.compile(x, 1).kernels.values()
    uses = offsets.moving(kernel)["i"]
    assert sorted(uses) == [("x", (0, 0), False), ("x", (R, 0), True)]
    assert not offsets.shifts(uses, {"x": x}, {"x": 0})
    for i in (0, 1, 3):  # i = 0 stores over what it loads: its own timeline, and right
        mine = x.clone()
        apply(simulate(kernel, (mine, i), A2A3), {"x": mine})
        want = x.clone()
        want[i * R:(i + 1) * R] = torch.exp(x[:R])
        assert torch.equal(mine, want)


def test_a_kernel_whose_effects_move_by_more_than_ints_gets_a_timeline_per_value():
    a, out = torch.randn(8 * R, C + 128), torch.zeros(8 * R, 64)
    (kernel,) = long_band.compile(a, out, 0).kernels.values()
    assert "i" in offsets.moving(kernel)
    for i in (0, 2, 5):
        timeline = simulate(kernel, (a, out, i), A2A3)
        assert timeline.skipped > 0
        apply(timeline, {"a": a, "out": out})
        assert torch.equal(out[i * R:(i + 1) * R], torch.exp(a[i * R:(i + 1) * R, 124:188]))
    assert _timelines(kernel).moving == {}  # each value keyed as any scalar is


I, J = n.Var("i"), n.Var("j")


def _store(*offs):
    from pypto.backend import MemorySpace
    from pypto.codegen.isa import Buf, TensorArg
    from pypto.ir.types import AtomicType, DataType

    tile = Buf(MemorySpace.Vec, n.Const(0), (8, 64), DataType.FP32)
    return Instr("TSTORE", None, None, "tile.store", (tile, tuple(offs), TensorArg("out"), AtomicType.None_))


@pytest.mark.parametrize("body, moves", [
    ((_store(n.BinOp("*", I, n.Const(8)), n.Const(0)),), True),
    ((ScalarAssign("x", n.BinOp("+", I, n.Const(3))), _store(n.Var("x"), n.Const(0))), True),
    ((_store(n.BinOp("*", I, J), n.Const(0)),), False),  # times another scalar
    ((_store(n.BinOp("%", I, n.Const(2)), n.Const(0)),), True),  # affine in an atom of i alone
    ((ScalarAssign("x", n.BinOp("//", I, n.Const(3))), _store(n.BinOp("*", n.Var("x"), n.Const(8)), I)), True),
    ((_store(n.BinOp("%", n.BinOp("+", I, J), n.Const(2)), n.Const(0)),), False),  # an atom must be of i alone
    ((_store(n.BinOp("*", n.BinOp("//", I, n.Const(2)), I), n.Const(0)),), False),  # not affine in its atoms
    ((_store(n.BinOp("/", I, n.Const(2)), n.Const(0)),), False),  # not an int
    ((Loop("k", n.Const(0), n.BinOp("//", I, n.Const(2)), n.Const(1), (_store(n.Const(0), n.Const(0)),)),),
     False),  # an atom as a trip count
    ((ScalarAssign("c", n.Const(1)),
      Loop("k", n.Const(0), n.Const(4), n.Const(1),
           (_store(n.BinOp("//", I, n.Var("c")), n.Const(0)), ScalarAssign("c", n.BinOp("+", n.Var("c"), n.Const(1)))))),
     False),  # an atom of a divisor carried from trip to trip
    ((ScalarAssign("c", n.Const(0)),
      Loop("k", n.Const(0), n.Const(4), n.Const(1),
           (ScalarAssign("c", n.BinOp("+", n.Var("c"), n.Const(1))), _store(n.BinOp("*", I, n.Const(8)), n.Const(0))))),
     True),  # a counter beside it
    ((Loop("k", n.Const(0), I, n.Const(1), (_store(n.Const(0), n.Const(0)),)),), False),  # a trip count
    ((Loop("k", n.Const(0), n.Const(4), n.Const(1),
           (ScalarAssign("x", n.BinOp("+", n.Var("x"), I)), _store(n.Var("x"), n.Const(0)))),), False),  # carried
])
def test_a_scalar_moves_only_offsets_when_nothing_else_reads_it(body, moves):
    from pypto.backend import CoreKind
    from pypto.codegen.isa import Kernel, Program
    from pypto.ir.types import DataType, ScalarType, TensorType

    params = (("out", TensorType((64, 64), DataType.FP32)), ("i", ScalarType(DataType.INDEX)),
              ("j", ScalarType(DataType.INDEX)))
    program = Program("k", CoreKind.AIV, params, (), tuple(body))
    kernel = Kernel("k", params, (program,))
    assert ("i" in offsets.moving(kernel)) is moves


def test_a_hazard_names_the_whole_overlap_wherever_the_tensors_lie():
    # the race checker's GM map is paged at real addresses: a page boundary inside the
    # bytes two accesses meet on must not cut the range the message names
    def args(cut):
        big = torch.zeros(64 * 1024 + 5 * R * 64)
        start = (-big.data_ptr() // 4) % (16 * 1024)  # the element at a 64 KiB boundary
        start += 16 * 1024 - (4096 - cut) // 4 - 4 * R * 64  # z (= base[4R:]) meets it `cut` bytes in
        base = big[start:start + 5 * R * 64].view(5 * R, 64)
        return torch.randn(R, 64), base[4 * R:], base[:4 * R], 4

    (kernel,) = spill.compile(*args(0)[:3], 0).kernels.values()
    for cut in (0, 1024, 1408, 2560, 3072):
        with pytest.raises(SimulatorHazard) as info:
            simulate_together((Launch(kernel, args(cut)),), A2A3)
        assert "bytes [0, 4096) of GM tensor 'z', which are bytes [16384, 20480) of GM tensor 'x'" in str(info.value), cut
