"""The reference's selective-dump marks: ``pl.dump_tag(t)`` (a statement of the
orchestration), ``dumps=[t]`` on ``pl.at`` and ``pl.submit``. They are checked where they
are written and change nothing else (a simulated device keeps no argument dumps, so
``RunConfig.enable_dump_args`` has no effect): the program, its values and its dumps are
those of the same source without them."""

import inspect

import pytest
import torch

import pypto.language as pl
from pypto.errors import ParseError, TypeCheckError, UnsupportedSyntaxError
from pypto.lang import parse
from pypto.runtime import RunConfig

R, C = 16, 128


@pl.jit
def tagged(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    pl.dump_tag(a)
    pl.tensor.dump_tag(out)
    with pl.at(level=pl.Level.CORE_GROUP, dumps=[a, out]):
        out = pl.assemble(out, pl.exp(a), [0, 0])
    return out


@pl.jit
def untagged(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out = pl.assemble(out, pl.exp(a), [0, 0])
    return out


@pytest.mark.parametrize("platform", ["ref", "a2a3sim"])
def test_marks_change_nothing_but_are_accepted(platform):
    a = torch.randn(R, C)
    out = torch.zeros(R, C)
    config = RunConfig(platform=platform, enable_dump_args=1)
    tagged(a, out, config=config)
    assert torch.equal(out, torch.exp(a))
    body = tagged.compile(a, out, config=config).program.as_python()
    assert body.replace("tagged", "untagged") == untagged.compile(a, out, config=config).program.as_python()


PROGRAM = '''
import pypto.language as pl


@pl.program
class P:
    @pl.function(type=pl.FunctionType.InCore)
    def scale(self, a: pl.Tensor[[16, 128], pl.FP32], out: pl.Out[pl.Tensor[[16, 128], pl.FP32]]):
        t = pl.load(a, [0, 0], [16, 128])
        pl.store(pl.muls(t, 2.0), [0, 0], out)

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[16, 128], pl.FP32], out: pl.Out[pl.Tensor[[16, 128], pl.FP32]]):
        pl.dump_tag(a)
        pl.submit(self.scale, a, out, dumps=[out])
'''


def test_the_program_forms_parse_to_the_unmarked_program():
    plain = PROGRAM.replace("        pl.dump_tag(a)\n", "").replace(", dumps=[out]", "")
    assert parse(PROGRAM) == parse(plain)


@pl.jit
def in_a_kernel(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        pl.dump_tag(a)  # MARK-kernel
        out = pl.assemble(out, pl.exp(a), [0, 0])
    return out


@pl.jit
def as_a_value(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    q = pl.dump_tag(a)  # MARK-value
    with pl.at(level=pl.Level.CORE_GROUP):
        out = pl.assemble(out, pl.exp(q), [0, 0])
    return out


@pl.jit
def of_a_slice(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    pl.dump_tag(a[0:4, :])  # MARK-slice
    with pl.at(level=pl.Level.CORE_GROUP):
        out = pl.assemble(out, pl.exp(a), [0, 0])
    return out


@pl.jit
def dumps_not_a_list(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP, dumps=a):  # MARK-list
        out = pl.assemble(out, pl.exp(a), [0, 0])
    return out


def _line(marker):
    lines, _ = inspect.getsourcelines(inspect.getmodule(_line))
    return next(k for k, text in enumerate(lines, start=1) if marker in text and "_line(" not in text
                and "(in_a" not in text and "(as_a" not in text and "(of_a" not in text and "(dumps_" not in text)


@pytest.mark.parametrize("kernel, error, marker, match", [
    (in_a_kernel, ParseError, "MARK-kernel", "pl.dump_tag is the orchestration's"),
    (as_a_value, UnsupportedSyntaxError, "MARK-value", "pl.dump_tag is only valid as a statement of its own"),
    (of_a_slice, TypeCheckError, "MARK-slice", r"pl.dump_tag takes a tensor's name, not 'a\[0:4, :\]'"),
    (dumps_not_a_list, TypeCheckError, "MARK-list", r"pl.at\(dumps=...\) must be a list literal of tensor names"),
])
def test_mistakes_name_the_line(kernel, error, marker, match):
    with pytest.raises(error, match=match) as info:
        kernel(torch.zeros(R, C), torch.zeros(R, C), config=RunConfig(platform="ref"))
    assert info.value.span.file == __file__ and info.value.span.line == _line(marker)
