"""The cube's ops on Mat (L1) operands larger than L0, through the public API: computed in
L0-sized pieces (AutoTileMatmulL0), alike on both platforms, and timed piece by piece."""

import re

import pytest
import torch
from helpers import load_kernel

from pypto.errors import MemorySpaceError
from pypto.runtime import RunConfig

DT = {"FP32": torch.float32, "BF16": torch.bfloat16, "FP16": torch.float16, "INT8": torch.int8}


def _kernel(tmp_path, m, k, nn, dtype, form):
    acc = "INT32" if dtype == "INT8" else "FP32"
    params = [f"a: pl.Tensor[[{m}, {k}], pl.{dtype}]", f"b: pl.Tensor[[{k}, {nn}], pl.{dtype}]"]
    body = [f"x = pl.load(a, [0, 0], [{m}, {k}], target_memory=pl.Mem.Mat)",
            f"y = pl.load(b, [0, 0], [{k}, {nn}], target_memory=pl.Mem.Mat)"]
    out_n = nn
    if form == "bias":
        params.append(f"bias: pl.Tensor[[1, {nn}], pl.{acc}]")
        body += [f"z = pl.load(bias, [0, 0], [1, {nn}], target_memory=pl.Mem.Mat)", "c = pl.tile.matmul_bias(x, y, z)"]
    elif form == "chain":  # (a @ b), narrowed by the fixpipe into Mat, @ e
        params.append(f"e: pl.Tensor[[{nn}, 32], pl.{dtype}]")
        out_n = 32
        body += ["c0 = pl.matmul(x, y)", 'cb = pl.cast(c0, pl.BF16, mode="rint")',
                 f"w = pl.load(e, [0, 0], [{nn}, 32], target_memory=pl.Mem.Mat)", "c = pl.matmul(cb, w)"]
    elif form == "acc":  # onto an accumulator of the first half of K
        h = k // 2
        body[:2] = [f"x0 = pl.load(a, [0, 0], [{m}, {h}], target_memory=pl.Mem.Mat)",
                    f"y0 = pl.load(b, [0, 0], [{h}, {nn}], target_memory=pl.Mem.Mat)",
                    f"x = pl.load(a, [0, {h}], [{m}, {k - h}], target_memory=pl.Mem.Mat)",
                    f"y = pl.load(b, [{h}, 0], [{k - h}, {nn}], target_memory=pl.Mem.Mat)",
                    "c0 = pl.matmul(x0, y0)"]
        body.append("c = pl.matmul_acc(c0, x, y)")
    else:
        body.append("c = pl.matmul(x, y)")
    body.append("out = pl.store(c, [0, 0], out)")
    params.append(f"out: pl.Out[pl.Tensor[[{m}, {out_n}], pl.{acc}]]")
    src = tmp_path / "k.py"
    src.write_text("import pypto.language as pl\n\n@pl.jit\ndef k(" + ", ".join(params) + "):\n"
                   "    with pl.at(level=pl.Level.CORE_GROUP):\n" + "".join(f"        {s}\n" for s in body)
                   + "    return out\n")
    return load_kernel(src)


def _inputs(m, k, nn, dtype, form):
    g = torch.Generator().manual_seed(m * 7 + k * 3 + nn)
    t = DT[dtype]

    def rand(*shape):
        if dtype == "INT8":
            return torch.randint(-3, 4, shape, generator=g).to(t)
        return (torch.randn(*shape, generator=g) / k ** 0.5).to(t)

    args = [rand(m, k), rand(k, nn)]
    if form == "bias":
        args.append(torch.randint(-9, 9, (1, nn), generator=g).int() if dtype == "INT8" else torch.randn(1, nn, generator=g))
    if form == "chain":
        args.append(rand(nn, 32))
    return args


def _golden(args, dtype, form):
    if dtype == "INT8":
        r = args[0].int() @ args[1].int()
        return r + args[2] if form == "bias" else r
    a, b = args[0].float(), args[1].float()
    if form == "bias":
        return a @ b + args[2]
    if form == "chain":
        return (a @ b).to(torch.bfloat16).float() @ args[2].float()
    return a @ b


CASES = [  # (M, K, N, dtype, form): what the pass makes of each
    (64, 384, 256, "FP32", "plain"),  # K in blocks, the result fits Acc
    (128, 688, 192, "BF16", "plain"),  # K's last block shorter
    (272, 32, 416, "BF16", "plain"),  # a grid of tiles stored to GM, partial row and column
    (256, 128, 544, "BF16", "plain"),  # A held per row of tiles
    (256, 128, 512, "INT8", "bias"),  # bias windows per column of tiles, K in blocks
    (256, 192, 256, "BF16", "chain"),  # a grid into a Mat scratch the next matmul reads
    (64, 512, 128, "FP16", "acc"),  # onto an accumulator, K in blocks
    (16, 40, 8, "FP32", "plain"),  # fits L0 whole: moved, not cut
]


@pytest.mark.parametrize("m,k,nn,dtype,form", CASES)
def test_a_matmul_on_mat_operands_computes_in_pieces_alike_on_both_platforms(tmp_path, m, k, nn, dtype, form):
    kern = _kernel(tmp_path, m, k, nn, dtype, form)
    args = _inputs(m, k, nn, dtype, form)
    outs = []
    for platform, planner in (("ref", "PYPTO"), ("a2a3sim", "PYPTO"), ("a2a3sim", "PTOAS"),
                             ("a2a3sim", "DSA_RP")):
        out = torch.zeros(m, 32 if form == "chain" else nn, dtype=torch.int32 if dtype == "INT8" else torch.float32)
        kern(*args, out, config=RunConfig(platform=platform, memory_planner=planner))
        outs.append(out)
    for other in outs[1:]:
        assert torch.equal(outs[0].view(torch.int32), other.view(torch.int32))
    want = _golden(args, dtype, form)
    if dtype == "INT8":
        assert torch.equal(outs[0], want)
    else:
        assert ((outs[0] - want).norm() / want.norm()).item() < 2e-2


def test_each_piece_is_timed_as_its_own_move_and_mmad(tmp_path):
    """[64, 384] x [384, 256] FP32 in twelve K blocks of 32: twelve MMADs, each operand
    piece an MTE1 extract of its own bytes only, and the next piece moving in while the
    cube works on the last (two L0 buffers per operand)."""
    kern = _kernel(tmp_path, 64, 384, 256, "FP32", "plain")
    args = _inputs(64, 384, 256, "FP32", "plain")
    compiled = kern.compile(*args, torch.zeros(64, 256), config=RunConfig(platform="a2a3sim"))
    report = compiled.run(*args, torch.zeros(64, 256))
    instrs = [e for e in report.events if e.kind == "instr"]
    mmads = [e for e in instrs if e.name.startswith("MMAD")]
    extracts = [e for e in instrs if e.name.startswith("TEXTRACT")]
    assert len(mmads) == 12 and len(extracts) == 24
    moved = sorted(dict(e.detail)["bytes"] for e in extracts)
    assert moved == sorted([64 * 32 * 4] * 12 + [32 * 256 * 4] * 12)
    assert all(e.pipe == "MTE1" for e in extracts)
    assert any(x.start < c.end and c.start < x.end for x in extracts for c in mmads)


def test_a_batch_matmul_on_mat_stacks_is_cut_along_k(tmp_path):
    src = tmp_path / "bmm.py"
    src.write_text("""import pypto.language as pl

@pl.jit
def k(a: pl.Tensor[[4, 64, 256], pl.FP16], b: pl.Tensor[[256, 64], pl.FP16], out: pl.Out[pl.Tensor[[4, 64, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        x = pl.load(a, [0, 0, 0], [4, 64, 256], target_memory=pl.Mem.Mat)
        y = pl.load(b, [0, 0], [256, 64], target_memory=pl.Mem.Mat)
        out = pl.store(pl.batch_matmul(x, y), [0, 0, 0], out)
    return out
""")
    kern = load_kernel(src)
    a, b = (torch.randn(4, 64, 256) / 16).half(), (torch.randn(256, 64) / 16).half()
    outs = []
    for platform in ("ref", "a2a3sim"):
        out = torch.zeros(4, 64, 64)
        report = kern.compile(a, b, out, config=RunConfig(platform=platform)).run(a, b, out)
        outs.append(out)
    assert torch.equal(outs[0], outs[1])
    assert torch.allclose(outs[0], a.float() @ b.float(), rtol=1e-2, atol=1e-2)
    assert sum(e.name.startswith("TEXTRACT") for e in report.events if e.kind == "instr") > 2


def test_gemv_reads_its_mat_operands_whole(tmp_path):
    src = tmp_path / "g.py"
    src.write_text("""import pypto.language as pl

@pl.jit
def k(a: pl.Tensor[[1, 256], pl.BF16], b: pl.Tensor[[256, 64], pl.BF16], out: pl.Out[pl.Tensor[[1, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        x = pl.load(a, [0, 0], [1, 256], target_memory=pl.Mem.Mat)
        y = pl.load(b, [0, 0], [256, 64], target_memory=pl.Mem.Mat)
        out = pl.store(pl.tile.gemv(x, y), [0, 0], out)
    return out
""")
    kern = load_kernel(src)
    a, b = torch.randn(1, 256).bfloat16(), torch.randn(256, 64).bfloat16()
    outs = []
    for platform in ("ref", "a2a3sim"):
        out = torch.zeros(1, 64)
        kern(a, b, out, config=RunConfig(platform=platform))
        outs.append(out)
    assert torch.equal(outs[0], outs[1])
    assert torch.allclose(outs[0], a.float() @ b.float(), rtol=1e-2, atol=1e-2)


def test_a_result_with_nowhere_to_go_is_an_error_at_the_users_line(tmp_path):
    src = tmp_path / "bad.py"
    src.write_text("""import pypto.language as pl

@pl.jit
def k(a: pl.Tensor[[256, 64], pl.FP32], b: pl.Tensor[[64, 256], pl.FP32], out: pl.Out[pl.Tensor[[256, 256], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        x = pl.load(a, [0, 0], [256, 64], target_memory=pl.Mem.Mat)
        y = pl.load(b, [0, 0], [64, 256], target_memory=pl.Mem.Mat)
        c = pl.matmul(x, y)
        d = pl.move(c, target_memory=pl.Mem.Mat)
        out = pl.store(d, [0, 0], out)
    return out
""")
    kern = load_kernel(src)
    with pytest.raises(MemorySpaceError) as err:
        kern(torch.zeros(256, 64), torch.zeros(64, 256), torch.zeros(256, 256), config=RunConfig(platform="ref"))
    assert err.value.span is not None and err.value.span.file == str(src) and err.value.span.line == 8
    assert "does not fit Acc" in err.value.message and err.value.hint


def _load(name, shape, space="Mat"):
    zeros = ", ".join("0" for _ in shape)
    return f"{name[0]}_m = pl.load({name}, [{zeros}], {list(shape)}, target_memory=pl.Mem.{space})"


MISTAKES = [  # (params, body, the line at fault (index into body), what the message says)
    ("a: pl.Tensor[[256, 64], pl.FP32], b: pl.Tensor[[64, 256], pl.FP32], out: pl.Out[pl.Tensor[[256, 256], pl.FP32]]",
     [_load("a", (256, 64)), _load("b", (64, 256)),
      "acc = pl.tile.create([256, 256], dtype=pl.FP32, target_memory=pl.Mem.Acc)",
      "d = pl.matmul_acc(acc, a_m, b_m)", "out = pl.store(d, [0, 0], out)"],
     3, "an accumulator that large cannot be held"),
    ("a: pl.Tensor[[8, 128, 64], pl.BF16], b: pl.Tensor[[64, 128], pl.BF16], out: pl.Out[pl.Tensor[[8, 128, 128], pl.FP32]]",
     [_load("a", (8, 128, 64)), _load("b", (64, 128)), "out = pl.store(pl.batch_matmul(a_m, b_m), [0, 0, 0], out)"],
     2, "the 8 pages of this tile.batch_matmul"),
    ("a: pl.Tensor[[128, 256], pl.FP16], b: pl.Tensor[[256, 256], pl.FP16], out: pl.Out[pl.Tensor[[128, 256], pl.FP32]]",
     [_load("a", (128, 256)), _load("b", (256, 256)),
      "a_l = pl.tile.extract(a_m, 0, 0, [128, 256], target_memory=pl.Mem.Left)",
      "b_r = pl.tile.extract(b_m, 0, 0, [256, 256], target_memory=pl.Mem.Right)",
      "out = pl.store(pl.matmul(a_l, b_r), [0, 0], out)"],
     3, "does not retile operands already placed in Left or Right"),
    ("a: pl.Tensor[[32, 64], pl.BF16], b: pl.Tensor[[64, 512], pl.BF16], out: pl.Out[pl.Tensor[[32, 512], pl.FP32]]",
     [_load("a", (32, 64)), _load("b", (64, 512)),
      "z = pl.tile.create([1, 512], dtype=pl.FP32, target_memory=pl.Mem.Mat)",
      "out = pl.store(pl.tile.matmul_bias(a_m, b_m, z), [0, 0], out)"],
     3, "'z' is not a tile.load of a tensor"),
]


@pytest.mark.parametrize("params,body,at,what", MISTAKES)
def test_a_mat_matmul_the_pieces_cannot_compute_is_an_error_at_the_users_line(tmp_path, params, body, at, what):
    from helpers import scope_kernel

    from pypto.errors import PyptoError

    kern = scope_kernel(tmp_path, "\n".join(body), params)
    specs = re.findall(r"Tensor\[\[([\d, ]+)\], pl\.(\w+)\]", params)
    args = [torch.zeros([int(x) for x in shape.split(", ")], dtype=DT[dtype]) for shape, dtype in specs]
    with pytest.raises(PyptoError) as err:
        kern(*args, config=RunConfig(platform="ref"))
    span = err.value.span
    assert span is not None and span.file == str(tmp_path / "k.py") and span.line == 6 + at, (span, err.value)
    assert what in err.value.message and err.value.hint
