"""What each stage of the pipeline establishes holds from that pass on (``passes.invariants``):
each invariant is broken in the program just before its pass and holds just after, and a
broken one names the stage, the function, what is wrong and the lines around it."""

import pytest
import torch

import pypto.language as pl
from pypto.backend import A2A3
from pypto.errors import VerificationError
from pypto.lang import parse
from pypto.passes import invariants
from pypto.passes.context import PassContext
from pypto.passes.pipeline import lower


@pl.jit
def scaled(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.pipeline(4, stage=2):
            t = pl.load(a, [i * 16, 0], [16, 128])
            pl.store(pl.exp(t), [i * 16, 0], out)
    return out


@pl.jit
def tensor_level(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        e = pl.exp(a)
        out[0:16, :] = e[0:16, :]
    return out


UNPLACED = """import pypto.language as pl


@pl.program
class mm:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[16, 16], pl.FP16], b: pl.Tensor[[16, 16], pl.FP16],
          out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
        x = pl.tile.load(a, [0, 0], [16, 16], target_memory=None)
        y = pl.tile.load(b, [0, 0], [16, 16], target_memory=None)
        pl.tile.store(pl.tile.matmul(x, y), [0, 0], out)
        return out
"""


def _stages(kernel):
    if kernel is UNPLACED:  # loads whose space InferTileMemorySpace decides (the cube's operands)
        program = parse(UNPLACED)
    else:
        program = kernel.specialize(torch.zeros(64, 128), torch.zeros(64, 128))
    return lower(program, PassContext(soc=A2A3)).stages


# each invariant, with a program in which it is broken before its pass
BREAKS = {"no Scope": scaled, "kernels compute on tiles": tensor_level, "every tile placed": UNPLACED,
          "every tile has a MemRef": scaled, "every MemRef addressed": scaled}


@pytest.mark.parametrize("invariant", invariants.INVARIANTS, ids=lambda inv: inv.name)
def test_an_invariant_is_broken_before_its_pass_and_holds_after(invariant):
    stages = _stages(BREAKS[invariant.name])
    names = [name for name, _ in stages]
    (k,) = [names.index(p) for p in invariant.since if p in names]
    before, after = stages[k - 1][1], stages[k][1]
    invariants.check(after, names[k], names[1:k + 1], A2A3)
    # as if the pass had run and changed nothing
    with pytest.raises(VerificationError) as info:
        invariants.check(before, names[k], names[1:k + 1], A2A3)
    text = str(info.value)
    assert text.startswith(f"after {names[k]}: in function '") and f"({invariant.name} holds from" in text
    marked = [line for line in text.splitlines() if line.startswith("  > ")]
    assert len(marked) == 1, text  # the statement, among the lines around it
    assert info.value.hint == invariant.hint


def test_the_verifier_shows_the_lines_around_a_broken_statement():
    import attrs

    from pypto.ir import nodes as n
    from pypto.ir.rewrite import rewrite
    from pypto.ir.verifier import verify

    stages = _stages(scaled)
    program = stages[-1][1]
    fn = next(f for f in program.functions if f.type.is_kernel)
    load = next(s for s in n.walk_stmts(fn.body) if isinstance(s, n.Assign))
    # the load binds the parameter's name again
    broken = rewrite(program, {n.Assign: lambda s: attrs.evolve(s, target="a") if s == load else None})
    with pytest.raises(VerificationError, match="bound twice") as info:
        verify(broken, A2A3, stage="Test")
    assert sum(line.startswith("  > ") for line in str(info.value).splitlines()) == 1
