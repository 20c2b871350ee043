"""The default pass pipeline, as data, and the one driver that runs it: each pass, then the
verification asked for, a snapshot for the dumps, and its time; the checks run on the
final program. Pure: writing dumps is ``write_dumps``, at the edge.
"""

from __future__ import annotations

import re
import time

from pypto.log import logger
from pathlib import Path

import attrs

from pypto.errors import VerificationError
from pypto.ir import nodes as n
from pypto.ir.collector import collector_paused
from pypto.ir.levels import PassDumpLevel, VerificationLevel
from pypto.lang import parse
from pypto.ir.printer import print_program
from pypto.ir.verifier import verify
from pypto.passes.allocation import (
    allocate_memory_addr,
    init_mem_ref,
    insert_alias_copies,
    memory_reuse,
    plan_ptoas_memory,
)
from pypto.passes.l0_tiling import auto_tile_matmul_l0
from pypto.passes import (
    canonicalize_tile_slice,
    fuse_create_assemble_to_slice,
    infer_tile_memory_space,
    legalize_tile_cast,
    lower_pipeline_loops,
    lower_pipeline_to_slots,
    tile_innermost_dim_granularity,
)
from pypto.passes.tile_conversion import convert_tensor_to_tile_ops
from pypto.passes.outlining import outline_incore_scopes
from pypto.passes import invariants
from pypto.passes.context import PassContext, Planner

# In order. A module's name is its pass's name in snake case; it may restrict the
# planners it runs under with PLANNERS.
PIPELINE = (
    outline_incore_scopes,
    fuse_create_assemble_to_slice,
    convert_tensor_to_tile_ops,
    legalize_tile_cast,
    auto_tile_matmul_l0,
    infer_tile_memory_space,
    canonicalize_tile_slice,
    lower_pipeline_to_slots,
    lower_pipeline_loops,
    insert_alias_copies,
    init_mem_ref,
    memory_reuse,
    allocate_memory_addr,
    plan_ptoas_memory,
)
CHECKS = (tile_innermost_dim_granularity,)


@attrs.frozen
class PassSpec:
    name: str  # CamelCase, as dumps and messages spell it
    run: object  # Program, PassContext -> PassResult


def pass_name(module) -> str:
    return "".join(part.capitalize() for part in module.__name__.rsplit(".", 1)[-1].split("_"))


def passes_for(planner: Planner, soc=None) -> tuple[PassSpec, ...]:
    """The passes run under ``planner`` for the chip ``soc`` (a module's ``applies(soc)``
    leaves it out for a chip without what it rewrites: LegalizeTileCast on a2a3)."""
    out = []
    for module in PIPELINE:
        if soc is not None and not getattr(module, "applies", lambda _: True)(soc):
            continue
        if planner in getattr(module, "PLANNERS", frozenset(Planner)):
            short = module.__name__.rsplit(".", 1)[-1]
            out.append(PassSpec(pass_name(module), getattr(module, short)))
    return tuple(out)


@attrs.frozen
class Lowering:
    program: n.Program  # after the last pass
    stages: tuple  # (name, Program): "frontend", then each pass's output
    diagnostics: tuple
    timings: tuple  # (name, seconds)
    soc: object  # the backend it was lowered for (the dumps print for it)


def lower(program: n.Program, ctx: PassContext,
          verification: VerificationLevel = VerificationLevel.BASIC) -> Lowering:
    with collector_paused():  # passes make IR nodes by the thousand, with no cycles among them
        return _lower(program, ctx, verification)


def _lower(program: n.Program, ctx: PassContext, verification: VerificationLevel) -> Lowering:
    stages = [("frontend", program)]
    timings, diagnostics = [], []
    for name, program, seconds, found in run_passes(program, ctx, verification):
        timings.append((name, seconds))
        diagnostics.extend(found)
        stages.append((name, program))
    for check in CHECKS:
        short = check.__name__.rsplit(".", 1)[-1]
        diagnostics.extend(getattr(check, short)(program, ctx))
    return Lowering(program, tuple(stages), tuple(diagnostics), tuple(timings), ctx.soc)


def run_passes(program: n.Program, ctx: PassContext, verification: VerificationLevel = VerificationLevel.BASIC):
    """The driver's loop, a pass at a time: yields (pass name, program after it, seconds,
    diagnostics), each verified; for whoever watches every step (``pypto.tools.bisect``)."""
    memo: dict = {}  # the verifier's, across the stages
    _check(program, "the front end", verification, ctx.soc, memo=memo)
    done: list[str] = []
    for spec in passes_for(ctx.planner, ctx.soc):
        began = time.perf_counter()
        out = spec.run(program, ctx)
        seconds = time.perf_counter() - began
        logger.debug(f"[pass] {spec.name}: {1000 * seconds:.2f} ms")
        program = out.program
        done.append(spec.name)
        _check(program, spec.name, verification, ctx.soc, done, memo)
        yield spec.name, program, seconds, out.diagnostics


def _check(program: n.Program, stage: str, level: VerificationLevel, soc, done: list[str] = (),
           memo: dict | None = None) -> None:
    """The verifier's rules, then what the passes run so far (``done``) have established."""
    if level is VerificationLevel.NONE:
        return
    verify(program, soc, stage=stage, memo=memo)
    invariants.check(program, stage, list(done), soc)
    if level is VerificationLevel.ROUNDTRIP:
        for explicit in (False, True):
            text = print_program(program, soc, explicit=explicit)
            again = parse(text, filename=f"<after {stage}>", soc=soc)
            if again != program:
                bad = next((f.name for f, g in zip(program.functions, again.functions) if f != g), program.name)
                raise VerificationError(f"after {stage}: printing and parsing function '{bad}' does not give it back "
                                        f"({'explicit' if explicit else 'concise'} form)")


def dump_name(index: int, stage: str) -> str:
    return "00_frontend.py" if index == 0 else f"{index:02d}_after_{stage}.py"


def write_dumps(lowering: Lowering, directory: Path, level: PassDumpLevel, notes: tuple = ()) -> list[Path]:
    """``passes_dump/NN_after_<Pass>.py`` per stage; EXPLICIT prints every tile's full type;
    ``notes`` head each file (``memory_planner: PTOAS``, say)."""
    if level is PassDumpLevel.NONE:
        return []
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for i, (stage, program) in enumerate(lowering.stages):
        path = directory / dump_name(i, stage)
        path.write_text(print_program(program, lowering.soc, explicit=level is PassDumpLevel.EXPLICIT,
                                      notes=(f"after: {stage}", *notes)))
        paths.append(path)
    return paths


DUMP_RE = re.compile(r"^(\d\d)_(?:after_(\w+)|frontend)\.py$")
