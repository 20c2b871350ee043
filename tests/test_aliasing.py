"""Arguments that share memory. A call whose written tensor (pl.Out / pl.InOut) shares bytes
with another argument is refused at the user's call on every platform; tensors only read
may share freely. Underneath, the simulator keys GM by real addresses (a view's own offset
and strides), so two parameters that are views of one storage, unordered by syncs, are a
SimulatorHazard — shown here by driving the simulator directly, past the call check."""

import itertools

import pytest
import torch
from hypothesis import event, example, given
from hypothesis import strategies as st

import pypto.language as pl
from pypto.errors import SpecializationError
from pypto.runtime import RunConfig
from pypto.sim.simulator import SimulatorHazard, run_kernel
from pypto.backend import A2A3
from pypto.sim.accesses.views import runs

PLATFORMS = [(platform, planner) for platform in ("ref", "a2a3sim") for planner in ("PYPTO", "DSA_RP", "PTOAS")]
SENTINEL = -7.25  # what no kernel here computes: "stored nothing" shows


def config(platform="a2a3sim", planner="PYPTO"):
    return RunConfig(platform=platform, memory_planner=planner, disabled_diagnostics=["PH001"])


def line_of(marker: str) -> int:
    with open(__file__) as f:
        return next(k for k, text in enumerate(f, 1) if marker in text and "line_of(" not in text)


@pl.jit
def shift_copy(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    R, C = a.shape
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.pipeline(R // 16, stage=2):
            t = pl.load(a, [i * 16, 0], [16, C])
            pl.store(pl.adds(t, 1.0), [i * 16, 0], out)
    return out


@pl.jit
def add_rows(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    R, C = a.shape
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.pipeline(R // 16, stage=2):
            x = pl.load(a, [i * 16, 0], [16, C])
            y = pl.load(b, [i * 16, 0], [16, C])
            pl.store(pl.add(x, y), [i * 16, 0], out)
    return out


@pl.jit
def accumulate(acc: pl.InOut[pl.Tensor], a: pl.Tensor):
    R, C = a.shape
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.pipeline(R // 16, stage=2):
            x = pl.load(acc, [i * 16, 0], [16, C])
            y = pl.load(a, [i * 16, 0], [16, C])
            pl.store(pl.add(x, y), [i * 16, 0], acc)
    return acc


def base_tensor(rows=112, cols=128):
    return torch.arange(rows * cols, dtype=torch.float32).reshape(rows, cols)


# ----------------------------------------------------------------------------- the call check


@pytest.mark.parametrize("platform, planner", PLATFORMS)
def test_overlapping_in_and_out_views_are_refused_at_the_call(platform, planner):
    base = base_tensor()
    before = base.clone()
    with pytest.raises(SpecializationError) as info:
        shift_copy(base[0:96], base[16:112], config=config(platform, planner))  # MARK-refused
    err = info.value
    assert (err.span.file, err.span.line) == (__file__, line_of("MARK-refused"))
    text = str(err)
    assert "arguments 'a' and 'out' of 'shift_copy' overlap in memory" in text
    assert "writes 'out' (pl.Out)" in text
    assert "they share 40960 bytes, starting at a[16, 0], which is out[0, 0]" in text  # 80 rows x 128 fp32
    assert "a.clone()" in err.hint and "pl.InOut" in err.hint
    assert torch.equal(base, before)  # refused before anything ran


@pytest.mark.parametrize("platform, planner", PLATFORMS)
def test_every_written_overlap_is_refused_alike(platform, planner):
    base = base_tensor(64, 128)
    cfg = config(platform, planner)
    cases = [
        (shift_copy, (base, base), "arguments 'a' and 'out'"),  # one tensor passed twice
        (add_rows, (base[0:32], base[32:64], base[16:48]), "arguments 'a' and 'out'"),  # two Ins, the first hit
        (add_rows, (torch.ones(32, 128), base[0:32], base[31:63]), "arguments 'b' and 'out'"),  # one row shared
        (accumulate, (base[0:32], base[16:48]), "writes 'acc' (pl.InOut)"),  # InOut against In
        (shift_copy, (torch.ones(32, 128), torch.zeros(1, 128).expand(32, 128)), "are the same memory"),
    ]
    for kernel, args, message in cases:
        with pytest.raises(SpecializationError, match=message.replace("(", r"\(").replace(")", r"\)")):
            kernel(*args, config=cfg)


@pytest.mark.parametrize("platform, planner", PLATFORMS)
def test_compiled_run_checks_the_same_rule(platform, planner):
    base = base_tensor()
    compiled = shift_copy.compile(base[0:96], base[16:112], config=config(platform, planner))
    with pytest.raises(SpecializationError, match="overlap in memory") as info:
        compiled.run(base[0:96], base[16:112])  # MARK-run
    assert info.value.span.line == line_of("MARK-run")
    with pytest.raises(SpecializationError, match="overlap in memory"):
        compiled(base[0:96], base[16:112])
    out = torch.full((96, 128), SENTINEL)
    compiled.run(base[0:96], out)
    assert torch.equal(out, base[0:96] + 1.0)


@pytest.mark.parametrize("platform, planner", PLATFORMS)
def test_read_only_overlap_and_disjoint_views_of_one_storage_run_alike(platform, planner):
    base = torch.randn(128, 128)
    want = base[0:64] + base[32:96]
    out = torch.full((64, 128), SENTINEL)
    add_rows(base[0:64], base[32:96], out, config=config(platform, planner))  # two In views overlap: fine
    assert torch.equal(out, want)
    add_rows(base[0:64], base[0:64], out, config=config(platform, planner))  # one tensor read twice
    assert torch.equal(out, base[0:64] * 2)
    # Disjoint views of one storage: rows, and interleaved columns (bounds overlap, bytes do not).
    whole = torch.randn(64, 256)
    left, right = whole[:, 0:128].clone(), whole[:, 128:256].clone()
    shift_copy(whole[:, 0:128], whole[:, 128:256], config=config(platform, planner))
    assert torch.equal(whole[:, 128:256], left + 1.0) and torch.equal(whole[:, 0:128], left)
    assert not torch.equal(right, whole[:, 128:256])
    rows = torch.randn(128, 128)
    top = rows[0:64].clone()
    shift_copy(rows[0:64], rows[64:128], config=config(platform, planner))
    assert torch.equal(rows[64:128], top + 1.0)


@pytest.mark.parametrize("platform, planner", PLATFORMS)
def test_an_in_place_update_is_one_inout_tensor(platform, planner):
    acc, a = torch.randn(32, 128), torch.randn(32, 128)
    want = acc + a
    accumulate(acc, a, config=config(platform, planner))
    assert torch.equal(acc, want)


@pytest.mark.parametrize("platform, planner", PLATFORMS)
def test_a_transposed_view_is_read_by_its_strides(platform, planner):
    w = torch.randn(128, 64)
    out = torch.full((64, 128), SENTINEL)
    shift_copy(w.T, out, config=config(platform, planner))
    assert torch.equal(out, w.T + 1.0)
    with pytest.raises(SpecializationError, match="overlap in memory"):
        square = torch.randn(64, 64)
        shift_copy(square.T[0:32], square[32:64], config=config(platform, planner))  # rows of .T are columns


# ----------------------------------------------------------------------------- inside a program


@pl.jit.incore
def bump(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    t = pl.load(a, [0, 0], [16, 128])
    pl.store(pl.adds(t, 1.0), [0, 0], out)
    return out


@pl.jit.incore
def add_two(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    pl.store(pl.add(pl.load(a, [0, 0], [16, 128]), pl.load(b, [0, 0], [16, 128])), [0, 0], out)
    return out


@pl.jit
def bump_in_place(x: pl.InOut[pl.Tensor]):
    x = bump(x, x)  # MARK-inner
    return x


@pl.jit
def doubled(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    out = add_two(x, x, out)
    return out


@pytest.mark.parametrize("platform, planner", PLATFORMS)
def test_a_kernel_call_inside_a_program_is_checked_at_its_statement(platform, planner):
    x = torch.randn(16, 128)
    before = x.clone()
    with pytest.raises(SpecializationError) as info:
        bump_in_place(x, config=config(platform, planner))
    err = info.value
    assert (err.span.file, err.span.line) == (__file__, line_of("MARK-inner"))
    assert "arguments 'a' (given x) and 'out' (given x) of 'bump' overlap in memory" in str(err)
    assert torch.equal(x, before)
    out = torch.full((16, 128), SENTINEL)
    doubled(x, out, config=config(platform, planner))  # the same tensor, only read, twice
    assert torch.equal(out, x + x)


# ----------------------------------------------------------------------------- the simulator, past the check


def kernel_of(kernel, *args, planner="PYPTO"):
    compiled = kernel.compile(*args, config=config("a2a3sim", planner))
    (k,) = compiled.kernels.values()
    return k


@pytest.mark.parametrize("planner", ["PYPTO", "DSA_RP", "PTOAS"])
def test_aliased_views_the_syncs_do_not_order_are_a_hazard(planner):
    base = base_tensor()
    k = kernel_of(shift_copy, base[0:96], torch.zeros(96, 128), planner=planner)
    with pytest.raises(SimulatorHazard) as info:
        run_kernel(k, (base[0:96], base[16:112]), A2A3)
    text = str(info.value)
    assert "GM tensor 'a'" in text and "GM tensor 'out'" in text, text
    assert "views of one storage" in info.value.hint
    run_kernel(k, (base[0:96], torch.zeros(96, 128)), A2A3)  # separate storage: no hazard


@pytest.mark.parametrize("planner", ["PYPTO", "DSA_RP", "PTOAS"])
def test_column_views_are_compared_by_their_real_bytes(planner):
    whole = torch.randn(112, 256)
    k = kernel_of(shift_copy, whole[0:96, 0:128], torch.zeros(96, 128), planner=planner)
    run_kernel(k, (whole[0:96, 0:128], whole[16:112, 128:256]), A2A3)  # interleaved rows, no byte shared
    with pytest.raises(SimulatorHazard, match="views of one storage"):
        run_kernel(k, (whole[0:96, 0:128], whole[16:112, 64:192]), A2A3)  # 64 columns of later rows shared


def test_a_transposed_out_view_is_a_hazard_where_its_columns_meet_the_input():
    square = torch.randn(128, 128)
    k = kernel_of(shift_copy, torch.zeros(128, 128), torch.zeros(128, 128))
    with pytest.raises(SimulatorHazard, match="views of one storage"):
        run_kernel(k, (square, square.T), A2A3)


def test_a_column_view_moves_short_rows_not_one_stretch():
    """Full-width windows of a row-major tensor are one transfer; those of x[:, 0:32] are
    rows of 128 B, each paying for its short row, as the same rows of a dense copy do not."""
    whole = torch.randn(64, 128)
    out = torch.zeros(64, 32)
    compiled = shift_copy.compile(whole[:, 0:32], out, config=config())
    strided = compiled.run(whole[:, 0:32], out).pipe_cycles["aiv0"]["MTE2"]
    dense = compiled.run(whole[:, 0:32].contiguous(), out).pipe_cycles["aiv0"]["MTE2"]
    assert strided > dense


# ----------------------------------------------------------------------------- bytes of a view


@given(st.data())
def test_property_runs_are_exactly_the_bytes_of_the_elements(data):
    rank = data.draw(st.integers(1, 3))
    shape = tuple(data.draw(st.lists(st.integers(0, 5), min_size=rank, max_size=rank)))
    strides = tuple(data.draw(st.lists(st.integers(0, 40), min_size=rank, max_size=rank)))
    esize = data.draw(st.sampled_from([1, 2, 4]))
    strides = tuple(s * esize for s in strides)
    address = data.draw(st.integers(0, 1000))
    got = runs(address, shape, strides, esize)
    want = [address + sum(i * s for i, s in zip(index, strides)) for index in itertools.product(*map(range, shape))]
    covered = sorted(b for lo, hi in got for b in range(lo, hi))
    assert covered == sorted(b for e in want for b in range(e, e + esize))
    assert all(a[1] != b[0] for a, b in zip(got, got[1:]))  # continuing runs are merged


# ----------------------------------------------------------------------------- random views, both platforms


def _cells(view_spec, rows, cols):
    base, r0, c0 = view_spec
    return {(base, r, c) for r in range(r0, r0 + rows) for c in range(c0, c0 + cols)}


@given(st.data())
def test_property_random_views_are_refused_exactly_when_a_written_one_overlaps(data):
    """Row and column windows, at random offsets, of one or two base tensors as the three
    arguments of add_rows: refused (on both platforms) exactly when ``out`` shares an element
    with ``a`` or ``b``; otherwise both platforms give torch's bits and touch nothing else."""
    rows = data.draw(st.sampled_from([16, 32, 48]))
    cols = data.draw(st.sampled_from([8, 24, 64]))
    shapes = [(rows + data.draw(st.integers(0, 64)), cols + data.draw(st.integers(0, 80)))
              for _ in range(data.draw(st.integers(1, 2)))]
    specs = []
    for _ in range(3):
        b = data.draw(st.integers(0, len(shapes) - 1))
        r0, c0 = data.draw(st.integers(0, shapes[b][0] - rows)), data.draw(st.integers(0, shapes[b][1] - cols))
        specs.append((b, r0, c0))
    cells = [_cells(s, rows, cols) for s in specs]
    refused = bool(cells[2] & (cells[0] | cells[1]))
    event("refused" if refused else "ran")
    seeds = torch.Generator().manual_seed(data.draw(st.integers(0, 2**31 - 1)))
    bases = [torch.randn(*s, generator=seeds) for s in shapes]
    results = []
    for platform in ("ref", "a2a3sim"):
        planner = data.draw(st.sampled_from(["PYPTO", "DSA_RP", "PTOAS"]))
        mine = [b.clone() for b in bases]
        views = [mine[b][r:r + rows, c:c + cols] for b, r, c in specs]
        want = views[0] + views[1]
        if refused:
            with pytest.raises(SpecializationError, match="overlap in memory"):
                add_rows(*views, config=config(platform, planner))
            assert all(torch.equal(m, b) for m, b in zip(mine, bases))
            continue
        add_rows(*views, config=config(platform, planner))
        assert torch.equal(views[2], want), platform
        for k, (m, before) in enumerate(zip(mine, bases)):
            untouched = torch.ones(m.shape, dtype=torch.bool)
            if k == specs[2][0]:
                untouched[specs[2][1]:specs[2][1] + rows, specs[2][2]:specs[2][2] + cols] = False
            assert torch.equal(m[untouched], before[untouched]), platform
        results.append(mine)
    if results:
        ref, sim = results
        assert all(torch.equal(x.view(torch.int32), y.view(torch.int32)) for x, y in zip(ref, sim))


@given(st.lists(st.tuples(st.integers(0, 60), st.integers(0, 12)), min_size=1, max_size=8))
@example([(0, 8), (2, 0), (6, 4)])  # an empty tensor among two that overlap
def test_property_overlap_groups_are_the_components_of_byte_overlap(cuts):
    from pypto.sim.accesses.views import overlap_groups

    flat = torch.zeros(80)
    tensors = [flat[a:a + n] for a, n in cuts]
    got = overlap_groups(tensors)
    # the definition: connected components of "their bytes overlap", numbered in argument order
    spans = [(4 * a, 4 * (a + n)) for a, n in cuts]
    parent = list(range(len(spans)))

    def root(k):
        while parent[k] != k:
            k = parent[k]
        return k

    for i, (a, b) in enumerate(spans):
        for j, (c, d) in enumerate(spans[:i]):
            if a < d and c < b and a < b and c < d:  # bytes in common (an empty tensor has none)
                parent[root(i)] = root(j)
    first: dict = {}
    assert got == [first.setdefault(root(k), len(first)) for k in range(len(spans))]
