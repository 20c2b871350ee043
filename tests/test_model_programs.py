"""Three programs shaped like the reference's model code (examples/models, its framework and
model system tests): orchestrations that reshape and slice tensors between their tasks,
assemble results into windows, take their batch from ``bind_dynamic``, view weights
transposed, write a cache at positions read as they run and thread TaskIds through a
``pl.Array``. Each runs on both platforms, bit-identical between them and within float
rounding of torch."""

import pytest
import torch

import pypto.language as pl
from pypto.ir import nodes as n
from pypto.runtime import RunConfig

CG = pl.Level.CORE_GROUP


def _both(kernel, args, outputs):
    """Run on ref and a2a3sim; the outputs of each and the a2a3sim report and program."""
    got, report, compiled = {}, None, None
    for platform in ("ref", "a2a3sim"):
        fresh = [a.clone() for a in args]
        compiled = kernel.compile(*fresh, config=RunConfig(platform=platform))
        report = compiled.run(*fresh)
        got[platform] = [fresh[k] for k in outputs]
    for a, b in zip(got["ref"], got["a2a3sim"]):
        assert torch.equal(a, b)
    return got["ref"], report, compiled


def _orchestration_ops(compiled) -> list[str]:
    fn = next(f for f in compiled.lowered.functions if f.type.name == "Orchestration")
    return [s.value.op for s in n.walk_stmts(fn.body) if isinstance(getattr(s, "value", None), n.Call)]


# --------------------------------------------------------------------------- decode attention

H, D, S = 8, 64, 128  # query heads, head dim, cached tokens
SCALE = D ** -0.5


@pl.jit
def decode_attention(q: pl.Tensor, k_cache: pl.Tensor, v_cache: pl.Tensor, out: pl.Out[pl.Tensor]):
    B = pl.dynamic("B")
    q.bind_dynamic(0, B)
    k_cache.bind_dynamic(0, B)
    v_cache.bind_dynamic(0, B)
    out.bind_dynamic(0, B)
    q_heads = pl.reshape(q, [B, H, D])  # [B, H*D]: the heads of each batch
    for b in pl.parallel(B):
        qb, kb, vb = q_heads[b], k_cache[b], v_cache[b]
        with pl.at(level=CG, name_hint="attend"):
            scores = pl.muls(pl.matmul(qb, kb, b_trans=True), SCALE)  # [H, S]
            p = pl.exp(pl.row_expand_sub(scores, pl.row_max(scores)))
            o = pl.row_expand_div(pl.matmul(p, vb), pl.row_sum(p))
        out = pl.assemble(out, pl.reshape(o, [1, H * D]), [b, 0])  # the heads back into the hidden row
    return out


@pytest.mark.parametrize("batch", [2, 3])
def test_decode_attention_reshapes_into_heads_and_assembles_rows(batch):
    q, k, v = torch.randn(batch, H * D), torch.randn(batch, S, D), torch.randn(batch, S, D)
    (out,), report, compiled = _both(decode_attention, (q, k, v, torch.zeros(batch, H * D)), [3])
    s = torch.einsum("bhd,bsd->bhs", q.reshape(batch, H, D), k) * SCALE
    want = torch.einsum("bhs,bsd->bhd", torch.softmax(s, -1), v).reshape(batch, H * D)
    assert torch.allclose(out, want, atol=1e-5)
    # each batch's task writes its row of out in place: no host copy, and the tasks overlap
    assert "tensor.assemble" not in _orchestration_ops(compiled)
    tasks = sorted(report.tasks, key=lambda t: t.start)
    assert len(tasks) == batch and not any(t.deps for t in tasks) and tasks[-1].start < tasks[0].end


# --------------------------------------------------------------------------- SwiGLU FFN

HID, INTER, IB, DB = 64, 256, 64, 32  # hidden, intermediate, its column block, output column block


@pl.jit
def swiglu_ffn(x: pl.Tensor, w_gate: pl.Tensor[[HID, INTER], pl.FP32], w_up: pl.Tensor[[HID, INTER], pl.FP32],
               w_down: pl.Tensor[[INTER, HID], pl.FP32], out: pl.Out[pl.Tensor]):
    B = pl.dynamic("B")
    x.bind_dynamic(0, B)
    out.bind_dynamic(0, B)
    seq = pl.tensor.dim(x, 1)
    tokens = pl.reshape(x, [B * seq, HID])  # [B, S, D] -> [T, D]
    hidden = pl.create_tensor([B * seq, INTER], dtype=pl.FP32)
    for j in pl.parallel(INTER // IB):  # a task per block of the intermediate
        wg, wu = w_gate[:, j * IB:(j + 1) * IB], w_up[:, j * IB:(j + 1) * IB]
        with pl.at(level=CG, name_hint="gate_up"):
            gate = pl.matmul(tokens, wg)
            act = pl.div(gate, pl.adds(pl.exp(pl.neg(gate)), 1.0))  # silu
            h = pl.mul(act, pl.matmul(tokens, wu))
        hidden = pl.assemble(hidden, h, [0, j * IB])
    flat_out = pl.reshape(out, [B * seq, HID])
    for c in pl.parallel(HID // DB):  # a task per block of the output's columns
        wd = w_down[:, c * DB:(c + 1) * DB]
        with pl.at(level=CG, name_hint="down"):
            y = pl.matmul(hidden, wd)
        flat_out[:, c * DB:(c + 1) * DB] = y
    return out


@pytest.mark.parametrize("batch", [1, 2])
def test_swiglu_ffn_fills_column_windows_of_reshaped_tensors(batch):
    x = torch.randn(batch, 8, HID)
    wg, wu, wd = torch.randn(HID, INTER) / 8, torch.randn(HID, INTER) / 8, torch.randn(INTER, HID) / 16
    (out,), report, compiled = _both(swiglu_ffn, (x, wg, wu, wd, torch.zeros(batch, 8, HID)), [4])
    t = x.reshape(-1, HID)
    g = t @ wg
    want = ((g / (torch.exp(-g) + 1)) * (t @ wu) @ wd).reshape(x.shape)
    assert torch.allclose(out, want, atol=1e-4)
    assert "tensor.assemble" not in _orchestration_ops(compiled)
    # the down projections read the whole hidden tensor: each waits for every block's writer, by its bytes
    gate_up = {t.task_id for t in report.tasks if t.kernel == "gate_up"}
    down = [t for t in report.tasks if t.kernel == "down"]
    assert len(gate_up) == INTER // IB and all(set(t.deps) == gate_up for t in down)


# --------------------------------------------------------------------------- layers and a KV cache

LAYERS, CACHE = 2, 32
EPS = 1e-6


@pl.jit.inline
def write_kv(k_rows: pl.Tensor, positions: pl.Tensor, k_cache: pl.InOut[pl.Tensor],
             after: pl.Array[LAYERS, pl.TASK_ID]):
    T = pl.tensor.dim(k_rows, 0)
    for t in pl.range(T):
        pos = pl.tensor.read(positions, [t])  # where token t's key goes, read as the orchestration runs
        row = k_cache[pos:pos + 1, :]  # a view at a runtime offset
        with pl.at(level=CG, name_hint="kv_write", deps=[after[LAYERS - 1]]):
            row[:] = k_rows[t:t + 1, :]
    return k_cache


@pl.jit
def decoder(x: pl.Tensor, w: pl.Tensor[[LAYERS, HID, HID], pl.FP32], w_k: pl.Tensor[[HID, HID], pl.FP32],
            positions: pl.Tensor, k_cache: pl.InOut[pl.Tensor[[CACHE, HID], pl.FP32]], out: pl.Out[pl.Tensor]):
    T = pl.dynamic("T")
    x.bind_dynamic(0, T)
    positions.bind_dynamic(0, T)
    out.bind_dynamic(0, T)
    h = pl.create_tensor([T, HID], dtype=pl.FP32)
    with pl.at(level=CG, name_hint="embed"):
        h[:] = pl.muls(x, 1.0)
    tids: pl.Array[LAYERS, pl.TASK_ID] = pl.array.create(LAYERS, pl.TASK_ID)
    for layer in pl.range(LAYERS):
        wl = pl.transpose(w[layer], 0, 1)  # the layer's weight, seen transposed
        with pl.at(level=CG, name_hint="layer") as tid:
            ms = pl.muls(pl.row_sum(pl.mul(h, h)), 1.0 / HID)
            normed = pl.row_expand_div(h, pl.sqrt(pl.adds(ms, EPS)))
            h[:] = pl.add(h, pl.matmul(normed, wl))  # the residual, in place
        tids[layer] = tid
    with pl.at(level=CG, name_hint="k_proj"):
        k_rows = pl.matmul(h, w_k)
    k_cache = write_kv(k_rows, positions, k_cache, tids)
    out = pl.assemble(out, h, [0, 0])
    return out


@pytest.mark.parametrize("tokens", [4, 8])
def test_decoder_layers_write_a_cache_at_positions_read_as_it_runs(tokens):
    x, w, wk = torch.randn(tokens, HID), torch.randn(LAYERS, HID, HID) / 8, torch.randn(HID, HID) / 8
    positions = torch.randperm(CACHE, generator=torch.Generator().manual_seed(tokens))[:tokens].to(torch.int32)
    args = (x, w, wk, positions, torch.zeros(CACHE, HID), torch.zeros(tokens, HID))
    (cache, out), report, compiled = _both(decoder, args, [4, 5])
    h = x.clone()
    for layer in range(LAYERS):
        h = h + (h / torch.sqrt((h * h).sum(-1, keepdim=True) / HID + EPS)) @ w[layer].T
    want_cache = torch.zeros(CACHE, HID)
    want_cache[positions.long()] = h @ wk
    assert torch.allclose(out, h, atol=1e-5) and torch.allclose(cache, want_cache, atol=1e-5)
    # h is the window of out the last assemble copies into (a view, no host copy); each cache
    # write waits for the last layer's task (deps=) and for k_proj (by bytes)
    assert "tensor.assemble" not in _orchestration_ops(compiled)
    by_kernel = {}
    for t in report.tasks:
        by_kernel.setdefault(t.kernel, []).append(t)
    last_layer = max(by_kernel["layer"], key=lambda t: t.task_id).task_id
    k_proj = by_kernel["k_proj"][0].task_id
    assert len(by_kernel["kv_write"]) == tokens
    assert all({last_layer, k_proj} <= set(t.deps) for t in by_kernel["kv_write"])
