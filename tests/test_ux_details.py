"""Small things a user meets: a report prints as a line, a trace asked of ``ref`` says why
there is none, a reused output directory holds only this build's pass dumps, and a kernel
decorator on anything but a function is refused at the decorator."""

import functools
import runpy
import sys
import textwrap

import pytest
import torch

import pypto.language as pl
from pypto.errors import ParseError
from pypto.ir.levels import PassDumpLevel
from pypto.runtime import RunConfig


@pl.jit
def double(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        pl.store(pl.add(pl.load(a, [0, 0], [16, 64]), pl.load(a, [0, 0], [16, 64])), [0, 0], out)
    return out


def test_a_report_prints_as_one_short_line(tmp_path):
    a, out = torch.randn(16, 64), torch.zeros(16, 64)
    report = double.compile(a, out, config=RunConfig(output_dir=tmp_path)).run(a, out)
    text = repr(report)
    assert "\n" not in text and len(text) < 300
    assert f"cycles={report.cycles}" in text and "aiv0" in text and "VECTOR=" in text


def test_a_trace_on_ref_says_why_there_is_none(tmp_path, capfd):
    a, out = torch.randn(16, 64), torch.zeros(16, 64)
    double(a, out, config=RunConfig(platform="ref", enable_l0_trace=True, output_dir=tmp_path))
    err = capfd.readouterr().err
    assert "the ref platform interprets the IR" in err and "a2a3sim" in err
    assert not (tmp_path / "sim").exists()


def test_a_reused_output_dir_keeps_only_this_build_s_dumps(tmp_path):
    a, out = torch.randn(16, 64), torch.zeros(16, 64)
    double.compile(a, out, config=RunConfig(output_dir=tmp_path, dump_passes=PassDumpLevel.EXPLICIT))
    assert any((tmp_path / "passes_dump").iterdir())
    (tmp_path / "passes_dump" / "99_after_Stale.py").write_text("# an earlier build's\n")
    # other shapes: another build (the same ones would be the cached one)
    double.compile(torch.randn(32, 64), torch.zeros(16, 64), config=RunConfig(output_dir=tmp_path,
                                                                              dump_passes=PassDumpLevel.EXPLICIT))
    assert not (tmp_path / "passes_dump" / "99_after_Stale.py").exists()
    double.compile(torch.randn(48, 64), torch.zeros(16, 64), config=RunConfig(output_dir=tmp_path))
    assert not (tmp_path / "passes_dump").exists()


DECORATORS = {"jit": pl.jit, "jit(auto_scope=False)": pl.jit(auto_scope=False), "jit.incore": pl.jit.incore,
              "jit.inline": pl.jit.inline, "function": pl.function,
              "function(type=InCore)": pl.function(type=pl.FunctionType.InCore)}
NOT_FUNCTIONS = {"class": type("k", (), {}), "partial": functools.partial(max, 1), "builtin": max,
                 "instance": object()}


@pytest.mark.parametrize("decorator", DECORATORS)
@pytest.mark.parametrize("target", NOT_FUNCTIONS)
def test_a_kernel_decorator_takes_only_a_function(decorator, target):
    with pytest.raises(ParseError, match="takes a function") as info:
        line = sys._getframe().f_lineno + 1
        DECORATORS[decorator](NOT_FUNCTIONS[target])
    assert (info.value.span.file, info.value.span.line) == (__file__, line)
    assert " is a" in str(info.value) and "def" in info.value.hint


def test_jit_on_a_class_names_the_decorator_line_though_its_module_is_gone(tmp_path):
    (tmp_path / "k.py").write_text(textwrap.dedent('''
        import pypto.language as pl


        @pl.jit
        class k:
            pass
    '''))
    with pytest.raises(ParseError) as info:
        runpy.run_path(str(tmp_path / "k.py"))  # a module that is gone once it has run
    assert (info.value.span.file, info.value.span.line) == (str(tmp_path / "k.py"), 5)
    assert "'k' is a class" in str(info.value) and "@pl.jit" in str(info.value)
