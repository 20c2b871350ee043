"""The task-race check (issue 39): GM windows as strided runs cover exactly their bytes and
meet exactly when they share one; the check that merges them reports exactly the races the
byte-range-by-byte-range check did (``race_oracle``: same pair, same message, same order) —
on drawn task graphs of views, strided and interleaved windows, SPMD blocks, atomic adds and
unordered pairs, and on orchestrations of strided windows run through ``@pl.jit``."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path
from unittest import mock

import hypothesis.strategies as st
import torch
from hypothesis import given

import race_oracle
from pypto.chip import races
from pypto.chip.races import TaskRace
from pypto.chip.settling import Settling
from pypto.chip.tasks import Placement, Task, TaskArg
from pypto.fuzz.graphs import kernel_from
from pypto.ir.types import ArgDirection
from pypto.runtime import RunConfig
from pypto.sim.record import ATOMIC_ADD
from pypto.sim.accesses.strided import Strided, meet, union, window
from pypto.sim.accesses.views import window_runs

ELEMENTS = 640  # one storage all views share, so that views of it may overlap


@st.composite
def views(draw, storage):
    """A view of ``storage``: any shape (1-3 axes) and element strides (0 included: rows that
    overlap, axes that interleave), inside it."""
    rank = draw(st.integers(1, 3))
    shape = [draw(st.integers(1, 6)) for _ in range(rank)]
    strides = [draw(st.sampled_from([0, 1, 2, 3, 5, 8, 9, 16, 24, 40, 64, 100])) for _ in range(rank)]
    reach = sum((n - 1) * s for n, s in zip(shape, strides))
    offset = draw(st.integers(0, ELEMENTS - 1 - reach)) if reach < ELEMENTS else None
    if offset is None:
        strides = [1] * rank
        shape = [min(n, 4) for n in shape]
        offset = 0
    return torch.as_strided(storage, shape, strides, offset)


@st.composite
def windows(draw, view):
    """(offsets, extents) of a window inside ``view``."""
    offsets, extents = [], []
    for n in view.shape:
        o = draw(st.integers(0, n - 1))
        offsets.append(o)
        extents.append(draw(st.integers(1, n - o)))
    return tuple(offsets), tuple(extents)


STORAGES = {torch.float32: torch.zeros(ELEMENTS), torch.float16: torch.zeros(ELEMENTS, dtype=torch.float16)}


@st.composite
def window_sets(draw):
    """A few windows of views of one storage, as (view, offsets, extents)."""
    storage = STORAGES[draw(st.sampled_from(sorted(STORAGES, key=str)))]
    out = []
    for _ in range(draw(st.integers(1, 4))):
        view = draw(views(storage))
        out.append((view, *draw(windows(view))))
    return out


def _bytes(ranges) -> set:
    return {b for lo, hi in ranges for b in range(lo, hi)}


def _strided_bytes(runs) -> set:
    return {r.base + i * r.stride + b for r in runs for i in range(r.rows) for b in range(r.size)}


@given(window_sets(), window_sets())
def test_property_strided_runs_hold_a_windows_bytes_and_meet_exactly_when_they_share_one(a, b):
    for v, o, e in a + b:
        assert _strided_bytes(window(v, o, e)) == _bytes(window_runs(v, o, e))
    ua = union(r for v, o, e in a for r in window(v, o, e))
    ub = union(r for v, o, e in b for r in window(v, o, e))
    want_a = _bytes(r for v, o, e in a for r in window_runs(v, o, e))
    want_b = _bytes(r for v, o, e in b for r in window_runs(v, o, e))
    assert _strided_bytes(ua) == want_a and _strided_bytes(ub) == want_b
    assert all(p.base <= q.base for p, q in zip(ua, ua[1:]))
    assert meet(ua, ub) == bool(want_a & want_b) == meet(ub, ua)


@st.composite
def strided_runs(draw):
    """A strided run near address 0 (rows apart: the stride past the size), mostly of
    several rows."""
    size, rows = draw(st.integers(1, 4)), draw(st.sampled_from([1, 2, 3, 4, 6]))
    stride = 0 if rows == 1 else size + draw(st.integers(1, 7))
    return Strided(draw(st.integers(0, 24)), stride, size, rows)


@given(strided_runs(), strided_runs(), st.lists(strided_runs(), max_size=2))
def test_property_strided_runs_of_any_strides_meet_exactly_when_they_share_a_byte(p, q, more):
    a, b = sorted([p, *more]), [q]
    assert meet(tuple(a), tuple(b)) == bool(_strided_bytes(a) & _strided_bytes(b)) == meet(tuple(b), tuple(a))
    assert _strided_bytes(union(a)) == _strided_bytes(a)


def test_a_k_blocked_weight_window_and_its_input_rows_are_one_run_each():
    """What keeps the check's work independent of the rows: windows that continue each other
    are one run."""
    w, x = torch.zeros(512, 256, dtype=torch.bfloat16), torch.zeros(16, 512, dtype=torch.bfloat16)
    blocks = union(r for k in range(4) for r in window(w, (k * 128, 40), (128, 40)))
    assert blocks == (Strided(w.data_ptr() + 80, 512, 80, 512),)
    rows = union(r for k in range(4) for r in window(x, (0, k * 128), (16, 128)))
    assert rows == (Strided(x.data_ptr(), 0, 16 * 512 * 2, 1),)
    assert union(blocks + blocks) == blocks  # a window read twice
    rows = [r for i in (0, 1, 2) for r in window(w, (i, 0), (1, 40))]  # row after row, one at a time
    assert union(rows) == (Strided(w.data_ptr(), 512, 80, 3),)
    neighbour = union(window(w, (0, 80), (512, 40)))
    assert not meet(blocks, neighbour) and meet(blocks, union(window(w, (511, 79), (1, 2))))


# ----------------------------------------------------------------------------- the check against the oracle

MODES = (False, False, True, ATOMIC_ADD)


@st.composite
def task_graphs(draw):
    """Tasks with placements in time (SPMD: several blocks), edges to earlier tasks, and per
    block windows of views of one storage read, written or added into — most pairs of
    windows near each other."""
    storage = STORAGES[draw(st.sampled_from(sorted(STORAGES, key=str)))]
    tensors = [draw(views(storage)) for _ in range(draw(st.integers(1, 3)))]
    tasks, footprints = [], {}
    for number in range(draw(st.integers(2, 6))):
        # edges to earlier tasks, mostly: pairs that overlap in time though ordered are not races
        earlier = st.integers(0, max(number - 1, 0))
        preds = tuple(sorted(draw(st.sets(earlier, min_size=1, max_size=2)) - draw(st.sets(earlier, max_size=1))))
        preds = preds if number else ()
        args = tuple(TaskArg(k, f"p{k}", ArgDirection.InOut, t, f"t{k}") for k, t in enumerate(tensors))
        task = Task(number, 0, number, f"k{number}", "aiv", args, None, 0, 0, preds=preds)
        for block in range(draw(st.sampled_from([1, 1, 2, 3]))):
            start = draw(st.integers(0, 12))
            task.placements.append(Placement(block, None, start, start, start + draw(st.integers(1, 8)), 0))
            footprints[number, block] = [(draw(st.sampled_from(args)), draw(st.sampled_from(MODES)))
                                         for _ in range(draw(st.integers(0, 3)))]
            footprints[number, block] = [(a, m, *draw(windows(a.tensor))) for a, m in footprints[number, block]]
        task.start, task.end = min(p.start for p in task.placements), max(p.end for p in task.placements)
        tasks.append(task)
    return tasks, footprints


def _outcome(fn):
    try:
        fn()
    except TaskRace as race:
        return str(race), race.hint, race.tasks
    return None


def _callbacks(footprints):
    def accesses(task, block):
        return [(lo, hi, mode, a) for a, mode, o, e in footprints[task.number, block]
                for lo, hi in window_runs(a.tensor, o, e)]

    def strided(task, block):
        return [(window(a.tensor, o, e), mode) for a, mode, o, e in footprints[task.number, block]]

    return accesses, strided


@given(task_graphs())
def test_property_the_check_reports_the_races_the_range_by_range_check_did(graph):
    tasks, footprints = graph
    accesses, strided = _callbacks(footprints)
    want = _outcome(lambda: race_oracle.check(tasks, accesses))
    assert _outcome(lambda: races.check(tasks, accesses, strided)) == want
    if want is not None:  # it names the pair's tasks, and no other; a block of each that has several
        message, hint, pair = want
        assert set(re.findall(r"\b(?:r\d+t\d+|None)\b", message + hint)) == {tasks[n].name for n in pair}
        assert message.count(" (block ") == sum(len(tasks[n].placements) > 1 for n in pair)


def test_the_oracle_and_the_check_report_a_race_between_interleaved_rows_and_none_between_columns():
    """Two unordered tasks at once on columns of one tensor: apart, no race; one column
    shared in the last row only, a race there — found by both."""
    t = torch.zeros(64, 48)
    args = (TaskArg(0, "p", ArgDirection.InOut, t, "t"),)

    def graph(second_cols):
        tasks = [Task(n, 0, n, f"k{n}", "aiv", args, None, 0, 0) for n in range(2)]
        for task in tasks:
            task.placements.append(Placement(0, None, 0, 0, 10, 10))
            task.start, task.end = 0, 10
        footprints = {(0, 0): [(args[0], True, (0, 0), (64, 16))],
                      (1, 0): [(args[0], False, (0, 16), (63, 16)), (args[0], False, second_cols, (1, 16))]}
        return tasks, footprints

    for cols, raced in (((63, 16), False), ((63, 15), True)):
        tasks, footprints = graph(cols)
        accesses, strided = _callbacks(footprints)
        want = _outcome(lambda: race_oracle.check(tasks, accesses))
        assert _outcome(lambda: races.check(tasks, accesses, strided)) == want
        assert (want is not None) == raced
        if raced:
            assert "t[63, 15]" in want[0]


# ----------------------------------------------------------------------------- through @pl.jit

R, C = 16, 64


@st.composite
def strided_scopes(draw):
    """Source lines of an orchestration: scopes (some in pl.parallel loops over column blocks,
    some SPMD, some opting out) that load a window of x or y and store a window of y or z
    — windows narrower than a row, so each is one range per row."""
    lines = []
    for k in range(draw(st.integers(2, 5))):
        h, w = draw(st.sampled_from([4, 8, 16])), draw(st.sampled_from([8, 16, 24]))
        r0, c0 = draw(st.integers(0, (R - h) // 4)) * 4, draw(st.integers(0, (C - w) // 8)) * 8
        src, dst = draw(st.sampled_from(["x", "y", "y"])), draw(st.sampled_from(["y", "y", "z"]))
        rs, cs = draw(st.integers(0, (R - h) // 4)) * 4, draw(st.integers(0, (C - w) // 8)) * 8
        op = draw(st.sampled_from(["exp", "neg"]))
        form = draw(st.sampled_from(["scope", "scope", "parallel", "spmd", "opt_out"]))
        n = (C - max(c0, cs)) // w
        if form in ("parallel", "spmd") and n >= 2:
            step = f"i * {w}"
            value = f"pl.{op}(pl.load({src}, [{rs}, {cs} + {step}], [{h}, {w}]))"
            if form == "spmd":
                lines += [f"    for i in pl.spmd({n}):",
                          f"        pl.store({value}, [{r0}, {c0} + {step}], {dst})"]
            else:
                lines += [f"    for i in pl.parallel({n}):", "        with pl.at(level=pl.Level.CORE_GROUP):",
                          f"            pl.store({value}, [{r0}, {c0} + {step}], {dst})"]
            continue
        opt = f", no_dep_args=[{dst}]" if form == "opt_out" else ""
        value = f"pl.{op}(pl.load({src}, [{rs}, {cs}], [{h}, {w}]))"
        lines += [f"    with pl.at(level=pl.Level.CORE_GROUP{opt}):", f"        pl.store({value}, [{r0}, {c0}], {dst})"]
    return lines


def _source(lines) -> str:
    return "\n".join(["import pypto.language as pl", "", "", "@pl.jit",
                      "def graph(x: pl.Tensor, y: pl.Out[pl.Tensor], z: pl.Out[pl.Tensor]):", *lines,
                      "    return y, z", ""])


@given(strided_scopes())
def test_property_orchestrations_of_strided_windows_race_as_the_oracle_says(lines):
    seen = []
    check = races.check

    def both(tasks, accesses, strided):
        want = _outcome(lambda: race_oracle.check(tasks, accesses))
        got = _outcome(lambda: check(tasks, accesses, strided))
        seen.append((want, got))
        check(tasks, accesses, strided)

    with tempfile.TemporaryDirectory() as d, mock.patch.object(races, "check", both):
        kernel = kernel_from(_source(lines), "graph", Path(d))
        x = torch.randn(R, C, generator=torch.Generator().manual_seed(0))
        y, z = torch.zeros(R, C), torch.zeros(R, C)
        try:
            kernel.compile(x, y, z, config=RunConfig(platform="a2a3sim")).run(x, y, z)
        except TaskRace:
            pass
    assert seen and all(want == got for want, got in seen), seen


# ----------------------------------------------------------------------------- the orchestrator's element reads


class _Settled(Settling):
    """Just what ``Settling._touches`` reads: each task's blocks and their windows."""

    def __init__(self, tasks, footprints):
        self.launches = {t.number: [None] * len(t.placements) for t in tasks}
        self.footprints = {}
        self._strided = _callbacks(footprints)[1]

    def _windows(self, t, block=0):
        return self._strided(t, block)


@given(task_graphs(), st.data())
def test_property_an_element_the_orchestrator_reads_or_writes_meets_a_task_as_its_byte_ranges_do(graph, data):
    """What the orchestrator waits on before it reads or writes an element (a task writing
    it; a task touching it at all) is decided on the task's runs, merged once per task: the
    same answer as every byte range of every block, for any element of any dtype's width."""
    tasks, footprints = graph
    accesses = _callbacks(footprints)[0]
    storage = next(iter(tasks[0].args)).tensor
    base, size = storage.data_ptr() - storage.storage_offset() * storage.element_size(), storage.element_size()
    settled = _Settled(tasks, footprints)
    for _ in range(4):
        lo = base + data.draw(st.integers(0, ELEMENTS - 1)) * size
        hi = lo + data.draw(st.sampled_from([1, size, 2 * size]))
        for t in tasks:
            ranges = [(a, b, mode) for block in range(len(t.placements)) for a, b, mode, _ in accesses(t, block)]
            for writes in (True, False):
                want = any(a < hi and lo < b and (mode or not writes) for a, b, mode in ranges)
                assert settled._touches(t, lo, hi, writes) == want
