"""The Tile forms of a ``pl.split_aiv`` region's named crossings (the reference's
``@pl.program`` form): a region's tile code is each vector lane's own, so ``pl.aiv_shard``
of a cube tile gives the lane its half (rows under UP_DOWN, columns under LEFT_RIGHT, all
of it under NONE) in Vec, and ``pl.aic_gather`` of the lanes' Vec tiles gives the cube the
whole, rejoined, in Mat after the region — each through a GM ring, as a cube/vector
``pl.move`` goes; the same bits on ``ref`` and ``a2a3sim``, in the interpreter before any
pass, and in ``torch_codegen``'s host code."""

import inspect

import pytest
import torch

import pypto.language as pl
from pypto.debug import torch_codegen
from pypto.errors import PyptoError
from pypto.lang import parse
from pypto.runtime import RunConfig, run
from pypto.sim.reference import interpreter

MAT, LEFT, RIGHT, VEC = pl.Mem.Mat, pl.Mem.Left, pl.Mem.Right, pl.Mem.Vec
UP_DOWN, LEFT_RIGHT, NONE = pl.SplitMode.UP_DOWN, pl.SplitMode.LEFT_RIGHT, pl.SplitMode.NONE
PLATFORMS = ["ref", "a2a3sim"]


def sharded(mode, m: int, k: int, n: int):
    """(a @ b) on the cube, each lane scaling its half and storing it where it belongs."""
    rows, cols = (m // 2, n) if mode == UP_DOWN else (m, n // 2) if mode == LEFT_RIGHT else (m, n)
    down, right = int(mode == UP_DOWN), int(mode == LEFT_RIGHT)  # which axis a lane's offset moves along

    @pl.jit
    def shard(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            al = pl.move(pl.load(a, [0, 0], [m, k], target_memory=MAT), target_memory=LEFT)
            bl = pl.move(pl.load(b, [0, 0], [k, n], target_memory=MAT), target_memory=RIGHT)
            qk = pl.matmul(al, bl)
            for aiv_id in pl.split_aiv(2, mode=mode):
                half = pl.aiv_shard(qk)  # MARK-shard
                if mode == NONE:  # both lanes hold all of it: each stores its band of rows
                    pl.store(pl.slice(pl.muls(half, 3.0), [m // 2, n], [aiv_id * (m // 2), 0]),
                             [aiv_id * (m // 2), 0], out)
                else:
                    pl.store(pl.muls(half, 3.0), [aiv_id * rows * down, aiv_id * cols * right], out)
        return out

    return shard


def gathered(mode, m: int, k: int, n: int):
    """Each lane exponentiates its half of a (all of it under NONE); the cube multiplies the
    rejoined tile by b."""
    rows, cols = (m // 2, k) if mode == UP_DOWN else (m, k // 2) if mode == LEFT_RIGHT else (m, k)
    down, right = int(mode == UP_DOWN), int(mode == LEFT_RIGHT)

    @pl.jit
    def gather(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            for aiv_id in pl.split_aiv(2, mode=mode):
                mine = pl.load(a, [aiv_id * rows * down, aiv_id * cols * right], [rows, cols])
                whole = pl.aic_gather(pl.exp(mine))
            lhs = pl.move(whole, target_memory=LEFT)
            rhs = pl.move(pl.load(b, [0, 0], [k, n], target_memory=MAT), target_memory=RIGHT)
            pl.store(pl.matmul(lhs, rhs), [0, 0], out)
        return out

    return gather


def _on_both(kernel, *args):
    outs = []
    for platform in PLATFORMS:
        fresh = [a.clone() for a in args]
        kernel(*fresh, config=RunConfig(platform=platform))
        outs.append(fresh[-1])
    assert torch.equal(outs[0], outs[1])
    return outs[0]


@pytest.mark.parametrize("mode", [UP_DOWN, LEFT_RIGHT, NONE])
@pytest.mark.parametrize("m,k,n", [(64, 32, 64), (32, 16, 48)])
def test_aiv_shard_gives_each_lane_its_half_of_the_cube_tile(mode, m, k, n):
    g = torch.Generator().manual_seed(m + n)
    a, b = torch.randn(m, k, generator=g), torch.randn(k, n, generator=g)
    out = _on_both(sharded(mode, m, k, n), a, b, torch.zeros(m, n))
    torch.testing.assert_close(out, (a @ b) * 3.0, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("mode", [UP_DOWN, LEFT_RIGHT, NONE])
@pytest.mark.parametrize("m,k,n", [(64, 32, 48), (32, 64, 16)])
def test_aic_gather_hands_the_cube_the_lanes_halves_rejoined(mode, m, k, n):
    g = torch.Generator().manual_seed(m * k)
    a, b = torch.randn(m, k, generator=g), torch.randn(k, n, generator=g)
    kernel = gathered(mode, m, k, n)
    out = _on_both(kernel, a, b, torch.zeros(m, n))
    torch.testing.assert_close(out, torch.exp(a) @ b, rtol=1e-4, atol=1e-4)
    # the program before any pass, in the interpreter and as torch_codegen's host code: the same bits
    program = kernel.specialize(a, b, torch.zeros(m, n))
    before = torch.zeros(m, n)
    interpreter.run(program, "gather", (a, b, before))
    scope = {}
    exec(torch_codegen(program, check_shapes=True), scope)
    host = torch.zeros(m, n)
    scope["gather"](a, b, host)
    assert torch.equal(before, out) and torch.equal(host, out)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_region_in_a_loop_shards_each_trips_tile_through_its_slot(platform):
    """The reference's parity shape: a region nested in pl.range, the cube's tile sharded on
    every trip (each trip's crossing takes its slot of the ring)."""
    @pl.jit
    def per_trip(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            bl = pl.move(pl.load(b, [0, 0], [32, 32], target_memory=MAT), target_memory=RIGHT)
            for i in pl.range(4):
                al = pl.move(pl.load(a, [i * 32, 0], [32, 32], target_memory=MAT), target_memory=LEFT)
                qk = pl.matmul(al, bl)
                for aiv_id in pl.split_aiv(2, mode=UP_DOWN):
                    pl.store(pl.add(pl.aiv_shard(qk), pl.aiv_shard(qk)), [i * 32 + aiv_id * 16, 0], out)
        return out

    g = torch.Generator().manual_seed(7)
    a, b, out = torch.randn(128, 32, generator=g), torch.randn(32, 32, generator=g), torch.zeros(128, 32)
    per_trip(a, b, out, config=RunConfig(platform=platform))
    torch.testing.assert_close(out, (a @ b) * 2, rtol=1e-4, atol=1e-4)


def test_the_tile_forms_print_with_the_regions_split_and_parse_back():
    a, b = torch.randn(64, 32), torch.randn(32, 48)
    program = gathered(LEFT_RIGHT, 64, 32, 48).specialize(a, b, torch.zeros(64, 48))
    text = program.as_python()
    assert "pl.tile.aic_gather(exp, split=2)" in text
    assert parse(text) == program
    shard = sharded(UP_DOWN, 64, 32, 64).specialize(torch.randn(64, 32), torch.randn(32, 64), torch.zeros(64, 64))
    assert "pl.tile.aiv_shard(qk, split=1)" in shard.as_python() and parse(shard.as_python()) == shard


def _line(marker: str) -> int:
    lines, _ = inspect.getsourcelines(inspect.getmodule(_line))
    return next(k for k, t in enumerate(lines, start=1) if t.rstrip().endswith(marker))


REFUSED = [
    ("        h = pl.aiv_shard(qk)  # MARK\n",
     r"pl.aiv_shard must be used inside a 'for aiv_id in pl.split_aiv\(...\)' loop, which supplies the split mode"),
    ("        for aiv_id in pl.split_aiv(2, mode=pl.SplitMode.UP_DOWN):\n"
     "            h = pl.aiv_shard(qk, mode=pl.SplitMode.UP_DOWN)  # MARK\n",
     r"pl.aiv_shard does not take a mode: it inherits the enclosing pl.split_aiv region's"),
    ("        for aiv_id in pl.split_aiv(2, mode=pl.SplitMode.UP_DOWN):\n"
     "            h = pl.tile.aiv_shard(qk, split=2)  # MARK\n",
     r"tile.aiv_shard\(split=2\) in a pl.split_aiv region of mode=pl.SplitMode.UP_DOWN \(split=1\)"),
    ("        for aiv_id in pl.split_aiv(2, mode=pl.SplitMode.UP_DOWN):\n"
     "            h = pl.aiv_shard(pl.load(a, [0, 0], [32, 32]))  # MARK\n",
     r"pl.aiv_shard names a cube tile's crossing into the region, and this is Tile\[32x32 fp32 Vec\]"),
    ("        for aiv_id in pl.split_aiv(2, mode=pl.SplitMode.UP_DOWN):\n"
     "            h = pl.tile.aiv_shard(a, split=1)  # MARK\n",
     r"The operator tile.aiv_shard requires 'x' to be a Tile, but got Tensor"),
    ("        for aiv_id in pl.split_aiv(2, mode=pl.SplitMode.UP_DOWN):\n"
     "            h = pl.aiv_shard(al)  # MARK\n",
     r"The operator tile.aiv_shard requires its 'x' operand in Acc/Mat, but got a tile in Left"),
    ("        for aiv_id in pl.split_aiv(2, mode=pl.SplitMode.UP_DOWN):\n"
     "            h = pl.aiv_shard(pl.load(a, [0, 0], [31, 32], target_memory=pl.Mem.Mat))  # MARK\n",
     r"The operator tile.aiv_shard requires an even extent on the split axis \(rows\) to halve, but got \[31, 32\]"),
    ("        for aiv_id in pl.split_aiv(2, mode=pl.SplitMode.UP_DOWN):\n"
     "            h = pl.tile.aiv_shard(qk, lane_stride=8)  # MARK\n",
     r"requires no lane_stride"),
]


@pytest.mark.parametrize("body,message", REFUSED)
def test_a_misused_tile_crossing_is_refused_where_it_is_written(tmp_path, body, message):
    source = (
        "import pypto.language as pl\n\n\n"
        "@pl.jit\n"
        "def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):\n"
        "    with pl.at(level=pl.Level.CORE_GROUP):\n"
        "        al = pl.move(pl.load(a, [0, 0], [32, 32], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)\n"
        "        ar = pl.move(pl.load(a, [0, 0], [32, 32], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)\n"
        "        qk = pl.matmul(al, ar)\n" + body +
        "    return out\n")
    path = tmp_path / "kernel_under_test.py"
    path.write_text(source)
    namespace: dict = {}
    exec(compile(source, str(path), "exec"), namespace)
    with pytest.raises(PyptoError, match=message) as info:
        namespace["k"](torch.randn(32, 33), torch.zeros(32, 32), config=RunConfig(platform="ref"))
    mark = next(k for k, t in enumerate(source.splitlines(), start=1) if t.endswith("# MARK"))
    assert info.value.span.line == mark
