"""``while`` loops (natural, and the explicit ``pl.while_`` / ``pl.cond`` form the dumps print),
``continue`` and ``break`` in kernels and orchestrations: the trip count is decided as the
loop runs. Programs drawn at random are checked against Python running the same source
(the oracle), on the interpreter and on the simulated core, bit for bit."""

from __future__ import annotations

import textwrap
import types

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import pypto.language as pl
from pypto.errors import ParseError, PyptoError, TypeCheckError, UnsupportedSyntaxError
from pypto.lang import parse
from pypto.runtime import RunConfig
from kernel_files import PLATFORMS, kernel_module


# ----------------------------------------------------------------------------- the Python oracle


class _Scope:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def _oracle_pl():
    """The few ``pl`` names the drawn kernels use, as Python runs them on torch: the same
    source, run as Python, is what the kernel must compute."""
    def load(t, offsets, shapes):
        (r, c), (h, w) = offsets, shapes
        return t[r:r + h, c:c + w].clone()

    def store(tile, offsets, out):
        r, c = offsets
        out[r:r + tile.shape[0], c:c + tile.shape[1]] = tile
        return out

    return types.SimpleNamespace(
        at=lambda **kw: _Scope(), Level=types.SimpleNamespace(CORE_GROUP=0), range=range, load=load, store=store,
        add=torch.add, sub=torch.sub, mul=lambda x, y: x * y, exp=torch.exp, Tensor=None, Out=None, Scalar=None,
        INT32=None, FP32=None)


def run_oracle(source: str, name: str, *args):
    namespace = {"pl": _oracle_pl()}
    exec(compile("from __future__ import annotations\n" + textwrap.dedent(source), "<oracle>", "exec"), namespace)
    return namespace[name](*args)


# ----------------------------------------------------------------------------- drawn programs

ROWS = 16  # rows of one block
BLOCKS = 6  # blocks of the input


@st.composite
def conditions(draw):
    """A scalar condition on the loop's counters."""
    a = draw(st.sampled_from(["i", "j", "i + j", "i * 2 - j"]))
    op = draw(st.sampled_from(["==", "!=", "<", ">=", ">"]))
    if draw(st.booleans()):
        m = draw(st.integers(2, 4))
        return f"({a}) % {m} {op} {draw(st.integers(0, m - 1))}"
    return f"{a} {op} {draw(st.integers(0, 9))}"


@st.composite
def statements(draw, depth: int, loop: bool):
    """One statement of a loop body (``loop``: a jump may leave it)."""
    kinds = ["acc", "acc", "j"] + (["jump", "jump"] if loop else []) + (["if"] if depth < 2 else [])
    kind = draw(st.sampled_from(kinds))
    if kind == "acc":
        block = f"(i * {draw(st.integers(1, 3))} + j) % {BLOCKS}"
        op = draw(st.sampled_from(["add", "sub", "half"]))
        if op == "half":
            return ["acc = pl.mul(acc, 0.5)"]
        return [f"acc = pl.{op}(acc, pl.load(a, [({block}) * {ROWS}, 0], [{ROWS}, 64]))"]
    if kind == "j":
        return [f"j = j + {draw(st.integers(1, 3))}"]
    if kind == "jump":
        return [f"if {draw(conditions())}:", f"    {draw(st.sampled_from(['break', 'continue']))}"]
    then = draw(st.lists(statements(depth + 1, loop), min_size=1, max_size=3))
    out = [f"if {draw(conditions())}:"] + ["    " + line for s in then for line in s]
    if draw(st.booleans()):
        other = draw(st.lists(statements(depth + 1, loop), min_size=1, max_size=2))
        out += ["else:"] + ["    " + line for s in other for line in s]
    return out


@st.composite
def programs(draw):
    """(source, name): a kernel looping over blocks of ``a`` with while or for, jumps and
    carried values; ``n`` bounds the trips as the kernel runs."""
    form = draw(st.sampled_from(["while", "for", "while_true"]))
    body = [line for s in draw(st.lists(statements(0, True), min_size=1, max_size=5)) for line in s]
    step = draw(st.integers(1, 2))
    if form == "while":
        head = ["i = 0", "while i < n:", f"    i = i + {step}"]
    elif form == "while_true":
        head = ["i = 0", "while True:", f"    i = i + {step}", "    if i >= n:", "        break"]
    else:
        head = [f"for i in pl.range({draw(st.integers(0, 2))}, n, {step}):"]
    lines = head + ["    " + x for x in body]
    kernel = "\n".join(" " * 16 + x for x in lines)
    source = f"""
        def k(a: pl.Tensor[[{ROWS * BLOCKS}, 64], pl.FP32], out: pl.Out[pl.Tensor[[{ROWS}, 64], pl.FP32]],
              n: pl.Scalar[pl.INT32]):
            with pl.at(level=pl.Level.CORE_GROUP):
                acc = pl.load(a, [0, 0], [{ROWS}, 64])
                j = 0
{kernel}
                pl.store(acc, [0, 0], out)
            return out
    """
    return textwrap.dedent(source)


@settings(max_examples=60, deadline=None)
@given(source=programs(), n=st.integers(0, 9))
def test_property_drawn_loops_with_jumps_compute_what_python_does(source, n):
    """While and for loops with break and continue at random places, counters the
    conditions read, tiles carried: interpreter and simulated core give Python's bits."""
    module, _ = kernel_module("@pl.jit\n" + source)
    a = torch.randn(ROWS * BLOCKS, 64, generator=torch.Generator().manual_seed(n))
    want = torch.zeros(ROWS, 64)
    run_oracle(source, "k", a, want, n)
    for platform in PLATFORMS:
        out = torch.full((ROWS, 64), float("nan"))
        module.k(a, out, n, config=RunConfig(platform=platform))
        assert torch.equal(out, want), (platform, source)


# ----------------------------------------------------------------------------- forms


@pl.jit
def explicit(a: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[16, 64], pl.FP32]], n: pl.Scalar[pl.INT32]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t0 = pl.load(a, [0, 0], [16, 64])
        for (i, acc) in pl.while_(init_values=(0, t0)):
            pl.cond(i < n)
            t = pl.load(a, [(i % 4) * 16, 0], [16, 64])
            i2, acc2 = pl.yield_(i + 1, pl.add(acc, t))
        pl.store(acc2, [0, 0], out)
    return out


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("n", [0, 1, 5])
def test_the_explicit_form_carries_its_values_and_its_results_read_after_it(platform, n):
    a = torch.randn(64, 64)
    out = torch.zeros(16, 64)
    explicit(a, out, n, config=RunConfig(platform=platform))
    want = a[:16].clone()
    for i in range(n):
        want = want + a[(i % 4) * 16:(i % 4) * 16 + 16]
    assert torch.equal(out, want)


def test_a_while_loop_prints_as_the_explicit_form_and_reads_back_equal():
    a, out = torch.randn(64, 64), torch.zeros(16, 64)
    program = explicit.specialize(a, out, 3)
    text = program.as_python()
    assert "in pl.while_(init_values=(" in text and "pl.cond(i < n)" in text
    assert parse(text) == program
    lowered = explicit.lower(a, out, 3)
    assert parse(lowered.as_python()) == lowered
    explicit(a, out, 3, config=RunConfig(platform="ref", verification_level="ROUNDTRIP"))


@pl.jit
def natural(a: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]], n: pl.Scalar[pl.INT32]):
    with pl.at(level=pl.Level.CORE_GROUP):
        i = 0
        while i < n:
            t = pl.load(a, [i * 16, 0], [16, 64])
            pl.store(pl.exp(t), [i * 16, 0], out)
            i = i + 1
    return out


def test_a_while_loop_carrying_nothing_prints_as_while_and_its_listing_shows_it():
    a, out = torch.randn(64, 64), torch.zeros(64, 64)
    compiled = natural.compile(a, out, 4)
    text = compiled.lowered.as_python()
    assert "for (i_1,) in pl.while_(init_values=(i,)):" in text
    listing = next((compiled.output_dir / "kernels" / "aiv").glob("*.pto")).read_text()
    assert "while i_1 < n {" in listing


@pl.jit
def counted_in_data(a: pl.Tensor[[128, 64], pl.FP32], count: pl.Tensor[[8], pl.INT32],
                    out: pl.Out[pl.Tensor[[128, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        n = pl.read(count, [0])
        i = 0
        while i < n:
            t = pl.load(a, [i * 16, 0], [16, 64])
            pl.store(pl.add(t, t), [i * 16, 0], out)
            i = i + 1
    return out


def test_a_trip_count_read_from_data_is_honoured_anew_for_each_value():
    """The simulated launch depends on the data its condition reads: another count is
    another run, not a remembered one."""
    a = torch.randn(128, 64)
    for n in (3, 8, 0, 5):
        outs = []
        for platform in PLATFORMS:
            out = torch.zeros(128, 64)
            counted_in_data(a, torch.full((8,), n, dtype=torch.int32), out, config=RunConfig(platform=platform))
            outs.append(out)
        assert torch.equal(outs[0], outs[1])
        assert torch.equal(outs[0][:n * 16], a[:n * 16] * 2) and not outs[0][n * 16:].any()


@pl.jit
def rotating(a: pl.Tensor[[128, 64], pl.FP32], count: pl.Tensor[[8], pl.INT32],
             out: pl.Out[pl.Tensor[[16, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        n = pl.read(count, [0])
        acc = pl.load(a, [0, 0], [16, 64])
        i = 0
        while i < n:
            acc = pl.add(acc, pl.load(a, [(i % 8) * 16, 0], [16, 64]))
            i = i + 1
        pl.store(acc, [0, 0], out)
    return out


def test_a_long_while_loop_is_simulated_trip_by_trip():
    """A while loop's trips are not known before it ends: no trip is skipped ahead (the
    steady fast path needs the count), so twice the trips take about twice the cycles."""
    a, out = torch.randn(128, 64), torch.zeros(16, 64)
    cycles = []
    for n in (100, 200):
        count = torch.full((8,), n, dtype=torch.int32)
        cycles.append(rotating.compile(a, count, out).run(a, count, out).cycles)
        want = a[:16].clone()
        for i in range(n):
            want = want + a[(i % 8) * 16:(i % 8) * 16 + 16]
        assert torch.equal(out, want)
    assert cycles[1] > cycles[0] * 1.7


@pl.jit
def orchestrated(a: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]],
                 n: pl.Scalar[pl.INT32]):
    i = 0
    while i < n:
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(a, [i * 16, 0], [16, 64])
            pl.store(pl.exp(t), [i * 16, 0], out)
        i = i + 1
        if i >= 3:
            break
    for k in pl.range(4):
        if k % 2 == 0:
            continue
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(a, [k * 16, 0], [16, 64])
            pl.store(pl.add(t, t), [k * 16, 0], out)
    return out


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("n", [0, 2, 4])
def test_an_orchestration_loops_while_and_jumps_submitting_a_task_per_trip(platform, n):
    a = torch.randn(64, 64)
    out = torch.zeros(64, 64)
    orchestrated(a, out, n, config=RunConfig(platform=platform))
    want = torch.zeros(64, 64)
    for i in range(min(n, 3)):
        want[i * 16:i * 16 + 16] = torch.exp(a[i * 16:i * 16 + 16])
    for k in (1, 3):
        want[k * 16:k * 16 + 16] = a[k * 16:k * 16 + 16] * 2
    assert torch.equal(out, want)


@pl.jit
def last_index(a: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]], n: pl.Scalar[pl.INT32]):
    with pl.at(level=pl.Level.CORE_GROUP):
        i = 0
        for i in pl.range(1, 4):
            if i >= n:
                break
        t = pl.load(a, [i * 16, 0], [16, 64])
        pl.store(t, [i * 16, 0], out)
    return out


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("n", [0, 2, 9])
def test_the_loop_variable_after_a_break_is_the_trip_it_broke_on(platform, n):
    a, out = torch.randn(64, 64), torch.zeros(64, 64)
    last_index(a, out, n, config=RunConfig(platform=platform))
    i = 0
    for i in range(1, 4):
        if i >= n:
            break
    assert torch.equal(out[i * 16:i * 16 + 16], a[i * 16:i * 16 + 16])


# ----------------------------------------------------------------------------- mistakes


def refused(tmp_body: str, cls, message: str, token: str, params: str = "n: pl.Scalar[pl.INT32]"):
    module, path = kernel_module(f"""
        @pl.jit
        def k(a: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]], {params}):
{textwrap.indent(textwrap.dedent(tmp_body), " " * 12)}
            return out
    """)
    with pytest.raises(cls, match=message) as info:
        module.k(torch.zeros(64, 64), torch.zeros(64, 64), 2)
    text = str(info.value)
    lines = open(path).read().splitlines()
    line = next(k for k, x in enumerate(lines, 1) if "MARK" in x)
    assert f"{path}:{line}:{lines[line - 1].index(token) + 1}" in text, text
    assert info.value.hint


@pytest.mark.parametrize("body, cls, message, token", [
    ("""
     with pl.at(level=pl.Level.CORE_GROUP):
         while n > 0:  # MARK
             t = pl.load(a, [0, 0], [16, 64])
         else:
             pass
     """, UnsupportedSyntaxError, "while-else is not supported", "while"),
    ("""
     i = 0
     while i < n:
         with pl.at(level=pl.Level.CORE_GROUP):
             break  # MARK
     """, UnsupportedSyntaxError, "'break' inside a with block is not supported", "break"),
    ("""
     with pl.at(level=pl.Level.CORE_GROUP):
         for i in pl.parallel(4):
             if i > n:
                 break  # MARK
             pl.store(pl.load(a, [i * 16, 0], [16, 64]), [i * 16, 0], out)
     """, UnsupportedSyntaxError, "'break' cannot end a pl.parallel loop early", "break"),
    ("""
     with pl.at(level=pl.Level.CORE_GROUP):
         t = pl.load(a, [0, 0], [16, 64])
         for i, (acc,) in pl.range(4, init_values=(t,)):
             if i > n:
                 continue  # MARK
             acc2 = pl.yield_(pl.add(acc, acc))
     """, UnsupportedSyntaxError, "'continue' in a loop with init_values", "continue"),
    ("""
     with pl.at(level=pl.Level.CORE_GROUP):
         i = 0
         while i < pl.read(a, [0, 0]):  # MARK
             i = i + 1
     """, UnsupportedSyntaxError, "a while condition is an expression of scalars", "pl.read"),
    ("""
     with pl.at(level=pl.Level.CORE_GROUP):
         pl.cond(n > 0)  # MARK
     """, UnsupportedSyntaxError, "pl.cond sets the condition of a pl.while_ loop", "pl.cond"),
    ("""
     with pl.at(level=pl.Level.CORE_GROUP):
         for (i,) in pl.while_(init_values=(0,)):
             i2 = pl.yield_(i + 1)  # MARK
     """, UnsupportedSyntaxError, "a pl.while_ loop opens with pl.cond", "i2"),
    ("""
     with pl.at(level=pl.Level.CORE_GROUP):
         i = 0
         while 1 < 2:  # MARK
             i = i + 1
     """, UnsupportedSyntaxError, "always holds and nothing breaks out of the loop", "1 < 2"),
    ("""
     with pl.at(level=pl.Level.CORE_GROUP):
         t = pl.load(a, [0, 0], [16, 64])
         while t:  # MARK
             t = pl.exp(t)
     """, TypeCheckError, "'t' is Tile", "t:"),
])
def test_a_while_or_jump_the_compiler_cannot_take_is_refused_where_it_is_written(body, cls, message, token):
    refused(body, cls, message, token)
