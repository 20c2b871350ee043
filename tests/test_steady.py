"""Steady loops fast-forwarded (``pypto.sim.fastforward.steady``): a loop whose trips are the same to
the machine, once the scheduler's state repeats, is produced from its last simulated trip —
and must give exactly the timeline, trace, data and errors of simulating it trip by trip."""

from __future__ import annotations

import contextlib

import pytest
import torch
from helpers import compile_case
from hypothesis import event, given, settings
from hypothesis import strategies as st

import pypto.language as pl
from pypto.backend import A2A3
from pypto.codegen.isa import Instr, Loop, ScalarAssign
from pypto.errors import PyptoError
from pypto.fuzz import strategies as ps
from pypto.fuzz.checks import sync_edges as edges_of
from pypto.fuzz.checks import without_edge
from pypto.ir import nodes as n
from pypto.sim.fastforward import drift, loop_races
from pypto.sim.ops import numerics as num
from pypto.sim.timing.affine import uniform_trips
from pypto.sim.simulator import Launch, apply, simulate_together

TR, TC = 64, 128


@pl.jit
def pipelined(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.pipeline(a.shape[0] // TR, stage=2):
            tile = pl.load(a, [i * TR, 0], [TR, TC])
            pl.store(pl.exp(tile), [i * TR, 0], out)
    return out


@pl.jit
def two_loops(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        half = a.shape[0] // TR // 2
        for i in pl.pipeline(half, stage=2):
            pl.store(pl.exp(pl.load(a, [i * TR, 0], [TR, TC])), [i * TR, 0], out)
        for i in pl.range(half):
            pl.store(pl.neg(pl.load(a, [(i + half) * TR, 0], [TR, TC])), [(i + half) * TR, 0], out)
    return out


@pl.jit
def backwards(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        last = a.shape[0] // TR - 1
        for i in pl.range(last + 1):
            pl.store(pl.exp(pl.load(a, [(last - i) * TR, 0], [TR, TC])), [(last - i) * TR, 0], out)
    return out


@pl.jit
def in_place_and_copy(x: pl.InOut[pl.Tensor], y: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(x.shape[0] // TR):
            u = pl.adds(pl.load(x, [i * TR, 0], [TR, TC]), 1.0)
            pl.store(u, [i * TR, 0], x)
            pl.store(u, [i * TR, 0], y)
    return x, y


def _kernel(tiles: int):
    a, out = torch.randn(tiles * TR, TC), torch.zeros(tiles * TR, TC)
    (kernel,) = pipelined.compile(a, out).kernels.values()
    return kernel, (a, out)


def _both(kernel, args):
    """(fast-forwarded, trip by trip): the same launch both ways."""
    return _run(kernel, args, True), _run(kernel, args, False)


def _run(kernel, args, steady_loops: bool, one_thread: bool = True):
    """What a launch gives: its figures, trace, footprint and outputs — or its error."""
    copies = tuple(a.clone() if isinstance(a, torch.Tensor) else a for a in args)
    launch = Launch(kernel, copies)
    try:
        timeline = simulate_together((launch,), A2A3, steady=steady_loops)
        # batches of trips are larger on one thread (as runs are, pypto.runtime.dispatch)
        with num.one_thread() if one_thread else contextlib.nullcontext():
            apply(timeline, launch.tensors())
    except PyptoError as exc:
        return type(exc).__name__, str(exc)
    events = sorted((e.core, e.pipe, e.name, e.start, e.end, e.kind, e.detail, e.flag, e.pos)
                    for e in timeline.report().events)
    return {"cycles": timeline.cycles, "pipes": timeline.pipe_cycles, "counts": (timeline.instructions,
            timeline.sync_instructions), "memories": timeline.memories, "footprint": sorted(map(repr, timeline.footprint)),
            "events": events, "items": len(timeline.items), "skipped": timeline.skipped,
            "outputs": [a for a in copies if isinstance(a, torch.Tensor)]}


def _assert_same(fast, slow, what: str) -> None:
    if isinstance(fast, tuple) or isinstance(slow, tuple):
        assert fast == slow, what
        return
    for key in ("cycles", "pipes", "counts", "memories", "footprint", "events", "items"):
        assert fast[key] == slow[key], f"{what}: {key}"
    for x, y in zip(fast["outputs"], slow["outputs"]):
        assert ps.bits_equal(x, y), what


def test_the_seed_pipelined_kernel_fast_forwards_to_the_trip_by_trip_timeline():
    kernel, args = _kernel(128)
    fast, slow = _both(kernel, args)
    assert slow["skipped"] == 0 and fast["skipped"] > 48  # of its 64 trips (two tiles each)
    _assert_same(fast, slow, "pipelined x128")
    assert torch.equal(fast["outputs"][1], torch.exp(args[0]))


def test_two_fast_forwarded_loops_of_one_kernel_each_repeat_their_own_trip():
    a, out = torch.randn(128 * TR, TC), torch.zeros(128 * TR, TC)
    (kernel,) = two_loops.compile(a, out).kernels.values()
    fast, slow = _both(kernel, (a, out))
    assert fast["skipped"] > 60
    _assert_same(fast, slow, "two loops")


def test_windows_moving_backwards_fast_forward_too():
    a, out = torch.randn(64 * TR, TC), torch.zeros(64 * TR, TC)
    (kernel,) = backwards.compile(a, out).kernels.values()
    fast, slow = _both(kernel, (a, out))
    assert fast["skipped"] > 40
    _assert_same(fast, slow, "backwards")
    assert torch.equal(fast["outputs"][1], torch.exp(a))


def test_trips_that_cannot_batch_run_trip_by_trip_from_their_start():
    # y's dtype is not the compiled one, so its store converts: those trips run one by
    # one — and the in-place update of x before it in the trip is done once, not again
    x, y = torch.randn(64 * TR, TC), torch.zeros(64 * TR, TC)
    (kernel,) = in_place_and_copy.compile(x, y).kernels.values()
    args = (x, torch.zeros(64 * TR, TC, dtype=torch.float16))
    fast, slow = _both(kernel, args)
    assert fast["skipped"] > 40
    _assert_same(fast, slow, "in place, and a converting store")
    assert torch.equal(fast["outputs"][0], x + 1)


def test_a_fast_forwarded_timeline_keeps_one_trips_items_and_makes_the_rest_as_read():
    kernel, args = _kernel(128)
    timeline = simulate_together((Launch(kernel, args),), A2A3)
    assert timeline.items.stored() * 4 < len(timeline.items)
    assert len(list(timeline.items)) == len(timeline.items) == timeline.instructions + timeline.sync_instructions


def test_every_missing_sync_of_a_long_loop_is_the_same_hazard_either_way():
    # a race the last trip or the code after the loop has with skipped trips is checked
    # against their stand-ins, and said exactly as the trip by trip check says it
    kernel, args = _kernel(64)
    for edge in edges_of(kernel):
        broken = without_edge(kernel, edge)
        fast, slow = _both(broken, args)
        assert isinstance(slow, tuple) and slow[0] in ("SimulatorHazard", "SimulatorError"), edge
        assert fast == slow, edge


@settings(deadline=None)
@given(case=ps.steady_programs(), one_thread=st.booleans())
def test_property_a_fast_forwarded_loop_is_the_loop_simulated_trip_by_trip(case, one_thread):
    compiled = compile_case(case)
    for kernel in compiled.kernels.values():
        fast, slow = _run(kernel, case.args(), True, one_thread), _run(kernel, case.args(), False, False)
        _assert_same(fast, slow, case.recipe)
        event(f"{case.program.name}: {'fast-forwarded' if isinstance(fast, dict) and fast['skipped'] else 'trip by trip'}")


# ----------------------------------------------------------------------------- which loops qualify


def _loop(*body, var="i"):
    return Loop(var, n.Const(0), n.Const(32), n.Const(1), body)


def _offset(e):
    """A store of a fixed buffer at GM offsets [e, 0]."""
    from pypto.backend import MemorySpace
    from pypto.codegen.isa import Buf, TensorArg
    from pypto.ir.types import AtomicType, DataType

    tile = Buf(MemorySpace.Vec, n.Const(0), (8, 64), DataType.FP32)
    return Instr("TSTORE", None, None, "tile.store", (tile, (e, n.Const(0)), TensorArg("out"), AtomicType.None_))


I, K = n.Var("i"), n.Var("k")


@pytest.mark.parametrize("body, period", [
    ((_offset(n.BinOp("*", I, n.Const(8))),), 1),  # offsets affine in the trip
    ((ScalarAssign("k", n.BinOp("+", I, n.Const(1))), _offset(n.BinOp("*", K, n.Const(8)))), 1),
    ((_offset(n.BinOp("%", I, n.Const(2))),), 2),  # alike every two trips
    ((_offset(n.BinOp("*", n.BinOp("//", I, n.Const(2)), n.Const(8))),), 2),  # and drifting by 8 every two
    ((_offset(n.BinOp("+", n.BinOp("%", I, n.Const(2)), n.BinOp("%", I, n.Const(3)))),), 6),
    ((_offset(n.BinOp("%", I, n.Const(11))),), 0),  # too long a period to be worth it
    ((_offset(n.BinOp("*", I, I)),), 0),  # not affine
    ((_offset(K), ScalarAssign("k", n.BinOp("+", K, n.Const(8)))), 0),  # carried from the trip before
    ((_loop(_offset(I), var="j"),), 0),  # a nested loop
])
def test_uniform_trips_are_those_whose_offsets_alone_move_every_period(body, period):
    assert uniform_trips(_loop(*body), {}, 0, 1) == period


def test_accesses_meet_across_trips_where_their_windows_overlap():
    gm = loop_races.GM
    tile = (gm, 0, 64, True, 64)  # a 64-byte window moving 64 bytes a trip
    assert loop_races._meet(tile, tile, 100) is None  # next to its neighbours, never on them
    assert loop_races._meet(tile, (gm, 64, 128, False, 64), 100) is None  # what it moves on to, later still
    assert loop_races._meet((gm, 128, 192, True, 64), (gm, 0, 64, False, 64), 100) == 2  # two trips later
    assert loop_races._meet((gm, 0, 64, True, 0), (gm, 32, 96, False, 0), 100) == 1  # fixed bytes: every trip
    with pytest.raises(loop_races.Unshown):  # windows moving at different rates over the same bytes
        loop_races._meet((gm, 0, 64, True, 64), (gm, 0, 64, False, 128), 100)
    assert list(loop_races._skipped_ranges(0, 64, 64, 3)) == [(64, 256)]
    assert list(loop_races._skipped_ranges(0, 64, 128, 2)) == [(128, 192), (256, 320)]
    assert list(loop_races._skipped_ranges(0, 64, -32, 2)) == [(-64, 32)]


def test_a_trip_step_of_values_moves_ints_only():
    delta = drift.delta((3, (64, 0), "x", 1.5), (3, (32, 0), "x", 1.5))
    assert delta == (None, (32, None), None, None)
    assert [drift.moved((3, (64, 0), "x", 1.5), delta, j) for j in (1, 2)] == [(3, (96, 0), "x", 1.5),
                                                                              (3, (128, 0), "x", 1.5)]
    for now, before in ((0.0, -0.0), (True, False), ("a", "b")):
        with pytest.raises(drift.Unshown):
            drift.delta((now,), (before,))
