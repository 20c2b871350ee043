"""``with pl.cluster():``: the kernels its body calls are one Group task, started together on
one physical cluster (the cube kernel on its cube core, each vector kernel on a vector core
of its own); a ``pl.spmd`` inside it is unwrapped into the Group's launch, one cluster per
block; what only a Submit carries is refused with the reference's words."""

import textwrap

import pytest
import torch

from pypto.errors import PyptoError
from pypto.lang import parse
from pypto.runtime import RunConfig
from pypto.runtime.compiled import compile_program

M, K, N = 64, 128, 64

KERNELS = f'''
    @pl.function(type=pl.FunctionType.InCore)
    def cube(self, a: pl.Tensor[[{M}, {K}], pl.FP16], b: pl.Tensor[[{K}, {N}], pl.FP16],
             c: pl.Out[pl.Tensor[[{M}, {N}], pl.FP32]]) -> pl.Tensor[[{M}, {N}], pl.FP32]:
        la = pl.move(pl.load(a, [0, 0], [{M}, {K}], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
        rb = pl.move(pl.load(b, [0, 0], [{K}, {N}], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
        c = pl.store(pl.matmul(la, rb), [0, 0], c)
        return c

    @pl.function(type=pl.FunctionType.InCore)
    def vec(self, x: pl.Tensor[[{M}, {N}], pl.FP32], y: pl.Out[pl.Tensor[[{M}, {N}], pl.FP32]]) -> pl.Tensor[[{M}, {N}], pl.FP32]:
        y = pl.store(pl.exp(pl.load(x, [0, 0], [{M}, {N}])), [0, 0], y)
        return y
'''


def program(main: str, kernels: str = KERNELS) -> str:
    return ("import pypto.language as pl\n\n\n@pl.program\nclass P:\n" + textwrap.dedent(kernels).replace("\n", "\n    ")
            + "\n" + textwrap.indent(textwrap.dedent(main), "    "))


def run(text: str, names, *args, platform="a2a3sim"):
    copies = [x.clone() for x in args]
    report = compile_program(parse(text), names, RunConfig(platform=platform), write=False).run(*copies)
    return report, copies


def both(text, names, *args):
    (_, ref), (report, sim) = run(text, names, *args, platform="ref"), run(text, names, *args)
    for x, y in zip(ref, sim):
        assert torch.equal(x, y)
    return report, sim


def operands():
    g = torch.Generator().manual_seed(0)
    return (torch.randn(M, K, generator=g).half(), torch.randn(K, N, generator=g).half(), torch.randn(M, N, generator=g),
            torch.randn(M, N, generator=g))


PAIR = f'''
@pl.function(type=pl.FunctionType.Orchestration)
def main(self, a: pl.Tensor[[{M}, {K}], pl.FP16], b: pl.Tensor[[{K}, {N}], pl.FP16], x: pl.Tensor[[{M}, {N}], pl.FP32],
         x2: pl.Tensor[[{M}, {N}], pl.FP32], c: pl.Out[pl.Tensor[[{M}, {N}], pl.FP32]],
         y: pl.Out[pl.Tensor[[{M}, {N}], pl.FP32]], y2: pl.Out[pl.Tensor[[{M}, {N}], pl.FP32]]):
    with pl.cluster(name_hint="pair"):
        c = self.cube(a, b, c)
        y = self.vec(x, y)
        y2 = self.vec(x2, y2)
    return c, y, y2
'''


def test_a_cluster_is_one_group_task_with_every_member_on_one_cluster():
    a, b, x, x2 = operands()
    zeros = [torch.zeros(M, N) for _ in range(3)]
    report, (*_, c, y, y2) = both(program(PAIR), ["a", "b", "x", "x2", "c", "y", "y2"], a, b, x, x2, *zeros)
    torch.testing.assert_close(c, a.float() @ b.float(), rtol=1e-3, atol=1e-3)
    assert torch.equal(y, torch.exp(x)) and torch.equal(y2, torch.exp(x2))
    (task,) = report.tasks
    assert (task.kernel, task.core_type) == ("pair", "mix")
    assert sorted(report.pipe_cycles) == ["aic0", "aiv0", "aiv1"]  # the cube kernel and a vector core each


def test_the_members_start_together_rather_than_one_after_another():
    a, b, x, x2 = operands()
    zeros = [torch.zeros(M, N) for _ in range(3)]
    grouped, _ = run(program(PAIR), ["a", "b", "x", "x2", "c", "y", "y2"], a, b, x, x2, *zeros)
    apart = PAIR.replace('    with pl.cluster(name_hint="pair"):\n', "    if True:\n")
    separate, _ = run(program(apart), ["a", "b", "x", "x2", "c", "y", "y2"], a, b, x, x2, *zeros)
    assert len(separate.tasks) == 3 and len(grouped.tasks) == 1

    def spread(report):  # between the cores' first instructions
        first = {}
        for e in report.events:
            if e.kind == "instr":
                first[e.core] = min(first.get(e.core, e.start), e.start)
        assert len(first) == 3
        return max(first.values()) - min(first.values())

    assert spread(grouped) < spread(separate)  # one dispatch: no submit between the members


SPMD = f'''
@pl.function(type=pl.FunctionType.InCore)
def band(self, x: pl.Tensor[[{4 * M}, {N}], pl.FP32], y: pl.Out[pl.Tensor[[{4 * M}, {N}], pl.FP32]]) -> pl.Tensor[[{4 * M}, {N}], pl.FP32]:
    i = pl.tile.get_block_idx()
    y = pl.store(pl.exp(pl.load(x, [i * {M}, 0], [{M}, {N}])), [i * {M}, 0], y)
    return y

@pl.function(type=pl.FunctionType.Orchestration)
def main(self, x: pl.Tensor[[{4 * M}, {N}], pl.FP32], y: pl.Out[pl.Tensor[[{4 * M}, {N}], pl.FP32]]):
    with pl.cluster():
        with pl.spmd(core_num=4):
            y = self.band(x, y)
    return y
'''


def test_a_spmd_in_a_cluster_is_unwrapped_into_the_group_launch():
    x = torch.randn(4 * M, N, generator=torch.Generator().manual_seed(1))
    text = program(SPMD)
    report, (_, y) = both(text, ["x", "y"], x, torch.zeros(4 * M, N))
    assert torch.equal(y, torch.exp(x))
    assert len({t.task_id for t in report.tasks}) == 1 and sorted(t.block for t in report.tasks) == [0, 1, 2, 3]
    assert {t.core_type for t in report.tasks} == {"mix"} and len({t.core for t in report.tasks}) == 4
    assert parse(parse(text).as_python()) == parse(text)  # the dump reads back


@pytest.mark.parametrize("inner, message", [
    ("with pl.spmd(core_num=4, allow_early_resolve=True):",
     "`pl.spmd(..., allow_early_resolve=True)` cannot be nested inside `pl.cluster()`"),
    ("with pl.spmd(core_num=4) as tid:", "`with pl.spmd(...) as tid:` cannot capture a TaskId when nested inside"),
])
def test_what_only_a_submit_carries_is_refused_inside_a_cluster(inner, message):
    text = program(SPMD.replace("with pl.spmd(core_num=4):", inner))
    with pytest.raises(PyptoError, match=message.replace("(", "\\(").replace(")", "\\)").replace("[", "\\[")) as info:
        parse(text)
    assert info.value.span is not None and info.value.hint


def test_a_cluster_with_two_cube_kernels_is_refused_where_it_runs():
    two = PAIR.replace("y = self.vec(x, y)", "c = self.cube(a, b, c)")
    a, b, x, x2 = operands()
    with pytest.raises(PyptoError, match="both run on the cube core") as info:
        run(program(two), ["a", "b", "x", "x2", "c", "y", "y2"], a, b, x, x2, *[torch.zeros(M, N)] * 3)
    assert info.value.span is not None


def test_per_task_metadata_on_a_cluster_member_is_refused():
    text = program(PAIR.replace("y = self.vec(x, y)", "y, tid = pl.submit(self.vec, x, y, allow_early_resolve=True)"))
    with pytest.raises(PyptoError, match="inside `pl.cluster\\(\\)` cannot carry per-task dispatch metadata"):
        parse(text)


def test_a_crowded_cluster_is_refused_on_every_platform():
    two = PAIR.replace("y = self.vec(x, y)", "c = self.cube(a, b, c)")
    a, b, x, x2 = operands()
    with pytest.raises(PyptoError, match="both run on the cube core"):
        run(program(two), ["a", "b", "x", "x2", "c", "y", "y2"], a, b, x, x2, *[torch.zeros(M, N)] * 3,
            platform="ref")


HELPERS = f'''
@pl.function(type=pl.FunctionType.Orchestration)
def helper(self, x: pl.Tensor[[{M}, {N}], pl.FP32], y: pl.Out[pl.Tensor[[{M}, {N}], pl.FP32]]):
    BODY
    return y

@pl.function(type=pl.FunctionType.Orchestration)
def main(self, x: pl.Tensor[[{M}, {N}], pl.FP32], y: pl.Out[pl.Tensor[[{M}, {N}], pl.FP32]]):
    with pl.cluster():
        y = self.helper(x, y)
    return y
'''


@pytest.mark.parametrize("body, message", [
    ("with pl.cluster():\n        y = self.vec(x, y)", "pl.cluster\\(\\) scopes do not nest"),
    ("y, t = pl.submit(self.vec, x, y, allow_early_resolve=True)",
     "`pl.submit\\(...\\)` inside `pl.cluster\\(\\)` cannot carry per-task dispatch metadata"),
])
@pytest.mark.parametrize("platform", ["ref", "a2a3sim"])
def test_what_a_called_orchestration_does_inside_a_cluster_is_checked_where_it_runs(body, message, platform):
    text = program(HELPERS.replace("BODY", body))
    x = torch.randn(M, N)
    with pytest.raises(PyptoError, match=message) as info:
        run(text, ["x", "y"], x, torch.zeros(M, N), platform=platform)
    assert info.value.span is not None and info.value.hint


def test_a_members_task_id_is_its_group_tasks():
    text = program(f'''
@pl.function(type=pl.FunctionType.Orchestration)
def main(self, x: pl.Tensor[[{M}, {N}], pl.FP32], y: pl.Out[pl.Tensor[[{M}, {N}], pl.FP32]],
         z: pl.Out[pl.Tensor[[{M}, {N}], pl.FP32]]):
    with pl.manual_scope():
        with pl.cluster():
            y, t = pl.submit(self.vec, x, y)
        z, _ = pl.submit(self.vec, y, z, deps=[t])
    return y, z
''')
    x = torch.randn(M, N)
    report, (_, y, z) = both(text, ["x", "y", "z"], x, torch.zeros(M, N), torch.zeros(M, N))
    assert torch.equal(z, torch.exp(torch.exp(x)))
    group, after = sorted(report.tasks, key=lambda t: t.start)
    assert group.core_type == "mix" and after.deps == (group.task_id,)


def test_the_dependency_record_names_the_cores_a_group_runs_on(tmp_path):
    import json

    a, b, x, x2 = operands()
    names = ["a", "b", "x", "x2", "c", "y", "y2"]
    config = RunConfig(enable_dep_gen=True, output_dir=tmp_path)
    compiled = compile_program(parse(program(PAIR)), names, config, write=True)
    compiled.run(a, b, x, x2, *[torch.zeros(M, N) for _ in range(3)])
    (task,) = json.loads(next((compiled.output_dir / "dfx_outputs").glob("deps*.json")).read_text())["tasks"]
    assert all(k >= 0 for k in task["kernel_ids"])  # its cube core and both vector cores
    vectors = PAIR.replace("        c = self.cube(a, b, c)\n", "")
    compiled = compile_program(parse(program(vectors)), names, config, write=True)
    compiled.run(a, b, x, x2, *[torch.zeros(M, N) for _ in range(3)])
    (task,) = json.loads(next((compiled.output_dir / "dfx_outputs").glob("deps*.json")).read_text())["tasks"]
    assert task["kernel_ids"][0] == -1 and min(task["kernel_ids"][1:]) >= 0  # not the cube core
