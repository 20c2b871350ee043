"""Random task graphs: orchestrations of 2-12 tasks over a few tensors, their bands read
and written by elementwise scopes, some in pl.parallel / pl.range loops. A small model of
the runtime's rules (written here from the rules, not from the tracker) says which graphs
order every pair of tasks that touch the same band with a writer; those give the same
bits on a2a3sim as on ref and as torch in program order. An opt-out that drops a needed
edge is reported as a race."""

import runpy

import hypothesis.strategies as st
import torch
from hypothesis import assume, given, settings

from pypto.chip.races import TaskRace
from pypto.runtime import RunConfig

R, C, BANDS = 16, 128, 4
INPUTS = ("x0", "x1")
OUTPUTS = ("y0", "y1")
SCRATCH = ("s0",)
OPS = {"exp": lambda t: torch.exp(t), "neg": lambda t: -t, "add": lambda a, b: a + b, "mul": lambda a, b: a * b}


@st.composite
def scopes(draw, readable, loop: str | None):
    """One pl.at scope: (op, [(tensor, band)], (tensor, band)); a band is an int or "i"."""
    op = draw(st.sampled_from(sorted(OPS)))
    arity = 2 if op in ("add", "mul") else 1
    band = st.sampled_from(["i", 0]) if loop else st.integers(0, BANDS - 1)
    srcs = [(draw(st.sampled_from(readable)), draw(band)) for _ in range(arity)]
    dst = (draw(st.sampled_from(OUTPUTS + SCRATCH)), draw(band))
    return op, srcs, dst


@st.composite
def graphs(draw):
    steps, written = [], set()
    while len(steps) < draw(st.integers(2, 7)):
        readable = list(INPUTS) + sorted(written)
        if draw(st.booleans()):
            kind = draw(st.sampled_from(["parallel", "range"]))
            trips = draw(st.integers(2, BANDS))
            scope = draw(scopes(readable, kind))
            steps.append(("loop", kind, trips, scope))
        else:
            scope = draw(scopes(readable, None))
            steps.append(("scope", None, 1, scope))
        written.add(scope[2][0])
    return steps


def _band(b, i):
    return i if b == "i" else b


def source(steps, opt_out: tuple | None = None) -> str:
    """The entry; ``opt_out`` = (op, band): then a pair at the end — a task writing all of a
    fresh tensor w from x0, and one reading a band of w with no_dep_args=[w] into z."""
    lines = ["import pypto.language as pl", "", "",
             "@pl.jit", f"def graph({', '.join(f'{x}: pl.Tensor' for x in INPUTS)}, "
             f"{', '.join(f'{y}: pl.Out[pl.Tensor]' for y in OUTPUTS + ('z',))}):",
             f"    s0 = pl.create_tensor([{BANDS * R}, {C}], pl.FP32)",
             f"    w = pl.create_tensor([{BANDS * R}, {C}], pl.FP32)"]
    for form, kind, trips, (op, srcs, (dst, band)) in steps:
        indent = "    "
        if form == "loop":
            lines.append(f"    for i in pl.{kind}({trips}):")
            indent = "        "
        lines.append(f"{indent}with pl.at(level=pl.Level.CORE_GROUP):")
        loads = [f"pl.load({t}, [{b} * {R}, 0], [{R}, {C}])" for t, b in srcs]
        value = f"pl.{op}({', '.join(loads)})"
        lines.append(f"{indent}    pl.store({value}, [{band} * {R}, 0], {dst})")
    if opt_out is not None:
        op, band = opt_out
        lines += ["    with pl.at(level=pl.Level.CORE_GROUP):",
                  f"        pl.store(pl.{op}(pl.load(x0, [0, 0], [{BANDS * R}, {C}])), [0, 0], w)",
                  "    with pl.at(level=pl.Level.CORE_GROUP, no_dep_args=[w]):",
                  f"        pl.store(pl.neg(pl.load(w, [{band * R}, 0], [{R}, {C}])), [{band * R}, 0], z)"]
    lines.append(f"    return {', '.join(OUTPUTS + ('z',))}")
    return "\n".join(lines) + "\n"


def oracle(steps, inputs: dict) -> dict:
    """torch, in program order."""
    t = {name: v.clone() for name, v in inputs.items()}
    for name in OUTPUTS + SCRATCH:
        t[name] = torch.zeros(BANDS * R, C)
    for form, kind, trips, (op, srcs, (dst, band)) in steps:
        for i in range(trips):
            operands = [t[x][_band(b, i) * R:(_band(b, i) + 1) * R] for x, b in srcs]
            value = OPS[op](*operands)
            d = _band(band, i)
            t[dst][d * R:(d + 1) * R] = value
    return t


def race_free(steps) -> bool:
    """The rules, tensor by tensor (each task is given whole tensors): an Out argument is
    InOut in a sequential loop or after an earlier writer of its tensor; Input and InOut
    wait for the tensor's last registered producer, InOut and OutputExisting register.
    Race-free when every two tasks touching one band, one writing, are ordered."""
    tasks, producer, written = [], {}, set()
    for form, kind, trips, (op, srcs, (dst, band)) in steps:
        read_names = {x for x, _ in srcs}
        direction = "InOut" if dst in read_names or kind == "range" or dst in written else "OutputExisting"
        for i in range(trips):
            preds = {producer[x] for x in read_names if x in producer}
            if direction == "InOut" and dst in producer:
                preds.add(producer[dst])
            number = len(tasks)
            before = set(preds)
            for p in preds:
                before |= tasks[p]["before"]
            tasks.append({"before": before, "reads": {(x, _band(b, i)) for x, b in srcs},
                          "writes": {(dst, _band(band, i))}})
            producer[dst] = number
        written.add(dst)
    for j, b in enumerate(tasks):
        for i in range(j):
            a = tasks[i]
            conflict = a["writes"] & (b["reads"] | b["writes"]) or b["writes"] & a["reads"]
            if conflict and i not in b["before"]:
                return False
    return True


def _load(tmp_path, text: str, name: str):
    path = tmp_path / f"{name}.py"
    path.write_text(text)
    return runpy.run_path(str(path))["graph"]


def _inputs():
    g = torch.Generator().manual_seed(0)
    return {x: torch.randn(BANDS * R, C, generator=g) for x in INPUTS}


def _run(kernel, inputs, platform: str):
    outs = [torch.zeros(BANDS * R, C) for _ in OUTPUTS]
    args = [inputs[x] for x in INPUTS] + outs + [torch.zeros(BANDS * R, C)]
    kernel.compile(*args, config=RunConfig(platform=platform)).run(*args)
    return dict(zip(OUTPUTS, outs))


@settings(deadline=None)
@given(steps=graphs())
def test_property_race_free_graphs_give_the_same_bits_everywhere(tmp_path_factory, steps):
    kernel = _load(tmp_path_factory.mktemp("g"), source(steps), "graph")
    inputs = _inputs()
    want = oracle(steps, inputs)
    ref = _run(kernel, inputs, "ref")
    for y in OUTPUTS:
        assert torch.equal(ref[y], want[y])
    if race_free(steps):
        sim = _run(kernel, inputs, "a2a3sim")
        for y in OUTPUTS:
            assert torch.equal(sim[y], want[y]), source(steps)
    else:  # the schedule may or may not have run the unordered pair apart; if it ran, it is the program's
        try:
            sim = _run(kernel, inputs, "a2a3sim")
        except TaskRace:
            return
        for y in OUTPUTS:
            assert torch.equal(sim[y], want[y]), source(steps)


@settings(deadline=None)
@given(steps=graphs(), op=st.sampled_from(["exp", "neg"]), band=st.integers(0, BANDS - 1))
def test_property_an_opt_out_that_drops_a_needed_edge_is_a_race(tmp_path_factory, steps, op, band):
    # the pair's producer waits for nothing and runs longer than the orchestrator takes to
    # submit the consumer, which waits for nothing either: they overlap, or the consumer runs first
    assume(race_free(steps))  # the only race is the one the opt-out makes
    text = source(steps, opt_out=(op, band))
    kernel = _load(tmp_path_factory.mktemp("g"), text, "graph")
    try:
        _run(kernel, _inputs(), "a2a3sim")
    except TaskRace as race:
        assert "no dependency orders them" in race.message and "'w'" not in race.message
        assert f"w[{band * R}, 0]" in race.message
        return
    raise AssertionError(f"the consumer's opt-out dropped its edge on the producer, and no race was reported:\n{text}")
