"""Mixed scopes for the lane split: a matmul (whole, or per row band through the cross-core
ring) and a chain of vector ops on its result — elementwise, with a scalar, broadcasting
a row or a column vector, and perhaps a row or column reduction last — under a split mode
that can halve it. Sharing the vector work between the two vector cores changes nothing
elementwise, so a chain without a reduction gives the bits of ``SplitMode.NONE``; a
reduction stays within one lane but may be summed in other blocks (what fits beside the
ring differs), so it is within FP32 rounding of it. Either way ``ref`` gives the split's
bits.

    mode, program = draw(split_scopes())   # program.source(mode), .inputs(), .out_shape()
"""

from __future__ import annotations

import attrs
import torch

from pypto.fuzz.drawing import st

K = 32
UNARY = ("exp", "neg", "abs")
WITH = {"add": "bias", "mul": "bias", "row_expand_mul": "row", "col_expand_add": "col"}
REDUCE = {"UP_DOWN": ("row_sum", "row_max"), "LEFT_RIGHT": ("col_sum", "col_max")}


@attrs.frozen
class Mixed:
    m: int
    n: int
    bands: int  # 0: one matmul; else the row bands a loop computes, one crossing each
    slots: int
    chain: tuple  # op names, a reduction possibly last
    seed: int

    def source(self, mode: str) -> str:
        """The program under ``optimizations=[pl.split(pl.SplitMode.<mode>)]``."""
        opts = f"[pl.split(pl.SplitMode.{mode}), pl.cross_core_slot(slot_num={self.slots})]"
        lines = ["import pypto.language as pl", "", "", "@pl.jit",
                 "def mixed(a: pl.Tensor, b: pl.Tensor, bias: pl.Tensor, row: pl.Tensor, col: pl.Tensor, "
                 "out: pl.Out[pl.Tensor]):",
                 f"    with pl.at(level=pl.Level.CORE_GROUP, optimizations={opts}):"]
        if self.bands:
            h = self.m // self.bands
            rows = f"i * {h}:(i + 1) * {h}"
            lines += [f"        for i in pl.range({self.bands}):",
                      f"            v = pl.matmul(a[{rows}, :], b, out_dtype=pl.FP32)"]
            operand = {"bias": f"bias[{rows}, :]", "row": f"row[{rows}, :]", "col": "col"}
            target, indent = f"out[{rows}, :]", " " * 12
        else:
            lines.append("        v = pl.matmul(a, b, out_dtype=pl.FP32)")
            operand, target, indent = {"bias": "bias", "row": "row", "col": "col"}, "out[:]", " " * 8
        for op in self.chain:
            if op in UNARY or op in sum(REDUCE.values(), ()):
                lines.append(f"{indent}v = pl.{op}(v)")
            elif op in WITH:
                lines.append(f"{indent}v = pl.{op}(v, {operand[WITH[op]]})")
            else:  # a scalar
                lines.append(f"{indent}v = pl.muls(v, 0.5)")
        lines += [f"{indent}{target} = v", "    return out"]
        return "\n".join(lines) + "\n"

    @property
    def reduces(self) -> bool:
        return bool(self.chain) and self.chain[-1] in sum(REDUCE.values(), ())

    def out_shape(self) -> tuple:
        last = self.chain[-1] if self.chain else ""
        if last.startswith("row_") and last in sum(REDUCE.values(), ()):
            return (self.m, 1)
        if last.startswith("col_") and last in sum(REDUCE.values(), ()):
            return (1, self.n)
        return (self.m, self.n)

    def inputs(self) -> tuple:
        g = torch.Generator().manual_seed(self.seed)
        return (torch.randn(self.m, K, generator=g).half(), (torch.randn(K, self.n, generator=g) * 0.1).half(),
                torch.randn(self.m, self.n, generator=g) * 0.1, torch.rand(self.m, 1, generator=g),
                torch.randn(1, self.n, generator=g) * 0.1)


@st.composite
def split_scopes(draw):
    """(mode, a Mixed whose vector chain that split mode — UP_DOWN or LEFT_RIGHT — can halve)."""
    mode = draw(st.sampled_from(("UP_DOWN", "LEFT_RIGHT")))
    m = draw(st.sampled_from((32, 64, 128)))
    n = draw(st.sampled_from((32, 64, 128)))
    bands = draw(st.sampled_from((0, 2, 4)))
    chain = list(draw(st.lists(st.sampled_from(UNARY + tuple(WITH) + ("muls",)), min_size=1, max_size=4)))
    if draw(st.booleans()) and not (bands and mode == "LEFT_RIGHT"):  # a column reduction of a band: no
        chain.append(draw(st.sampled_from(REDUCE[mode])))
    # the ring of NONE, the form compared against, holds slots x the whole crossing in one core's UB:
    # leave room for the vector work beside it (a row reduction's rows whole)
    crossing = (m // max(bands, 1)) * n * 4
    slots = draw(st.integers(1, max(1, min(4, 64 * 1024 // crossing))))
    return mode, Mixed(m, n, bands, slots, tuple(chain), draw(st.integers(0, 2**16)))


# ----------------------------------------------------------------------------- the property


def check_split(example) -> None:
    """Under its split, the scope gives ``ref``'s bits on ``a2a3sim``, and one vector core's
    (``SplitMode.NONE``) bits — within FP32 rounding when a reduction ends the chain."""
    import tempfile
    from pathlib import Path

    from pypto.fuzz.checks import Failure
    from pypto.fuzz.data import bits_equal
    from pypto.fuzz.graphs import kernel_from
    from pypto.runtime import RunConfig

    mode, *fields = example.detail
    program = Mixed(*fields)
    runs = []
    with tempfile.TemporaryDirectory() as d:
        for form, platform in ((mode, "ref"), (mode, "a2a3sim"), ("NONE", "a2a3sim")):
            args = [*program.inputs(), torch.zeros(program.out_shape())]
            kernel = kernel_from(program.source(form), "mixed", Path(d))
            kernel.compile(*args, config=RunConfig(platform=platform)).run(*args)
            runs.append(args[-1])
    if not bits_equal(runs[0], runs[1]):
        raise Failure(f"a2a3sim under SplitMode.{mode} differs from ref\n{program.source(mode)}")
    if program.reduces:  # summed in other blocks, perhaps
        same = (runs[1] == runs[2]) | (runs[1].isnan() & runs[2].isnan())  # (inf - inf is no error)
        if not bool((same | ((runs[1] - runs[2]).abs() <= 1e-5 + 1e-5 * runs[2].abs())).all()):
            raise Failure(f"SplitMode.{mode} is beyond FP32 rounding of one vector core's result\n"
                          f"{program.source(mode)}")
    elif not bits_equal(runs[1], runs[2]):
        raise Failure(f"SplitMode.{mode} differs from one vector core's bits\n{program.source(mode)}")


def _examples(knobs):
    from pypto.fuzz.example import Example

    return split_scopes().map(lambda c: Example(source=c[1].source(c[0]), detail=(c[0], *attrs.astuple(c[1]))))


def _property():
    from pypto.fuzz.example import Property

    return Property("mixed", "a mixed cube + vector scope split over a cluster's two vector cores gives ref's bits "
                             "and one vector core's", _examples, check_split)
