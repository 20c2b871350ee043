"""Tasks that carry something a plain call cannot: ``with pl.at(...) as tid``, ``deps=``,
``no_dep_args=``, ``allow_early_resolve=``, and the program form ``pl.submit(self.k, ...)``
with ``pl.no_dep(t)`` — in the IR (a ``Submit``), through the printer and parser, and on
the chip (edges, schedule, bits)."""

import pytest
import torch

import pypto.language as pl
from pypto.backend import A2A3
from pypto.chip.races import TaskRace
from pypto.errors import PyptoError
from pypto.ir import nodes as n
from pypto.lang import parse
from helpers import load_kernel
from pypto.runtime import RunConfig

R, C = 64, 128
CG = pl.Level.CORE_GROUP
REF = RunConfig(platform="ref")


def deps(report) -> dict:
    return {t.task_id: t.deps for t in report.tasks}


def war_fixed(x: pl.InOut[pl.Tensor], z: pl.Tensor, y: pl.Out[pl.Tensor]):
    with pl.at(level=CG) as reader:
        pl.store(pl.exp(pl.load(x, [0, 0], [R, C])), [0, 0], y)
    with pl.at(level=CG, deps=[reader, None]):  # None waits for nothing
        pl.store(pl.neg(pl.load(z, [0, 0], [R, C])), [0, 0], x)
    return x, y


def test_deps_on_a_task_id_orders_a_writer_after_its_reader():
    kernel = pl.jit(war_fixed)
    x, z = torch.randn(R, C), torch.randn(R, C)
    for platform in ("ref", "a2a3sim"):
        xx, y = x.clone(), torch.zeros(R, C)
        compiled = kernel.compile(xx, z, y, config=RunConfig(platform=platform))
        report = compiled.run(xx, z, y)
        assert torch.equal(y, torch.exp(x)) and torch.equal(xx, -z)
    assert deps(report) == {"r0t0": (), "r0t1": ("r0t0",)}
    by_id = {t.task_id: t for t in report.tasks}
    assert by_id["r0t1"].dispatch >= by_id["r0t0"].finish


def test_the_task_ir_prints_and_parses_back_before_and_after_outlining():
    kernel = pl.jit(war_fixed)
    x = torch.randn(R, C)
    compiled = kernel.compile(x, x.clone(), torch.zeros(R, C))
    text = compiled.program.as_python()
    assert "with pl.at(level=pl.Level.CORE_GROUP) as reader:" in text
    assert "with pl.at(level=pl.Level.CORE_GROUP, deps=[reader]):" in text
    assert parse(text) == compiled.program
    lowered = compiled.lowered.as_python()
    assert "reader = pl.submit(self.war_fixed_incore_0, x, y)" in lowered
    assert "pl.submit(self.war_fixed_incore_1, z, x, deps=[reader])" in lowered
    entry = compiled.lowered.function(compiled.entry)
    assert parse(lowered).function(compiled.entry) == entry
    submits = [s.value for s in entry.body if isinstance(getattr(s, "value", None), n.Submit)]
    assert len(submits) == 2 and submits[1].deps == (n.Var("reader"),)


def test_a_task_id_carried_through_a_loop_chains_the_iterations():
    @pl.jit
    def chain(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        prev = None
        for i in pl.parallel(4):
            with pl.at(level=CG, deps=[prev]) as tid:
                pl.store(pl.exp(pl.load(a, [i * R, 0], [R, C])), [i * R, 0], out)
            prev = tid
        return out

    a, out = torch.randn(4 * R, C), torch.zeros(4 * R, C)
    report = chain.compile(a, out).run(a, out)
    assert torch.equal(out, torch.exp(a))
    assert deps(report) == {"r1t0": (), "r1t1": ("r1t0",), "r1t2": ("r1t1",), "r1t3": ("r1t2",)}


def test_no_dep_args_leaves_a_tensor_out_of_tracking():
    def bands(opt_out: bool):
        @pl.jit
        def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
            for i in pl.range(4):
                if opt_out:
                    with pl.at(level=CG, no_dep_args=[out]):
                        pl.store(pl.mul(pl.load(a, [i * R, 0], [R, C]), 2.0), [i * R, 0], out)
                else:
                    with pl.at(level=CG):
                        pl.store(pl.mul(pl.load(a, [i * R, 0], [R, C]), 2.0), [i * R, 0], out)
            return out

        return k

    a = torch.randn(4 * R, C)
    chained, free = torch.zeros(4 * R, C), torch.zeros(4 * R, C)
    seq = bands(False).compile(a, chained).run(a, chained)
    par = bands(True).compile(a, free).run(a, free)
    assert torch.equal(chained, a * 2.0) and torch.equal(free, a * 2.0)
    assert any(seq_deps for seq_deps in deps(seq).values())  # R-seq chains them
    assert not any(deps(par).values())  # the claim: the bands are disjoint
    assert par.cycles < seq.cycles


def test_no_dep_args_that_lie_are_a_race():
    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        for i in pl.range(2):
            with pl.at(level=CG, no_dep_args=[out]):  # both write the same band
                pl.store(pl.load(a, [i * R, 0], [R, C]), [0, 0], out)
        return out

    with pytest.raises(TaskRace):
        k(torch.randn(2 * R, C), torch.zeros(R, C))


def _early(flag: bool):
    @pl.jit
    def k(a: pl.Tensor, b: pl.Tensor, scratch: pl.Out[pl.Tensor], out: pl.Out[pl.Tensor]):
        with pl.at(level=CG, allow_early_resolve=flag):
            pl.store(pl.add(pl.load(a, [0, 0], [R, C]), pl.load(b, [0, 0], [R, C])), [0, 0], scratch)
        with pl.at(level=CG):
            pl.store(pl.exp(pl.load(scratch, [0, 0], [R, C])), [0, 0], out)
        return scratch, out

    return k


def test_allow_early_resolve_stages_the_consumer_to_start_as_its_producer_ends():
    a, b = torch.randn(R, C), torch.randn(R, C)
    reports = {}
    for flag in (False, True):
        scratch, out = torch.zeros(R, C), torch.zeros(R, C)
        reports[flag] = _early(flag).compile(a, b, scratch, out).run(a, b, scratch, out)
        assert torch.equal(out, torch.exp(a + b))
    late, early = (sorted(reports[f].tasks, key=lambda t: t.task_id) for f in (False, True))
    assert early[1].start == early[0].end  # released the instant the producer ends
    assert early[1].dispatch < early[0].finish  # staged while the producer ran
    c = A2A3.chip
    assert late[1].start == late[0].finish + c.release + c.dispatch + c.pickup
    assert reports[True].cycles < reports[False].cycles


def test_the_program_form_submits_with_no_dep_and_deps():
    text = '''
import pypto.language as pl


@pl.program
class P:
    @pl.function(type=pl.FunctionType.InCore)
    def scale(self, a: pl.Tensor[[64, 128], pl.FP32], out: pl.Out[pl.Tensor[[64, 128], pl.FP32]]):
        t = pl.tile.load(a, [0, 0], [64, 128], target_memory=pl.Mem.Vec)
        pl.tile.store(pl.tile.muls(t, 2.0), [0, 0], out)

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[64, 128], pl.FP32], out: pl.Out[pl.Tensor[[64, 128], pl.FP32]],
             out2: pl.Out[pl.Tensor[[64, 128], pl.FP32]]):
        first = pl.submit(self.scale, a, pl.no_dep(out))
        pl.submit(self.scale, out, out2, deps=[first], allow_early_resolve=True)
'''
    program = parse(text)
    main = program.function("main")
    first, second = (s.value for s in main.body if isinstance(getattr(s, "value", None), n.Submit))
    assert first.no_dep == (1,) and second.deps == (n.Var("first"),) and second.allow_early_resolve
    assert parse(program.as_python()) == program


PLAIN_NO_DEP = '''
import pypto.language as pl


@pl.program
class P:
    @pl.function(type=pl.FunctionType.InCore)
    def scale(self, a: pl.Tensor[[64, 128], pl.FP32], out: pl.Out[pl.Tensor[[64, 128], pl.FP32]]) -> pl.Tensor[[64, 128], pl.FP32]:
        t = pl.tile.load(a, [0, 0], [64, 128], target_memory=pl.Mem.Vec)
        out = pl.tile.store(pl.tile.muls(t, 2.0), [0, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[64, 128], pl.FP32], out: pl.Out[pl.Tensor[[64, 128], pl.FP32]],
             out2: pl.Out[pl.Tensor[[64, 128], pl.FP32]]) -> pl.Tensor[[64, 128], pl.FP32]:
        out = self.scale(a, pl.no_dep(out))
        out2 = self.scale(a, out2)
        return out2
'''


def test_pl_no_dep_marks_an_argument_of_a_plain_kernel_call():
    program = parse(PLAIN_NO_DEP)
    first, second = (s.value for s in program.function("main").body if isinstance(getattr(s, "value", None), n.FuncCall))
    assert first.no_dep == (1,) and second.no_dep == ()
    assert "self.scale(a, pl.no_dep(out))" in program.as_python() and parse(program.as_python()) == program
    a = torch.randn(64, 128)
    out, out2 = torch.zeros(64, 128), torch.zeros(64, 128)
    from pypto.runtime import run

    compiled = run(program, a, out, out2, config=RunConfig(platform="a2a3sim"))
    assert torch.equal(out, 2 * a) and torch.equal(out2, 2 * a)
    text = compiled.lowered.as_python()
    assert "(a, pl.no_dep(out))  # task args: Input, NoDep" in text and "task args: Input, OutputExisting" in text


def test_pl_no_dep_is_an_orchestration_s_mark_of_a_tensor():
    with pytest.raises(PyptoError, match="pl.no_dep marks a tensor argument"):
        parse(PLAIN_NO_DEP.replace("pl.Out[pl.Tensor[[64, 128], pl.FP32]]) -> pl.Tensor[[64, 128], pl.FP32]:\n        t",
                                   "pl.Out[pl.Tensor[[64, 128], pl.FP32]], k: pl.Scalar[pl.INT32]) -> "
                                   "pl.Tensor[[64, 128], pl.FP32]:\n        t", 1)
              .replace("self.scale(a, pl.no_dep(out))", "self.scale(a, out, pl.no_dep(3))")
              .replace("self.scale(a, out2)", "self.scale(a, out2, 3)"))


@pytest.mark.parametrize("body, message", [
    ("with pl.at(level=CG, deps=prev):", "pl.at(deps=...) must be a list literal"),
    ("with pl.at(level=CG, deps=[a]):", "pl.at deps= entries must be a TaskId variable, a TASK_ID array element "
                                        "(e.g. `arr[i]`), or None — got 'a'"),
    ("with pl.at(level=CG, no_dep_args=out):", "pl.at(no_dep_args=...) must be a list literal of tensor names"),
    ("with pl.at(level=CG, no_dep_args=[i]):", "pl.at(no_dep_args=...) entries must be bare tensor names, not 'i'"),
    ("with pl.at(level=CG, allow_early_resolve=1):", "allow_early_resolve must be a bool"),
    ("with pl.at(level=CG) as (t, u):", "'with pl.at(...) as tid' binds one name"),
])
def test_task_keywords_are_checked_at_the_users_line(tmp_path, body, message):
    src = tmp_path / "k.py"
    src.write_text(f'''
import pypto.language as pl
CG = pl.Level.CORE_GROUP


@pl.jit
def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    prev = None
    for i in pl.range(1):
        {body}
            pl.store(pl.load(a, [0, 0], [64, 128]), [0, 0], out)
    return out
''')
    kernel = load_kernel(src)
    with pytest.raises(PyptoError) as err:
        kernel.compile(torch.randn(64, 128), torch.zeros(64, 128))
    assert message in err.value.message
    assert err.value.span.file == str(src) and err.value.span.line == 10


def test_a_task_id_takes_no_arithmetic():
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=CG) as t:
            pl.store(pl.load(a, [0, 0], [R, C]), [0, 0], out)
        with pl.at(level=CG, deps=[t]):
            pl.store(pl.load(a, [t + 1, 0], [R, C]), [0, 0], out)
        return out

    with pytest.raises(PyptoError, match="a TaskId is not a number"):
        pl.jit(k)(torch.randn(2 * R, C), torch.zeros(R, C))


def test_submit_needs_a_self_kernel_reference():
    text = '''
import pypto.language as pl


@pl.program
class P:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[64, 128], pl.FP32]):
        pl.submit(a)
'''
    with pytest.raises(PyptoError, match=r"pl.submit\(...\) first argument must be a self.<kernel> method reference"):
        parse(text)


# ----------------------------------------------------------------------------- runtime scopes


def test_a_manual_scope_derives_no_edges_and_its_writes_reach_later_tasks():
    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor], after: pl.Out[pl.Tensor]):
        with pl.manual_scope():  # nothing is inferred in here
            for i in pl.range(4):
                with pl.at(level=CG):
                    pl.store(pl.mul(pl.load(a, [i * R, 0], [R, C]), 2.0), [i * R, 0], out)
        with pl.at(level=CG):  # after the scope: waits for the writers of the band it reads
            pl.store(pl.exp(pl.load(out, [R, 0], [R, C])), [0, 0], after)
        return out, after

    a = torch.randn(4 * R, C)
    for platform in ("ref", "a2a3sim"):
        out, after = torch.zeros(4 * R, C), torch.zeros(R, C)
        report = k.compile(a, out, after, config=RunConfig(platform=platform)).run(a, out, after)
        assert torch.equal(out, a * 2.0) and torch.equal(after, torch.exp(a[R:2 * R] * 2.0))
    found = deps(report)
    assert [found[f"r2t{j}"] for j in range(4)] == [()] * 4  # ring 2: the manual scope, then the loop body
    assert set(found["r0t0"]) == {"r2t3"}  # the last registered writer of out


def test_auto_scope_false_takes_hand_placed_scopes_as_the_rings():
    @pl.jit(auto_scope=False)
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.scope():
            for i in pl.range(2):
                with pl.scope():
                    with pl.at(level=CG):
                        pl.store(pl.exp(pl.load(a, [i * R, 0], [R, C])), [i * R, 0], out)
        return out

    a, out = torch.randn(2 * R, C), torch.zeros(2 * R, C)
    compiled = k.compile(a, out)
    report = compiled.run(a, out)
    assert torch.equal(out, torch.exp(a))
    assert sorted(t.task_id for t in report.tasks) == ["r2t0", "r2t1"]  # two scopes deep; the loop is not one
    text = compiled.program.as_python()
    assert "@pl.function(type=pl.FunctionType.Orchestration, auto_scope=False)" in text
    assert text.count("with pl.scope():") == 2
    assert parse(text) == compiled.program


def test_scope_mode_manual_is_the_manual_scope():
    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.scope(mode=pl.ScopeMode.MANUAL):
            with pl.at(level=CG):
                pl.store(pl.exp(pl.load(a, [0, 0], [R, C])), [0, 0], out)
        return out

    a, out = torch.randn(R, C), torch.zeros(R, C)
    compiled = k.compile(a, out)
    compiled.run(a, out)
    assert torch.equal(out, torch.exp(a)) and "with pl.manual_scope():" in compiled.program.as_python()


@pytest.mark.parametrize("deco, body, message", [
    ("@pl.jit", "with pl.scope():", "a hand-placed AUTO 'with pl.scope()' requires @pl.function(auto_scope=False)"),
    ("@pl.jit", "with pl.manual_scope(1):", "pl.manual_scope() does not accept arguments"),
    ("@pl.jit(auto_scope=False)", "with pl.scope(1):", "pl.scope() takes only a 'mode=' keyword, not positional"),
])
def test_runtime_scope_mistakes(tmp_path, deco, body, message):
    src = tmp_path / "k.py"
    src.write_text(f'''
import pypto.language as pl


{deco}
def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    {body}
        with pl.at(level=pl.Level.CORE_GROUP):
            pl.store(pl.load(a, [0, 0], [64, 128]), [0, 0], out)
    return out
''')
    kernel = load_kernel(src)
    with pytest.raises(PyptoError) as err:
        kernel.compile(torch.randn(64, 128), torch.zeros(64, 128))
    assert message in err.value.message and err.value.span.line == 7


def test_nested_manual_and_auto_in_manual_are_refused():
    def nested(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.manual_scope():
            with pl.manual_scope():
                with pl.at(level=CG):
                    pl.store(pl.load(a, [0, 0], [R, C]), [0, 0], out)
        return out

    def auto_in_manual(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.manual_scope():
            with pl.scope():
                with pl.at(level=CG):
                    pl.store(pl.load(a, [0, 0], [R, C]), [0, 0], out)
        return out

    with pytest.raises(PyptoError, match="a manual scope may not be nested inside another manual scope"):
        pl.jit(nested)(torch.randn(R, C), torch.zeros(R, C))
    with pytest.raises(PyptoError, match="an AUTO scope may not be nested inside a manual scope"):
        pl.jit(auto_scope=False)(auto_in_manual)(torch.randn(R, C), torch.zeros(R, C))


def test_jit_options_are_checked_where_written():
    with pytest.raises(TypeError, match="@pl.jit.incore does not accept an auto_scope= argument"):
        pl.jit.incore(auto_scope=False)
    with pytest.raises(TypeError, match="@pl.jit does not accept a level= argument"):
        pl.jit(level=pl.Level.CHIP_DIE)


# ----------------------------------------------------------------------------- TaskId arrays


def test_task_id_arrays_fan_in_writers_and_their_elements():
    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor], first: pl.Out[pl.Tensor]):
        scratch = pl.create_tensor([4 * R, C], pl.FP32, manual_dep=True)
        writers = pl.array.create(4, pl.TASK_ID)
        for i in pl.range(4):
            with pl.at(level=CG) as tid:
                pl.store(pl.mul(pl.load(a, [i * R, 0], [R, C]), 2.0), [i * R, 0], scratch)
            writers[i] = tid
        with pl.at(level=CG, deps=[writers]):  # every slot
            for i in pl.range(4):
                pl.store(pl.load(scratch, [i * R, 0], [R, C]), [i * R, 0], out)
        with pl.at(level=CG, deps=[writers[0]]):  # one slot
            pl.store(pl.load(scratch, [0, 0], [R, C]), [0, 0], first)
        return out, first

    a = torch.randn(4 * R, C)
    for platform in ("ref", "a2a3sim"):
        out, first = torch.zeros(4 * R, C), torch.zeros(R, C)
        compiled = k.compile(a, out, first, config=RunConfig(platform=platform))
        report = compiled.run(a, out, first)
        assert torch.equal(out, a * 2.0) and torch.equal(first, a[:R] * 2.0)
    found = deps(report)
    assert found["r0t0"] == ("r1t0", "r1t1", "r1t2", "r1t3") and found["r0t1"] == ("r1t0",)
    text = compiled.program.as_python()
    assert "writers = pl.array.create(4, dtype=pl.TASK_ID)" in text and "pl.array.set(" in text
    assert parse(text) == compiled.program
    assert parse(compiled.lowered.as_python()).function(compiled.entry) == compiled.lowered.function(compiled.entry)


def test_task_id_arrays_hold_task_ids_and_stay_in_the_orchestration():
    def wrong_value(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        ids = pl.array.create(2, pl.TASK_ID)
        ids[0] = 5
        with pl.at(level=CG, deps=[ids]):
            pl.store(pl.load(a, [0, 0], [R, C]), [0, 0], out)
        return out

    def in_kernel(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=CG):
            ids = pl.array.create(2, pl.TASK_ID)
            pl.store(pl.load(a, [0, 0], [R, C]), [0, 0], out)
        return out

    def out_of_range(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        ids = pl.array.create(2, pl.TASK_ID)
        for i in pl.range(3):
            with pl.at(level=CG) as tid:
                pl.store(pl.load(a, [0, 0], [R, C]), [0, 0], out)
            ids[i] = tid
        return out

    x, y = torch.randn(R, C), torch.zeros(R, C)
    with pytest.raises(PyptoError, match="an Array of TaskIds holds TaskIds"):
        pl.jit(wrong_value)(x, y)
    with pytest.raises(PyptoError, match="pl.array.create of TaskIds is the orchestration's"):
        pl.jit(in_kernel)(x, y)
    with pytest.raises(PyptoError, match="index 2 is outside the array's 2 elements") as err:
        pl.jit(out_of_range)(x, y)
    assert err.value.span.line == out_of_range.__code__.co_firstlineno + 5


def test_task_dummy_joins_many_producers_into_one_edge(tmp_path):
    import json

    @pl.jit
    def fence(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        scratch = pl.create_tensor([4 * R, C], pl.FP32, manual_dep=True)
        tids = pl.array.create(4, pl.TASK_ID)
        for i in pl.range(4):
            with pl.at(level=CG) as tid:
                pl.store(pl.mul(pl.load(a, [i * R, 0], [R, C]), 2.0), [i * R, 0], scratch)
            tids[i] = tid
        barrier = pl.system.task_dummy(deps=[tids])
        nothing = pl.system.task_dummy()  # submitted with no deps: done at once
        for j in pl.parallel(2):
            with pl.at(level=CG, deps=[barrier, nothing]):
                for i in pl.range(2):
                    pl.store(pl.load(scratch, [(j * 2 + i) * R, 0], [R, C]), [(j * 2 + i) * R, 0], out)
        return out

    a = torch.randn(4 * R, C)
    for platform in ("ref", "a2a3sim"):
        out = torch.zeros(4 * R, C)
        config = RunConfig(platform=platform, enable_dep_gen=True, enable_chip_swimlane=1, output_dir=tmp_path / platform)
        compiled = fence.compile(a, out, config=config)
        report = compiled.run(a, out)
        assert torch.equal(out, a * 2.0)
    by_id = {t.task_id: t for t in report.tasks}
    barrier = by_id["r0t0"]
    assert (barrier.kernel, barrier.core, barrier.core_type) == ("task_dummy", -1, "dummy")
    assert barrier.deps == ("r1t0", "r1t1", "r1t2", "r1t3")
    assert barrier.start == max(by_id[f"r1t{k}"].finish for k in range(4)) + A2A3.chip.release
    assert {t.deps for t in report.tasks if t.kernel.endswith("incore_1")} == {("r0t0", "r0t1")}
    text = compiled.program.as_python()
    assert "barrier = pl.system.task_dummy(deps=[tids_" in text and "pl.system.task_dummy(deps=[])" in text
    assert parse(text) == compiled.program
    dfx = tmp_path / "a2a3sim" / "dfx_outputs"
    graph = json.loads((dfx / "deps.json").read_text())
    assert [t["kernel_ids"] for t in graph["tasks"] if t["name"] == "r0t0"] == [[-1, -1, -1]]
    lane = json.loads((dfx / "chip_swimlane_records.json").read_text())
    assert len(lane["aicore_tasks"]) == 6  # the dummies ran on no core


def test_deps_json_is_the_graph_the_run_used(tmp_path):
    import json

    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor], after: pl.Out[pl.Tensor]):
        with pl.manual_scope():
            for i in pl.range(2):
                with pl.at(level=CG, allow_early_resolve=True):
                    pl.store(pl.exp(pl.load(a, [i * R, 0], [R, C])), [i * R, 0], out)
        with pl.at(level=CG) as t:
            pl.store(pl.load(out, [0, 0], [R, C]), [0, 0], after)
        with pl.at(level=CG, deps=[t]):
            pl.store(pl.neg(pl.load(a, [0, 0], [R, C])), [0, 0], out)
        return out, after

    a = torch.randn(2 * R, C)
    out, after = torch.zeros(2 * R, C), torch.zeros(R, C)
    report = k.compile(a, out, after, config=RunConfig(enable_dep_gen=True, output_dir=tmp_path)).run(a, out, after)
    graph = json.loads((tmp_path / "dfx_outputs" / "deps.json").read_text())
    names = {t["task_id"]: t["name"] for t in graph["tasks"]}
    edges = {}
    for e in graph["edges"]:
        edges.setdefault(names[e["succ"]], set()).add((names[e["pred"]], e["source"]))
    assert {t.task_id: set(t.deps) for t in report.tasks} == \
        {name: {p for p, _ in edges.get(name, ())} for name in names.values()}
    assert edges["r0t1"] == {("r0t0", "explicit"), ("r2t1", "tensormap")}  # WAR by hand, WAW by the rules
    scopes = {t["name"]: (t["scope"], t["early_dispatch"]) for t in graph["tasks"]}
    assert scopes["r2t0"] == ("manual", True) and scopes["r0t0"] == ("auto", False)
    assert torch.equal(out[:R], -a[:R]) and torch.equal(after, torch.exp(a[:R]))


def test_array_elements_take_the_reference_s_spellings():
    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        counts = pl.array.create(2, pl.INT32)
        counts = pl.array.update_element(counts, 1, 3)
        n = pl.array.get_element(counts, 1)
        for i in pl.range(n):
            with pl.at(level=CG):
                pl.store(pl.mul(pl.load(a, [i * R, 0], [R, C]), 2.0), [i * R, 0], out)
        return out

    a, out = torch.randn(4 * R, C), torch.zeros(4 * R, C)
    k(a, out, config=RunConfig(platform="ref"))
    assert torch.equal(out[:3 * R], a[:3 * R] * 2.0) and torch.equal(out[3 * R:], torch.zeros(R, C))


def test_pl_no_dep_in_a_pl_spmd_dispatch_is_the_task_s():
    program = parse(PLAIN_NO_DEP.replace("        out = self.scale(a, pl.no_dep(out))\n",
                                         "        with pl.spmd(4):\n            out = self.scale(a, pl.no_dep(out))\n"))
    task = next(s.value for s in program.function("main").body if isinstance(getattr(s, "value", None), n.Submit))
    assert task.no_dep == (1,) and task.call.no_dep == ()
    assert parse(program.as_python()) == program
