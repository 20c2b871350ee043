"""What pypto.fuzz draws and how its oracle decides: every family, scalars the tile dtype
must round, reductions over more than one element, special values, Out tensors that start
as sentinels no op computes, and an oracle that follows the product's min/max rule."""

import re

import pytest
import torch
from helpers import assert_matches_oracle, run_case
from hypothesis import Phase, given, settings

from pypto.fuzz import strategies as ps
from pypto.ir import nodes as n
from pypto.backend import A2A3
from pypto.ir.builder import FunctionBuilder
from pypto.ir.types import DataType as D
from pypto.ir.types import FunctionType, ParamDirection, TensorType
from pypto.runtime import RunConfig
from pypto.runtime.compiled import compile_program
from pypto.sim.ops import numerics as num


def draws(strategy, count: int) -> list:
    """``count`` cases as the active profile draws them (derandomized under ``ci``)."""
    out = []

    @settings(max_examples=count, database=None, phases=[Phase.generate])
    @given(strategy)
    def collect(case):
        out.append(case)

    collect()
    return out


BUDGET = min(settings().max_examples, 100)  # draw counts, not a campaign: the same under `fuzz`


def test_tile_programs_draws_every_family():
    # searched for, not counted in a sample: how often one_of picks each is hypothesis's to tune
    from hypothesis import find

    for name in ps.families():
        found = find(ps.tile_programs(), lambda case, name=name: case.program.name == name,
                     settings=settings(max_examples=4 * BUDGET, database=None, phases=[Phase.generate]))
        assert found.program.name == name


def _scalars_the_dtype_rounds(case) -> list:
    """(op, dtype, value) of each tile-scalar add/sub/mul/div/fmod whose scalar the tile's dtype
    cannot hold exactly."""
    fn = case.program.function(case.entry)
    types = n.symbols(fn)
    found = []
    for stmt in n.walk_stmts(fn.body):
        call = stmt.value if isinstance(stmt, n.Assign) else None
        if isinstance(call, n.Call) and call.op in ("tile.adds", "tile.subs", "tile.muls", "tile.divs", "tile.fmods"):
            dtype, value = types[call.args[0].name].dtype, call.args[1].value
            if dtype.is_float and num.scalar(value, dtype).item() != value:
                found.append((call.op, dtype, value))
    return found


def test_elementwise_programs_draw_scalars_that_fp16_and_bf16_must_round():
    cases = draws(ps.elementwise_programs(dtypes=(D.FP16, D.BF16)), BUDGET)
    hits = [c for c in cases if _scalars_the_dtype_rounds(c)]
    assert len(hits) >= len(cases) // 4, [c.recipe for c in cases]


def test_reductions_reduce_more_than_one_element_with_and_without_tails():
    cases = draws(ps.reduction_programs(), BUDGET)
    reduced, tails = 0, 0
    for case in cases:
        tile = case.program.function(case.entry).body[0].type  # the load
        (x,) = case.inputs
        along = x.shape[1] if "row_" in case.recipe else x.shape[0]
        reduced += along > 1
        tails += tuple(x.shape) != tuple(tile.shape)
    assert reduced >= 3 * len(cases) // 4
    assert len(cases) // 4 <= tails < len(cases)


def test_special_values_are_drawn():
    cases = draws(ps.elementwise_programs(dtypes=ps.FLOATS), BUDGET)
    inputs = [x for c in cases for x in c.inputs]
    assert any(torch.isnan(x).any() for x in inputs)
    assert any(((x == 0) & torch.signbit(x)).any() for x in inputs)
    assert any(torch.isinf(x).any() for x in inputs)
    assert any(not (torch.isnan(x).any() or torch.isinf(x).any()) for x in inputs)


def _sentinel_bits(t: torch.Tensor) -> torch.Tensor:
    start = ps.sentinel(t.shape, t.dtype)
    if t.dtype.is_floating_point:
        view = {2: torch.int16, 4: torch.int32}[t.element_size()]
        return t.contiguous().view(view) == start.view(view)
    return t == start


def _tile_rows(case) -> int:
    return int(case.recipe.split("[", 1)[1].split("x", 1)[0])


def _valid_rows(case) -> int | None:
    """A tail tile's valid rows, as an elementwise recipe says them."""
    m = re.search(r" valid (\d+) rows ", case.recipe)
    return int(m.group(1)) if m else None


def test_elementwise_programs_draw_tail_tiles_and_leave_their_other_rows_unstored():
    cases = draws(ps.elementwise_programs(), BUDGET)
    tails = [c for c in cases if _valid_rows(c) is not None]
    assert len(cases) // 8 <= len(tails) < len(cases)
    for case in tails:
        rows, valid = _tile_rows(case), _valid_rows(case)
        blocks = _sentinel_bits(case.expected[0]).view(-1, rows, case.expected[0].shape[-1])
        assert blocks[:, valid:].all() and not blocks[:, :valid].any(), case.recipe


@pytest.mark.parametrize("family", sorted(ps.families()))
def test_out_tensors_start_as_sentinels_the_expected_values_never_hold(family):
    for case in draws(ps.families()[family], max(3, BUDGET // 8)):
        for start, want in zip(case.outputs, case.expected):
            assert _sentinel_bits(start).all()
            # (loop_body, loop_if and nested loops may not run: nothing stored; a bounded check's float64
            # expectation cannot hold the sentinel, and within_bounds takes no NaN for a number)
            if family not in ("loop_body", "loop_if", "nested") and want.dtype == start.dtype:
                stored = _sentinel_bits(want) if _valid_rows(case) is None else \
                    _sentinel_bits(want).view(-1, _tile_rows(case), want.shape[-1])[:, :_valid_rows(case)]
                assert not stored.any(), case.recipe  # (a tail tile's other rows are never stored)


def _kernel(shape, stores: bool) -> n.Program:
    b = FunctionBuilder("kernel", FunctionType.InCore, soc=A2A3)
    a = b.param("a", TensorType(shape, D.FP32))
    out = b.param("out", TensorType(shape, D.FP32), ParamDirection.Out)
    t = b.op("tile.load", a, [0, 0], list(shape), name="x")
    zero = b.op("tile.sub", t, t, name="zero")
    if stores:
        b.eval("tile.store", zero, [0, 0], out)
    b.ret(out)
    return n.Program("p", (b.build(),))


def test_a_kernel_that_stores_nothing_differs_from_one_that_stores_zeros():
    x = ps.random_tensor((8, 64), D.FP32, 0)
    want = torch.zeros(8, 64)
    stores = ps.Case(_kernel((8, 64), True), "kernel", (x,), (ps.sentinel((8, 64)),), (want,))
    assert_matches_oracle(stores, run_case(stores))
    silent = attrs_evolve(stores, program=_kernel((8, 64), False))
    with pytest.raises(AssertionError, match="differs from the torch oracle"):
        assert_matches_oracle(silent, run_case(silent))


def attrs_evolve(case, **changes):
    import attrs

    return attrs.evolve(case, **changes)


# ----------------------------------------------------------------------------- the oracle's rules


def _with_zeros(width: int) -> torch.Tensor:
    """[16, width] fp32 whose column 1 and row 1 mix +0 and -0 (the rest ordinary)."""
    x = ps.random_tensor((16, width), D.FP32, 1).abs() + 1
    signs = torch.tensor([1.0, -1.0, -1.0, 1.0] * 16)
    x[:, 1] = 0.0 * signs[:16]
    x[1, :] = 0.0 * signs[:width]
    return x


@pytest.mark.parametrize("platform", ["ref", "a2a3sim"])
@pytest.mark.parametrize("axis", ["row", "col"])
@pytest.mark.parametrize("red", ["min", "max"])
@pytest.mark.parametrize("width", [8, 64])  # torch.minimum's scalar and vector loops keep different zeros
def test_the_oracle_takes_the_products_min_max_rule_on_signed_zeros(platform, axis, red, width):
    x = _with_zeros(width)
    from pypto.fuzz.recipes import Body, Load, Recipe, Row, Store, build, oracle

    steps = [("unary", "exp"), ("broadcast", 0, axis, red, "div")]  # exp(x) / max-or-min(x): +-inf from +-0
    body = Body()
    body.add(Store(ps._chain(body, steps, [body.add(Load(0, Row(0)))]), 0, Row(0)))
    recipe = Recipe("p", D.FP32, 16, width, (1,), ((1, D.FP32),), tuple(body.steps))
    (want,) = oracle(recipe, [x])
    assert torch.isinf(want).any()  # the zeros reach the result
    got = ps.sentinel(x.shape)
    compile_program(build(recipe), ["a", "out"], RunConfig(platform=platform), write=False).run(x.clone(), got)
    assert ps.bits_equal(got, want)


def test_every_elementwise_tile_op_of_the_registry_has_a_fuzz_oracle():
    # an op added to the registry as elementwise is drawn by the fuzz programs, or this fails
    from pypto.ir.ops import Kind, all_ops

    for op in all_ops():
        if op.level != "tile" or not op.in_place:
            continue
        kinds = tuple(p.kind for p in op.params)
        names = tuple(p.name for p in op.params)
        if kinds == (Kind.TILE,) and names == ("tile",):
            assert op.short in ps.UNARY, f"{op.name}: no oracle in pypto.fuzz.strategies.UNARY"
        elif kinds == (Kind.TILE, Kind.TILE) and names == ("lhs", "rhs"):
            assert op.short in ps.BINARY, f"{op.name}: no oracle in pypto.fuzz.strategies.BINARY"
        elif kinds == (Kind.TILE, Kind.SCALAR) and names == ("lhs", "rhs"):
            assert op.short in ps.SCALAR, f"{op.name}: no oracle in pypto.fuzz.strategies.SCALAR"


def test_a_recipe_is_one_description_of_the_program_and_its_oracle():
    """The module's own example: a carried sum over row blocks, built into IR and run on
    both platforms, against the oracle the same recipe gives."""
    from pypto.fuzz.recipes import Body, Load, Loop, Op, Recipe, Row, Store, build, oracle

    body = Body(2)  # the tile loaded before the loop, then the carried one
    acc = body.add(Op("add", (1, body.add(Load(0, Row(0, (("i", 1),)))))))
    recipe = Recipe("carried", D.FP32, 4, 64, (6,), ((1, D.FP32),),
                    (Load(0, Row(0)), Loop(1, 6, inits=(0,), body=tuple(body.steps), yields=(acc,)), Store(1, 0, Row(0))))
    x = ps.random_tensor((24, 64), D.FP32, 3)
    (want,) = oracle(recipe, [x])
    blocks = x.reshape(6, 4, 64)
    total = blocks[0]
    for k in range(1, 6):
        total = total + blocks[k]
    assert ps.bits_equal(want, total)
    for platform in ("ref", "a2a3sim"):
        got = ps.sentinel((4, 64))
        compile_program(build(recipe), ["a", "out"], RunConfig(platform=platform), write=False).run(x.clone(), got)
        assert ps.bits_equal(got, want), platform


def test_an_output_block_no_store_reaches_keeps_its_sentinel():
    from pypto.fuzz.recipes import Load, Loop, Recipe, Row, Store, oracle

    recipe = Recipe("empty", D.FP32, 2, 16, (2,), ((2, D.FP32),),
                    (Loop(0, 0, body=(Load(0, Row(0, (("i", 1),))), Store(0, 0, Row(0, (("i", 1),))))),
                     Load(0, Row(1)), Store(0, 0, Row(1))))
    x = ps.random_tensor((4, 16), D.FP32, 5)
    (want,) = oracle(recipe, [x])
    assert ps.bits_equal(want[:2], ps.sentinel((2, 16))) and ps.bits_equal(want[2:], x[2:])
