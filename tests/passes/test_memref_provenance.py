"""Who made a MemRef is a fact of the IR, never of its name: InitMemRef's buffers say
``reusable=True`` (MemoryReuse may merge and rename them); one the kernel author declares
keeps its name and placement however it is spelled — ``"mem_vec_0"`` included — on both
planners, and the flag survives print -> parse of every dump."""

import pytest
import torch
from helpers import program_text
from hypothesis import given
from hypothesis import strategies as st

import pypto.language as pl
from pypto.errors import MemorySpaceError
from pypto.ir import nodes as n
from pypto.lang import parse
from pypto.ir.printer import print_program
from pypto.ir.types import TileType
from pypto.passes.context import PassContext
from pypto.passes.allocation.memory_reuse import memory_reuse
from pypto.runtime import RunConfig
from pypto.runtime.compiled import compile_program, lower_program
from pypto.backend import A2A3

CONFIGS = [(platform, planner) for platform in ("ref", "a2a3sim") for planner in ("PYPTO", "PTOAS")]
SENTINEL = -777.0


def config(platform="a2a3sim", planner="PYPTO", **kw):
    return RunConfig(platform=platform, memory_planner=planner, disabled_diagnostics=["PH001"], **kw)


def memrefs(fn: n.Function) -> dict[str, set]:
    """MemRef name -> the tiles in it."""
    out: dict[str, set] = {}
    for name, t in n.symbols(fn).items():
        if isinstance(t, TileType) and t.memref is not None:
            out.setdefault(t.memref.name, set()).add(name)
    return out


@pl.jit
def named_like_the_compiler(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [16, 128])
        pl.store(pl.exp(t), [0, 0], out)
        # declared after the compiler's buffers die: the old prefix rule merged and renamed them
        m: pl.Tile[[16, 128], pl.FP32, pl.MemRef("mem_mine"), pl.Mem.Vec] = pl.load(a, [16, 0], [16, 128])
        pl.store(m, [16, 0], out)
        v: pl.Tile[[16, 128], pl.FP32, pl.MemRef("mem_vec_0"), pl.Mem.Vec] = pl.load(a, [32, 0], [16, 128])
        e: pl.Tile[[16, 128], pl.FP32, pl.MemRef("mem_vec_1"), pl.Mem.Vec] = pl.exp(v)  # v dies here: not in place
        pl.store(e, [32, 0], out)
    return out


def expected(a):
    want = torch.full((48, 128), SENTINEL)
    want[:16], want[16:32], want[32:] = torch.exp(a[:16]), a[16:32], torch.exp(a[32:48])
    return want


@pytest.mark.parametrize("platform, planner", CONFIGS)
def test_a_declared_memref_named_like_a_compiler_one_keeps_its_name_and_its_tiles(platform, planner):
    a, out = torch.randn(48, 128), torch.full((48, 128), SENTINEL)
    compiled = named_like_the_compiler.compile(a, out, config=config(platform, planner,
                                                                     verification_level="ROUNDTRIP"))
    (fn,) = [f for f in compiled.lowered.functions if f.name.endswith("_incore_0")]
    got = memrefs(fn)
    assert (got["mem_mine"], got["mem_vec_0"], got["mem_vec_1"]) == ({"m"}, {"v"}, {"e"})
    flagged = {x for x, t in n.symbols(fn).items() if isinstance(t, TileType) and t.memref.reusable}
    # PYPTO's buffers are final after MemoryReuse; PTOAS leaves the compiler's to the assembler to reuse
    assert flagged == (set() if planner == "PYPTO" else {"t", "exp"})
    if platform == "a2a3sim":  # what the (modeled) assembler allocates keeps them too
        (kernel,) = compiled.kernels.values()
        allocs = {x.name for p in kernel.programs for x in p.allocs}
        assert {"mem_mine", "mem_vec_0", "mem_vec_1"} <= allocs
    compiled.run(a, out)
    assert torch.equal(out, expected(a))


@pytest.mark.parametrize("planner", ["PYPTO", "PTOAS"])
def test_a_declared_memref_named_like_a_compiler_one_follows_the_declared_rules(planner):
    @pl.jit
    def overlap(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            x: pl.Tile[[16, 128], pl.FP32, pl.MemRef("mem_vec_0"), pl.Mem.Vec] = pl.load(a, [0, 0], [16, 128])
            y: pl.Tile[[16, 128], pl.FP32, pl.MemRef("mem_vec_0"), pl.Mem.Vec] = pl.load(a, [16, 0], [16, 128])  # noqa: E501  MARK-y
            pl.store(pl.add(x, y), [0, 0], out)
        return out

    for platform in ("ref", "a2a3sim"):
        with pytest.raises(MemorySpaceError, match="'y' is written to pl.MemRef\\(\"mem_vec_0\"\\) while 'x'") as info:
            overlap(torch.randn(32, 128), torch.zeros(16, 128), config=config(platform, planner))
        assert "MARK-y" in str(info.value)


def test_the_flag_survives_print_and_parse_of_a_dump_with_both_kinds():
    a, out = torch.randn(48, 128), torch.zeros(48, 128)
    lowering = lower_program(named_like_the_compiler.specialize(a, out), config())
    init = dict(lowering.stages)["InitMemRef"]
    for explicit in (False, True):
        text = print_program(init, A2A3, explicit=explicit)
        assert 'pl.MemRef("mem_vec_0", size=8192)' in text  # declared: no flag
        assert 'size=8192, reusable=True)' in text  # InitMemRef's
        again = parse(text)
        assert again == init
        # what MemoryReuse makes of the dump is what it makes of the program
        assert memory_reuse(again, PassContext(soc=A2A3)).program == memory_reuse(init, PassContext(soc=A2A3)).program
    final = print_program(lowering.program, A2A3, explicit=True)
    assert "reusable=True" not in final  # MemoryReuse's buffers are final


# ----------------------------------------------------------------------------- property

NAMES = ("mem_vec_0", "mem_vec_1", "mem_vec_0_1", "mem_mine", "pipe_t", "ub")


@st.composite
def declared_and_compiler_tiles(draw):
    """Straight-line loads stored at interleaved points, each either the compiler's (some
    through an exp) or in a declared MemRef of its own whose name may be one InitMemRef
    would pick."""
    lines, live, declared, out_rows = [], [], {}, 0
    names = list(draw(st.permutations(NAMES)))
    for k in range(draw(st.integers(2, 8))):
        if live and draw(st.booleans()):
            t = live.pop(draw(st.integers(0, len(live) - 1)))
            lines.append(f"pl.tile.store({t}, [{out_rows}, 0], out)")
            out_rows += 8
        t = f"t{k}"
        if names and draw(st.booleans()):
            declared[t] = names.pop()
            lines.append(f't{k}: pl.Tile[[8, 128], pl.FP32, pl.MemRef("{declared[t]}"), pl.Mem.Vec] = '
                         f"pl.tile.load(a, [{8 * k}, 0], [8, 128], target_memory=pl.Mem.Vec)")
        else:
            lines.append(f"{t} = pl.tile.load(a, [{8 * k}, 0], [8, 128], target_memory=pl.Mem.Vec)")
            if draw(st.booleans()):
                lines.append(f"e{k} = pl.tile.exp({t})")
                t = f"e{k}"
        live.append(t)
    for t in live:
        lines.append(f"pl.tile.store({t}, [{out_rows}, 0], out)")
        out_rows += 8
    body = "\n".join("    " + line for line in lines)
    text = program_text(f"""
@pl.function(type=pl.FunctionType.InCore)
def k(self, a: pl.Tensor[[64, 128], pl.FP32], out: pl.Out[pl.Tensor[[{out_rows}, 128], pl.FP32]]):
{body}
""", name="k")
    return text, declared, out_rows


@given(declared_and_compiler_tiles(), st.sampled_from(["PYPTO", "PTOAS"]))
def test_property_declared_memrefs_keep_their_names_whatever_they_are(case, planner):
    text, declared, rows = case
    program = parse(text)
    a = torch.randn(64, 128, generator=torch.Generator().manual_seed(5))
    outs = {}
    for platform in ("ref", "a2a3sim"):
        compiled = compile_program(program, ("a", "out"), config(platform, planner, verification_level="ROUNDTRIP"),
                                   write=False)
        got = memrefs(compiled.lowered.function("k"))
        for tile, name in declared.items():
            assert got[name] == {tile}, (name, got)
        outs[platform] = torch.full((rows, 128), SENTINEL)
        compiled.run(a, outs[platform])
    assert torch.equal(outs["ref"], outs["a2a3sim"])
