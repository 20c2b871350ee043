"""Counter-based random numbers: ``pl.tile.random`` / ``pl.tensor.random`` / ``pl.random``
(the reference's ``pto.trandom``). Element [r, c] is word 0 of the Philox4x32 block for key
(key0, key1) and counter (counter0 + c, counter1 + r, counter2, counter3), so the same
seeds give the same values and a tensor computed window by window is the whole one. Checked
against the published known answers of Philox4x32-10 and, as a property, against an
independent plain-int oracle written here; ``ref`` and ``a5sim`` compute it bit for bit alike,
and ``a2a3sim`` refuses it at the user's line naming the chip that has it (pto.trandom is an
Ascend950 instruction)."""

import inspect

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import pypto.language as pl
from pypto.debug import torch_codegen
from pypto.errors import CodegenError, PyptoError
from pypto.lang import parse
from pypto.runtime import RunConfig
from pypto.sim.ops.randoms import philox4x32

REF = RunConfig(platform="ref")
MASK = 0xFFFFFFFF


def oracle_block(key, counter, rounds):
    """Philox4x32 on Python ints, one block (independent of pypto.sim.ops.randoms' arrays)."""
    k0, k1 = key[0] & MASK, key[1] & MASK
    c0, c1, c2, c3 = (w & MASK for w in counter)
    for r in range(rounds):
        if r:
            k0, k1 = (k0 + 0x9E3779B9) & MASK, (k1 + 0xBB67AE85) & MASK
        p0, p1 = 0xD2511F53 * c0, 0xCD9E8D57 * c2
        c0, c1, c2, c3 = (p1 >> 32) ^ c1 ^ k0, p1 & MASK, (p0 >> 32) ^ c3 ^ k1, p0 & MASK
    return c0, c1, c2, c3


def oracle(seeds, rows, cols, dtype, rounds) -> torch.Tensor:
    k0, k1, c0, c1, c2, c3 = seeds
    words = [[oracle_block((k0, k1), (c0 + c, c1 + r, c2, c3), rounds)[0] for c in range(cols)] for r in range(rows)]
    out = torch.tensor(words, dtype=torch.int64)
    if dtype is pl.INT32:
        out = torch.where(out >= 1 << 31, out - (1 << 32), out)
        return out.to(torch.int32)
    return out.to(torch.uint32)


@pytest.mark.parametrize("key,counter,want", [  # Random123's known answers for philox4x32_10
    ((0, 0), (0, 0, 0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((MASK, MASK), (MASK,) * 4, (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    ((0xA4093822, 0x299F31D0), (0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344),
     (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1)),
])
def test_the_generator_is_philox4x32_10(key, counter, want):
    assert tuple(int(w) for w in philox4x32(key, counter, 10)) == want
    assert oracle_block(key, counter, 10) == want


def tile_kernel(seeds, shape, dtype, rounds, valid=None):
    k0, k1, c0, c1, c2, c3 = seeds
    region = valid or shape  # (the whole tile when no narrower region is asked for)

    @pl.jit
    def draw(out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.tile.random(k0, k1, c0, c1, c2, c3, shape, valid_shape=region, dtype=dtype, rounds=rounds)
            pl.store(t, [0, 0], out)
        return out

    return draw


def tensor_kernel(seeds, shape, dtype, rounds):
    k0, k1, c0, c1, c2, c3 = seeds

    @pl.jit
    def draw(out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            out[:] = pl.random(k0, k1, c0, c1, c2, c3, shape, dtype=dtype, rounds=rounds)
        return out

    return draw


def _empty(shape, dtype):
    return torch.zeros(shape, dtype=torch.int32 if dtype is pl.INT32 else torch.uint32)


WORDS = st.integers(-(1 << 31), MASK)


@settings(max_examples=12, deadline=None)
@given(seeds=st.tuples(*[WORDS] * 6), rows=st.integers(1, 6), cols=st.integers(1, 40),
       dtype=st.sampled_from([pl.UINT32, pl.INT32]), rounds=st.sampled_from([7, 10]), level=st.sampled_from(["tile", "tensor"]))
def test_the_values_are_the_generators_at_each_position(seeds, rows, cols, dtype, rounds, level):
    make = tile_kernel if level == "tile" else tensor_kernel
    out = _empty((rows, cols), dtype)
    make(seeds, [rows, cols], dtype, rounds)(out, config=REF)
    assert torch.equal(out, oracle(seeds, rows, cols, dtype, rounds))


def test_the_same_seeds_reproduce_the_same_values_and_others_do_not():
    seeds = (0x1234, 0x5678, 1, 2, 3, 4)
    a, b, c = (_empty((4, 256), pl.UINT32) for _ in range(3))
    tile_kernel(seeds, [4, 256], pl.UINT32, 10)(a, config=REF)
    tile_kernel(seeds, [4, 256], pl.UINT32, 10)(b, config=REF)
    tile_kernel((0x1234, 0x5678, 1, 2, 3, 5), [4, 256], pl.UINT32, 10)(c, config=REF)
    assert torch.equal(a, b) and not torch.equal(a, c)
    assert len(set(a.flatten().tolist())) > 1000  # 1024 words, practically all different


def test_a_valid_region_writes_the_same_values_there_and_nothing_past_it():
    seeds = (0x55, 0x66, 1, 0, 0, 0)
    full, part = _empty((16, 128), pl.UINT32), torch.full((16, 128), 7, dtype=torch.uint32)
    tile_kernel(seeds, [16, 128], pl.UINT32, 10)(full, config=REF)
    tile_kernel(seeds, [16, 128], pl.UINT32, 10, valid=[10, 80])(part, config=REF)
    assert torch.equal(part[:10, :80], full[:10, :80])
    assert torch.equal(part[10:], torch.full((6, 128), 7, dtype=torch.uint32))  # the store moves the valid region


def test_a_tensor_computed_window_by_window_is_the_whole_one():
    """Larger than one tile: ConvertTensorToTileOps computes it in blocks, each at its
    counters moved by the block's offset."""
    seeds = (7, 8, 9, 10, 11, 12)
    out = _empty((300, 1000), pl.UINT32)
    kernel = tensor_kernel(seeds, [300, 1000], pl.UINT32, 10)
    kernel(out, config=REF)
    assert kernel.lower(out).as_python().count("pl.tile.random(") > 1  # blocked
    assert torch.equal(out, torch.from_numpy(philox_words(seeds, 300, 1000)))


def philox_words(seeds, rows, cols):
    import numpy as np

    r, c = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
    k0, k1, c0, c1, c2, c3 = seeds
    return philox4x32((k0, k1), (c0 + c, c1 + r, np.full_like(r, c2), np.full_like(r, c3)), 10)[0].astype(np.uint32)


def test_a_program_with_random_prints_parses_and_runs_as_host_code():
    kernel = tile_kernel((1, 2, 3, 4, 5, 6), [8, 64], pl.INT32, 7, valid=[8, 40])
    out = _empty((8, 64), pl.INT32)
    program = kernel.specialize(out)
    text = program.as_python()
    assert "pl.tile.random(1, 2, 3, 4, 5, 6, [8, 64], valid_shape=[8, 40], dtype=pl.INT32, rounds=7)" in text
    assert parse(text) == program
    kernel(out, config=REF)
    scope = {}
    exec(torch_codegen(program), scope)
    host = _empty((8, 64), pl.INT32)
    scope["draw"](host)
    assert torch.equal(host[:, :40], out[:, :40])


def _line(marker: str) -> int:
    lines, _ = inspect.getsourcelines(inspect.getmodule(_line))
    return next(k for k, t in enumerate(lines, start=1) if t.rstrip().endswith(marker))


@pl.jit
def on_the_simulator(out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.random(1, 2, 3, 4, 5, 6, [8, 64])  # MARK-a5
    return out


def test_a2a3sim_refuses_it_at_the_users_line_naming_the_chip_that_has_it():
    with pytest.raises(CodegenError, match=r"pl.tile.random lowers to pto.trandom, which exists on Ascend950 \(a5\) "
                                           r"only, and the simulated backend is Ascend910B \(a2a3\): .* cannot run on "
                                           r"platform='a2a3sim'") as info:
        on_the_simulator(_empty((8, 64), pl.UINT32), config=RunConfig(platform="a2a3sim"))
    assert info.value.span.line == _line("MARK-a5")
    assert "RunConfig(platform='a5sim')" in info.value.hint and "platform='ref'" in info.value.hint
    out = _empty((8, 64), pl.UINT32)
    on_the_simulator(out, config=REF)  # the same program on ref
    assert torch.equal(out, torch.from_numpy(philox_words((1, 2, 3, 4, 5, 6), 8, 64)))



@settings(max_examples=6, deadline=None)
@given(seeds=st.tuples(*[WORDS] * 6), rows=st.integers(1, 20), cols=st.integers(1, 300),
       dtype=st.sampled_from([pl.UINT32, pl.INT32]), rounds=st.sampled_from([7, 10]), level=st.sampled_from(["tile", "tensor"]))
def test_a5sim_draws_the_same_stream_as_ref(seeds, rows, cols, dtype, rounds, level):
    """The A5 simulator runs pto.trandom with the interpreter's one definition of the stream."""
    make = tile_kernel if level == "tile" else tensor_kernel
    kernel = make(seeds, [rows, cols], dtype, rounds)
    ref, sim = _empty((rows, cols), dtype), _empty((rows, cols), dtype)
    kernel(ref, config=REF)
    kernel(sim, config=RunConfig(platform="a5sim"))
    assert torch.equal(sim, ref) and torch.equal(sim, oracle(seeds, rows, cols, dtype, rounds))


@pl.jit
def after_a_plain_task(x: pl.Tensor, first: pl.Out[pl.Tensor], out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        first[:] = pl.add(x, 1.0)
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.random(1, 2, 3, 4, 5, 6, [8, 64])  # MARK-second
    return first, out


def test_a2a3sim_refuses_it_when_compiling_before_any_task_runs():
    x, first, out = torch.ones(8, 64), torch.zeros(8, 64), _empty((8, 64), pl.UINT32)
    with pytest.raises(CodegenError, match=r"cannot run on platform='a2a3sim'") as info:
        after_a_plain_task.compile(x, first, out, config=RunConfig(platform="a2a3sim", codegen_only=True))
    assert info.value.span.line == _line("MARK-second")
    with pytest.raises(CodegenError, match=r"cannot run on platform='a2a3sim'"):
        after_a_plain_task(x, first, out, config=RunConfig(platform="a2a3sim"))
    assert torch.equal(first, torch.zeros(8, 64))  # the first task never ran
    after_a_plain_task(x, first, out, config=REF)
    assert torch.equal(first, torch.full((8, 64), 2.0))

REFUSED = [
    ("pl.tile.random(1, 2, 3, 4, 5, 6, [4, 64], dtype=pl.FP32)", r"requires dtype to be one of \{INT32, UINT32\}, "
                                                                 r"but got FP32"),
    ("pl.tile.random(1, 2, 3, 4, 5, 6, [4, 64], rounds=8)", r"requires rounds to be 7 or 10, but got 8"),
    ("pl.tile.random(1, 2, 3, 4, 5, 6, [2, 4, 64])", r"requires a 2D shape \(rows, cols\), but got rank 3"),
    ("pl.tile.random(1, 2, i, 4, 5, 6, [4, 64])", r"requires seed argument 2 \(counter0\) to have INT32 dtype, but "
                                                  r"got INDEX"),
    ("pl.tile.random(1, 2.5, 3, 4, 5, 6, [4, 64])", r"tile.random's 'key1' must be an integer, but '2.5' is "
                                                    r"Scalar\[fp32\]"),
    ("pl.tile.random(1, 2, 3, 4, 5, 1 << 32, [4, 64])", r"requires seed argument 5 \(counter3\) to be a 32-bit "
                                                        r"integer word, but got 4294967296"),
    ("pl.tile.random(1, 2, 3, 4, 5, 6, [4, 64], valid_shape=[5, 64])", r"requires valid_shape element 0 in "
                                                                       r"\(0, 4\], but got 5"),
    ("pl.tile.random(1, 2, 3, 4, 5, 6, [4, i + 1])", r"must be a compile-time constant"),
]


@pytest.mark.parametrize("call,message", REFUSED)
def test_its_type_rules_refuse_at_the_users_line(tmp_path, call, message):
    source = ("import pypto.language as pl\n\n\n@pl.jit\ndef k(out: pl.Out[pl.Tensor]):\n"
              "    with pl.at(level=pl.Level.CORE_GROUP):\n        for i in pl.range(1):\n"
              f"            t = {call}\n            pl.store(t, [0, 0], out)\n    return out\n")
    path = tmp_path / "random_kernel.py"
    path.write_text(source)
    scope: dict = {}
    exec(compile(source, str(path), "exec"), scope)
    with pytest.raises(PyptoError, match=message) as info:
        scope["k"](_empty((4, 64), pl.UINT32), config=REF)
    assert info.value.span.line == 8


def test_a_seed_read_at_run_time_is_an_int32_scalar():
    @pl.jit
    def seeded(seeds: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            for i in pl.range(2):
                key = pl.read(seeds, [i])  # an INT32 tensor's element
                t = pl.tile.random(key, 0, pl.cast(i, pl.INT32), 0, 0, 0, [4, 32])
                pl.store(t, [i * 4, 0], out)
        return out

    out = _empty((8, 32), pl.UINT32)
    seeded(torch.tensor([11, -5], dtype=torch.int32), out, config=REF)
    assert torch.equal(out[:4], oracle((11, 0, 0, 0, 0, 0), 4, 32, pl.UINT32, 10))
    assert torch.equal(out[4:], oracle((-5, 0, 1, 0, 0, 0), 4, 32, pl.UINT32, 10))
