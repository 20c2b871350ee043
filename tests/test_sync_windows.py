"""GM windows and the syncs between them: a store and a later load of one tensor are ordered
exactly when their windows share an element — at every adjacency (a gap, touching, one row
or column shared), in both directions, on both axes, across loop iterations and pipeline
stages. Sound: the simulator reports no hazard and gives ``ref``'s bits. Minimal: deleting
any one inserted sync makes the simulator report a hazard (the pattern of
``tests/test_simulator.py``), so touching windows never cost a sync."""

import pytest
import torch
from helpers import program_text
from hypothesis import given
from hypothesis import strategies as st
from test_simulator import assert_every_sync_is_needed

from pypto.codegen.isa import SetFlag, walk
from pypto.lang import parse
from pypto.runtime import RunConfig
from pypto.runtime.compiled import compile_program
from pypto.backend import Pipe

ROWS, COLS = 128, 256  # the shared tensor; every window stays inside it
SENTINEL = -777.0  # outputs start as this, so "stored nothing" differs from "stored zeros"
PARAMS = ("a", "buf", "out", "keep")


def window_program(store, load, loop=None):
    """``x`` (from ``a``) is stored into window ``store`` = (row, col, rows, cols) of ``buf``,
    then window ``load`` of ``buf`` is read back as ``y``. ``x`` is stored again at the end,
    so x and y never share a buffer: only the GM windows can order y's load after x's store.
    With ``loop = (header, span, stride)`` the body runs in ``for i in <header>`` (whose
    values are below ``span``) and both windows move down by ``i * stride`` rows."""
    (r1, c1, h1, w1), (r2, c2, h2, w2) = store, load
    header, span, stride = loop or (None, 1, 0)

    def row(step, base):
        return f"i * {step} + {base}" if header else str(base)

    body = [f"x = pl.tile.load(a, [{row(h1, 0)}, 0], [{h1}, {w1}])",
            f"pl.tile.store(x, [{row(stride, r1)}, {c1}], buf)",
            f"y = pl.tile.load(buf, [{row(stride, r2)}, {c2}], [{h2}, {w2}])",
            f"pl.tile.store(y, [{row(h2, 0)}, 0], out)",
            f"pl.tile.store(x, [{row(h1, 0)}, 0], keep)"]
    if header:
        body = [f"for i in {header}:", *("    " + s for s in body)]
    lines = "\n".join("    " + s for s in body)
    return parse(program_text(f"""
@pl.function(type=pl.FunctionType.InCore)
def k(self, a: pl.Tensor[[{ROWS}, {COLS}], pl.FP32], buf: pl.InOut[pl.Tensor[[{ROWS}, {COLS}], pl.FP32]], out: pl.Out[pl.Tensor[[{h2 * span}, {w2}], pl.FP32]], keep: pl.Out[pl.Tensor[[{h1 * span}, {w1}], pl.FP32]]):
{lines}
""", name="k"))


def arguments(program, seed=0):
    g = torch.Generator().manual_seed(seed)
    shapes = [p.type.shape for p in program.function("k").params]
    a, buf = torch.randn(*shapes[0], generator=g), torch.randn(*shapes[1], generator=g)
    return a, buf, torch.full(shapes[2], SENTINEL), torch.full(shapes[3], SENTINEL)


def compiled(program, platform="a2a3sim", planner="PYPTO"):
    config = RunConfig(platform=platform, memory_planner=planner, disabled_diagnostics=("PH001",))
    return compile_program(program, PARAMS, config, write=False)


def fresh(args):
    return tuple(t.clone() for t in args)


def check_sound_and_minimal(program, planner="PYPTO"):
    """Runs without a hazard with ``ref``'s bits (buf included), and every sync is needed.
    Returns (the kernel, the simulated cycles)."""
    args = arguments(program)
    want = fresh(args)
    compiled(program, "ref", planner).run(*want)
    sim = compiled(program, "a2a3sim", planner)
    got = fresh(args)
    report = sim.run(*got)  # a missing sync raises SimulatorHazard here
    for name, x, y in zip(PARAMS, got, want):
        assert torch.equal(x, y), f"{name} differs from ref"
    (kernel,) = sim.kernels.values()
    assert_every_sync_is_needed(kernel, fresh(args))
    return kernel, report.cycles


def gm_waits(kernel) -> int:
    """Syncs from the store pipe to the load pipe: what orders a GM read after a GM write."""
    return len({x.edge for p in kernel.programs for x in walk(p.body)
                if isinstance(x, SetFlag) and (x.src, x.dst) == (Pipe.MTE3, Pipe.MTE2)})


def overlap(store, load) -> bool:
    (r1, c1, h1, w1), (r2, c2, h2, w2) = store, load
    return r1 < r2 + h2 and r2 < r1 + h1 and c1 < c2 + w2 and c2 < c1 + w1


# ----------------------------------------------------------------------------- straight-line windows

STORE = (16, 64, 8, 64)  # rows 16..23, cols 64..127; the load windows are 4 x 32, so the two
                         # extents differ and a check against the wrong one shows
ADJACENT = {
    # rows, with the columns shared: load below the store window, then above it
    "below-one-row-shared": (23, 64), "below-touching": (24, 64), "below-one-row-gap": (25, 64),
    "above-one-row-shared": (13, 64), "above-touching": (12, 64), "above-one-row-gap": (11, 64),
    # columns, with the rows shared: load right of the store window, then left of it
    "right-one-col-shared": (16, 127), "right-touching": (16, 128), "right-one-col-gap": (16, 129),
    "left-one-col-shared": (16, 33), "left-touching": (16, 32), "left-one-col-gap": (16, 31),
    # corners: one element shared, or touching on one axis while sharing the other
    "corner-one-element": (23, 127), "corner-rows-touch": (24, 127), "corner-cols-touch": (23, 128),
    "corner-above-left-one-element": (13, 33), "corner-above-left-touch": (12, 32),
    "inside": (18, 80),
}


@pytest.mark.parametrize("planner", ["PYPTO", "PTOAS"])
@pytest.mark.parametrize("where", list(ADJACENT))
def test_a_load_waits_for_a_store_exactly_when_their_windows_share_an_element(where, planner):
    load = (*ADJACENT[where], 4, 32)
    kernel, _ = check_sound_and_minimal(window_program(STORE, load), planner)
    assert gm_waits(kernel) == (1 if overlap(STORE, load) else 0), where


def test_touching_windows_cost_no_more_cycles_than_distant_ones():
    """The redundant sync a wrong adjacency test inserts is visible as cycles."""
    far = check_sound_and_minimal(window_program(STORE, (40, 64, 4, 32)))[1]
    for where in ("below-touching", "above-touching", "right-touching", "left-touching", "corner-rows-touch"):
        load = (*ADJACENT[where], 4, 32)
        assert check_sound_and_minimal(window_program(STORE, load))[1] == far, where


# ----------------------------------------------------------------------------- across iterations

LOOPS = {  # header, span (1 + the largest i)
    "range": ("pl.range(3)", 3),
    "range-step-2": ("pl.range(0, 6, 2)", 5),
    "pipeline-2": ("pl.pipeline(4, stage=2)", 4),
    "pipeline-3": ("pl.pipeline(5, stage=3)", 5),
}


@pytest.mark.parametrize("loop", list(LOOPS))
@pytest.mark.parametrize("stride, shift", [
    (8, -9), (8, -8), (8, -7), (8, 7), (8, 8), (8, 9),  # the load window vs this and the neighbouring stores
    (12, 3), (12, 4), (12, 5), (12, -3), (12, -4), (12, -5),  # a gap between iterations
    (4, 4), (4, 3),  # iterations overlap each other
])
def test_windows_moving_with_the_loop_are_ordered_exactly_as_they_overlap(loop, stride, shift):
    """Store rows [i*stride + 40, +4), load rows [i*stride + 40 + shift, +4): the load of
    one iteration may meet its own store, the previous iteration's or the next one's."""
    check_sound_and_minimal(window_program((40, 0, 4, 128), (40 + shift, 0, 4, 128), (*LOOPS[loop], stride)))


@pytest.mark.parametrize("planner", ["PYPTO", "PTOAS"])
def test_a_pipeline_whose_stages_read_back_the_previous_stage_is_ordered(planner):
    """Each stage loads the rows the stage before it stored: adjacent in the body, one row
    shared between stages (and so between the unrolled copies and the tail)."""
    check_sound_and_minimal(window_program((40, 0, 4, 128), (37, 0, 4, 128), ("pl.pipeline(5, stage=2)", 5, 4)),
                            planner)


# ----------------------------------------------------------------------------- property

extent = st.sampled_from([1, 2, 3, 4, 8])
col_extent = st.sampled_from([16, 32, 64, 128])


@st.composite
def window_cases(draw):
    h1, h2, w1, w2 = draw(extent), draw(extent), draw(col_extent), draw(col_extent)
    r1 = draw(st.integers(24, 40))
    c1 = draw(st.integers(0, COLS - w1))
    # the load window near the store's edges, where an off-by-one matters
    r2 = draw(st.sampled_from([r1 - h2 - 1, r1 - h2, r1 - h2 + 1, r1, r1 + h1 - 1, r1 + h1, r1 + h1 + 1]))
    c2 = draw(st.sampled_from([c1 - w2 - 1, c1 - w2, c1 - w2 + 1, c1, c1 + w1 - 1, c1 + w1, c1 + w1 + 1]))
    c2 = min(max(c2, 0), COLS - w2)
    loop = draw(st.sampled_from([None, *LOOPS.values(), ("pl.range(1, 4)", 4)]))
    stride = draw(st.sampled_from([h1, h1 + 1, max(h1 - 1, 1), h2]))
    return (r1, c1, h1, w1), (r2, c2, h2, w2), loop and (*loop, stride)


@given(window_cases(), st.sampled_from(["PYPTO", "PTOAS"]))
def test_property_gm_window_syncs_are_sound_and_minimal(case, planner):
    store, load, loop = case
    kernel, _ = check_sound_and_minimal(window_program(store, load, loop), planner)
    if loop is None:
        assert gm_waits(kernel) == int(overlap(store, load)), case


# ----------------------------------------------------------------------------- an if, seen from outside


def _branch(*pipes):
    """A branch of one instruction per pipe, each touching a byte of its own."""
    from pypto.backend import CoreKind
    from pypto.codegen.isa import Instr

    return [Instr("X", p, CoreKind.AIC, "x", (), reads=(("loc", k),)) for k, p in enumerate(pipes)]


def test_an_if_orders_what_both_branches_order_and_nothing_one_lacks():
    """Each branch: MTE2 work, then MTE1 work after a wait on MTE2's set. Seen from outside,
    the if orders MTE2's earlier work before all of its MTE1 work (an entry passage) and all
    of its MTE2 work before MTE1's later work (an exit passage); with an empty else, or an
    else whose MTE1 work comes before the wait, nothing."""
    from pypto.backend import CoreKind
    from pypto.codegen.sync.edges import Edge
    from pypto.codegen.sync.passages import branch_passages

    mte2, mte1 = (CoreKind.AIC, Pipe.MTE2), (CoreKind.AIC, Pipe.MTE1)
    chain = [Edge(0, 0, 1, mte2, mte1, 0, 0)]  # statement 0's MTE2 set, statement 1's MTE1 wait
    body = _branch(Pipe.MTE2, Pipe.MTE1)
    both = branch_passages((chain, body), (chain, body))
    assert {(e.src, e.dst, e.u, e.v, e.passage) for e in both} == {(mte2, mte1, 0, 0, "entry"),
                                                                   (mte2, mte1, 0, 1, "exit")}
    assert branch_passages((chain, body), ([], [])) == []  # the empty else orders nothing
    early = _branch(Pipe.MTE1, Pipe.MTE2, Pipe.MTE1)  # MTE1 work before the wait at statement 2
    assert not any(e.passage == "entry" for e in branch_passages((chain, body), ([Edge(0, 1, 2, mte2, mte1, 0, 0)],
                                                                                 early)))
