"""An orchestration's tensors sized as it runs: ``pl.create_tensor`` and ``pl.slice`` with
extents the orchestration computes from values it reads (``pl.tensor.read(config, [3])``),
passed to kernels whose parameters write static shapes — the call checks the tensor's
extents when it runs, and a mismatch is a located error naming both shapes.

The program is paged attention in the structure of the reference's models/04 (a config
tensor read at run time, a block table, online softmax over four kernels per KV block),
at small sizes, checked against a torch oracle and bit for bit across the platforms."""

import inspect

import pytest
import torch

import pypto.language as pl
from pypto.debug import torch_codegen
from pypto.errors import ExecutionError, PyptoError, TypeCheckError
from pypto import ir
from pypto.lang import parse
from pypto.runtime import RunConfig, run

Q, D, BLK = 16, 32, 32  # query rows per tile, head dim, KV block rows: what the kernels are written for
PLATFORMS = ["ref", "a2a3sim"]
VEC, MAT = pl.Mem.Vec, pl.Mem.Mat


@pl.function(type=pl.FunctionType.InCore)
def start(o: pl.Out[pl.Tensor[[Q, D], pl.FP32]], l: pl.Out[pl.Tensor[[Q, 1], pl.FP32]],
          m: pl.Out[pl.Tensor[[Q, 1], pl.FP32]]) -> tuple[pl.Tensor[[Q, D], pl.FP32], pl.Tensor[[Q, 1], pl.FP32],
                                                          pl.Tensor[[Q, 1], pl.FP32]]:
    return o, l, m  # the accumulators the orchestration created, zero-filled


@pl.function(type=pl.FunctionType.InCore)
def scores(q: pl.Tensor[[Q, D], pl.BF16], k: pl.Tensor[[BLK, D], pl.BF16],
           s: pl.Out[pl.Tensor[[Q, BLK], pl.FP32]]) -> pl.Tensor[[Q, BLK], pl.FP32]:
    kt = pl.tile.transpose_view(pl.load(k, [0, 0], [BLK, D], target_memory=MAT))  # K^T without moving it
    lhs = pl.move(pl.load(q, [0, 0], [Q, D], target_memory=MAT), target_memory=pl.Mem.Left)
    s = pl.store(pl.matmul(lhs, pl.move(kt, target_memory=pl.Mem.Right)), [0, 0], s)
    return s


@pl.jit.inline
def softmax_rows(x, p, m, l):
    """Row maxima, exponentials rounded to BF16 for the cube, and the row sums of what it sees,
    stored into p, m and l."""
    work = pl.create_tile([Q, BLK], dtype=pl.FP32, target_memory=VEC)
    mx = pl.row_max(x, work)
    e = pl.cast(pl.exp(pl.row_expand_sub(x, mx)), target_type=pl.BF16)
    pl.store(e, [0, 0], p)
    pl.store(mx, [0, 0], m)
    pl.store(pl.row_sum(pl.cast(e, target_type=pl.FP32), work), [0, 0], l)


@pl.function(type=pl.FunctionType.InCore)
def prepare(s: pl.Tensor[[Q, BLK], pl.FP32], scale: pl.Scalar[pl.FP32], p: pl.Out[pl.Tensor[[Q, BLK], pl.BF16]],
            m: pl.Out[pl.Tensor[[Q, 1], pl.FP32]], l: pl.Out[pl.Tensor[[Q, 1], pl.FP32]]
            ) -> tuple[pl.Tensor[[Q, BLK], pl.BF16], pl.Tensor[[Q, 1], pl.FP32], pl.Tensor[[Q, 1], pl.FP32]]:
    softmax_rows(pl.mul(pl.load(s, [0, 0], [Q, BLK]), scale), p, m, l)
    return p, m, l


@pl.function(type=pl.FunctionType.InCore)
def prepare_part(s: pl.Tensor[[Q, BLK], pl.FP32], scale: pl.Scalar[pl.FP32], valid: pl.Scalar[pl.INDEX],
                 p: pl.Out[pl.Tensor[[Q, BLK], pl.BF16]], m: pl.Out[pl.Tensor[[Q, 1], pl.FP32]],
                 l: pl.Out[pl.Tensor[[Q, 1], pl.FP32]]
                 ) -> tuple[pl.Tensor[[Q, BLK], pl.BF16], pl.Tensor[[Q, 1], pl.FP32], pl.Tensor[[Q, 1], pl.FP32]]:
    part = pl.load(s, [0, 0], [Q, BLK], valid_shape=[Q, valid])  # the block's first `valid` keys
    x = pl.mul(pl.tile.fillpad(part, pad_value=pl.PadValue.min), scale)  # the rest: exp(-inf - m) = 0
    softmax_rows(x, p, m, l)
    return p, m, l


@pl.function(type=pl.FunctionType.InCore)
def weigh(p: pl.Tensor[[Q, BLK], pl.BF16], v: pl.Tensor[[BLK, D], pl.BF16],
          o: pl.Out[pl.Tensor[[Q, D], pl.FP32]]) -> pl.Tensor[[Q, D], pl.FP32]:
    lhs = pl.move(pl.load(p, [0, 0], [Q, BLK], target_memory=MAT), target_memory=pl.Mem.Left)
    rhs = pl.move(pl.load(v, [0, 0], [BLK, D], target_memory=MAT), target_memory=pl.Mem.Right)
    o = pl.store(pl.matmul(lhs, rhs), [0, 0], o)
    return o


@pl.function(type=pl.FunctionType.InCore)
def merge(m_blk: pl.Tensor[[Q, 1], pl.FP32], l_blk: pl.Tensor[[Q, 1], pl.FP32], o_blk: pl.Tensor[[Q, D], pl.FP32],
          m: pl.InOut[pl.Tensor[[Q, 1], pl.FP32]], l: pl.InOut[pl.Tensor[[Q, 1], pl.FP32]],
          o: pl.InOut[pl.Tensor[[Q, D], pl.FP32]], dst: pl.Out[pl.Tensor[[Q, D], pl.FP32]],
          first: pl.Scalar[pl.BOOL], last: pl.Scalar[pl.BOOL]
          ) -> tuple[pl.Tensor[[Q, 1], pl.FP32], pl.Tensor[[Q, 1], pl.FP32], pl.Tensor[[Q, D], pl.FP32],
                     pl.Tensor[[Q, D], pl.FP32]]:
    mb = pl.load(m_blk, [0, 0], [Q, 1])
    lb = pl.load(l_blk, [0, 0], [Q, 1])
    ob = pl.load(o_blk, [0, 0], [Q, D])
    if first:  # the first block's statistics are the running ones
        m_new, l_new, o_new = mb, lb, ob
    else:  # rescale both sides to the larger maximum, as a row vector
        m_old = pl.reshape(pl.load(m, [0, 0], [Q, 1]), [1, Q])
        m_row = pl.maximum(m_old, pl.reshape(mb, [1, Q]))
        keep = pl.exp(pl.sub(m_old, m_row))
        take = pl.exp(pl.sub(pl.reshape(mb, [1, Q]), m_row))
        l_row = pl.add(pl.mul(keep, pl.reshape(pl.load(l, [0, 0], [Q, 1]), [1, Q])),
                       pl.mul(take, pl.reshape(lb, [1, Q])))
        o_new = pl.add(pl.row_expand_mul(pl.load(o, [0, 0], [Q, D]), pl.reshape(keep, [Q, 1])),
                       pl.row_expand_mul(ob, pl.reshape(take, [Q, 1])))
        m_new = pl.reshape(m_row, [Q, 1])
        l_new = pl.reshape(l_row, [Q, 1])
    m = pl.store(m_new, [0, 0], m)
    l = pl.store(l_new, [0, 0], l)
    o = pl.store(o_new, [0, 0], o)
    if last:
        dst = pl.store(pl.row_expand_div(o_new, l_new), [0, 0], dst)
    else:
        dst = pl.store(pl.tile.full([Q, D], dtype=pl.FP32, value=0.0), [0, 0], dst)
    return m, l, o, dst


def paged_attention(batch: int, heads: int, blocks_per_seq: int, partial: bool):
    """The program for these tensor sizes; ``partial``: the last block of a sequence may be
    cut short (its valid length handed to the kernel) — else each block is a slice of the
    valid length, which the kernel's written shape must match."""
    rows, pool = batch * heads, batch * blocks_per_seq * BLK

    @pl.program
    class PagedAttention:
        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, query: pl.Tensor[[rows, D], pl.BF16], keys: pl.Tensor[[pool, D], pl.BF16],
                 values: pl.Tensor[[pool, D], pl.BF16], table: pl.Tensor[[batch * blocks_per_seq], pl.INT32],
                 lens: pl.Tensor[[batch], pl.INT32], out: pl.Out[pl.Tensor[[rows, D], pl.FP32]],
                 config: pl.Tensor[[4], pl.INT64]) -> pl.Tensor[[rows, D], pl.FP32]:
            n_batch = pl.tensor.read(config, [0])  # the sizes, as the host learns them
            n_heads = pl.tensor.read(config, [1])
            head_dim = pl.tensor.read(config, [2])
            block = pl.tensor.read(config, [3])
            for b in pl.range(n_batch):
                seq = pl.tensor.read(lens, [b])
                n_blocks = (seq + block - 1) // block
                for h in pl.range((n_heads + Q - 1) // Q):
                    row = b * n_heads + h * Q
                    o_acc = pl.create_tensor([Q, head_dim], dtype=pl.FP32)
                    l_acc = pl.create_tensor([Q, 1], dtype=pl.FP32)
                    m_acc = pl.create_tensor([Q, 1], dtype=pl.FP32)
                    o_acc, l_acc, m_acc = start(o_acc, l_acc, m_acc)
                    for j in pl.range(n_blocks):
                        q = pl.slice(query, [Q, head_dim], [row, 0])
                        at = pl.tensor.read(table, [b * blocks_per_seq + j]) * block
                        k = pl.slice(keys, [block, head_dim], [at, 0])
                        v = pl.slice(values, [block, head_dim], [at, 0])
                        valid = pl.min(block, seq - j * block)
                        s = scores(q, k, pl.create_tensor([Q, block], dtype=pl.FP32))
                        p_buf = pl.create_tensor([Q, block], dtype=pl.BF16)
                        m_buf = pl.create_tensor([Q, 1], dtype=pl.FP32)
                        l_buf = pl.create_tensor([Q, 1], dtype=pl.FP32)
                        if partial:
                            p, m_blk, l_blk = prepare_part(s, 1.0, valid, p_buf, m_buf, l_buf)
                        else:
                            window = pl.slice(s, [Q, valid], [0, 0])
                            p, m_blk, l_blk = prepare(window, 1.0, p_buf, m_buf, l_buf)  # MARK-prepare
                        o_blk = weigh(p, v, pl.create_tensor([Q, head_dim], dtype=pl.FP32))
                        dst = pl.slice(out, [Q, head_dim], [row, 0])
                        m_acc, l_acc, o_acc, dst = merge(m_blk, l_blk, o_blk, m_acc, l_acc, o_acc, dst,
                                                         j == 0, j == n_blocks - 1)
            return out

    return PagedAttention


def inputs(batch: int, heads: int, blocks_per_seq: int, lens, seed: int = 0) -> tuple:
    g = torch.Generator().manual_seed(seed)
    pool = batch * blocks_per_seq
    query = torch.randn(batch * heads, D, generator=g).to(torch.bfloat16)
    keys = torch.randn(pool * BLK, D, generator=g).to(torch.bfloat16)
    values = torch.randn(pool * BLK, D, generator=g).to(torch.bfloat16)
    table = torch.randperm(pool, generator=g).to(torch.int32)  # each sequence's blocks anywhere in the pool
    return (query, keys, values, table, torch.tensor(lens, dtype=torch.int32), torch.zeros(batch * heads, D),
            torch.tensor([batch, heads, D, BLK], dtype=torch.int64))


def oracle(query, keys, values, table, lens, heads: int, blocks_per_seq: int) -> torch.Tensor:
    """Attention of each head over its sequence's first lens[b] keys, gathered through the
    block table (softmax in FP64, on the BF16 inputs)."""
    out = torch.zeros(query.shape[0], D, dtype=torch.float64)
    for b, n in enumerate(lens.tolist()):
        rows = torch.cat([torch.arange(BLK) + int(table[b * blocks_per_seq + j]) * BLK
                          for j in range((n + BLK - 1) // BLK)])[:n]
        k, v = keys[rows].double(), values[rows].double()
        q = query[b * heads:(b + 1) * heads].double()
        out[b * heads:(b + 1) * heads] = torch.softmax(q @ k.T, dim=-1) @ v
    return out


@pytest.mark.parametrize("partial,lens", [(False, [64, 96]), (True, [40, 77])])
def test_paged_attention_sized_by_its_config_runs_on_both_platforms(partial, lens):
    batch, heads, per_seq = 2, 32, 3
    program = paged_attention(batch, heads, per_seq, partial)
    outs = {}
    for platform in PLATFORMS:
        args = inputs(batch, heads, per_seq, lens)
        run(program, *args, config=RunConfig(platform=platform))
        outs[platform] = args[5]
    assert torch.equal(outs["ref"], outs["a2a3sim"])
    want = oracle(*inputs(batch, heads, per_seq, lens)[:5], heads, per_seq)
    assert (outs["ref"].double() - want).abs().max() < 2e-2


def _line(marker: str) -> int:
    lines, _ = inspect.getsourcelines(inspect.getmodule(_line))
    return next(k for k, t in enumerate(lines, start=1) if t.rstrip().endswith(marker))


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_window_of_another_size_than_the_kernel_writes_is_refused_at_the_call(platform):
    program = paged_attention(2, 16, 2, partial=False)
    args = inputs(2, 16, 2, [64, 40])  # the second sequence's last block holds 8 keys: a [16, 8] window
    with pytest.raises(ExecutionError, match=r"'prepare' takes 's' as \[16, 32\], and this call passes 'window' of "
                                             r"\[16, 8\] \(\[16, valid\] as the orchestration runs\)") as info:
        run(program, *args, config=RunConfig(platform=platform))
    assert info.value.span.line == _line("MARK-prepare")
    assert "valid_shape=" in info.value.hint


@pl.function(type=pl.FunctionType.InCore)
def twice(x: pl.Tensor[[16, 32], pl.FP32], out: pl.Out[pl.Tensor[[16, 32], pl.FP32]]) -> pl.Tensor[[16, 32], pl.FP32]:
    out = pl.store(pl.muls(pl.load(x, [0, 0], [16, 32]), 2.0), [0, 0], out)
    return out


@pl.function(type=pl.FunctionType.InCore)
def accumulate(x: pl.Tensor[[16, 32], pl.FP32], acc: pl.InOut[pl.Tensor[[16, 32], pl.FP32]]
               ) -> pl.Tensor[[16, 32], pl.FP32]:
    acc = pl.store(pl.add(pl.load(x, [0, 0], [16, 32]), pl.load(acc, [0, 0], [16, 32])), [0, 0], acc)
    return acc


@pl.program
class Sized:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[64, 32], pl.FP32], cfg: pl.Tensor[[2], pl.INT64],
             out: pl.Out[pl.Tensor[[64, 32], pl.FP32]]) -> pl.Tensor[[64, 32], pl.FP32]:
        rows = pl.tensor.read(cfg, [0])
        cols = pl.tensor.read(cfg, [1])
        acc = pl.create_tensor([rows, cols], dtype=pl.FP32)  # MARK-create
        for i in pl.range(64 // rows):
            acc = accumulate(pl.slice(x, [rows, pl.tensor.dim(acc, 1)], [i * rows, 0]), acc)  # MARK-carried
        for i in pl.range(64 // rows):
            o = pl.slice(out, [rows, cols], [i * rows, 0])
            o = twice(acc, o)
        return out


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_tensor_sized_as_the_orchestration_runs_is_carried_and_passed(platform):
    x, out = torch.randn(64, 32), torch.zeros(64, 32)
    run(Sized, x, torch.tensor([16, 32]), out, config=RunConfig(platform=platform))
    assert torch.equal(out, (x[0:16] + x[16:32] + x[32:48] + x[48:64]).repeat(4, 1) * 2)
    kernels = [f.name for f in Sized.functions if f.type.is_kernel]
    assert sorted(kernels) == ["accumulate", "twice"]  # one kernel each, whatever the sized arguments were


def test_the_sized_program_runs_as_host_code_checking_each_shape_as_sized():
    scope = {}
    exec(torch_codegen(Sized, check_shapes=True), scope)
    x, want, got = torch.randn(64, 32), torch.zeros(64, 32), torch.zeros(64, 32)
    run(Sized, x, torch.tensor([16, 32]), want, config=RunConfig(platform="ref"))
    scope["main"](x, torch.tensor([16, 32]), got)
    assert torch.equal(got, want)


def test_the_sized_program_prints_and_parses_back():
    for explicit in (False, True):
        text = Sized.as_python(explicit=explicit)
        assert "pl.tensor.create([rows, cols], dtype=pl.FP32)" in text
        assert parse(text) == Sized
    assert "pl.Tensor[[rows, cols], pl.FP32] = pl.tensor.create" in Sized.as_python(explicit=True)


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("cfg,message,marker", [
    ([0, 32], r"pl.create_tensor's extent on axis 0 is 0 here: a tensor's extents are positive", "MARK-create"),
    ([16, 8], r"'accumulate' takes 'x' as \[16, 32\], and this call passes '.*' of \[16, 8\] "
              r"\(\[rows, cols\] as the orchestration runs\)", "MARK-carried")])
def test_a_size_read_at_run_time_that_does_not_fit_is_located(platform, cfg, message, marker):
    with pytest.raises(ExecutionError, match=message) as info:
        run(Sized, torch.randn(64, 32), torch.tensor(cfg), torch.zeros(64, 32), config=RunConfig(platform=platform))
    assert info.value.span.line == _line(marker)


@pl.program
class Returned:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, cfg: pl.Tensor[[1], pl.INT64]) -> pl.Tensor[[16, 32], pl.FP32]:
        n = pl.tensor.read(cfg, [0])
        buf = pl.create_tensor([16, n], dtype=pl.FP32, init_value=1.5)
        return buf  # MARK-return


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_sized_tensor_returned_meets_the_declared_type_when_it_runs(platform):
    compiled = ir.compile(Returned, platform=platform, dump_passes=False)
    assert torch.equal(compiled(torch.tensor([32])), torch.full((16, 32), 1.5))
    with pytest.raises(ExecutionError, match=r"'main' is declared to return \[16, 32\], and returns 'buf' of "
                                             r"\[16, 8\] \(\[16, n\] as the orchestration runs\)") as info:
        compiled(torch.tensor([8]))
    assert info.value.span.line == _line("MARK-return")


def test_a_sized_tensor_in_a_pl_at_scope_is_refused_where_it_is_used():
    @pl.jit
    def k(x: pl.Tensor, cfg: pl.Tensor, out: pl.Out[pl.Tensor]):
        n = pl.tensor.read(cfg, [0])
        buf = pl.create_tensor([16, n], dtype=pl.FP32)
        with pl.at(level=pl.Level.CORE_GROUP):
            pl.store(pl.load(buf, [0, 0], [16, 32]), [0, 0], out)  # MARK-scope
        return out

    with pytest.raises(TypeCheckError, match=r"'buf' is Tensor\[16xn fp32\], sized as the orchestration runs, and a "
                                             r"pl.at scope is compiled for static shapes") as info:
        k(torch.randn(16, 32), torch.tensor([32]), torch.zeros(16, 32), config=RunConfig(platform="ref"))
    assert info.value.span.line == _line("MARK-scope")
    assert "pass it to a kernel" in info.value.hint


@pl.function(type=pl.FunctionType.InCore)
def shapeless(x: pl.Tensor, out: pl.Out[pl.Tensor[[16, 32], pl.FP32]]) -> pl.Tensor[[16, 32], pl.FP32]:
    out = pl.store(pl.load(x, [0, 0], [16, 32]), [0, 0], out)
    return out


N = pl.dynamic("N")


@pl.function(type=pl.FunctionType.InCore)
def dynamic_cols(x: pl.Tensor[[16, N], pl.FP32], out: pl.Out[pl.Tensor[[16, N], pl.FP32]]) -> pl.Tensor[[16, N], pl.FP32]:
    out = pl.store(pl.load(x, [0, 0], [16, N]), [0, 0], out)
    return out


@pytest.mark.parametrize("kernel,message", [
    (shapeless, r"a bare pl.Tensor takes its shape from the call, and 'x' gets a tensor sized as the orchestration "
                r"runs \(\[16, n\]\)"),
    (dynamic_cols, r"'x' has a pl.dynamic axis, whose extent is fixed when the kernel is compiled, and the call "
                   r"passes a tensor sized as the orchestration runs \(\[16, n\]\)")])
def test_a_kernel_without_written_extents_refuses_a_sized_tensor_at_the_call(kernel, message):
    with pytest.raises(PyptoError, match=message) as info:
        @pl.program
        class Shapeless:
            @pl.function(type=pl.FunctionType.Orchestration)
            def main(self, cfg: pl.Tensor[[1], pl.INT64], out: pl.Out[pl.Tensor[[16, 32], pl.FP32]]
                     ) -> pl.Tensor[[16, 32], pl.FP32]:
                n = pl.tensor.read(cfg, [0])
                out = kernel(pl.create_tensor([16, n], dtype=pl.FP32), out)  # MARK-bare
                return out
    assert info.value.span.line == _line("MARK-bare")
    assert "the call checks its tensor's when it runs" in info.value.hint
