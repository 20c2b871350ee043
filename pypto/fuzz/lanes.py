"""Mixed scopes for the lane split, two families.

``split_chain``: a matmul (whole, or per row band through the cross-core ring) and a chain
of vector ops on its result — elementwise, with a scalar, broadcasting a row or a column
vector, and perhaps a row or column reduction last — under a split mode that can halve it.
Sharing the vector work between the two vector cores changes nothing elementwise, so a
chain without a reduction gives the bits of ``SplitMode.NONE``; a reduction stays within
one lane but may be summed in other blocks (what fits beside the ring differs), so it is
within FP32 rounding of it. Either way ``ref`` gives the split's bits.

``split_cast``: a matmul chain — one matmul, two, one onto a created accumulator, or a K loop
(peeled, from a created accumulator, or ``if k == 0`` in it), perhaps per row band — then only a cast of the
accumulator (any mode; the fixpipe's own narrowing among them), of all of it or of its
column halves, or nothing: the scopes whose vector work may fold away entirely, leaving
the split with nothing to share. Every split mode gives ``SplitMode.NONE``'s bits, and
``ref``'s.

    mode, program = draw(split_scopes())   # program.source(mode), .inputs(), .out_shape()
    mode, chain = draw(cast_scopes())      # chain.source(mode), .inputs(), .output()
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


# ----------------------------------------------------------------------------- matmul chain, then a cast

FLOAT_MODES = ("rint", "round", "floor", "ceil", "trunc", "odd", "none")
ACC = {"FP16": "FP32", "BF16": "FP32", "FP32": "FP32", "INT8": "INT32"}
# accumulator dtype -> cast target -> its modes (FP32 -> FP16/BF16 by "rint" is the fixpipe's)
CASTS = {"FP32": {"FP16": FLOAT_MODES, "BF16": FLOAT_MODES, "INT32": ("rint", "round", "floor", "ceil", "trunc"),
                  "FP32": ("rint",)},
         "INT32": {"FP32": ("rint",), "FP16": FLOAT_MODES, "INT16": ("round",)},
         "FP16": {"FP32": ("rint",)}, "BF16": {"FP32": ("rint",)}}
# no K loop (one matmul, two, or one onto a created accumulator), or a K loop three ways
FORMS = ("one", "two", "acc", "peeled", "created", "first")
_MANTISSA = {"FP16": 10, "BF16": 7, "FP32": 23}
_TINIEST = {"FP16": -24, "BF16": -133, "FP32": -149}  # log2 of the smallest subnormal


@attrs.frozen
class Chain:
    m: int
    n: int
    kc: int  # K per block
    blocks: int  # K blocks (a loop forms' trips)
    form: str
    bands: int  # 0: the whole of M; else an outer loop over as many row bands
    dtype: str  # the matmul's inputs
    out_dtype: str  # the matmul's result (the accumulator's, or the fixpipe's narrowing: form "one")
    cast: tuple  # () or (target, mode)
    views: int  # the column pieces cast and stored one by one
    seed: int

    @property
    def k(self) -> int:
        return self.kc * self.blocks

    def output(self) -> str:
        return self.cast[0] if self.cast else self.out_dtype

    def source(self, mode: str) -> str:
        """The program under ``optimizations=[pl.split(pl.SplitMode.<mode>)]``."""
        lines = ["import pypto.language as pl", "", "", "@pl.jit",
                 "def chain(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):",
                 f"    with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(pl.SplitMode.{mode})]):"]
        indent, rows, h = " " * 8, ":", self.m
        if self.bands:
            h = self.m // self.bands
            lines.append(f"{indent}for i in pl.range({self.bands}):")
            indent, rows = indent + "    ", f"i * {h}:(i + 1) * {h}"

        def operands(k0: str, k1: str) -> str:
            return f"a[{rows}, {k0}:{k1}], b[{k0}:{k1}, :]"

        kc, k = self.kc, self.k
        acc = ACC[self.dtype]
        block = operands(f"k * {kc}", f"(k + 1) * {kc}")
        if self.form == "one":
            lines.append(f"{indent}c = pl.matmul({operands(0, k)}, out_dtype=pl.{self.out_dtype})")
        elif self.form == "two":
            lines += [f"{indent}c = pl.matmul({operands(0, kc)}, out_dtype=pl.{acc})",
                      f"{indent}c = pl.matmul_acc(c, {operands(kc, k)})"]
        elif self.form == "acc":
            lines += [f"{indent}c = pl.create_tensor([{h}, {self.n}], dtype=pl.{acc})",
                      f"{indent}c = pl.matmul_acc(c, {operands(0, k)})"]
        elif self.form == "peeled":
            lines += [f"{indent}c = pl.matmul({operands(0, kc)}, out_dtype=pl.{acc})",
                      f"{indent}for k in pl.range(1, {self.blocks}):",
                      f"{indent}    c = pl.matmul_acc(c, {block})"]
        else:
            lines += [f"{indent}c = pl.create_tensor([{h}, {self.n}], dtype=pl.{acc})",
                      f"{indent}for k in pl.range({self.blocks}):"]
            if self.form == "first":
                lines += [f"{indent}    if k == 0:",
                          f"{indent}        c = pl.matmul({block}, out_dtype=pl.{acc})",
                          f"{indent}    else:",
                          f"{indent}        c = pl.matmul_acc(c, {block})"]
            else:
                lines.append(f"{indent}    c = pl.matmul_acc(c, {block})")
        w = self.n // self.views
        for v in range(self.views):
            cols = ":" if self.views == 1 else f"{v * w}:{(v + 1) * w}"
            value = "c" if self.views == 1 else f"c[:, {cols}]"
            if self.cast:
                value = f"pl.cast({value}, target_type=pl.{self.cast[0]}, mode=\"{self.cast[1]}\")"
            lines.append(f"{indent}out[{rows}, {cols}] = {value}")
        lines.append("    return out")
        return "\n".join(lines) + "\n"

    def inputs(self) -> tuple:
        from pypto.fuzz.data import random_tensor
        from pypto.ir.types import DataType

        if self.dtype == "INT8":  # small: every sum fits FP16 and INT16 whatever the cast
            g = torch.Generator().manual_seed(self.seed)
            return (torch.randint(-3, 4, (self.m, self.k), generator=g, dtype=torch.int8),
                    torch.randint(-3, 4, (self.k, self.n), generator=g, dtype=torch.int8))
        dtype = DataType[self.dtype]
        return random_tensor((self.m, self.k), dtype, self.seed), random_tensor((self.k, self.n), dtype, self.seed + 1)

    def oracle(self, a: torch.Tensor, b: torch.Tensor) -> tuple:
        """(the product as float64, the error bound of the result): FP32 accumulation's
        (none for INT32's, exact at these sizes), then each rounding on the way out — the
        fixpipe's to the matmul's ``out_dtype``, the cast's."""
        a64, b64 = a.to(torch.float64), b.to(torch.float64)
        want = a64 @ b64
        acc = ACC[self.dtype]
        bound = torch.zeros_like(want)
        if acc == "FP32":
            bound = (a64.abs() @ b64.abs()) * torch.finfo(torch.float32).eps * self.k
        exact = acc == "INT32"  # the value so far is an integer
        for dtype in (self.out_dtype, *self.cast[:1]):
            if dtype in _MANTISSA:
                big = want.abs() + bound
                exp = torch.floor(torch.log2(big.clamp_min(2.0 ** _TINIEST[dtype])))
                bound = bound + 2.0 ** torch.clamp(exp - _MANTISSA[dtype], min=_TINIEST[dtype])  # an ulp
                exact = False
            elif not exact:  # a float rounded to an integer
                bound, exact = bound + 1, True
        return want, bound


_CUBE_K = {"FP16": (32, 64), "BF16": (32, 64), "FP32": (16, 32), "INT8": (32, 64)}


@st.composite
def cast_scopes(draw):
    """(mode, a Chain): a matmul chain, then only a cast (or nothing), in a split scope."""
    mode = draw(st.sampled_from(("UP_DOWN", "LEFT_RIGHT")))
    dtype = draw(st.sampled_from(tuple(ACC)))
    form = draw(st.sampled_from(FORMS))
    blocks = 1 if form in ("one", "acc") else draw(st.integers(2, 3))
    acc = ACC[dtype]
    out_dtype = draw(st.sampled_from((acc, "FP16", "BF16"))) if form == "one" and acc == "FP32" else acc
    casts = CASTS[out_dtype]
    cast = ()
    if out_dtype == "FP32" and draw(st.booleans()):  # the fixpipe's narrowing, half the time it may be
        cast = (draw(st.sampled_from(("FP16", "BF16"))), "rint")
    elif draw(st.integers(0, 3)):  # mostly a cast
        target = draw(st.sampled_from(tuple(casts)))
        cast = (target, draw(st.sampled_from(casts[target])))
    return mode, Chain(m=draw(st.sampled_from((16, 32, 64))), n=draw(st.sampled_from((32, 64))),
                       kc=draw(st.sampled_from(_CUBE_K[dtype])), blocks=blocks, form=form,
                       bands=draw(st.sampled_from((0, 0, 2))), dtype=dtype, out_dtype=out_dtype, cast=cast,
                       views=draw(st.sampled_from((1, 1, 2))), seed=draw(st.integers(0, 2**16)))


def cast_cases():
    """The ``split_cast`` family as ``Case``s: the front end's program of a drawn Chain,
    its oracle within bounds (the simulator property checks a2a3sim against the
    interpreter bit for bit)."""
    from pypto.fuzz.data import Case, sentinel
    from pypto.ir.types import DataType

    def case(drawn):
        mode, chain = drawn
        a, b = chain.inputs()
        out = sentinel((chain.m, chain.n), DataType[chain.output()])
        want, bound = chain.oracle(a, b)
        recipe = (f"split_cast {mode}: {chain.form} {chain.dtype} {chain.m}x{chain.k}x{chain.n} in {chain.blocks} "
                  f"block(s), {chain.bands or 1} band(s) -> {chain.out_dtype}"
                  f"{f', cast to {chain.cast[0]} ({chain.cast[1]})' if chain.cast else ''}, {chain.views} view(s)")
        return Case(_front_end(chain.source(mode), "chain", (a, b, out)), "chain", (a, b), (out,), (want,), "bounded",
                    (bound,), recipe=recipe)

    return cast_scopes().map(case)


def _front_end(source: str, name: str, args):
    """The program the front end makes of ``source``'s kernel ``name`` for ``args``."""
    import tempfile
    from pathlib import Path

    from pypto.fuzz.graphs import kernel_from

    with tempfile.TemporaryDirectory() as d:
        return kernel_from(source, name, Path(d)).specialize(*args)


# ----------------------------------------------------------------------------- the property


def check_split(example) -> None:
    """Under its split, the scope gives ``ref``'s bits on ``a2a3sim``, and one vector core's
    (``SplitMode.NONE``) bits — within FP32 rounding when a reduction ends the chain.
    ``example.detail``: (mode, *a Mixed's fields), or (mode, "cast", *a Chain's fields)."""
    from pypto.fuzz.checks import Failure
    from pypto.fuzz.data import bits_equal

    mode, *fields = example.detail
    chip = example.platform
    if fields and fields[0] == "cast":
        return check_cast(mode, Chain(*fields[1:]), chip)
    program = Mixed(*fields)
    runs = _runs(program.source, "mixed", lambda: [*program.inputs(), torch.zeros(program.out_shape())], mode, chip)
    if not bits_equal(runs[0], runs[1]):
        raise Failure(f"{chip} under SplitMode.{mode} differs from ref\n{program.source(mode)}")
    if program.reduces:  # summed in other blocks, perhaps
        same = (runs[1] == runs[2]) | (runs[1].isnan() & runs[2].isnan())  # (inf - inf is no error)
        if not bool((same | ((runs[1] - runs[2]).abs() <= 1e-5 + 1e-5 * runs[2].abs())).all()):
            raise Failure(f"SplitMode.{mode} is beyond FP32 rounding of one vector core's result\n"
                          f"{program.source(mode)}")
    elif not bits_equal(runs[1], runs[2]):
        raise Failure(f"SplitMode.{mode} differs from one vector core's bits\n{program.source(mode)}")


def check_cast(mode: str, chain: Chain, chip: str = "a2a3sim") -> None:
    """A matmul chain and only a cast (or nothing) under split ``mode``: ``ref``'s bits on
    ``a2a3sim``, and ``SplitMode.NONE``'s — every element stored (the outputs start as
    sentinels)."""
    from pypto.fuzz.checks import Failure
    from pypto.fuzz.data import bits_equal, sentinel
    from pypto.ir.types import DataType

    runs = _runs(chain.source, "chain", lambda: [*chain.inputs(), sentinel((chain.m, chain.n),
                                                                           DataType[chain.output()])], mode, chip)
    if not bits_equal(runs[0], runs[1]):
        raise Failure(f"{chip} under SplitMode.{mode} differs from ref\n{chain.source(mode)}")
    if not bits_equal(runs[1], runs[2]):
        raise Failure(f"SplitMode.{mode} differs from SplitMode.NONE on {chip}\n{chain.source(mode)}")


def _runs(source, name: str, args, mode: str, chip: str = "a2a3sim") -> list:
    """The output of the kernel ``name`` of ``source(form)`` on fresh ``args()``: under
    ``mode`` on ref (interpreting what ``chip``'s compiler makes of it), on ``chip``, and
    under NONE on ``chip``."""
    import tempfile
    from pathlib import Path

    from pypto.fuzz.graphs import kernel_from
    from pypto.runtime import RunConfig

    from pypto.fuzz.example import ref_of

    runs = []
    with tempfile.TemporaryDirectory() as d:
        for form, config in ((mode, ref_of(chip)), (mode, RunConfig(platform=chip)), ("NONE", RunConfig(platform=chip))):
            given = args()
            kernel = kernel_from(source(form), name, Path(d))
            kernel(*given, config=config)  # (no build: a call writes none)
            runs.append(given[-1])
    return runs


def _examples(knobs):
    """Both families; under ``Knobs.families`` (which names ``split_cast``, the one the
    campaign's table has: the other's programs are this property's own) the cast family."""
    from pypto.fuzz.example import Example

    casts = cast_scopes().map(lambda c: Example(source=c[1].source(c[0]), detail=(c[0], "cast", *attrs.astuple(c[1]))))
    if "split_cast" in knobs.families:
        return casts
    return st.one_of(split_scopes().map(lambda c: Example(source=c[1].source(c[0]), detail=(c[0], *attrs.astuple(c[1])))),
                     casts)


def _property():
    from pypto.fuzz.example import Property

    return Property("mixed", "a mixed cube + vector scope split over a cluster's two vector cores gives ref's bits "
                             "and one vector core's", _examples, check_split, ("split_cast",))
