"""Hand-written cross-core pipes: a Group function calls an AIC and an AIV function that
talk through ``tpush`` / ``tpop`` / ``tfree`` over pipes each side sets up with
``*_initialize_pipe``. The Group runs on one cluster — a dual-dispatch AIV function on both
vector cores — with the pipe's slots in GM; a producer waits for a free slot, a consumer
for a ready one, so a pop without its free stalls the producer: a deadlock naming the pipe.
Ref runs the members as threads with the same protocol."""

import re

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from pypto.errors import PyptoError
from pypto.lang import parse
from pypto.runtime import RunConfig
from pypto.runtime.compiled import compile_program
from helpers import assert_cross_core_flows

D = 16
SLOT = D * D * 4

# the reference's two-pipe program: the vector cores compute a + b and a - b, the cube multiplies them
MULTI = f'''
import pypto.language as pl


@pl.program
class MultiPipe:
    @pl.function(type=pl.FunctionType.AIV, attrs={{"dual_aiv_dispatch": True}})
    def vector(self, a: pl.Tensor[[{D}, {D}], pl.FP32], b: pl.Tensor[[{D}, {D}], pl.FP32],
               output: pl.Out[pl.Tensor[[{D}, {D}], pl.FP32]]):
        peer_0 = pl.import_peer_buffer(name="v2c_0", peer_func="cube")
        peer_1 = pl.import_peer_buffer(name="v2c_1", peer_func="cube")
        pl.aiv_initialize_pipe(pl.const(0, pl.INT32), peer_0, dir_mask=2, slot_size={SLOT}, id=0)
        pl.aiv_initialize_pipe(pl.const(0, pl.INT32), peer_1, dir_mask=2, slot_size={SLOT}, id=1)
        a_tile: pl.Tile[[{D}, {D}], pl.FP32, pl.Mem.Vec] = pl.load(a, [0, 0], [{D}, {D}])
        b_tile: pl.Tile[[{D}, {D}], pl.FP32, pl.Mem.Vec] = pl.load(b, [0, 0], [{D}, {D}])
        total = pl.add(a_tile, b_tile)
        diff = pl.sub(a_tile, b_tile)
        pl.tpush_to_aic(diff, split=0, id=1)
        pl.tpush_to_aic(total, split=0, id=0)

    @pl.function(type=pl.FunctionType.AIC)
    def cube(self, a: pl.Tensor[[{D}, {D}], pl.FP32], b: pl.Tensor[[{D}, {D}], pl.FP32],
             output: pl.Out[pl.Tensor[[{D}, {D}], pl.FP32]]) -> pl.Tensor[[{D}, {D}], pl.FP32]:
        buf_0 = pl.reserve_buffer(name="v2c_0", size={SLOT * 8}, base=pl.AUTO)
        buf_1 = pl.reserve_buffer(name="v2c_1", size={SLOT * 8}, base=pl.AUTO)
        pl.aic_initialize_pipe(pl.const(0, pl.INT32), buf_0, dir_mask=2, slot_size={SLOT}, id=0)
        pl.aic_initialize_pipe(pl.const(0, pl.INT32), buf_1, dir_mask=2, slot_size={SLOT}, id=1)
        total: pl.Tile[[{D}, {D}], pl.FP32, pl.Mem.Mat] = pl.tpop_from_aiv(split=0, id=0)
        diff: pl.Tile[[{D}, {D}], pl.FP32, pl.Mem.Mat] = pl.tpop_from_aiv(split=0, id=1)
        left = pl.move(total, target_memory=pl.Mem.Left)
        right = pl.move(diff, target_memory=pl.Mem.Right)
        result = pl.matmul(left, right)
        pl.tfree_to_aiv(total, id=0)
        pl.tfree_to_aiv(diff, id=1)
        return pl.store(result, [0, 0], output)

    @pl.function(type=pl.FunctionType.Group)
    def group(self, a: pl.Tensor[[{D}, {D}], pl.FP32], b: pl.Tensor[[{D}, {D}], pl.FP32],
              output: pl.Out[pl.Tensor[[{D}, {D}], pl.FP32]]) -> pl.Tensor[[{D}, {D}], pl.FP32]:
        result = self.cube(a, b, output)
        self.vector(a, b, output)
        return result

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[{D}, {D}], pl.FP32], b: pl.Tensor[[{D}, {D}], pl.FP32],
             output: pl.Out[pl.Tensor[[{D}, {D}], pl.FP32]]) -> pl.Tensor[[{D}, {D}], pl.FP32]:
        result = self.group(a, b, output)
        return result
'''

M, K, N, NB = 32, 64, 256, 64


def c2v(split: int, slots: int = 2, free: bool = True, dual: bool = True, blocks: int = N // NB) -> str:
    """The cube multiplies a by each column block of b and pushes the result; the vector
    cores pop their half (split 1: rows, 2: columns; 0: one vector core, the whole block),
    add it into c, and free the slot."""
    rows, cols, r0, c0 = {1: ("M // 2", "NB", "lane * (M // 2)", "0"), 2: ("M", "NB // 2", "0", "lane * (NB // 2)"),
                          0: ("M", "NB", "0", "0")}[split]
    attrs = ', attrs={"dual_aiv_dispatch": True}' if dual else ""
    text = f'''
import pypto.language as pl


@pl.program
class C2V:
    @pl.function(type=pl.FunctionType.AIC)
    def cube(self, a: pl.Tensor[[M, K], pl.FP32], b: pl.Tensor[[K, N], pl.FP32],
             c: pl.InOut[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        pl.aic_initialize_pipe(dir_mask=1, slot_size=M * NB * 4, slot_num={slots})
        a_l0 = pl.move(pl.load(a, [0, 0], [M, K], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
        for j in pl.range(N // NB):
            b_l0 = pl.move(pl.load(b, [0, j * NB], [K, NB], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
            acc = pl.matmul(a_l0, b_l0)
            pl.tpush_to_aiv(acc, split={split})
        return c

    @pl.function(type=pl.FunctionType.AIV{attrs})
    def vector(self, a: pl.Tensor[[M, K], pl.FP32], b: pl.Tensor[[K, N], pl.FP32],
               c: pl.InOut[pl.Tensor[[M, N], pl.FP32]]):
        pl.aiv_initialize_pipe(dir_mask=1, slot_size=M * NB * 4, slot_num={slots})
        lane = pl.tile.get_subblock_idx()
        for j in pl.range(N // NB):
            part: pl.Tile[[{rows}, {cols}], pl.FP32, pl.Mem.Vec] = pl.tpop_from_aic(split={split})
            old = pl.load(c, [{r0}, j * NB + {c0}], [{rows}, {cols}])
            total = pl.add(part, old)
            {"pl.tfree_to_aic(part)" if free else "pass"}
            pl.store(total, [{r0}, j * NB + {c0}], c)

    @pl.function(type=pl.FunctionType.Group)
    def group(self, a: pl.Tensor[[M, K], pl.FP32], b: pl.Tensor[[K, N], pl.FP32],
              c: pl.InOut[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        c = self.cube(a, b, c)
        self.vector(a, b, c)
        return c

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[M, K], pl.FP32], b: pl.Tensor[[K, N], pl.FP32],
             c: pl.InOut[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        c = self.group(a, b, c)
        return c
'''
    for name, value in (("NB", NB), ("M", M), ("K", K), ("N", blocks * NB)):  # a parsed text has no module constants
        text = re.sub(rf"\b{name}\b", str(value), text)
    return text


def run(text: str, names, *args, platform="a2a3sim", **config):
    copies = [x.clone() for x in args]
    report = compile_program(parse(text), names, RunConfig(platform=platform, **config),
                             write="output_dir" in config).run(*copies)
    return report, copies


def small():
    g = torch.Generator().manual_seed(1)
    return torch.randn(D, D, generator=g), torch.randn(D, D, generator=g), torch.zeros(D, D)


def wide():
    g = torch.Generator().manual_seed(2)
    return torch.randn(M, K, generator=g), torch.randn(K, N, generator=g), torch.randn(M, N, generator=g)


@pytest.mark.parametrize("platform", ["ref", "a2a3sim"])
def test_two_pipes_carry_the_vector_cores_tiles_to_the_cube(platform):
    a, b, out = small()
    report, (_, _, got) = run(MULTI, ["a", "b", "output"], a, b, out, platform=platform)
    assert torch.allclose(got, (a + b) @ (a - b), atol=1e-4)
    if platform == "a2a3sim":  # one Group task on one cluster: its cube core and both vector cores
        (task,) = report.tasks
        assert task.core_type == "mix"
        cores = {e.core for e in report.events}
        assert {c[:3] for c in cores} == {"aic", "aiv"} and len({c for c in cores if c.startswith("aiv")}) == 2


def test_ref_and_the_simulator_agree_bit_for_bit():
    a, b, c = wide()
    _, (_, _, on_ref) = run(c2v(1), ["a", "b", "c"], a, b, c, platform="ref")
    _, (_, _, on_sim) = run(c2v(1), ["a", "b", "c"], a, b, c)
    assert torch.equal(on_ref, on_sim)


@pytest.mark.parametrize("split", [1, 2, 0])
@pytest.mark.parametrize("platform", ["ref", "a2a3sim"])
def test_the_cube_pushes_its_result_to_the_vector_cores_by_rows_columns_or_whole(split, platform):
    a, b, c = wide()
    _, (_, _, got) = run(c2v(split, dual=split != 0), ["a", "b", "c"], a, b, c, platform=platform)
    assert torch.allclose(got, c + a @ b, atol=1e-4)


def pushes_ahead(report) -> list[int]:
    """At each of the cube's pushes: how many tiles it had pushed that the slower vector
    core had not popped yet."""
    events = [e for e in report.events if e.kind == "instr"]
    pushes = sorted(e.start for e in events if e.core.startswith("aic") and e.name.startswith("TPUSH"))
    pops = {c: sorted(e.end for e in events if e.core == c and e.name.startswith("TPOP"))
            for c in {e.core for e in events if e.core.startswith("aiv")}}
    assert len(pops) == 2 and all(len(v) == len(pushes) == N // NB for v in pops.values())
    return [k - min(sum(t <= s for t in ends) for ends in pops.values()) for k, s in enumerate(pushes)]


def test_the_cube_runs_at_most_slot_num_tiles_ahead_of_the_slower_vector_core():
    a, b, c = wide()
    ahead = {}
    for slots in (1, 2, 4):
        report, _ = run(c2v(1, slots), ["a", "b", "c"], a, b, c)
        ahead[slots] = max(pushes_ahead(report))
        assert ahead[slots] <= slots - 1
    assert ahead[1] == 0 < ahead[4]  # one slot holds the cube back; a deeper ring lets it run ahead


def test_a_pop_without_its_free_stalls_the_producer_naming_the_pipe():
    a, b, c = wide()
    with pytest.raises(PyptoError, match=r"deadlocks: aic\d+ \(the producer of cross-core pipe 0 \(cube to vector\)\)"
                                         r" waits for a free slot") as err:
        run(c2v(1, free=False), ["a", "b", "c"], a, b, c)
    assert "tfree_to_aic" in err.value.hint
    with pytest.raises(PyptoError, match="the producer of cross-core pipe 0 waits for a free slot"):
        run(c2v(1, free=False), ["a", "b", "c"], a, b, c, platform="ref")


def test_ref_reports_the_deadlock_its_last_waiting_member_finds():
    a, b, c = wide()  # every push fits the ring: only the cube's final wait for its frees is stuck
    with pytest.raises(PyptoError, match="the producer of cross-core pipe 0 waits for a free slot"):
        run(c2v(1, slots=4, free=False), ["a", "b", "c"], a, b, c, platform="ref")


@pytest.mark.parametrize("platform", ["ref", "a2a3sim"])
def test_a_free_without_id_gives_back_its_pops_pipe(platform):
    text = (c2v(1).replace("slot_num=2)", "slot_num=2, id=5)").replace("split=1)", "split=1, id=5)"))
    a, b, c = wide()
    _, (_, _, got) = run(text, ["a", "b", "c"], a, b, c, platform=platform)
    assert torch.allclose(got, c + a @ b, atol=1e-4)


def test_a_pop_nobody_pushes_is_a_deadlock_naming_the_consumer():
    extra = (f"        extra: pl.Tile[[{D}, {D}], pl.FP32, pl.Mem.Mat] = pl.tpop_from_aiv(split=0, id=0)\n"
             "        pl.tfree_to_aiv(extra)\n")
    text = MULTI.replace("        left = pl.move(", extra + "        left = pl.move(")
    a, b, out = small()
    with pytest.raises(PyptoError, match=r"consumer of cross-core pipe 0 \(vector to cube\)\) waits for a ready slot"):
        run(text, ["a", "b", "output"], a, b, out)
    with pytest.raises(PyptoError, match="the consumer of cross-core pipe 0 waits for a tile that never comes"):
        run(text, ["a", "b", "output"], a, b, out, platform="ref")


def test_the_l0_trace_shows_the_cluster_and_the_pipes_flows(tmp_path):
    a, b, c = wide()
    report, _ = run(c2v(1), ["a", "b", "c"], a, b, c, enable_l0_trace=True, output_dir=tmp_path / "build")
    assert_cross_core_flows(report.trace_dir, tmp_path / "clean")


def test_a_pipe_program_prints_and_parses_back():
    program = parse(c2v(2))
    text = program.as_python()
    assert 'attrs={"dual_aiv_dispatch": True}' in text and "pl.tile.tpop_from_aic(shape=[32, 32]" in text
    assert parse(text) == program


# ----------------------------------------------------------------------------- refusals


def refused(text: str, match: str, args=None, names=("a", "b", "c")):
    args = args or wide()
    with pytest.raises(PyptoError, match=match) as err:
        run(text, list(names), *args)
    return err.value


def test_a_free_of_a_tile_no_pop_made_is_the_references_error():
    text = c2v(1).replace("pl.tfree_to_aic(part)", "pl.tfree_to_aic(old)")
    refused(text, r"system.tfree_to_aic requires its tile argument to come from a matching "
                  r"tile.tpop_from_ai\{c,v\}, but no originating tpop was found")


def test_a_free_with_another_pipe_id_than_its_pop_is_refused():
    text = c2v(1).replace("pl.tfree_to_aic(part)", "pl.tfree_to_aic(part, id=3)")
    refused(text, "system.tfree_to_aic pipe id 3 does not match originating tile.tpop_from_aic pipe id 0")


def test_a_push_on_the_wrong_core_names_the_function_type_it_needs():
    text = c2v(1).replace("pl.aic_initialize_pipe(", "pl.aiv_initialize_pipe(")
    err = refused(text, "system.aiv_initialize_pipe runs on the vector core: it belongs in an AIV function of a "
                        "Group, not in 'cube'")
    assert err.span is not None and err.span.line > 0


def test_a_push_before_its_pipe_is_set_up_is_refused():
    text = c2v(1).replace("pl.aic_initialize_pipe(dir_mask=1, slot_size=32 * 64 * 4, slot_num=2)", "pass")
    refused(text, r"tile.tpush_to_aiv uses cross-core pipe 0 \(cube to vector\), which this function has not set up")


def test_the_odd_split_codes_are_refused_with_the_references_words():
    refused(c2v(1).replace("pl.tpush_to_aiv(acc, split=1)", "pl.tpush_to_aiv(acc, split=3)"),
            r"tile.tpush_to_aiv split must be 0 \(NONE/no split axis\), 1 \(UP_DOWN/axis0\) or 2 \(LEFT_RIGHT/axis1\), "
            "but got 3")


def test_a_split_pipe_needs_both_vector_cores():
    err = refused(c2v(1, dual=False), r"cross-core pipe 0 \(cube to vector\) splits its tile between the cluster's two "
                                      "vector cores")
    assert "dual_aiv_dispatch" in err.hint


def test_both_sides_agree_on_the_pipe():
    text = c2v(1).replace("pl.aiv_initialize_pipe(dir_mask=1, slot_size=32 * 64 * 4, slot_num=2)",
                          "pl.aiv_initialize_pipe(dir_mask=1, slot_size=32 * 64 * 4, slot_num=4)")
    refused(text, "'cube' and 'vector' disagree on it")


def test_a_pipe_only_one_member_uses_is_refused():
    text = c2v(1).replace("        self.vector(a, b, c)\n", "")
    refused(text, r"cross-core pipe 0 \(cube to vector\): 'cube' uses it, and a pipe joins one producer to one consumer")


def test_a_slot_smaller_than_the_tile_is_refused():
    refused(c2v(1).replace("slot_size=32 * 64 * 4", "slot_size=1024"), "has slots of 1024 bytes, and a")


def test_a_pop_without_a_shape_or_an_annotation_says_how_to_give_one():
    text = c2v(1).replace("part: pl.Tile[[32 // 2, 64], pl.FP32, pl.Mem.Vec] = ", "part = ")
    refused(text, "tile.tpop_from_aic needs the tile it receives: shape= and dtype=, or an annotation")


@pytest.mark.parametrize("attrs, match", [('{"dual": True}', "unknown function attribute 'dual'"),
                                          ('{"dual_aiv_dispatch": True}', "this function is AIC")])
def test_function_attrs_are_checked(attrs, match):
    text = c2v(1).replace("@pl.function(type=pl.FunctionType.AIC)",
                          f"@pl.function(type=pl.FunctionType.AIC, attrs={attrs})")
    with pytest.raises(PyptoError, match=match):
        parse(text)


def test_pipe_init_attributes_are_checked_with_the_references_words():
    refused(c2v(1).replace("dir_mask=1, slot_size=32 * 64 * 4, slot_num=2)", "dir_mask=1, slot_size=0)", 1),
            "'system.aic_initialize_pipe' requires positive 'slot_size' attribute")
    refused(c2v(1).replace("slot_num=2)", "slot_num=2, local_slot_num=3)", 1),
            r"'system.aic_initialize_pipe' 'local_slot_num' \(3\) must be <= effective slot_num \(2\)")


def test_a_pipe_op_outside_a_group_is_refused_where_it_runs():
    text = c2v(1).replace("        c = self.group(a, b, c)\n", "        c = self.cube(a, b, c)\n")
    refused(text, "outside a Group")


@given(split=st.sampled_from([0, 1, 2]), slots=st.integers(1, 4), blocks=st.integers(1, 5))
@settings(max_examples=max(1, settings().max_examples // 4))
def test_any_ring_depth_and_trip_count_give_torch_s_result_on_both_platforms(split, slots, blocks):
    g = torch.Generator().manual_seed(blocks)
    a, b, c = torch.randn(M, K, generator=g), torch.randn(K, blocks * NB, generator=g), torch.randn(M, blocks * NB,
                                                                                                   generator=g)
    text = c2v(split, slots, dual=split != 0, blocks=blocks)
    report, (_, _, on_sim) = run(text, ["a", "b", "c"], a, b, c)
    _, (_, _, on_ref) = run(text, ["a", "b", "c"], a, b, c, platform="ref")
    assert torch.equal(on_sim, on_ref)
    assert torch.allclose(on_sim, c + a @ b, atol=1e-4)
    pushes = sorted(e.start for e in report.events if e.kind == "instr" and e.name.startswith("TPUSH"))
    pops = [sorted(e.end for e in report.events if e.kind == "instr" and e.core == core and e.name.startswith("TPOP"))
            for core in {e.core for e in report.events if e.core.startswith("aiv")}]
    assert all(k - sum(t <= at for t in ends) <= slots - 1 for ends in pops for k, at in enumerate(pushes))


def test_submitting_a_group_says_its_call_is_already_one_group_task():
    text = c2v(1).replace("        c = self.group(a, b, c)\n", "        c = pl.submit(self.group, a, b, c)\n")
    with pytest.raises(PyptoError, match="'self.group' is a Group function: calling it is already one Group task"):
        parse(text)
