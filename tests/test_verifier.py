"""The verifier rejects each malformed program it is there to catch: one bad program per
rule, built from IR nodes (the front end never produces them, a buggy pass might), each
asserting that the error names the rule, the function, the offending name and shows the
offending statement with its span."""

import types

import attrs
import pytest

from pypto.errors import Span, VerificationError
from pypto.ir import nodes as n
from pypto.ir.levels import VerificationLevel
from pypto.ir.types import (
    INDEX,
    DataType,
    ForKind,
    FunctionType,
    MemRef,
    ParamDirection,
    ScalarType,
    TensorType,
    TileType,
)
from pypto.ir.verifier import verify
from pypto.passes import pipeline
from pypto.passes.context import PassContext, result
from pypto.backend import A2A3, MemorySpace as M

TENSOR = TensorType((16, 128), DataType.FP32)
TILE = TileType(shape=(16, 128), dtype=DataType.FP32, space=M.Vec)
HALF = TileType(shape=(16, 128), dtype=DataType.FP16, space=M.Vec)
SPAN = Span("bad_pass.py", 7, 5)  # the offending statement's; the error must carry it
ZERO, ONE = n.Const(0), n.Const(1)


def load(target, span=None, type=TILE):
    call = n.Call("tile.load", (n.Var("a"), (ZERO, ZERO), (n.Const(16), n.Const(128)), None, M.Vec, False))
    return n.Assign(target, type, call, span=span)


def exp(target, src, span=None):
    return n.Assign(target, TILE, n.Call("tile.exp", (n.Var(src),)), span=span)


def half(target, src, span=None):
    return n.Assign(target, HALF, n.Call("tile.cast", (n.Var(src), DataType.FP16, "round")), span=span)


def store(src, span=None):
    return n.Eval(n.Call("tile.store", (n.Var(src), (ZERO, ZERO), n.Var("out"))), span=span)


def kernel(*body, name="k", params=None, returns=()):
    params = params or (n.Param("a", TENSOR), n.Param("out", TENSOR, ParamDirection.Out))
    return n.Function(name, params, body, returns, FunctionType.InCore)


def program(*functions):
    return n.Program("P", functions)


def caller(*body):  # main(x, y) in an Orchestration function
    params = (n.Param("x", TENSOR), n.Param("y", TENSOR, ParamDirection.Out))
    return n.Function("main", params, body, (), FunctionType.Orchestration)


def loop(body, *, var="i", stop=n.Const(4), kind=ForKind.Sequential, stage=None, iter_args=(), results=(),
         span=SPAN):
    return n.For(var, ZERO, stop, ONE, body, kind, stage, iter_args, results, span=span)


def rejected(prog, *fragments, span=SPAN, stage=""):
    """The VerificationError, checked to contain every fragment and to carry ``span``."""
    with pytest.raises(VerificationError) as info:
        verify(prog, A2A3, stage=stage)
    text = str(info.value)
    for fragment in fragments:
        assert fragment in text, f"{fragment!r} not in:\n{text}"
    assert text.startswith(f"after {stage}: ") if stage else not text.startswith("after")
    assert info.value.span == span
    return text


def placed(t, name, addr):
    return attrs.evolve(t, memref=MemRef(name=name, addr=addr, size=t.nbytes))


def slotted(index, slots=2):
    return attrs.evolve(TILE, memref=MemRef(name="ub", slots=slots, index=index))


def returning_kernel():
    """k(a) -> out: a callee whose one result a caller can bind."""
    return kernel(load("t"), store("t"), n.Return((n.Var("out"),)), returns=(TENSOR,))


WELL_FORMED = {
    "straight-line": program(kernel(load("t"), exp("e", "t"), store("e"))),
    "loop-reads-its-var": program(kernel(loop((n.Assign("r", INDEX, n.Var("i") * 16), load("t"), store("t"))))),
    "carried-loop-result-used-after": program(kernel(load("t"), loop(
        (exp("e", "c"), n.Yield((n.Var("e"),))), iter_args=(n.IterArg("c", TILE, n.Var("t")),),
        results=(n.Binding("r", TILE),)), store("r"))),
    "branch-results-used-after": program(kernel(load("t"), n.If(
        n.Const(True), (exp("x", "t"), n.Yield((n.Var("x"),))), (exp("y", "t"), n.Yield((n.Var("y"),))),
        (n.Binding("r", TILE),)), store("r"))),
    "scope-bindings-visible-after": program(kernel(n.Scope((load("t"),)), store("t"))),
    "pipeline-of-one-stage": program(kernel(loop((load("t"), store("t")), kind=ForKind.Pipeline, stage=1))),
    "placed-tile-annotation": program(kernel(load("t", type=placed(TILE, "mem_vec_0", 0)), store("t"))),
    "int32-annotation-of-an-index": program(kernel(n.Assign("m", ScalarType(DataType.INT32), n.Const(3)))),
    "index-expressions-in-offsets": program(kernel(load("t"), n.Assign("r", INDEX, n.Const(0)), n.Eval(n.Call(
        "tile.store", (n.Var("t"), (n.Var("r") * 16, ZERO), n.Var("out")))))),
    "call-without-results": program(kernel(load("t"), store("t")), caller(n.Eval(n.FuncCall(
        "k", (n.Var("x"), n.Var("y")))))),
    "rotating-slot-of-the-loop-var": program(kernel(loop((load("t", type=slotted(n.Var("i") % 2)), store("t"))))),
    "call-result-bound": program(returning_kernel(), n.Function(
        "main", (n.Param("x", TENSOR), n.Param("y", TENSOR, ParamDirection.Out)),
        (n.Assign("z", TENSOR, n.FuncCall("k", (n.Var("x"), n.Var("y")))), n.Return((n.Var("z"),))), (TENSOR,),
        FunctionType.Orchestration)),
}


@pytest.mark.parametrize("name", list(WELL_FORMED))
def test_well_formed_programs_of_every_shape_pass(name):
    verify(WELL_FORMED[name], A2A3)


# ----------------------------------------------------------------------------- SSA


@pytest.mark.parametrize("prog, name, shown", [
    pytest.param(program(kernel(load("t"), load("t", SPAN), store("t"))), "t", "t: pl.Tile[[16, 128], pl.FP32, "
                 "pl.Mem.Vec] = pl.tile.load(a, [0, 0], [16, 128]", id="assign-twice"),
    pytest.param(program(kernel(load("a", SPAN), store("a"))), "a", "a: pl.Tile", id="assign-over-a-param"),
    pytest.param(program(kernel(load("t"), loop((store("t"),), var="t"))), "t", "for t in pl.range(4):",
                 id="loop-var-over-a-name"),
    pytest.param(program(kernel(load("t"), loop((n.Yield((n.Var("t"),)),),
                                                iter_args=(n.IterArg("t", TILE, n.Var("t")),),
                                                results=(n.Binding("r", TILE),)), store("r"))),
                 "t", "for i, (t,) in pl.range(4, init_values=(t,)):", id="iter-arg-over-its-init"),
    pytest.param(program(kernel(load("t"), loop((n.Yield((n.Var("c"),)),),
                                                iter_args=(n.IterArg("c", TILE, n.Var("t")),),
                                                results=(n.Binding("t", TILE),)), store("t"))),
                 "t", "for i, (c,) in pl.range(4, init_values=(t,)):", id="loop-result-over-a-name"),
    pytest.param(program(kernel(loop((load("t"),)), loop((load("t", SPAN),), var="j"), load("u"), store("u"))),
                 "t", "t: pl.Tile", id="two-sibling-loops-bind-one-name"),
    pytest.param(program(kernel(load("t"), n.If(n.Const(True), (exp("e", "t"),), (exp("e", "t", SPAN),)),
                                store("t"))), "e", "e: pl.Tile", id="both-branches-bind-one-name"),
    pytest.param(program(kernel(n.Assign("x", INDEX, n.Const(3)), n.Assign("x", INDEX, n.Const(3), span=SPAN))),
                 "x", "x: pl.Scalar[pl.INDEX] = 3", id="a-scalar-twice"),  # shown with its type, as dumps are
])
def test_a_name_bound_twice_is_rejected_naming_it_and_the_rebinding(prog, name, shown):
    text = rejected(prog, "in function 'k'", f"'{name}' is bound twice (SSA)", f"at: {shown}")
    assert text.count("bound twice") == 1


def test_a_name_used_where_it_is_not_bound_is_rejected():
    rejected(program(kernel(load("t"), store("nowhere", SPAN))), "in function 'k'",
             "'nowhere' is used where it is not bound", "at: pl.tile.store(nowhere, [0, 0], out)")


def test_a_name_bound_inside_a_loop_is_not_visible_after_it():
    rejected(program(kernel(loop((load("t", span=None),)), store("t", SPAN))),
             "'t' is used where it is not bound", "at: pl.tile.store(t, [0, 0], out)")


def test_a_name_bound_in_a_branch_is_not_visible_after_it():
    rejected(program(kernel(n.If(n.Const(True), (load("t"),), ()), store("t", SPAN))),
             "'t' is used where it is not bound")


def test_a_loop_bound_that_reads_an_unbound_name_is_rejected():
    rejected(program(kernel(loop((load("t"), store("t")), stop=n.Var("m")))),
             "'m' is used where it is not bound", "at: for i in pl.range(m):")


def unbound_in_offsets():
    return n.Eval(n.Call("tile.store", (n.Var("t"), (n.Var("row") * 16, ZERO), n.Var("out"))), span=SPAN)


def unbound_iter_init():
    return loop((n.Yield((n.Var("c"),)),), iter_args=(n.IterArg("c", TILE, n.Var("nowhere")),),
                results=(n.Binding("r", TILE),))


def yields_unbound():
    return loop((n.Yield((n.Var("nowhere"),), span=SPAN),), iter_args=(n.IterArg("c", TILE, n.Var("t")),),
                results=(n.Binding("r", TILE),), span=None)


@pytest.mark.parametrize("prog, name, shown", [
    pytest.param(program(kernel(load("t"), unbound_in_offsets())), "row", "pl.tile.store(t, [row * 16, 0], out)",
                 id="in-a-call-index-list"),
    pytest.param(program(kernel(load("t"), yields_unbound(), store("r"))), "nowhere", "pl.yield_(nowhere)",
                 id="in-a-yield"),
    pytest.param(program(kernel(load("t"), store("t"), n.Return((n.Var("nowhere"),), span=SPAN), returns=(TENSOR,))),
                 "nowhere", "return nowhere", id="in-a-return"),
    pytest.param(program(kernel(load("t"), unbound_iter_init(), store("r"))), "nowhere",
                 "for i, (c,) in pl.range(4, init_values=(nowhere,)):", id="in-an-iter-arg-init"),
    pytest.param(program(kernel(load("t"), n.If(n.Var("flag"), (store("t"),), (), span=SPAN))), "flag", "if flag:",
                 id="in-a-condition"),
    pytest.param(program(kernel(n.Assign("x", INDEX, n.Var("nowhere") + 1, span=SPAN))), "nowhere", "x: pl.Scalar[pl.INDEX] = nowhere + 1",
                 id="in-an-expression"),
    pytest.param(program(returning_kernel(), caller(n.Eval(n.FuncCall("k", (n.Var("x"), n.Var("gone"))), span=SPAN))),
                 "gone", "self.k(x, gone)", id="in-a-call-of-a-function"),
    pytest.param(program(kernel(loop((load("t"),)), loop((store("t", SPAN),), var="j"))), "t",
                 "pl.tile.store(t, [0, 0], out)", id="bound-in-an-earlier-loop"),
    pytest.param(program(kernel(load("t"), n.If(n.Const(True), (exp("x", "t"), n.Yield((n.Var("x"),))),
                                                (exp("y", "t"), n.Yield((n.Var("x"),), span=SPAN)),
                                                (n.Binding("r", TILE),)), store("r"))),
                 "x", "pl.yield_(x)", id="bound-in-the-other-branch"),
])
def test_every_place_that_reads_a_name_checks_it_is_bound(prog, name, shown):
    rejected(prog, f"'{name}' is used where it is not bound", f"at: {shown}")


@pytest.mark.parametrize("name", ["pl", "self", "class", "not a name", "2x"])
def test_a_name_that_does_not_print_as_python_is_rejected(name):
    rejected(program(kernel(load(name, SPAN), store(name))), f"'{name}' is not a usable name", "at: ")


def test_a_parameter_with_an_unusable_name_is_rejected_naming_the_function():
    params = (n.Param("lambda", TENSOR), n.Param("out", TENSOR, ParamDirection.Out))
    rejected(program(kernel(store("lambda"), params=params)), "in function 'k': 'lambda' is not a usable name",
             span=None)


# ----------------------------------------------------------------------------- values and types


def test_a_tile_placed_where_its_value_is_not_is_rejected():
    rejected(program(kernel(load("t", SPAN, type=attrs.evolve(TILE, space=M.Mat)), store("t"))),
             "'t' is annotated Tile[16x128 fp32 Mat] but its value is Tile[16x128 fp32 Vec]",
             "at: t: pl.Tile[[16, 128], pl.FP32, pl.Mem.Mat] = pl.tile.load(")


def test_a_placed_tile_shows_its_memref_where_it_is_rejected():
    rejected(program(kernel(load("t", SPAN, type=placed(HALF, "mem_vec_3", 256)), store("t"))),
             "'t' is annotated Tile[16x128 fp16 Vec]", 'at: t: pl.Tile[[16, 128], pl.FP16, pl.MemRef("mem_vec_3", 256, '
             '4096), pl.Mem.Vec] = pl.tile.load(')


def test_a_tile_annotation_on_a_scalar_value_is_rejected():
    rejected(program(kernel(n.Assign("t", TILE, n.Const(1), span=SPAN))),
             "'t' is annotated Tile[16x128 fp32 Vec] but its value is Scalar[index]")


def test_a_scalar_annotation_on_a_tile_value_is_rejected():
    rejected(program(kernel(load("t"), n.Assign("x", INDEX, n.Call("tile.exp", (n.Var("t"),)), span=SPAN))),
             "'x' is annotated Scalar[index] but its value is Tile[16x128 fp32 Vec]")
    as_int = n.Call("tile.cast", (n.Var("t"), DataType.INT32, "round"))  # an integer tile is no integer scalar
    rejected(program(kernel(load("t"), n.Assign("x", INDEX, as_int, span=SPAN))),
             "'x' is annotated Scalar[index] but its value is Tile[16x128 int32 Vec]")


def test_a_tile_copied_by_name_is_rejected():
    rejected(program(kernel(load("t"), n.Assign("u", TILE, n.Var("t"), span=SPAN), store("u"))),
             "'u' copies the tile 't' by name; tiles are bound by ops",
             "at: u: pl.Tile[[16, 128], pl.FP32, pl.Mem.Vec] = t")


def test_an_annotation_the_value_does_not_have_is_rejected():
    rejected(program(kernel(load("t", SPAN, type=HALF), store("t"))),
             "'t' is annotated Tile[16x128 fp16 Vec] but its value is Tile[16x128 fp32 Vec]",
             "at: t: pl.Tile[[16, 128], pl.FP16, pl.Mem.Vec] = pl.tile.load(")


def test_a_scalar_annotated_as_a_float_but_given_an_int_is_rejected():
    rejected(program(kernel(n.Assign("x", ScalarType(DataType.FP32), n.Const(3), span=SPAN))),
             "'x' is annotated Scalar[fp32] but its value is Scalar[index]", "at: x: pl.Scalar[pl.FP32] = 3")


def test_an_op_whose_operands_its_registry_entry_refuses_is_rejected_naming_the_op():
    bad = n.Assign("s", TILE, n.Call("tile.add", (n.Var("t"), n.Var("h"))), span=SPAN)
    rejected(program(kernel(load("t"), half("h", "t"), bad, store("s"))),
             "in function 'k': tile.add: The operator tile.add requires identical lhs and rhs data types, but got "
             "FP32 and FP16", "at: s: pl.Tile[[16, 128], pl.FP32, pl.Mem.Vec] = pl.tile.add(t, h)")


def test_an_op_the_registry_does_not_know_is_rejected():
    rejected(program(kernel(load("t"), n.Eval(n.Call("tile.frobnicate", (n.Var("t"),)), span=SPAN))),
             "unknown op 'tile.frobnicate'")


def test_something_that_is_not_a_statement_is_rejected_naming_its_kind():
    rejected(program(kernel(load("t"), n.Binding("x", TILE))), "in function 'k': unexpected statement Binding",
             "at: Binding(name='x'", span=None)


def test_a_slot_index_that_is_not_an_integer_is_rejected():
    rejected(program(kernel(load("t", SPAN, type=slotted(n.Const(0.5))), store("t"))),
             "'t' takes slot 0.5 of MemRef 'ub', which is Scalar[fp32]: a slot index is an integer",
             "at: t: pl.Tile[[16, 128], pl.FP32, pl.MemRef(\"ub\", slots=2)[0.5], pl.Mem.Vec] = pl.tile.load(")
    rejected(program(kernel(n.Assign("flag", ScalarType(DataType.BOOL), n.Const(True)),
                            load("t", SPAN, type=slotted(n.Var("flag"))), store("t"))),
             "'t' takes slot flag of MemRef 'ub', which is Scalar[bool]: a slot index is an integer")
    rejected(program(kernel(load("t", SPAN, type=slotted(n.Var("a") + 1)), store("t"))),
             "'t' takes slot a + 1 of MemRef 'ub', which is not a scalar: a slot index is an integer")


def test_a_slot_index_that_reads_an_unbound_name_is_rejected():
    rejected(program(kernel(load("t", SPAN, type=slotted(n.Var("j") % 2)), store("t"))),
             "'t' takes slot j % 2 of MemRef 'ub', and 'j' is not bound there")


# ----------------------------------------------------------------------------- loops


def test_a_loop_bound_that_is_not_an_integer_is_rejected():
    rejected(program(kernel(loop((load("t"), store("t")), stop=n.Const(2.5)))), "loop bounds must be integers",
             "at: for i in pl.range(2.5):")


@pytest.mark.parametrize("stage", [0, -1])
def test_a_pipeline_stage_below_one_is_rejected(stage):
    rejected(program(kernel(loop((load("t"), store("t")), kind=ForKind.Pipeline, stage=stage))),
             f"pipeline stage {stage} must be positive", f"stage={stage}")


def carried(body, *, init="t", arg_type=TILE, result_type=TILE, results=True):
    return loop(body, iter_args=(n.IterArg("c", arg_type, n.Var(init)),),
                results=(n.Binding("r", result_type),) if results else ())


def test_an_iter_arg_whose_init_has_another_type_is_rejected():
    text = rejected(program(kernel(load("t"), half("h", "t"), carried((n.Yield((n.Var("c"),)),), init="h"),
                                   store("r"))),
                    "iter arg 'c' is Tile[16x128 fp32 Vec] but starts from Tile[16x128 fp16 Vec]")
    assert "for i, (c,) in pl.range(4, init_values=(h,)):" in text


def test_iter_args_that_differ_only_in_placement_name_both_memrefs():
    """Two tiles that differ only in their MemRef would read alike in the message."""
    init, arg = placed(TILE, "ma", 0), placed(TILE, "mb", 8192)
    body = (n.Yield((n.Var("c"),)),)
    rejected(program(kernel(load("t", type=init), loop(body, iter_args=(n.IterArg("c", arg, n.Var("t")),),
                                                        results=(n.Binding("r", arg),)), store("r"))),
             "iter arg 'c' is Tile[16x128 fp32 Vec pl.MemRef(\"mb\", 8192, 8192)] but starts from "
             "Tile[16x128 fp32 Vec pl.MemRef(\"ma\", 0, 8192)]")


def test_a_loop_with_fewer_results_than_iter_args_is_rejected():
    rejected(program(kernel(load("t"), carried((n.Yield((n.Var("c"),)),), results=False), store("t"))),
             "a loop has one result per iter arg", "for i, (c,) in pl.range(4")


def test_a_loop_result_whose_type_differs_from_its_iter_arg_is_rejected():
    rejected(program(kernel(load("t"), carried((n.Yield((n.Var("c"),)),), result_type=HALF), store("t"))),
             "result 'r' and iter arg 'c' differ in type", "for i, (c,) in pl.range(4")


def test_a_loop_with_iter_args_whose_body_does_not_end_in_a_yield_is_rejected():
    rejected(program(kernel(load("t"), carried((exp("e", "c"), exp("f", "e", SPAN))), store("r"))),
             "a body with results must end in a yield", "at: f: pl.Tile")  # the statement where it should be


def test_a_yield_of_the_wrong_type_is_rejected():
    body = (half("h", "c"), n.Yield((n.Var("h"),), span=SPAN))
    rejected(program(kernel(load("t"), carried(body), store("r"))),
             "yields (Tile[16x128 fp16 Vec]) where (Tile[16x128 fp32 Vec]) is expected", "at: pl.yield_(h)")


def test_a_yield_in_a_loop_without_results_is_rejected():
    body = (load("t"), store("t"), n.Yield((n.Var("t"),), span=SPAN))
    rejected(program(kernel(loop(body))), "a yield must end a loop or branch body that has results",
             "at: pl.yield_(t)")


def test_a_yield_that_is_not_last_is_rejected():
    body = (n.Yield((n.Var("c"),), span=SPAN), exp("e", "c"))
    rejected(program(kernel(load("t"), carried(body), store("r"))),
             "a yield must end a loop or branch body that has results", "at: pl.yield_(c)")


def test_a_branch_with_results_and_an_empty_else_is_rejected():
    branch = n.If(n.Const(True), (load("x"), n.Yield((n.Var("x"),))), (), (n.Binding("r", TILE),), span=SPAN)
    rejected(program(kernel(branch, store("r"))), "a body with results must end in a yield", span=None)


# ----------------------------------------------------------------------------- functions


def test_a_return_before_the_end_is_rejected():
    rejected(program(kernel(load("t"), n.Return((n.Var("out"),), span=SPAN), store("t"), returns=(TENSOR,))),
             "return must be the last statement of the function", "at: return out")


def test_a_return_inside_a_loop_is_rejected():
    rejected(program(kernel(loop((load("t"), store("t"), n.Return((), span=SPAN))))),
             "return must be the last statement of the function", "at: return")


def test_a_return_of_what_the_function_does_not_declare_is_rejected():
    rejected(program(kernel(load("t"), store("t"), n.Return((n.Var("out"),), span=SPAN))),
             "returns (Tensor[16x128 fp32]) but the function declares ()", "at: return out")
    rejected(program(kernel(load("t"), store("t"), n.Return((n.Var("out"),), span=SPAN),
                            returns=(TensorType((8, 8), DataType.FP16),))),
             "returns (Tensor[16x128 fp32]) but the function declares (Tensor[8x8 fp16])", "at: return out")


def test_a_call_result_annotated_otherwise_than_the_callee_returns_is_rejected():
    other = TensorType((8, 8), DataType.FP32)
    bad = n.Assign("z", other, n.FuncCall("k", (n.Var("x"), n.Var("y"))), span=SPAN)
    rejected(program(returning_kernel(), caller(bad)),
             "'z' is annotated Tensor[8x8 fp32] but its value is Tensor[16x128 fp32]", "at: z: ")


def test_a_call_of_a_function_the_program_does_not_define_is_rejected():
    rejected(program(kernel(load("t"), store("t")), caller(n.Eval(n.FuncCall("missing", (n.Var("x"),)), span=SPAN))),
             "in function 'main': calls 'missing', which the program does not define", "at: self.missing(x)")


def test_a_call_whose_arguments_do_not_match_the_callee_is_rejected():
    rejected(program(kernel(load("t"), store("t")), caller(n.Eval(n.FuncCall("k", (n.Var("x"),)), span=SPAN))),
             "in function 'main': calls 'k' with (Tensor[16x128 fp32]) where it takes "
             "(Tensor[16x128 fp32], Tensor[16x128 fp32])", "at: self.k(x)")


def test_a_call_with_a_scalar_where_a_tensor_is_taken_is_rejected():
    params = (n.Param("x", TENSOR), n.Param("m", INDEX))
    main = n.Function("main", params, (n.Eval(n.FuncCall("k", (n.Var("m"), n.Var("x"))), span=SPAN),), (),
                      FunctionType.Orchestration)
    rejected(program(kernel(load("t"), store("t")), main), "calls 'k' with (Scalar[index], Tensor[16x128 fp32])")


def test_a_function_defined_twice_is_rejected_naming_it():
    rejected(program(kernel(load("t"), store("t")), kernel(load("t"), store("t"))),
             "program 'P' defines a function twice", "'k'", span=None)


def test_a_function_defined_twice_is_rejected():
    rejected(program(kernel(load("t"), store("t")), kernel(load("t"), store("t"))),
             "program 'P' defines a function twice", span=None)


@pytest.mark.parametrize("stage", ["", "MemoryReuse"])
def test_the_stage_a_program_is_checked_after_heads_the_message(stage):
    rejected(program(kernel(load("t"), store("t")), kernel(load("t"), store("t"))), "defines a function twice",
             span=None, stage=stage)
    rejected(program(kernel(load("t"), load("t", SPAN), store("t"))), "'t' is bound twice", stage=stage)


# ----------------------------------------------------------------------------- in the pipeline


def test_the_driver_names_the_pass_whose_output_breaks_a_rule(monkeypatch):
    """A pass that rebinds a name is caught right after it, with the pass named."""

    def break_ssa(prog, ctx):
        fn = prog.functions[0]
        return result(attrs.evolve(prog, functions=(attrs.evolve(fn, body=(fn.body[0], *fn.body)),)))

    module = types.ModuleType("pypto.passes.break_ssa")
    module.break_ssa = break_ssa
    monkeypatch.setattr(pipeline, "PIPELINE", (module,))
    good = program(kernel(load("t", SPAN), exp("e", "t"), store("e")))
    with pytest.raises(VerificationError, match=r"^after BreakSsa: in function 'k': 't' is bound twice \(SSA\)"):
        pipeline.lower(good, PassContext(soc=A2A3), VerificationLevel.BASIC)
    pipeline.lower(good, PassContext(soc=A2A3), VerificationLevel.NONE)  # what NONE means: not checked


def test_the_front_ends_output_is_checked_before_any_pass(monkeypatch):
    monkeypatch.setattr(pipeline, "PIPELINE", ())
    with pytest.raises(VerificationError, match="^after the front end: in function 'k': 't' is bound twice"):
        pipeline.lower(program(kernel(load("t"), load("t"), store("t"))), PassContext(soc=A2A3))
