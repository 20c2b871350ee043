"""An In (read-only) tensor parameter is never written, under whatever name the write
reaches it: an alias, a window, an if's or a loop's result, an inline helper's result, an
argument to an InCore kernel's Out parameter."""

import inspect

import pytest
import torch

import pypto.language as pl
from pypto.errors import TypeCheckError
from pypto.runtime import RunConfig

R, C = 16, 128


def error_at(kernel, *args, match: str, marker: str, token: str):
    with pytest.raises(TypeCheckError, match=match) as info:
        kernel(*args, config=RunConfig(platform="ref"))
    err = info.value
    lines, _ = inspect.getsourcelines(inspect.getmodule(error_at))
    line = next(k for k, text in enumerate(lines, start=1) if marker in text and "marker=" not in text)
    assert (err.span.file, err.span.line, err.span.col) == (__file__, line, lines[line - 1].index(token) + 1), err.span
    assert "a: pl.InOut[pl.Tensor[...]]" in str(err)  # the fix
    return err


def args():
    return torch.zeros(R, C), torch.zeros(R, C)


def test_a_plain_alias_of_an_input():
    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        b = a
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(a, [0, 0], [R, C])
            pl.store(pl.exp(t), [0, 0], b)  # MARK-alias
        return out

    error_at(k, *args(), match="writes its 'output_tensor', which is 'b', another name for the input parameter 'a'",
             marker="MARK-alias", token="pl.store")


def test_a_window_of_an_input():
    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            w = a[0:R, :]
            t = pl.load(a, [0, 0], [R, C])
            pl.store(pl.exp(t), [0, 0], w)  # MARK-window
        return out

    error_at(k, *args(), match="'w', another name for the input parameter 'a'", marker="MARK-window", token="pl.store")


def test_an_if_that_may_pick_an_input():
    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor], s: pl.Scalar[pl.INT64]):
        with pl.at(level=pl.Level.CORE_GROUP):
            if s > 0:
                d = a
            else:
                d = out
            t = pl.load(a, [0, 0], [R, C])
            pl.store(pl.exp(t), [0, 0], d)  # MARK-if
        return out

    error_at(k, *args(), 1, match="'d', and on some path 'd' is the input parameter 'a'", marker="MARK-if",
             token="pl.store")


@pl.jit.inline
def _same(x):
    return x


def test_an_inline_helper_returning_an_input():
    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            b = _same(a)
            t = pl.load(a, [0, 0], [R, C])
            pl.store(pl.exp(t), [0, 0], b)  # MARK-inline
        return out

    error_at(k, *args(), match="'b', another name for the input parameter 'a'", marker="MARK-inline", token="pl.store")


@pl.jit.incore
def _writer(x: pl.Tensor, o: pl.Out[pl.Tensor]):
    t = pl.load(x, [0, 0], [R, C])
    pl.store(pl.exp(t), [0, 0], o)
    return o


def test_an_alias_of_an_input_passed_where_an_incore_kernel_writes():
    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        b = a
        b = _writer(out, b)  # MARK-call
        return out

    error_at(k, *args(), match=r"'_writer' writes its parameter 'o' \(pl.Out\), and this argument is 'b', another "
                               "name for the input parameter 'a'", marker="MARK-call", token="b)")


def test_a_loop_that_makes_a_carried_tensor_an_input_on_its_next_iteration():
    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            d = out
            t = pl.load(a, [0, 0], [R, C])
            for i in pl.range(2):
                pl.store(t, [0, 0], d)  # MARK-loop
                d = a
        return out

    error_at(k, *args(), match="and on some path 'd' is the input parameter 'a'", marker="MARK-loop", token="pl.store")


def test_the_result_of_a_kernel_that_returns_its_out_argument_is_writable():
    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        b = _writer(a, out)
        with pl.at(level=pl.Level.CORE_GROUP):
            w = b[0:8, :]
            pl.store(pl.load(a, [0, 0], [8, C]), [0, 0], w)
        return out

    for platform in ("ref", "a2a3sim"):
        a, out = torch.randn(R, C), torch.zeros(R, C)
        k(a, out, config=RunConfig(platform=platform))
        assert torch.equal(out[8:], torch.exp(a[8:])) and torch.equal(out[:8], a[:8])


_DUMP = '''
import pypto.language as pl

@pl.program
class P:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[16, 128], pl.FP32], s: pl.Scalar[pl.INDEX], out: pl.Out[pl.Tensor[[16, 128], pl.FP32]]) -> pl.Tensor[[16, 128], pl.FP32]:
        t: pl.Tile[[16, 128], pl.FP32, pl.Mem.Vec] = pl.tile.load(a, [0, 0], [16, 128])
        for i, (d,) in pl.range(2, init_values=(out,)):
            d_1: pl.Tensor[[16, 128], pl.FP32] = pl.tile.store(t, [0, 0], d)
            w: pl.Tensor[[16, 128], pl.FP32] = a
            d_2 = pl.yield_(w)
        return out
'''


def test_the_check_is_a_function_over_the_ir():
    """Dump text is read as printed (no check while parsing); the same check then finds
    the write on the loop's second iteration, naming the store."""
    from pypto.ir.tensors import Sources
    from pypto.lang import parse
    from pypto.lang.checks.permissions import check_writes

    fn = parse(_DUMP).functions[0]
    assert Sources(fn).leaves("d") == {"out", "a"} and Sources(fn).leaves("w") == {"a"}
    with pytest.raises(TypeCheckError, match="tile.store writes its 'output_tensor', which is 'd', and on some "
                                             "path 'd' is the input parameter 'a'") as info:
        check_writes(fn, {}, {"d": "d", "a": "a"})
    assert info.value.span.line == 10 and "a: pl.InOut" in str(info.value)



@pl.jit.inline
def _copy_band(src, dst, r):
    pl.store(pl.load(src, [r, 0], [R, C]), [r, 0], dst)  # MARK-band
    return dst


def test_a_check_over_the_ir_names_the_inline_call_that_went_wrong():
    """The second call of the helper is the bad one: the note says so (the checks run on
    the converted function, after the helper's code is spliced in)."""
    from pypto.errors import OutOfBoundsError

    @pl.jit
    def oob(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            for i in pl.range(4):
                _copy_band(a, out, i * R)
                _copy_band(b, out, i * R + R)  # MARK-second
        return out

    @pl.jit
    def writes(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            _copy_band(a, out, 0)
            _copy_band(out, b, 0)  # MARK-writer
        return out

    lines, _ = inspect.getsourcelines(inspect.getmodule(error_at))
    at = {m: next(k for k, t in enumerate(lines, start=1) if m in t and "in t" not in t)
          for m in ("MARK-second", "MARK-writer")}
    tensors = [torch.zeros(4 * R, C) for _ in range(3)]
    for kernel, cls, mark in ((oob, OutOfBoundsError, "MARK-second"), (writes, TypeCheckError, "MARK-writer")):
        with pytest.raises(cls) as info:
            kernel(*tensors, config=RunConfig(platform="ref"))
        assert info.value.notes == (f"in '_copy_band', inlined at {__file__}:{at[mark]}:"
                                    f"{lines[at[mark] - 1].index('_copy_band') + 1}",), info.value.notes


@pl.jit.inline
def _fill(t, dst):
    pl.store(t, [0, 0], dst)  # MARK-fill
    return dst


@pl.jit.incore
def _two(x: pl.Tensor, o: pl.Out[pl.Tensor], p: pl.Out[pl.Tensor]):
    t = pl.load(x, [0, 0], [8, C])
    pl.store(pl.exp(t), [0, 0], o)
    pl.store(pl.exp(t), [0, 0], p)
    return x, o


def test_the_message_names_the_tensor_as_the_write_spells_it():
    @pl.jit
    def through_helper(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            w = a[0:8, :]
            _fill(pl.load(a, [0, 0], [8, C]), w)
        return out

    @pl.jit
    def unpacked(a: pl.Tensor, out: pl.Out[pl.Tensor], o2: pl.Out[pl.Tensor]):
        b, c = _two(a[0:8, :], out, o2)
        with pl.at(level=pl.Level.CORE_GROUP):
            pl.store(pl.load(a, [0, 0], [8, C]), [0, 0], b)  # MARK-unpacked
        return out

    error_at(through_helper, *args(), match="which is 'dst', another name for the input parameter 'a'",
             marker="MARK-fill", token="pl.store")
    error_at(unpacked, *args(), torch.zeros(R, C), match="which is 'b', another name for the input parameter 'a'",
             marker="MARK-unpacked", token="pl.store")


def test_a_lanes_share_of_an_input_is_the_input():
    @pl.jit
    def k(a: pl.Tensor, x: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            for lane in pl.split_aiv(2, mode=pl.SplitMode.NONE):
                s = pl.aiv_shard(a)
                s[0:16, :] = pl.exp(x[0:16, :])  # MARK-shard
                out[:] = pl.exp(x)
        return out

    error_at(k, torch.zeros(R, C), torch.zeros(R, C), torch.zeros(R, C),
             match="tensor.assemble writes its 'target', which is 's', another name for the input parameter 'a'",
             marker="MARK-shard", token="s[0:16")
