"""The dependency tracker on strided views (issue 38): a task given a window of a tensor —
one byte run per row — waits for the registered producer of every row it reads or
updates, not just the first row's, and registers itself as the producer of every row it
writes. Drawn orchestrations of tasks that write windows of y from x, then read windows of
y into windows of z: each task's edges (``RunReport.tasks``) are what a model of the rules
over y's and z's elements gives, both platforms give torch's values in program order, and
the tracker's size the scope stats report (``tensormap``: the byte segments that have a
producer) counts each stretch of bytes with one producer once."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import hypothesis.strategies as st
import torch
from hypothesis import given

from pypto.fuzz.graphs import kernel_from
from pypto.runtime import RunConfig

R, C = 16, 64  # fp32: a window 8, 16 or 24 columns wide is one run of 32-96 bytes per row


@st.composite
def windows(draw):
    """(rows, columns, first row, first column) of a window narrower than a row."""
    h, w = draw(st.integers(1, R)), draw(st.sampled_from([8, 16, 24]))
    return h, w, draw(st.integers(0, R - h)), draw(st.integers(0, (C - w) // 8)) * 8


@st.composite
def steps(draw):
    """Writers (a window of x into a window of y, op exp), then readers (a window of y into
    a window of z, op neg): no task writes what an earlier one read, so the rules order
    every pair that shares bytes."""
    writers = draw(st.lists(windows(), min_size=1, max_size=4))
    readers = draw(st.lists(st.tuples(windows(), st.integers(0, R), st.integers(0, C // 8)), min_size=1, max_size=3))
    out = [("y", None, w) for w in writers]
    for (h, w, r0, c0), r1, c1 in readers:  # z's window: the same shape, anywhere it fits
        out.append(("z", (h, w, r0, c0), (h, w, min(r1, R - h), min(c1 * 8, C - w))))
    return out


def source(plan) -> str:
    lines = ["import pypto.language as pl", "", "", "@pl.jit",
             "def graph(x: pl.Tensor, y: pl.Out[pl.Tensor], z: pl.Out[pl.Tensor]):"]
    for k, (dst, src, (h, w, r0, c0)) in enumerate(plan):
        lines.append(f"    d{k} = pl.slice({dst}, [{h}, {w}], [{r0}, {c0}])")
        if src is None:
            value = f"pl.exp(pl.load(x, [{r0}, {c0}], [{h}, {w}]))"
        else:
            sh, sw, sr, sc = src
            lines.append(f"    s{k} = pl.slice(y, [{sh}, {sw}], [{sr}, {sc}])")
            value = f"pl.neg(pl.load(s{k}, [0, 0], [{sh}, {sw}]))"
        lines += ["    with pl.at(level=pl.Level.CORE_GROUP):", f"        pl.store({value}, [0, 0], d{k})"]
    lines += ["    return y, z", ""]
    return "\n".join(lines)


def model(plan, x: torch.Tensor):
    """(each task's predecessors, y, z, the segments of bytes with one producer): a task
    waits for the last producer of each element it reads, and of each element of its
    destination once an earlier task wrote that tensor (its Out is then InOut); it becomes
    the producer of its destination's elements."""
    producer = {"y": torch.full((R, C), -1), "z": torch.full((R, C), -1)}
    value = {"y": torch.zeros(R, C), "z": torch.zeros(R, C)}
    written, preds = set(), []
    for k, (dst, src, (h, w, r0, c0)) in enumerate(plan):
        waits = set()
        if src is not None:
            sh, sw, sr, sc = src
            waits |= set(producer["y"][sr:sr + sh, sc:sc + sw].flatten().tolist())
            computed = -value["y"][sr:sr + sh, sc:sc + sw]
        else:
            computed = torch.exp(x[r0:r0 + h, c0:c0 + w])
        if dst in written:
            waits |= set(producer[dst][r0:r0 + h, c0:c0 + w].flatten().tolist())
        preds.append(sorted(waits - {-1}))
        producer[dst][r0:r0 + h, c0:c0 + w] = k
        value[dst][r0:r0 + h, c0:c0 + w] = computed
        written.add(dst)
    segments = 0
    for grid in producer.values():  # runs of one producer in address order, y and z apart
        flat = grid.flatten()
        starts = torch.cat([torch.tensor([True]), flat[1:] != flat[:-1]])
        segments += int((starts & (flat != -1)).sum())
    return preds, value["y"], value["z"], segments


@given(steps())
def test_property_a_window_waits_for_the_producer_of_every_row_it_reads_or_updates(plan):
    x = torch.randn(R, C, generator=torch.Generator().manual_seed(0))
    preds, want_y, want_z, segments = model(plan, x)
    with tempfile.TemporaryDirectory() as d:
        kernel = kernel_from(source(plan), "graph", Path(d))
        for platform in ("ref", "a2a3sim"):
            y, z = torch.zeros(R, C), torch.zeros(R, C)
            config = RunConfig(platform=platform, enable_scope_stats=True, output_dir=Path(d) / platform)
            report = kernel.compile(x, y, z, config=config).run(x, y, z)
            assert torch.equal(y, want_y) and torch.equal(z, want_z), platform
        stats = (Path(d) / "a2a3sim" / "dfx_outputs" / "scope_stats" / "scope_stats.jsonl").read_text()
    deps = {t.task_id: t.deps for t in report.tasks}
    assert deps == {f"r0t{k}": tuple(f"r0t{p}" for p in ps) for k, ps in enumerate(preds)}
    *_, end = (json.loads(line) for line in stats.splitlines())
    assert end["phase"] == "end" and end["tensormap"] == segments
