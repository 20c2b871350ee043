"""Front-end checks of issue 9: a MemRef slot index is an integer expression (item 2, in
source, in dumps and in the verifier); every value the front end needs at compile time is
a located error naming what must be static when it is not (item 4); kernel parameters
the compiler would not honour — ``*rest``, ``**kw``, keyword-only, defaults, ``/`` — are
refused where they are written (item 7)."""

import importlib.util
import itertools
import sys
import textwrap

import attrs
import pytest
import torch

import pypto.language as pl
from pypto.errors import ParseError, PyptoError, TypeCheckError, UnsupportedSyntaxError, VerificationError
from pypto.ir import nodes as n
from pypto.lang import parse
from pypto.ir.rewrite import rewrite
from pypto.ir.types import TileType
from pypto.ir.verifier import verify
from pypto.runtime import RunConfig
from pypto.tools.memory_map import main as memory_map
from pypto.backend import A2A3

R, C = 16, 128
SENTINEL = 1234.5
PLATFORMS = ("ref", "a2a3sim")
_counter = itertools.count()


def module(tmp_path, text: str, name: str = "kernels"):
    """A module written to a file and imported: kernels are parsed from their file."""
    path = tmp_path / f"{name}_{next(_counter)}.py"
    path.write_text("import pypto.language as pl\n\nHALF = 0.5\nTWO = 2\n\n\n" + textwrap.dedent(text))
    spec = importlib.util.spec_from_file_location(path.stem, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = mod  # where inspect finds a class's file (@pl.program reads it)
    try:
        spec.loader.exec_module(mod)
    finally:
        del sys.modules[path.stem]
    return mod, path


def where(path, token: str, marker: str | None = None) -> tuple:
    """(file, line, col) of ``token`` on the line holding ``marker`` (default: the token)."""
    lines = path.read_text().splitlines()
    k = next(k for k, text in enumerate(lines) if (marker or token) in text)
    return str(path), k + 1, lines[k].index(token) + 1


def at(err) -> tuple:
    return err.span.file, err.span.line, err.span.col


def marked(err) -> str:
    """The source text an error's span covers."""
    return err.span.source_line()[err.span.col - 1:err.span.end_col - 1]


def slot_kernel(tmp_path, index: str, params: str = "a: pl.Tensor, out: pl.Out[pl.Tensor]"):
    mod, path = module(tmp_path, f"""\
        @pl.jit
        def k({params}):
            with pl.at(level=pl.Level.CORE_GROUP):
                for i in pl.range(2):
                    t: pl.Tile[[{R}, {C}], pl.FP32, pl.MemRef("ub", slots=2)[{index}], pl.Mem.Vec] = pl.load(a, [i * {R}, 0], [{R}, {C}])
                    pl.store(t, [i * {R}, 0], out)
            return out
        """)
    return mod.k, path


# ----------------------------------------------------------------------------- item 2: slot indices


@pytest.mark.parametrize("index, params, what", [
    ("0.25", "", "Scalar[fp32]"),
    ("HALF", "", "Scalar[fp32]"),
    ("1 / 2", "", "Scalar[fp32]"),
    ("TWO / 2", "", "Scalar[fp32]"),
    ("True", "", "Scalar[bool]"),
    ("i < 1", "", "Scalar[bool]"),
    ("x", ", x: pl.Scalar[pl.FP32]", "Scalar[fp32]"),
    ("i * x", ", x: pl.Scalar[pl.FP32]", "Scalar[fp32]"),
])
def test_a_slot_index_that_is_not_an_integer_is_a_located_type_error(tmp_path, index, params, what):
    kernel, path = slot_kernel(tmp_path, index, "a: pl.Tensor, out: pl.Out[pl.Tensor]" + params)
    args = (torch.randn(2 * R, C), torch.zeros(2 * R, C)) + ((0.5,) if params else ())
    message = f"a slot index is an integer, but '.*' is {what.replace('[', '.')}"
    with pytest.raises(TypeCheckError, match=message) as info:
        kernel(*args, config=RunConfig(platform="ref"))
    file, line, col = where(path, f"[{index}]")
    assert at(info.value) == (file, line, col + 1)  # the index inside the brackets
    assert marked(info.value) == index
    assert "i % 2" in info.value.hint


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("index, params, extra", [
    ("i % 2", "", ()),
    ("(i + TWO) % 2", "", ()),
    ("i % TWO", "", ()),
    ("(i + s) % 2", ", s: pl.Scalar[pl.INT32]", (1,)),
    ("TWO // 2 - 1 + i", "", ()),
])
def test_integer_slot_indices_select_their_slots(tmp_path, platform, index, params, extra):
    kernel, _ = slot_kernel(tmp_path, index, "a: pl.Tensor, out: pl.Out[pl.Tensor]" + params)
    a, out = torch.randn(2 * R, C), torch.full((2 * R, C), SENTINEL)
    kernel(a, out, *extra, config=RunConfig(platform=platform))
    assert torch.equal(out, a)


def _slot_program(tmp_path):
    kernel, _ = slot_kernel(tmp_path, "i % 2")
    program = kernel.specialize(torch.randn(2 * R, C), torch.zeros(2 * R, C))
    verify(program, A2A3)
    return program


def test_a_dump_edited_to_a_float_slot_index_does_not_parse(tmp_path):
    text = _slot_program(tmp_path).as_python(explicit=True)
    assert "[i % 2]" in text
    with pytest.raises(TypeCheckError, match="a slot index is an integer, but '0.25' is Scalar.fp32.") as info:
        parse(text.replace("[i % 2]", "[0.25]"), filename="edited_dump.py")
    assert info.value.span.file == "edited_dump.py"
    assert marked(info.value) == "0.25"


def _with_slot_index(program, index):
    def retype(t):
        if isinstance(t, TileType) and t.memref is not None and t.memref.slots > 1:
            return attrs.evolve(t, memref=attrs.evolve(t.memref, index=index))
        return None

    return rewrite(program, {TileType: retype})


@pytest.mark.parametrize("index, message", [
    (n.Const(0.25), "which is Scalar.fp32.: a slot index is an integer"),
    (n.Const(True), "which is Scalar.bool.: a slot index is an integer"),
    (n.BinOp("<", n.Var("i"), n.Const(1)), "which is Scalar.bool.: a slot index is an integer"),
    (n.BinOp("%", n.Var("nowhere"), n.Const(2)), "'nowhere' is not bound there"),
])
def test_the_verifier_rejects_a_slot_index_that_is_not_an_integer(tmp_path, index, message):
    program = _slot_program(tmp_path)
    bad = _with_slot_index(program, index)
    assert bad != program
    with pytest.raises(VerificationError, match=message):
        verify(bad, A2A3)


# ----------------------------------------------------------------------------- item 4: static values


@pytest.mark.parametrize("line, token, what", [
    ('t: pl.Tile[[R, C], pl.FP32, pl.MemRef("ub", slots=s)[0], pl.Mem.Vec] = pl.load(a, [0, 0], [R, C])', "s)",
     "pl.MemRef's slots="),
    ('t: pl.Tile[[R, C], pl.FP32, pl.MemRef("ub", size=s * 4), pl.Mem.Vec] = pl.load(a, [0, 0], [R, C])', "s * 4",
     "pl.MemRef's size="),
    ('t: pl.Tile[[R, C], pl.FP32, pl.MemRef("ub", s, 8192), pl.Mem.Vec] = pl.load(a, [0, 0], [R, C])', "s, 8192",
     "pl.MemRef's address"),
    ('t: pl.Tile[[R, C], pl.FP32, pl.MemRef(s), pl.Mem.Vec] = pl.load(a, [0, 0], [R, C])', "s)",
     "pl.MemRef's name"),
    ('t: pl.Tile[[R, C], pl.FP32, pl.MemRef("ub", pipeline=s > 0), pl.Mem.Vec] = pl.load(a, [0, 0], [R, C])',
     "s > 0", "pl.MemRef's pipeline="),
    ("t = pl.load(a, [0, 0], [s, C])", "s, C]", "tile.load's 'shapes'"),
    ("t = pl.tile.full([R, s], dtype=pl.FP32, value=0.0)", "s]", "tile.full's 'shape'"),
    ("t = pl.cast(pl.load(a, [0, 0], [R, C]), target_type=s)", "s)", "tile.cast's 'target_type'"),
    ("t: pl.Tile[[R, C], s] = pl.load(a, [0, 0], [R, C])", "s]", "a dtype"),
    ("t: pl.Tile[[R, s], pl.FP32] = pl.load(a, [0, 0], [R, C])", "s]", "a tile shape"),
])
def test_a_runtime_value_where_a_static_one_is_needed_is_located(tmp_path, line, token, what):
    """Each says which argument must be static, and which part of it is not."""
    mod, path = module(tmp_path, f"""\
        R = {R}
        C = {C}


        @pl.jit
        def k(a: pl.Tensor, out: pl.Out[pl.Tensor], s: pl.Scalar[pl.INT32]):
            with pl.at(level=pl.Level.CORE_GROUP):
                {line}
                pl.store(t, [0, 0], out)
            return out
        """)
    with pytest.raises(TypeCheckError) as info:
        mod.k(torch.randn(R, C), torch.zeros(R, C), 2, config=RunConfig(platform="ref"))
    err = info.value
    assert f"{what} must be a compile-time constant" in err.message
    assert "'s' is known only when the kernel runs" in err.message
    assert at(err) == where(path, token, marker=line[:30])
    assert err.hint


@pytest.mark.parametrize("line, token, what", [
    ("for i in pl.pipeline(4, stage=s):", "s)", "pl.pipeline's stage"),
    ("with pl.at(level=s):", "s)", "pl.at's level"),
])
def test_runtime_values_in_loop_and_scope_headers_are_located(tmp_path, line, token, what):
    body = "pass" if line.startswith("with") else "pl.store(pl.load(a, [0, 0], [16, 128]), [0, 0], out)"
    scope = "" if line.startswith("with") else "with pl.at(level=pl.Level.CORE_GROUP):"
    mod, path = module(tmp_path, f"""\
        @pl.jit
        def k(a: pl.Tensor, out: pl.Out[pl.Tensor], s: pl.Scalar[pl.INT32]):
            {scope or "if True:"}
                {line}
                    {body}
            return out
        """)
    with pytest.raises(TypeCheckError, match=f"{what} must be a compile-time constant") as info:
        mod.k(torch.randn(R, C), torch.zeros(R, C), 2, config=RunConfig(platform="ref"))
    assert at(info.value) == where(path, token, marker=line)


def test_a_dump_whose_memref_name_is_a_call_is_refused_without_running_it(tmp_path, capsys):
    """The dump parser reads the call, it never makes it; the memory map says so on one line."""
    text = _slot_program(tmp_path).as_python(explicit=True)
    marker = tmp_path / "ran"
    call = f"__import__('os').system('touch {marker}')"
    edited = text.replace('pl.MemRef("ub", slots=2)', f"pl.MemRef({call}, slots=2)")
    assert edited != text
    with pytest.raises(TypeCheckError, match="pl.MemRef's name must be a compile-time constant") as info:
        parse(edited, filename="dump.py")
    assert marked(info.value).startswith("__import__(")
    dump = tmp_path / "edited_dump.py"
    dump.write_text(edited)
    code = memory_map([str(dump), "-o", str(tmp_path / "map.html")])
    err = capsys.readouterr().err
    assert code != 0
    assert "Traceback" not in err and "NotStatic" not in err
    assert "pl.MemRef's name must be a compile-time constant" in err
    assert not marker.exists()


def test_an_undefined_name_where_a_constant_is_needed_says_it_is_undefined(tmp_path):
    mod, path = module(tmp_path, f"""\
        @pl.jit
        def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
            with pl.at(level=pl.Level.CORE_GROUP):
                t: pl.Tile[[{R}, {C}], pl.FP32, pl.MemRef("ub", slots=SLOTS)[0], pl.Mem.Vec] = pl.load(a, [0, 0], [{R}, {C}])
                pl.store(t, [0, 0], out)
            return out
        """)
    with pytest.raises(ParseError, match="pl.MemRef's slots= must be a compile-time constant: name 'SLOTS' is not "
                                         "defined") as info:
        mod.k(torch.randn(R, C), torch.zeros(R, C), config=RunConfig(platform="ref"))
    assert at(info.value) == where(path, "SLOTS")


# ----------------------------------------------------------------------------- item 7: parameters


SIGNATURES = [
    # (parameters after a and out, the offending token, what the message says)
    ("*rest", "rest", "'\\*rest' of 'k' collects extra positional arguments"),
    ("**kw", "kw", "'\\*\\*kw' of 'k' collects extra keyword arguments"),
    ("*, s: pl.Scalar[pl.FP32]", "s: pl", "parameter 's' of 'k' is keyword-only"),
    ("s: pl.Scalar[pl.FP32] = 1.0", "s: pl", "parameter 's' of 'k' has a default value \\(1.0\\)"),
]


@pytest.mark.parametrize("params, token, message", SIGNATURES)
def test_an_entry_kernel_parameter_the_compiler_would_ignore_is_refused_where_written(tmp_path, params, token,
                                                                                     message):
    mod, path = module(tmp_path, f"""\
        @pl.jit
        def k(a: pl.Tensor, out: pl.Out[pl.Tensor], {params}):
            with pl.at(level=pl.Level.CORE_GROUP):
                pl.store(pl.load(a, [0, 0], [{R}, {C}]), [0, 0], out)
            return out
        """)
    a, out = torch.randn(R, C), torch.zeros(R, C)
    ref = RunConfig(platform="ref")
    calls = [lambda: mod.k(a, out, config=ref),  # the count a default or *rest suggests
             lambda: mod.k(a, out, 1.0, config=ref),
             lambda: mod.k(a, out, s=1.0, config=ref),
             lambda: mod.k.lower()]
    for call in calls:
        with pytest.raises(UnsupportedSyntaxError, match=message) as info:
            call()
        assert at(info.value) == where(path, token, marker="def k(")
        assert "arguments (" not in info.value.message  # not a count the signature misstates
        assert info.value.hint


@pytest.mark.parametrize("params, token, message", SIGNATURES)
def test_an_incore_kernel_parameter_the_compiler_would_ignore_is_refused_where_written(tmp_path, params, token,
                                                                                      message):
    mod, path = module(tmp_path, f"""\
        @pl.jit.incore
        def k(a: pl.Tensor, out: pl.Out[pl.Tensor], {params}):
            pl.store(pl.load(a, [0, 0], [{R}, {C}]), [0, 0], out)
            return out


        @pl.jit
        def entry(a: pl.Tensor, out: pl.Out[pl.Tensor]):
            out = k(a, out)  # MARK-call
            return out
        """)
    with pytest.raises(UnsupportedSyntaxError, match=message) as info:
        mod.entry(torch.randn(R, C), torch.zeros(R, C), config=RunConfig(platform="ref"))
    assert at(info.value) == where(path, token, marker="def k(")
    assert "arguments (" not in info.value.message
    _, line, col = where(path, "k(a, out)", marker="MARK-call")
    assert f"'k' is called at {path}:{line}:{col}" in str(info.value)


@pytest.mark.parametrize("params, token, message", [
    ("self, a: pl.Tensor[[16, 128], pl.FP32], *rest", "rest", "'\\*rest' of 'k' collects"),
    ("self, a: pl.Tensor[[16, 128], pl.FP32], **kw", "kw", "'\\*\\*kw' of 'k' collects"),
    ("self, a: pl.Tensor[[16, 128], pl.FP32], *, s: pl.Scalar[pl.FP32]", "s: pl", "'s' of 'k' is keyword-only"),
    ("self, a: pl.Tensor[[16, 128], pl.FP32], s: pl.Scalar[pl.FP32] = 2.0", "s: pl", "'s' of 'k' has a default"),
    ("self, /, a: pl.Tensor[[16, 128], pl.FP32]", "self", "positional-only parameters"),
])
def test_a_program_function_parameter_the_compiler_would_ignore_is_refused(tmp_path, params, token, message):
    text = f"""\
        @pl.program
        class P:
            @pl.function(type=pl.FunctionType.InCore)
            def k({params}):
                t = pl.tile.load(a, [0, 0], [16, 128], target_memory=pl.Mem.Vec)
        """
    with pytest.raises(UnsupportedSyntaxError, match=message) as info:
        module(tmp_path, text)
    path = sorted(tmp_path.glob("kernels_*.py"))[-1]
    assert at(info.value) == where(path, token, marker="def k(")


@pytest.mark.parametrize("params, token, message", [
    ("t, *rest", "rest", "'\\*rest' of 'helper' collects extra positional arguments, which an inline function"),
    ("t, **kw", "kw", "'\\*\\*kw' of 'helper' collects extra keyword arguments"),
    ("t, /", "t, /", "positional-only parameters"),
])
def test_an_inline_helper_with_star_parameters_is_refused_at_the_parameter(tmp_path, params, token, message):
    mod, path = module(tmp_path, f"""\
        @pl.jit.inline
        def helper({params}):
            return pl.muls(t, 2.0)


        @pl.jit
        def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
            with pl.at(level=pl.Level.CORE_GROUP):
                pl.store(helper(pl.load(a, [0, 0], [{R}, {C}])), [0, 0], out)
            return out
        """)
    with pytest.raises(UnsupportedSyntaxError, match=message) as info:
        mod.k(torch.randn(R, C), torch.zeros(R, C), config=RunConfig(platform="ref"))
    assert at(info.value) == where(path, token, marker="def helper(")
    assert "'helper' is called at" in str(info.value)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_inline_helpers_keep_their_defaults_and_keyword_only_parameters(tmp_path, platform):
    """An inline helper's call binds as Python binds it, so its defaults are honoured."""
    mod, _ = module(tmp_path, f"""\
        @pl.jit.inline
        def helper(t, s=2.0, *, bias=HALF):
            return pl.adds(pl.muls(t, s), bias)


        @pl.jit
        def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
            with pl.at(level=pl.Level.CORE_GROUP):
                t = pl.load(a, [0, 0], [{R}, {C}])
                pl.store(pl.add(helper(t), helper(t, 3.0, bias=1.0)), [0, 0], out)
            return out
        """)
    a, out = torch.randn(R, C), torch.full((R, C), SENTINEL)
    mod.k(a, out, config=RunConfig(platform=platform))
    assert torch.equal(out, (a * 2.0 + 0.5) + (a * 3.0 + 1.0))


# ----------------------------------------------------------------------------- values in messages

BIG_LIST = [0] * 65536


def test_a_builtin_used_as_a_value_says_it_is_a_function():
    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            pl.store(pl.adds(pl.load(a, [0, 0], [16, 128]), abs), [0, 0], out)
        return out

    with pytest.raises(ParseError, match="'abs' is a Python builtin, used here as a value") as info:
        k.lower(torch.zeros(16, 128), torch.zeros(16, 128))
    assert info.value.span is not None and "abs" in info.value.span.source_line()


def test_a_huge_value_is_not_quoted_whole():
    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            pl.store(pl.adds(pl.load(a, [0, 0], [16, 128]), BIG_LIST), [0, 0], out)
        return out

    with pytest.raises(PyptoError) as info:
        k.lower(torch.zeros(16, 128), torch.zeros(16, 128))
    assert len(info.value.message) < 400 and "..." in info.value.message
