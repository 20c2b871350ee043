"""The cycle-level simulator: bit-identical to the interpreter, overlap where the seed
says there is, hazards when a sync is missing, and the PTOAS co-live rule."""


import attrs
import pytest
import torch
from helpers import assert_matches_oracle, compile_case, run_case, run_on
from hypothesis import event, given, settings
from hypothesis import strategies as st

import pypto.language as pl
from pypto.codegen import CodegenError, number
from pypto.codegen.isa import Buf, Instr, Kernel, Program, SetFlag, WaitFlag, walk
from pypto.fuzz import strategies as ps
from pypto.fuzz.checks import sync_edges as edges_of
from pypto.fuzz.checks import unneeded_syncs, without_edge
from pypto.runtime import RunConfig
from pypto.sim.simulator import SimulatorDeadlock, SimulatorHazard, run_kernel
from pypto.backend import A2A3, CoreKind, MemorySpace, Pipe
from pypto.ir import nodes
from pypto.ir.types import DataType, TensorType


def unset(*shape, dtype=torch.float32):
    """An Out tensor as a run starts it: a sentinel no op computes, so an element the kernel
    never stores shows (zeros would pass for stored zeros)."""
    return ps.sentinel(shape, dtype)


def seed_report(seed, name, **config):
    out = unset(512, 128)
    report = seed[name].compile(seed["A"], out, config=RunConfig(**config)).run(seed["A"], out)
    assert torch.equal(out, torch.exp(seed["A"]))
    return report


def overlaps(a, b) -> bool:
    return any(s1 < e2 and s2 < e1 for s1, e1 in a for s2, e2 in b)


@pytest.mark.parametrize("planner", ["PYPTO", "DSA_RP", "PTOAS"])
def test_double_buffering_overlaps_mte2_with_vector_and_saves_cycles(seed, planner):
    single = seed_report(seed, "single_buffer", memory_planner=planner)
    for name in ("pipelined", "explicit_slots"):
        report = seed_report(seed, name, memory_planner=planner)
        assert report.cycles <= 0.8 * single.cycles, (name, report.cycles, single.cycles)
        assert overlaps(report.busy("MTE2"), report.busy("VECTOR")), name
    assert not overlaps(single.busy("MTE2"), single.busy("VECTOR"))


def test_run_report_counts_cycles_pipes_and_instructions(seed):
    report = seed_report(seed, "single_buffer")
    assert report.launches == 1
    assert report.instructions == 8 * 3  # load, exp, store per tile
    assert set(report.pipe_cycles) == {"aiv0"}
    busy = report.pipe_cycles["aiv0"]
    assert set(busy) == {"MTE2", "VECTOR", "MTE3"}
    assert max(busy.values()) < report.cycles  # pipes overlap, but the chain through them is longer
    ref = seed["single_buffer"].compile(seed["A"], unset(512, 128), config=RunConfig(platform="ref"))
    assert ref.run(seed["A"], unset(512, 128)).cycles == 0


# ----------------------------------------------------------------------------- syncs


def assert_every_sync_is_needed(kernel: Kernel, args) -> int:
    assert unneeded_syncs(kernel, args, A2A3) == []
    return len(edges_of(kernel))


@pytest.mark.parametrize("name", ["single_buffer", "pipelined", "explicit_slots"])
@pytest.mark.parametrize("planner", ["PYPTO", "DSA_RP", "PTOAS"])
def test_every_inserted_sync_of_the_seed_kernels_is_needed(seed, name, planner):
    compiled = seed[name].compile(seed["A"], unset(512, 128), config=RunConfig(memory_planner=planner))
    (kernel,) = compiled.kernels.values()
    assert assert_every_sync_is_needed(kernel, (seed["A"], unset(512, 128))) >= 3


def test_a_missing_sync_names_both_instructions_and_their_lines(seed):
    compiled = seed["single_buffer"].compile(seed["A"], unset(512, 128))
    (kernel,) = compiled.kernels.values()
    first = edges_of(kernel)[0]
    with pytest.raises(SimulatorHazard) as info:
        run_kernel(without_edge(kernel, first), (seed["A"], unset(512, 128)), A2A3)
    text = str(info.value)
    assert "and no sync orders them" in text
    assert text.count("seed_kernels.py:") >= 2


def test_a_wait_without_its_set_deadlocks(seed):
    compiled = seed["single_buffer"].compile(seed["A"], unset(512, 128))
    (kernel,) = compiled.kernels.values()
    program = kernel.programs[0]
    body = tuple(x for x in program.body if not isinstance(x, SetFlag))  # drop the prologue sets
    broken = attrs.evolve(kernel, programs=(attrs.evolve(program, body=body),))
    with pytest.raises(SimulatorDeadlock, match="wait"):
        run_kernel(broken, (seed["A"], unset(512, 128)), A2A3)


# ----------------------------------------------------------------------------- PTOAS co-live slots

NT, TR, TC = 8, 64, 128


@pl.jit
def colive(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(NT):
            x: pl.Tile[[TR, TC], pl.FP32, pl.MemRef("ub", slots=2)[i % 2], pl.Mem.Vec] = pl.load(a, [i * TR, 0], [TR, TC])
            y: pl.Tile[[TR, TC], pl.FP32, pl.MemRef("ub", slots=2)[(i + 1) % 2], pl.Mem.Vec] = pl.load(b, [i * TR, 0], [TR, TC])  # noqa: E501  MARK-second-slot
            pl.store(pl.add(x, y), [i * TR, 0], out)
    return out


def colive_args():
    g = torch.Generator().manual_seed(7)
    return torch.randn(NT * TR, TC, generator=g), torch.randn(NT * TR, TC, generator=g), unset(NT * TR, TC)


def test_two_colive_slots_are_rejected_at_codegen_under_ptoas():
    with pytest.raises(CodegenError) as info:
        colive.compile(*colive_args(), config=RunConfig(memory_planner="PTOAS"))
    text = str(info.value)
    assert "two of its slots are live at once inside a loop ('x' and 'y')" in text
    assert "ptoas guards only the first slot selected in an iteration" in text
    assert "the second would be read while the next iteration overwrites it" in text
    assert "MARK-second-slot" in text and f"{__file__}:" in text
    assert 'memory_planner="PYPTO"' in text


@pl.jit
def colive_in_branch(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor], n: pl.Scalar[pl.INT32]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(NT):
            if n > 0:
                x: pl.Tile[[TR, TC], pl.FP32, pl.MemRef("ub", slots=2)[i % 2], pl.Mem.Vec] = pl.load(a, [i * TR, 0], [TR, TC])
                y: pl.Tile[[TR, TC], pl.FP32, pl.MemRef("ub", slots=2)[(i + 1) % 2], pl.Mem.Vec] = pl.load(b, [i * TR, 0], [TR, TC])  # noqa: E501
                pl.store(pl.add(x, y), [i * TR, 0], out)
    return out


def test_two_colive_slots_inside_a_branch_are_rejected_too():
    a, b, out = colive_args()
    with pytest.raises(CodegenError, match="two of its slots are live at once inside a loop"):
        colive_in_branch.compile(a, b, out, 1, config=RunConfig(memory_planner="PTOAS"))
    colive_in_branch(a, b, out, 1)
    assert torch.equal(out, a + b)


def test_the_unsafe_switch_shows_the_corruption_and_pypto_gets_it_right():
    a, b, out = colive_args()
    colive(a, b, out, config=RunConfig(memory_planner="PTOAS", unsafe_allow_colive_slots=True))
    assert not torch.equal(out, a + b)
    out.copy_(unset(*out.shape))
    colive(a, b, out, config=RunConfig(memory_planner="PYPTO"))
    assert torch.equal(out, a + b)


def test_without_the_unsafe_switch_the_same_races_are_hazards():
    a, b, out = colive_args()
    compiled = colive.compile(a, b, out, config=RunConfig(memory_planner="PTOAS", unsafe_allow_colive_slots=True))
    (kernel,) = compiled.kernels.values()
    with pytest.raises(SimulatorHazard):
        run_kernel(kernel, (a, b, out), A2A3)


@pl.jit
def three_pipelines(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.pipeline(4, stage=3):
            t = pl.load(a, [i * 16, 0], [16, 128])
            pl.store(pl.relu(t), [i * 16, 0], out)
        for j in pl.pipeline(4, stage=3):
            t2 = pl.load(a, [64 + j * 16, 0], [16, 128])
            pl.store(pl.exp(t2), [64 + j * 16, 0], out)
        for m in pl.pipeline(4, stage=3):
            t3 = pl.load(a, [128 + m * 16, 0], [16, 128])
            pl.store(pl.neg(t3), [128 + m * 16, 0], out)
    return out


@pytest.mark.parametrize("planner", ["PYPTO", "DSA_RP", "PTOAS"])
def test_sequential_loops_reuse_event_ids(planner):
    a, out = torch.randn(192, 128), unset(192, 128)
    compiled = three_pipelines.compile(a, out, config=RunConfig(memory_planner=planner))
    (kernel,) = compiled.kernels.values()
    flags = [x for p in kernel.programs for x in walk(p.body) if isinstance(x, (SetFlag, WaitFlag))]
    events = {(x.src, x.dst, str(x.event)) for x in flags}
    assert len({e.edge for e in flags}) > 8  # more syncs than one pipe pair has ids ...
    assert all(len({ev for s, d, ev in events if (s, d) == pair}) <= 8 for pair in {(s, d) for s, d, _ in events})
    compiled.run(a, out)  # ... yet each wait still pairs with its own set
    assert torch.equal(out, torch.cat([torch.relu(a[:64]), torch.exp(a[64:128]), -a[128:]]))


@pl.jit
def sum_rows(a: pl.Tensor, out: pl.Out[pl.Tensor], n: pl.Scalar[pl.INT32]):
    with pl.at(level=pl.Level.CORE_GROUP):
        acc = pl.load(a, [0, 0], [16, 128])
        for i in pl.range(1, n):
            acc = pl.add(acc, pl.load(a, [i * 16, 0], [16, 128]))
        pl.store(acc, [0, 0], out)
    return out


@pytest.mark.parametrize("n", [0, 1, 3])
def test_a_loop_that_may_not_run_does_not_stand_in_for_a_sync(n):
    a, out = torch.randn(64, 128), unset(16, 128)
    sum_rows(a, out, n)  # a hazard would raise here
    assert torch.equal(out, a[:16 * max(n, 1)].view(-1, 16, 128).sum(0))


# ----------------------------------------------------------------------------- properties

FAMILIES = {"elementwise": ps.elementwise_programs(), "reduction": ps.reduction_programs(),
            "matmul": ps.matmul_programs(), "carried": ps.carried_programs(),
            "shuffled": ps.shuffled_carry_programs(), "loop_body": ps.loop_body_programs(),
            "loop_if": ps.loop_body_programs(branch=True), "nested": ps.nested_loop_programs(),
            "slotted": ps.slotted_programs()}
SYNC_FAMILIES = {"elementwise": ps.elementwise_programs(max_steps=3), "matmul": ps.matmul_programs(),
                 "slotted": ps.slotted_programs(colive=False), "loop_body": ps.loop_body_programs(),
                 "shuffled": ps.shuffled_carry_programs()}
# Not nested_loop_programs: some of its nests keep a sync no trip count needs (a redundant
# one, not a missing one), e.g. range(1) around range(2) [load] store 2, carry 3 from 1.


# One test per family, so that every family is drawn whatever the profile's budget; the
# budget of each is a share of the active profile's (the `fuzz` profile scales it up).
@pytest.mark.parametrize("family", sorted(FAMILIES))
@settings(max_examples=max(3, settings().max_examples // 10))
@given(data=st.data(), planner=st.sampled_from(["PYPTO", "PTOAS"]))
def test_property_simulator_is_bit_identical_to_the_interpreter(family, data, planner):
    case = data.draw(FAMILIES[family], label="case")
    event(f"{family} on {planner}")
    if planner == "PTOAS" and "colive=True" in case.recipe:
        with pytest.raises(CodegenError):
            compile_case(case, planner=planner)
        return
    expected = run_case(case)
    got, report = run_on(case, planner=planner)
    for x, y in zip(got, expected):
        assert ps.bits_equal(x, y), f"{case.recipe} on {planner}"
    assert_matches_oracle(case, got)
    assert report.cycles > 0 and report.instructions > 0


@pytest.mark.parametrize("family", sorted(SYNC_FAMILIES))
@settings(max_examples=max(2, settings().max_examples // 20))
@given(data=st.data(), planner=st.sampled_from(["PYPTO", "PTOAS"]))
def test_property_every_sync_is_needed(family, data, planner):
    case = data.draw(SYNC_FAMILIES[family], label="case")
    compiled = compile_case(case, planner=planner)
    syncs = 0
    for kernel in compiled.kernels.values():
        syncs += assert_every_sync_is_needed(kernel, case.args())
    event(f"{family} on {planner}: {'no' if not syncs else 'some'} syncs")


@pl.jit
def runaway_slot(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(3):
            t: pl.Tile[[16, 128], pl.FP32, pl.MemRef("ub", slots=2)[i], pl.Mem.Vec] = pl.load(a, [i * 16, 0], [16, 128])
            pl.store(t, [i * 16, 0], out)
    return out


def test_a_slot_index_that_runs_past_its_memref_stops_the_simulation():
    from pypto.sim.timing.issue import SimulatorError

    a, out = torch.randn(48, 128), unset(48, 128)
    with pytest.raises(SimulatorError, match=r"tile 't' takes slot 2 of pl.MemRef\(\"ub\", slots=2\), which has slots 0..1"):
        runaway_slot(a, out)


@pl.jit
def rolling_rows(buf: pl.InOut[pl.Tensor], n: pl.Scalar[pl.INT32]):
    with pl.at(level=pl.Level.CORE_GROUP):
        row = n
        for i in pl.range(6):
            t = pl.load(buf, [row * 8, 0], [8, 128])
            pl.store(pl.add(pl.exp(t), t), [(row + 1) * 8, 0], buf)  # the next iteration loads this
            row = row + 1
    return buf


@pl.jit
def rolling_slots(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor], out2: pl.Out[pl.Tensor],
                  n: pl.Scalar[pl.INT32]):
    with pl.at(level=pl.Level.CORE_GROUP):
        k = n
        for i in pl.range(6):
            x: pl.Tile[[8, 128], pl.FP32, pl.MemRef("ub", slots=2)[k % 2], pl.Mem.Vec] = pl.load(a, [i * 8, 0], [8, 128])
            y: pl.Tile[[8, 128], pl.FP32, pl.MemRef("ub", slots=2)[(k + 1) % 2], pl.Mem.Vec] = pl.load(b, [i * 8, 0], [8, 128])  # noqa: E501
            pl.store(pl.exp(x), [i * 8, 0], out)
            pl.store(pl.exp(y), [i * 8, 0], out2)
            k = k + 1
    return out


@pytest.mark.parametrize("planner", ["PYPTO", "PTOAS"])
def test_scalars_the_loop_body_updates_are_new_each_iteration_for_sync(planner):
    buf = torch.randn(64, 128) * 0.01
    want = buf.clone()
    rolling_rows(want, 0, config=RunConfig(platform="ref"))
    got = buf.clone()
    rolling_rows(got, 0, config=RunConfig(memory_planner=planner))  # a hazard would raise
    assert torch.equal(got, want)
    if planner == "PYPTO":  # PTOAS rejects the co-live slots
        a, b = torch.randn(48, 128), torch.randn(48, 128)
        out, out2 = unset(48, 128), unset(48, 128)
        rolling_slots(a, b, out, out2, 1)
        assert torch.equal(out, torch.exp(a)) and torch.equal(out2, torch.exp(b))


@pl.jit
def slots_by_step(a: pl.Tensor, out: pl.Out[pl.Tensor], n: pl.Scalar[pl.INT32], s: pl.Scalar[pl.INT32]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(0, n, s):
            t: pl.Tile[[8, 128], pl.FP32, pl.MemRef("ub", slots=2)[i % 2], pl.Mem.Vec] = pl.load(a, [i * 8, 0], [8, 128])
            pl.store(pl.exp(t), [i * 8, 0], out)
    return out


@pl.jit
def slots_in_pairs(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(6):
            t: pl.Tile[[16, 128], pl.FP32, pl.MemRef("ub", slots=2)[(i // 2) % 2], pl.Mem.Vec] = pl.load(a, [i * 16, 0], [16, 128])  # noqa: E501
            pl.store(pl.exp(t), [i * 16, 0], out)
    return out


@pytest.mark.parametrize("planner", ["PYPTO", "PTOAS"])
def test_slots_that_do_not_rotate_once_per_iteration_share_one_event(planner):
    config = RunConfig(memory_planner=planner)
    a = torch.randn(96, 128)
    for n, s in ((0, 1), (2, 1), (5, 3), (5, 2)):
        out = unset(64, 128)
        slots_by_step(a[:64], out, n, s, config=config)  # a deadlock or hazard would raise
        want = unset(64, 128)  # rows no iteration stores keep it
        for i in range(0, n, s):
            want[i * 8:(i + 1) * 8] = torch.exp(a[i * 8:(i + 1) * 8])
        assert ps.bits_equal(out, want), (n, s)
    out = unset(96, 128)
    slots_in_pairs(a, out, config=config)
    assert torch.equal(out, torch.exp(a))


@pl.jit
def nine_stages(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.pipeline(18, stage=9):
            t = pl.load(a, [i * 8, 0], [8, 128])
            pl.store(pl.exp(t), [i * 8, 0], out)
    return out


@pl.jit
def nine_slots(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(18):
            t: pl.Tile[[8, 128], pl.FP32, pl.MemRef("ub", slots=9)[i % 9], pl.Mem.Vec] = pl.load(a, [i * 8, 0], [8, 128])
            pl.store(pl.exp(t), [i * 8, 0], out)
    return out


@pytest.mark.parametrize("planner", ["PYPTO", "PTOAS"])
@pytest.mark.parametrize("kernel", [nine_stages, nine_slots])
def test_more_stages_than_event_ids_share_ids_in_order(kernel, planner):
    a, out = torch.randn(144, 128), unset(144, 128)
    kernel(a, out, config=RunConfig(memory_planner=planner))  # ran out of event ids before
    assert torch.equal(out, torch.exp(a))


@pl.jit
def two_ahead(a: pl.Tensor, b: pl.InOut[pl.Tensor], out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        x = pl.load(a, [0, 0], [8, 128])
        t = pl.load(a, [8, 0], [8, 128])
        for i in pl.range(4):
            pl.store(x, [(i + 2) * 8, 0], b)  # loaded back two iterations later
            t = pl.load(b, [i * 8, 0], [8, 128])
        pl.store(t, [0, 0], out)
    return out


@pytest.mark.parametrize("planner", ["PYPTO", "PTOAS"])
def test_a_gm_dependence_farther_than_the_window_is_synced(planner):
    a, out = torch.randn(16, 128), unset(8, 128)
    b = torch.randn(48, 128)
    two_ahead(a, b, out, config=RunConfig(memory_planner=planner))  # a hazard would raise
    assert torch.equal(out, a[:8])


@pl.jit
def dead_last(a: pl.Tensor, out: pl.Out[pl.Tensor], n: pl.Scalar[pl.INT32]):
    with pl.at(level=pl.Level.CORE_GROUP):
        x = pl.load(a, [8, 0], [8, 128])
        t = pl.relu(pl.load(a, [0, 0], [8, 128]))
        for i in pl.range(n):
            pl.store(t, [i * 8, 0], out)
            unused = pl.add(x, t)  # its operands die at the loop's end, yet every iteration reads them
        pl.store(x, [24, 0], out)
    return out


@pytest.mark.parametrize("planner", ["PYPTO", "PTOAS"])
def test_a_tile_read_by_every_iteration_does_not_lend_its_buffer_at_the_loops_end(planner):
    a, out = torch.randn(16, 128), unset(32, 128)
    dead_last(a, out, 3, config=RunConfig(memory_planner=planner))
    assert torch.equal(out, torch.cat([torch.relu(a[:8]).repeat(3, 1), a[8:]]))


@pl.jit
def three_k_steps(x: pl.Tensor, w: pl.Tensor, out: pl.Out[pl.Tensor], n: pl.Scalar[pl.INT32]):
    with pl.at(level=pl.Level.CORE_GROUP):
        acc = pl.matmul(pl.move(pl.load(x, [0, 0], [16, 32], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left),
                        pl.move(pl.load(w, [0, 0], [32, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right))
        for i in pl.pipeline(n, stage=2):  # six rotating Mat regions: more per-slot events than ids
            a = pl.move(pl.load(x, [i * 16, 0], [16, 32], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
            b = pl.move(pl.load(w, [0, 0], [32, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
            acc = pl.matmul_acc(acc, a, b)
            c = pl.move(pl.load(x, [i * 16, 32], [16, 32], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
            d = pl.move(pl.load(w, [32, 0], [32, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
            acc = pl.matmul_acc(acc, c, d)
            e = pl.move(pl.load(x, [i * 16, 64], [16, 32], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
            f = pl.move(pl.load(w, [64, 0], [32, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
            acc = pl.matmul_acc(acc, e, f)
        pl.store(acc, [0, 0], out)
    return out


@pytest.mark.parametrize("planner", ["PYPTO", "PTOAS"])
def test_rotating_regions_beyond_the_event_ids_share_ids_in_order(planner):
    g = torch.Generator().manual_seed(0)
    x, w = torch.randint(-3, 4, (128, 96), generator=g).half(), torch.randint(-3, 4, (96, 64), generator=g).half()
    want, out = unset(16, 64), unset(16, 64)
    three_k_steps(x, w, want, 5, config=RunConfig(platform="ref"))
    three_k_steps(x, w, out, 5, config=RunConfig(memory_planner=planner))
    assert torch.equal(out, want)


@pl.jit
def last_of_loop(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        last = pl.load(a, [0, 0], [16, 128])
        for i in pl.range(2):
            t = pl.load(a, [i * 16, 0], [16, 128])
            last = pl.muls(t, 0.5)
            pl.store(t, [64 + i * 16, 0], out)
        pl.store(last, [0, 0], out)  # MTE2's waits at the loop's end do not order VECTOR's work
    return out


@pl.jit
def cast_after_loop(a: pl.Tensor, out: pl.Out[pl.Tensor], half: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t1 = pl.load(a, [0, 0], [16, 128])
        t3 = pl.muls(t1, -1.0)
        for i in pl.range(3):
            t6 = pl.load(a, [i * 16, 0], [16, 128])  # noqa: F841 — a dead load, still synced
            pl.store(pl.relu(t3), [64, 0], out)
        pl.store(pl.cast(t3, target_type=pl.FP16), [0, 0], half)  # may reuse the bytes the store reads
        pl.store(t1, [0, 0], out)
    return out


@pytest.mark.parametrize("planner", ["PYPTO", "PTOAS"])
def test_work_after_a_loop_waits_for_each_pipe_it_depends_on(planner):
    a = torch.randn(128, 128)
    for kernel, outs in ((last_of_loop, [unset(128, 128)]),
                         (cast_after_loop, [unset(128, 128), unset(16, 128, dtype=torch.float16)])):
        want = [o.clone() for o in outs]
        kernel(a, *want, config=RunConfig(platform="ref"))
        kernel(a, *outs, config=RunConfig(memory_planner=planner))  # a hazard would raise
        assert all(ps.bits_equal(x, y) for x, y in zip(outs, want))  # rows neither stores keep the sentinel


@pl.jit
def update_then_pipeline(b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t1 = pl.load(b, [48, 0], [8, 128])
        t2 = pl.load(b, [32, 0], [8, 128])
        for i in pl.range(3):
            t1 = pl.add(t1, t1)  # needs t1's load; the loop's own syncs only order what follows
            for j in pl.pipeline(4, stage=3):
                pl.store(t2, [j * 8, 0], out)
                r = pl.row_sum(t2)
                pl.store(pl.row_expand_sub(t2, r), [32 + j * 8, 0], out)
        pl.store(t1, [64, 0], out)
    return out


@pytest.mark.parametrize("planner", ["PYPTO", "PTOAS"])
def test_an_earlier_load_a_loop_reads_sooner_is_synced_too(planner):
    b = torch.randn(64, 128)
    want, got = unset(72, 128), unset(72, 128)
    update_then_pipeline(b, want, config=RunConfig(platform="ref"))
    update_then_pipeline(b, got, config=RunConfig(memory_planner=planner))  # a hazard would raise
    assert torch.equal(got, want)


@pl.jit
def add_after_maybe(buf: pl.Tensor, out: pl.Out[pl.Tensor], n: pl.Scalar[pl.INT32]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t2 = pl.load(buf, [32, 0], [16, 128])
        for i in pl.pipeline(1, n, stage=2):  # may not run; its prologue sets and drain waits always do
            pl.store(pl.adds(t2, 2.0), [(i % 8) * 16, 0], out)
        pl.store(t2, [0, 0], out)
    return out


@pytest.mark.parametrize("planner", ["PYPTO", "PTOAS"])
def test_each_sync_around_a_loop_that_may_not_run_is_needed_for_some_trip_count(planner):
    buf = torch.randn(64, 128)
    compiled = add_after_maybe.compile(buf, unset(128, 128), 3, config=RunConfig(memory_planner=planner))
    (kernel,) = compiled.kernels.values()
    for edge in edges_of(kernel):
        hazards = 0
        for n in range(6):
            try:
                run_kernel(without_edge(kernel, edge), (buf, n, unset(128, 128)), A2A3)  # the InCore order
            except SimulatorHazard:
                hazards += 1
        assert hazards, f"sync {edge} orders nothing for any trip count"


def test_a_wait_a_full_queue_ahead_of_its_set_deadlocks_and_says_why():
    # the AIV's vector pipe waits for a flag its own MTE2 sets only after more vector work
    # than the queue holds has been issued: the scalar unit stalls before it issues the set
    tile = Buf(MemorySpace.Vec, nodes.Const(0), (8, 64), DataType.FP32, tile="t")
    relu = Instr("VRELU", Pipe.VECTOR, CoreKind.AIV, "tile.relu", (tile,), dst=tile, note="t")
    wait = WaitFlag(Pipe.MTE2, Pipe.VECTOR, nodes.Const(0), CoreKind.AIV, CoreKind.AIV)
    setf = SetFlag(Pipe.MTE2, Pipe.VECTOR, nodes.Const(0), CoreKind.AIV, CoreKind.AIV)
    body = (wait,) + (relu,) * (A2A3.costs.queue_depth + 1) + (setf,)
    kernel = Kernel("k", (("a", TensorType((8, 64), DataType.FP32)),),
                    (Program("k", CoreKind.AIV, (("a", TensorType((8, 64), DataType.FP32)),), (), number(body)),))
    with pytest.raises(SimulatorDeadlock, match="cannot issue what would set them") as info:
        run_kernel(kernel, (torch.zeros(8, 64),), A2A3)
    assert "aiv0" in info.value.message and "queue" in info.value.hint
