"""The properties a fuzz campaign checks, each with what it draws: a name, one line of what
must hold, a strategy of ``Example``s (tunable by ``Knobs``) and a check that raises
``Failure``. Tests draw from the same table.

    from pypto.fuzz.properties import PROPERTIES
    prop = PROPERTIES["simulator"]
    @given(prop.examples(Knobs()))
    def test(example): prop.check(example)
"""

from __future__ import annotations

from typing import Callable

from pypto.fuzz import bad, graphs, lanes, loops, strategies, windows
from pypto.fuzz.drawing import st
from pypto.fuzz.checks import (Failure, against_oracle, bisect_example, placement_problems, same_bits,  # noqa: F401
                               unneeded_syncs)
from pypto.fuzz.data import Case
from pypto.fuzz.example import Example, Knobs, Property


def _trips(k: Knobs, low: int = 1):
    return st.integers(min(low, k.max_trips), k.max_trips)


# name -> strategy of Case, given knobs. The tile families compile under every planner;
# the tensor-level ones (windows, cube, split_cast) run through ConvertTensorToTileOps.
FAMILIES: dict[str, Callable[[Knobs], st.SearchStrategy]] = {
    "elementwise": lambda k: strategies.elementwise_programs(k.dtypes, k.max_steps, _trips(k)),
    "reduction": lambda k: strategies.reduction_programs(),
    "matmul": lambda k: strategies.matmul_programs(trips=_trips(k)),
    "carried": lambda k: loops.carried_programs(trips=_trips(k, 2)),
    "shuffled": lambda k: loops.shuffled_carry_programs(trips=_trips(k, 0)),
    "loop_body": lambda k: loops.loop_body_programs(trips=_trips(k, 0)),
    "loop_if": lambda k: loops.loop_body_programs(trips=_trips(k, 0), branch=True),
    "nested": lambda k: loops.nested_loop_programs(),
    "slotted": lambda k: strategies.slotted_programs(colive=False, trips=_trips(k)),
    "windows": lambda k: windows.window_programs(max_steps=max(1, min(k.max_steps, 5))),
    "cube": lambda k: windows.cube_programs(),
    "split_cast": lambda k: lanes.cast_cases(),
}
PLANNERS = ("PYPTO", "DSA_RP", "PTOAS")


def _cases(families, planners=PLANNERS):
    """Examples of the named families (those ``Knobs.families`` keeps, when it keeps any) under
    a drawn planner."""
    def draw(k: Knobs):
        chosen = [f for f in families if not k.families or f in k.families] or list(families)
        return st.builds(Example, case=st.one_of(*(FAMILIES[f](k) for f in chosen)), planner=st.sampled_from(planners))
    return draw


# ----------------------------------------------------------------------------- running a case


def interpret(case: Case, program=None) -> tuple:
    """The Out tensors after the interpreter runs ``program`` (default: the case's) on fresh arguments."""
    from pypto.sim.reference import interpreter

    args = case.args()
    interpreter.run(program or case.program, case.entry, args)
    return args[len(case.inputs):]


def compile_case(case: Case, platform: str = "a2a3sim", planner: str = "PYPTO", **config):
    from pypto.runtime import RunConfig
    from pypto.runtime.compiled import compile_program

    names = [p.name for p in case.program.function(case.entry).params]
    return compile_program(case.program, names, RunConfig(platform=platform, memory_planner=planner, **config),
                           write=False)


def simulate(case: Case, planner: str = "PYPTO", platform: str = "a2a3sim", **config):
    """(Out tensors, RunReport) of the case on a simulator, through the whole compiler."""
    compiled = compile_case(case, platform, planner, **config)
    args = case.args()
    report = compiled.run(*args)
    return args[len(case.inputs):], report


# ----------------------------------------------------------------------------- the checks


def check_oracle(ex: Example) -> None:
    against_oracle(ex.case, interpret(ex.case))


def check_simulator(ex: Example) -> None:
    want = interpret(ex.case)
    got, report = simulate(ex.case, ex.planner, ex.platform)
    same_bits(got, want, f"{ex.platform} under {ex.planner} against the interpreter", ex.case.recipe)
    if report.instructions == 0:
        raise Failure(f"{ex.platform} under {ex.planner} ran no instructions\n{ex.case.recipe}")


def _lowered(case: Case, planner: str, platform: str = "a2a3sim"):
    from pypto.passes.pipeline import lower
    from pypto.runtime import RunConfig
    from pypto.runtime.compiled import pass_context

    return lower(case.program, pass_context(RunConfig(platform=platform, memory_planner=planner)))


def check_passes(ex: Example) -> None:
    """Interpreting the program after each pass gives the front end's bits."""
    lowering = _lowered(ex.case, ex.planner, ex.platform)
    want = interpret(ex.case)
    for name, program in lowering.stages[1:]:
        same_bits(interpret(ex.case, program), want, f"{name} under {ex.planner} changes what the program computes",
                  ex.case.recipe)


def check_roundtrip(ex: Example) -> None:
    """Print -> parse gives the program back, and print -> parse -> print is a fixed point,
    in both forms, for the front end's program and after every pass."""
    from pypto.ir.printer import print_program
    from pypto.lang import parse

    for stage, program in _lowered(ex.case, ex.planner, ex.platform).stages:
        for explicit in (False, True):
            text = print_program(program, ex.soc, explicit=explicit)
            again = parse(text, f"<{stage}>", soc=ex.soc)
            form = "explicit" if explicit else "concise"
            if again != program:
                raise Failure(f"printing and parsing the program after {stage} ({form}) does not give it back\n"
                              f"{ex.case.recipe}")
            if print_program(again, ex.soc, explicit=explicit) != text:
                raise Failure(f"print -> parse -> print after {stage} ({form}) is not a fixed point\n{ex.case.recipe}")


def check_planners(ex: Example) -> None:
    """Under each planner that places buffers here (PYPTO, DSA_RP), no two buffers live at
    once share a byte, and every placement is aligned and inside its space; under DSA_RP a
    declared ``pl.MemRef`` shares no byte with any other buffer; and the same program
    computes the same bits under all three planners."""
    from pypto.fuzz.checks import declared_memrefs, declared_overlaps

    declared = declared_memrefs(ex.case.program)
    for planner in ("PYPTO", "DSA_RP"):
        for fn in _lowered(ex.case, planner, ex.platform).program.functions:
            problems = placement_problems(fn, ex.soc) + (declared_overlaps(fn, declared) if planner == "DSA_RP" else [])
            if problems:
                raise Failure(f"AllocateMemoryAddr under {planner}: {problems[0]}\n{ex.case.recipe}\n"
                              + "\n".join(problems[1:]))
    want, _ = simulate(ex.case, "PYPTO", ex.platform)
    for planner in ("DSA_RP", "PTOAS"):
        got, _ = simulate(ex.case, planner, ex.platform)
        same_bits(got, want, f"{ex.platform} under {planner} against {ex.platform} under PYPTO", ex.case.recipe)


def check_ptoas_colive(ex: Example) -> None:
    """Two slots of one region live in one iteration: PTOAS refuses them at codegen, PYPTO
    computes the oracle's bits."""
    from pypto.errors import CodegenError

    try:
        compile_case(ex.case, ex.platform, "PTOAS")
    except CodegenError:
        pass
    else:
        raise Failure(f"PTOAS compiled two co-live slots of one region\n{ex.case.recipe}")
    got, _ = simulate(ex.case, "PYPTO", ex.platform)
    against_oracle(ex.case, got, f"{ex.platform} under PYPTO")


def check_syncs(ex: Example) -> None:
    """The generated code runs with no hazard, and taking out any one of its syncs makes one."""
    from pypto.sim.timing.hazards import SimulatorHazard

    compiled = compile_case(ex.case, ex.platform, ex.planner)
    for kernel in compiled.kernels.values():
        try:
            spare = unneeded_syncs(kernel, ex.case.args(), ex.soc)
        except SimulatorHazard as hazard:
            raise Failure(f"the generated code of '{kernel.name}' under {ex.planner} has a hazard: "
                          f"{hazard.message}\n{ex.case.recipe}") from None
        if spare:
            raise Failure(f"'{kernel.name}' under {ex.planner} keeps a sync nothing needs (edge {spare[0]})\n"
                          f"{ex.case.recipe}")


def _colive_examples(k: Knobs):
    return st.builds(Example, case=strategies.slotted_programs(colive=True, trips=_trips(k)), planner=st.just("PTOAS"))


# ----------------------------------------------------------------------------- the table

TILE = ("elementwise", "reduction", "matmul", "carried", "shuffled", "loop_body", "loop_if", "nested", "slotted")
TENSOR = ("windows", "cube", "split_cast")
# Not nested loops, nor the cube's K chains (a loop in a window loop, or in an if), nor
# ifs in loops: where only a chain through the syncs of a loop nested two deep, or of
# both branches of an if, orders a pair, the pair keeps a sync of its own (redundant,
# never missing).
SYNCED = ("elementwise", "matmul", "slotted", "loop_body", "shuffled", "carried", "reduction", "windows")


def _table() -> dict:
    props = [
        Property("oracle", "the interpreter computes what the torch oracle computes", _cases(TILE + TENSOR, ("PYPTO",)),
                 check_oracle, TILE + TENSOR),
        Property("simulator", "the simulator (a2a3sim, or the campaign's --platform) gives the interpreter's bits, "
                              "under every planner", _cases(TILE + TENSOR),
                 check_simulator, TILE + TENSOR),
        Property("passes", "interpreting the program after every pass gives the front end's bits",
                 _cases(TILE + TENSOR), check_passes, TILE + TENSOR),
        Property("roundtrip", "print -> parse gives the program back and print -> parse -> print is a fixed point, "
                              "before and after every pass", _cases(TILE + TENSOR), check_roundtrip, TILE + TENSOR),
        Property("planners", "PYPTO and DSA_RP never let two live buffers share a byte (DSA_RP: a declared one "
                             "none), and all three planners compute the same bits", _cases(TILE + TENSOR, ("PYPTO",)),
                 check_planners, TILE + TENSOR),
        Property("ptoas_colive", "PTOAS always refuses two co-live slots of one region; PYPTO computes them",
                 _colive_examples, check_ptoas_colive),
        Property("syncs", "generated code has no hazard and every sync it has is needed", _cases(SYNCED), check_syncs,
                 SYNCED),
        graphs.TASKS,
        lanes._property(),
        bad.ERRORS,
    ]
    return {p.name: p for p in props}


PROPERTIES = _table()
