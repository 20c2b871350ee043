"""memory_planner="DSA_RP": the compiler places every buffer itself (AllocateMemoryAddr, no
MemoryReuse), capacity first, then the fewest reuses of bytes that would stall one pipe on
another. The same kernels give the same bits under every planner and on both platforms;
what is DSA_RP's own shows in the pass list, the dumps, the listings and the hints."""

import re

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import pypto.language as pl
from pypto.errors import MemorySpaceError
from pypto.fuzz import strategies as ps
from pypto.fuzz.example import Example
from pypto.fuzz.properties import check_planners, simulate
from pypto.fuzz.checks import against_oracle, bits_equal
from pypto.ir import PassDumpLevel
from pypto.passes.allocation import dsa
from pypto.pypto_core.passes import MemoryPlanner
from pypto.runtime import RunConfig
from pypto.tools.memory_map import model

PLANNERS = ["PYPTO", "DSA_RP", "PTOAS"]
PLATFORMS = ["ref", "a2a3sim"]


def config(platform, planner, **kw):
    return RunConfig(platform=platform, memory_planner=planner, **{"disabled_diagnostics": ["PH001"], **kw})


def sentinel(*shape):
    return torch.full(shape, -777.0)


# ----------------------------------------------------------------------------- kernels


@pl.jit
def handoff(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor], out2: pl.Out[pl.Tensor]):
    """x's bytes are last read by the store (MTE3); z is first written by a load (MTE2)."""
    with pl.at(level=pl.Level.CORE_GROUP):
        x = pl.load(a, [0, 0], [64, 64])
        pl.store(pl.exp(x), [0, 0], out)
        z = pl.load(b, [0, 0], [64, 64])
        pl.store(pl.neg(z), [0, 0], out2)
    return out


@pl.jit
def same_pipe(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    """x's bytes are last read by the vector unit, which then writes g: no stall to avoid."""
    with pl.at(level=pl.Level.CORE_GROUP):
        x = pl.load(a, [0, 0], [64, 64])
        h = pl.cast(x, pl.BF16)
        g = pl.cast(h, pl.FP32)
        pl.store(g, [0, 0], out)
    return out


@pl.jit
def carried(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        acc = pl.load(a, [0, 0], [32, 128])
        for i in pl.range(1, 6):
            x = pl.load(a, [i * 32, 0], [32, 128])
            acc = pl.add(acc, pl.exp(x))
        pl.store(acc, [0, 0], out)
    return out


def piped(rows: int):
    """A two-stage pipeline of loads of ``rows`` x 256 fp32 (32 KiB per 32 rows)."""
    @pl.jit
    def kernel(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            for i in pl.pipeline(4, stage=2):
                t = pl.load(a, [i * rows, 0], [rows, 256])
                pl.store(pl.exp(t), [i * rows, 0], out)  # MARK-stage
        return out
    return kernel


@pl.jit
def declared(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        d: pl.Tile[[32, 128], pl.FP32, pl.MemRef("stage", slots=1), pl.Mem.Vec] = pl.load(a, [0, 0], [32, 128])
        pl.store(pl.exp(d), [0, 0], out)
        later = pl.load(a, [32, 0], [32, 128])
        pl.store(pl.neg(later), [32, 0], out)
    return out


@pl.jit
def matmul(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for j in pl.range(2):
            x = pl.load(a, [0, 0], [64, 64], target_memory=pl.Mem.Mat)
            y = pl.load(b, [0, j * 64], [64, 64], target_memory=pl.Mem.Mat)
            c = pl.matmul(pl.move(x, target_memory=pl.Mem.Left), pl.move(y, target_memory=pl.Mem.Right))
            pl.store(c, [0, j * 64], out)
    return out


def inputs(name):
    g = torch.Generator().manual_seed(7)
    return {
        "handoff": (handoff, (torch.randn(64, 64, generator=g), torch.randn(64, 64, generator=g),
                              sentinel(64, 64), sentinel(64, 64))),
        "same_pipe": (same_pipe, (torch.randn(64, 64, generator=g), sentinel(64, 64))),
        "carried": (carried, (torch.randn(192, 128, generator=g), sentinel(32, 128))),
        "piped": (piped(32), (torch.randn(128, 256, generator=g), sentinel(128, 256))),
        "piped_tight": (piped(128), (torch.randn(512, 256, generator=g), sentinel(512, 256))),
        "declared": (declared, (torch.randn(64, 128, generator=g), sentinel(64, 128))),
        "matmul": (matmul, (torch.randn(64, 64, generator=g).half(), torch.randn(64, 128, generator=g).half(),
                            torch.zeros(64, 128))),
    }[name]


def run(name, platform, planner, **kw):
    kernel, args = inputs(name)
    args = tuple(a.clone() for a in args)
    compiled = kernel.compile(*args, config=config(platform, planner, **kw))
    compiled.run(*args)
    return compiled, args


KERNELS = ["handoff", "same_pipe", "carried", "piped", "piped_tight", "declared", "matmul"]


@pytest.mark.parametrize("name", KERNELS)
def test_the_same_kernels_give_the_same_bits_under_every_planner_on_both_platforms(name):
    results = {(platform, planner): run(name, platform, planner)[1] for platform in PLATFORMS for planner in PLANNERS}
    want = results["ref", "PYPTO"]
    for key, got in results.items():
        assert all(bits_equal(x, y) for x, y in zip(got, want)), key


# ----------------------------------------------------------------------------- the pipeline and its dumps


def test_the_planner_is_taken_by_its_reference_name_and_runs_allocation_without_reuse(tmp_path):
    from pypto.ir.pass_manager import PassManager

    assert RunConfig(memory_planner=MemoryPlanner.DSA_RP).memory_planner.value == "DSA_RP"
    names = PassManager(config=RunConfig(memory_planner=MemoryPlanner.DSA_RP)).pass_names
    assert "AllocateMemoryAddr" in names and "MemoryReuse" not in names and "PlanPtoasMemory" not in names
    compiled, _ = run("handoff", "a2a3sim", "DSA_RP", dump_passes=True, output_dir=tmp_path)
    dumps = sorted(p.name for p in (tmp_path / "passes_dump").iterdir())
    assert dumps[-2:] == ["09_after_InitMemRef.py", "10_after_AllocateMemoryAddr.py"]
    text = (tmp_path / "passes_dump" / dumps[-1]).read_text()
    assert "# memory_planner: DSA_RP" in text and "reusable=True" not in text
    listing = next((tmp_path / "kernels").rglob("*.pto")).read_text()
    assert "memory_planner=DSA_RP" in listing.splitlines()[0]


def addresses(compiled) -> dict:
    """Tile name -> (space, address) in the lowered program."""
    out = {}
    for line in compiled.lowered.as_python().splitlines():
        m = re.match(r"\s*(\w+): pl\.Tile\[.*pl\.MemRef\(\"(\w+)\", (\d+), \d+.*pl\.Mem\.(\w+)\]", line)
        if m:
            out[m.group(1)] = (m.group(4), int(m.group(3)), m.group(2))
    return out


def flags(compiled, src, dst) -> int:
    from pypto.codegen.isa import SetFlag, walk

    return sum(1 for k in compiled.kernels.values() for p in k.programs for x in walk(p.body)
               if isinstance(x, SetFlag) and (x.src.value, x.dst.value) == (src, dst))


def test_a_load_over_bytes_a_store_last_read_is_kept_apart_where_pypto_shares_them():
    """PYPTO merges x's and z's buffers (same size, disjoint lives): the load of z waits for
    the store of exp(x) to finish reading (MTE3 -> MTE2). DSA_RP sees the cross-pipe handoff
    and puts z elsewhere, so that wait is gone, and on the simulator the load of z runs
    while the store of exp(x) still does."""
    reports = {}
    for planner in ("PYPTO", "DSA_RP"):
        kernel, args = inputs("handoff")
        compiled = kernel.compile(*args, config=config("a2a3sim", planner))
        reports[planner] = (compiled, compiled.run(*args))
    (pypto, before), (dsa_rp, after) = reports["PYPTO"], reports["DSA_RP"]
    assert addresses(pypto)["x"][1] == addresses(pypto)["z"][1]
    assert addresses(dsa_rp)["x"][1] != addresses(dsa_rp)["z"][1]
    assert addresses(dsa_rp)["x"][2] != addresses(dsa_rp)["z"][2]  # two allocations, not merged
    assert flags(pypto, "MTE3", "MTE2") > 0 and flags(dsa_rp, "MTE3", "MTE2") == 0

    def second_load_overlaps_first_store(report):
        (s1, e1), (s2, e2) = sorted(report.busy("MTE3"))[0], sorted(report.busy("MTE2"))[1]
        return s2 < e1 and s1 < e2

    assert not second_load_overlaps_first_store(before) and second_load_overlaps_first_store(after)


def test_a_same_pipe_handoff_shares_the_bytes():
    compiled, _ = run("same_pipe", "a2a3sim", "DSA_RP")
    where = addresses(compiled)
    assert where["x"][1] == where["g"][1] and where["x"][2] != where["g"][2]  # two allocations, one place
    assert where["h"][1] != where["x"][1]  # live with both


def test_a_declared_allocation_shares_no_byte_under_dsa_rp():
    pypto, _ = run("declared", "a2a3sim", "PYPTO")
    dsa_rp, _ = run("declared", "a2a3sim", "DSA_RP")
    assert addresses(pypto)["later"][1] == addresses(pypto)["d"][1]  # dead by then: PYPTO reuses its bytes
    d, later = addresses(dsa_rp)["d"], addresses(dsa_rp)["later"]
    assert d[2] == "stage" and not (d[1] <= later[1] < d[1] + 16384 or later[1] <= d[1] < later[1] + 16384)


# ----------------------------------------------------------------------------- pipelines: PH-DSA-001


def test_pipeline_stages_that_fit_stay_apart_with_no_hint():
    compiled, _ = run("piped", "a2a3sim", "DSA_RP")
    assert compiled.perf_hints == ()
    assert re.search(r'pl\.MemRef\("pipe_t", \d+, 65536, slots=2\)\[1\]', compiled.lowered.as_python())


@pytest.mark.parametrize("platform", PLATFORMS)
def test_pipeline_stages_that_cannot_fit_apart_share_a_slot_with_ph_dsa_001(platform):
    compiled, _ = run("piped_tight", platform, "DSA_RP")
    (hint,) = compiled.perf_hints
    assert (hint.code, hint.rule) == ("PH-DSA-001", "AllocateMemoryAddr")
    assert "1 of 1 relaxed pair(s) reuse physical storage" in hint.message
    assert "'pipe_t'" in hint.message and "1 of 2 slots, 131072 B per stage" in hint.message
    assert hint.span is not None and hint.span.file == __file__
    assert 'pl.MemRef("pipe_t", 0, 131072)' in compiled.lowered.as_python()
    quiet, _ = run("piped_tight", platform, "DSA_RP", disabled_diagnostics=["PH001", "PH-DSA-001"])
    assert quiet.perf_hints == ()


def test_three_of_four_stages_fit_and_one_pair_of_six_shares():
    """The relaxation keeps as many stages apart as fit: 4 requested, 3 slots, so only
    stages 0 and 3 share one."""
    @pl.jit
    def deep(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            for i in pl.pipeline(8, stage=4):
                t = pl.load(a, [i * 48, 0], [48, 256])  # 48 KiB a stage: 3 fit in Vec's 184 KiB
                pl.store(pl.exp(t), [i * 48, 0], out)
        return out

    a, out = torch.randn(384, 256), sentinel(384, 256)
    compiled = deep.compile(a, out, config=config("a2a3sim", "DSA_RP"))
    compiled.run(a, out)
    assert torch.equal(out, torch.exp(a))
    (hint,) = compiled.perf_hints
    assert "1 of 6 relaxed pair(s)" in hint.message and "3 of 4 slots" in hint.message


# ----------------------------------------------------------------------------- refusals


@pl.jit
def huge(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [512, 512])  # 1 MiB: Vec holds 184 KiB  MARK-huge
        pl.store(pl.exp(t), [0, 0], out)
    return out


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_tile_too_large_is_refused_alike_on_both_platforms_at_its_line(platform):
    out = sentinel(512, 512)
    with pytest.raises(MemorySpaceError) as info:
        huge(torch.randn(512, 512), out, config=config(platform, "DSA_RP"))
    text = str(info.value)
    assert "Vec cannot hold the tiles of 'huge_incore_0': 1048576 B needed, 188416 B available" in text
    assert f"{__file__}:" in text and "MARK-huge" in text
    assert torch.equal(out, sentinel(512, 512))


def test_co_live_slots_of_one_declared_region_compute_under_dsa_rp():
    @pl.jit
    def colive(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            for i in pl.range(4):
                x: pl.Tile[[32, 128], pl.FP32, pl.MemRef("ring", slots=2)[i % 2], pl.Mem.Vec] = pl.load(a, [i * 32, 0], [32, 128])  # noqa: E501
                y: pl.Tile[[32, 128], pl.FP32, pl.MemRef("ring", slots=2)[(i + 1) % 2], pl.Mem.Vec] = pl.load(b, [i * 32, 0], [32, 128])  # noqa: E501
                pl.store(pl.add(x, y), [i * 32, 0], out)
        return out

    a, b = torch.randn(128, 128), torch.randn(128, 128)
    for platform in PLATFORMS:
        out = sentinel(128, 128)
        colive(a, b, out, config=config(platform, "DSA_RP"))
        assert torch.equal(out, a + b)


# ----------------------------------------------------------------------------- the solver


def test_a_no_fit_from_the_bounded_search_is_not_a_proof_of_infeasibility():
    items = (dsa.Item("b0", 2, 1, ((1, 4),)), dsa.Item("b1", 4, 1, ((1, 2),)), dsa.Item("b2", 5, 1, ((8, 10),)),
             dsa.Item("b3", 1, 1, ((7, 9),)), dsa.Item("b4", 4, 1, ((5, 5),)), dsa.Item("b5", 2, 1, ((3, 7),)))
    problem = dsa.Problem(7, items)
    witness = {"b0": 4, "b1": 0, "b2": 0, "b3": 5, "b4": 2, "b5": 0}
    assert dsa.validate(problem, witness) == []
    assert dsa.solve(problem) is None


def test_a_penalty_on_buffers_that_may_never_share_is_an_invalid_problem():
    items = (dsa.Item("a", 32, 32, ((0, 4),)), dsa.Item("b", 32, 32, ((2, 6),)))
    with pytest.raises(dsa.InvalidProblem):
        dsa.solve(dsa.Problem(128, items, penalties=(("a", "b", 1),)))


@st.composite
def problems(draw):
    n = draw(st.integers(1, 8))
    items = []
    for k in range(n):
        start = draw(st.integers(0, 12))
        items.append(dsa.Item(f"b{k}", draw(st.sampled_from([32, 64, 96, 128])), draw(st.sampled_from([32, 64])),
                              ((start, start + draw(st.integers(0, 6))),)))
    keys = [it.key for it in items]
    pairs = [(a, b) for i, a in enumerate(keys) for b in keys[i + 1:]]
    apart = draw(st.lists(st.sampled_from(pairs), max_size=3)) if pairs else []
    by = {it.key: it for it in items}
    soft = [(a, b, draw(st.integers(1, 3))) for a, b in (draw(st.lists(st.sampled_from(pairs), max_size=6))
                                                          if pairs else [])
            if not dsa.lives_overlap(by[a], by[b]) and (a, b) not in apart]
    reserved = draw(st.sampled_from([(), ((0, 64),)]))
    return dsa.Problem(draw(st.sampled_from([256, 384, 512, 1024])), tuple(items), reserved,
                       frozenset(frozenset(p) for p in apart), tuple(soft))


@settings(max_examples=200)
@given(problems())
def test_property_every_placement_the_solver_returns_holds_and_costs_no_more_than_first_fit(problem):
    solution = dsa.solve(problem)
    if solution is None:
        return
    assert dsa.validate(problem, solution.offsets) == []
    assert solution.objective == dsa.evaluate(problem, solution.offsets)
    assert dsa.solve(problem) == solution  # deterministic
    if not problem.penalties:
        assert solution.objective.reuse_cost == 0


# ----------------------------------------------------------------------------- across programs


@given(ps.tile_programs())
def test_property_planners_place_soundly_and_agree_on_the_bits(case):
    """The fuzz property ``planners``: PYPTO and DSA_RP placements hold their contracts and
    all three planners compute the same bits on the simulator."""
    check_planners(Example(case=case))


@given(ps.slotted_programs(colive=True))
def test_property_co_live_slots_compute_the_oracle_under_dsa_rp(case):
    got, _ = simulate(case, "DSA_RP")
    against_oracle(case, got, "a2a3sim under DSA_RP")


@given(ps.tile_programs(), st.sampled_from(["PYPTO", "DSA_RP"]))
def test_property_every_dsa_rp_allocation_dump_is_drawn_without_conflicts(case, planner):
    """The memory map reads DSA_RP's dumps as it reads PYPTO's: two allocations in one
    place never overlap in lifetime there."""
    import tempfile
    from pathlib import Path

    from pypto.runtime.compiled import compile_program

    with tempfile.TemporaryDirectory() as tmp:
        params = [p.name for p in case.program.function(case.entry).params]
        compile_program(case.program, params, RunConfig(platform="ref", memory_planner=planner,
                                                        dump_passes=PassDumpLevel.EXPLICIT, output_dir=tmp), write=True)
        (dump,) = sorted(Path(tmp, "passes_dump").glob("*_after_AllocateMemoryAddr.py"))
        data = model(dump)
        assert data["notes"]["memory_planner"] == planner
        boxes = [b for fn in data["functions"] for b in fn["boxes"]]
        assert not [b for b in boxes if b["kind"] == "conflict"]
        assert not any(s["over"] for fn in data["functions"] for s in fn["spaces"])


# ----------------------------------------------------------------------------- pipes


@given(ps.tile_programs())
def test_property_the_recognizer_reads_each_op_on_the_pipe_codegen_issues_it(case):
    """The penalties are only as good as the pipes: each op's, as the recognizer reads it,
    is the one the code generator puts its instruction on."""
    from pypto.codegen.isa import Instr, walk
    from pypto.ir import nodes as n
    from pypto.ir.types import TileType
    from pypto.passes.allocation.dsa_access import pipe_of
    from pypto.runtime.compiled import compile_program

    params = [p.name for p in case.program.function(case.entry).params]
    compiled = compile_program(case.program, params, config("a2a3sim", "DSA_RP"), write=False)
    issued = {}
    for kernel in compiled.kernels.values():
        for p in kernel.programs:
            for x in walk(p.body):
                if isinstance(x, Instr) and x.note:
                    issued.setdefault((x.op, x.note), set()).add(x.pipe)
    checked = 0
    for fn in compiled.lowered.functions:
        types = n.symbols(fn)
        for stmt in n.walk_stmts(fn.body):
            if isinstance(stmt, n.Assign) and isinstance(stmt.value, n.Call) and isinstance(stmt.type, TileType):
                pipe = pipe_of(stmt.value, stmt.type, types)
                if pipe is not None and (stmt.value.op, stmt.target) in issued:
                    assert issued[stmt.value.op, stmt.target] == {pipe}, (stmt.value.op, stmt.target)
                    checked += 1
    assert checked or not compiled.kernels
