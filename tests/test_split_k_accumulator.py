"""The split-K form users write for a product larger than half of Acc — a pipelined K loop
whose first trip starts the accumulator (``pl.matmul``) and whose other trips add to it
(``pl.matmul_acc``) — keeps one accumulator per output block: the fresh product in one
branch and the accumulation in the other are computed in one buffer in every unrolled copy
of the loop, under every planner, alike on both platforms."""

import torch
from helpers import load_kernel
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pypto.runtime import RunConfig

PLANNERS = ("PYPTO", "DSA_RP", "PTOAS")


def _kernel(tmp_path, m, nn, k, kt, stage, dtype):
    acc = "INT32" if dtype == "INT8" else "FP32"
    src = tmp_path / "splitk.py"
    src.write_text(f"""import pypto.language as pl

@pl.jit
def k(a: pl.Tensor[[{m}, {k}], pl.{dtype}], b: pl.Tensor[[{k}, {nn}], pl.{dtype}], c: pl.Out[pl.Tensor[[{m}, {nn}], pl.{acc}]]):
    for _ in pl.spmd(1):
        acc = pl.create_tensor([{m}, {nn}], dtype=pl.{acc})
        for kb in pl.pipeline(0, {k // kt}, stage={stage}):
            k0 = kb * {kt}
            at = a[0:{m}, k0 : k0 + {kt}]
            bt = b[k0 : k0 + {kt}, 0:{nn}]
            if k0 == 0:
                acc = pl.matmul(at, bt, out_dtype=pl.{acc})
            else:
                acc = pl.matmul_acc(acc, at, bt)
        c[0:{m}, 0:{nn}] = acc
    return c
""")
    return load_kernel(src)


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.sampled_from([144, 208, 272]), st.sampled_from([144, 176, 192]), st.sampled_from([64, 128]),
       st.integers(2, 4), st.sampled_from([2, 3]), st.sampled_from(["INT8", "BF16"]))
def test_a_split_k_loop_keeps_one_accumulator_per_block(tmp_path, m, nn, kt, blocks, stage, dtype):
    k = kt * blocks
    kern = _kernel(tmp_path, m, nn, k, kt, stage, dtype)
    g = torch.Generator().manual_seed(m + nn + k)
    if dtype == "INT8":
        a = torch.randint(-3, 4, (m, k), generator=g, dtype=torch.int8)
        b = torch.randint(-3, 4, (k, nn), generator=g, dtype=torch.int8)
    else:
        a, b = (torch.randn(m, k, generator=g) / 8).bfloat16(), (torch.randn(k, nn, generator=g) / 8).bfloat16()
    out_dtype = torch.int32 if dtype == "INT8" else torch.float32
    outs = []
    for platform, planner in (("ref", "PYPTO"), *(("a2a3sim", p) for p in PLANNERS)):
        out = torch.zeros(m, nn, dtype=out_dtype)
        kern(a, b, out, config=RunConfig(platform=platform, memory_planner=planner))
        outs.append(out)
    for other in outs[1:]:
        assert torch.equal(outs[0].view(torch.int32), other.view(torch.int32))
    if dtype == "INT8":
        assert torch.equal(outs[0], a.int() @ b.int())
    else:
        torch.testing.assert_close(outs[0], a.float() @ b.float(), rtol=1e-2, atol=1e-2)
