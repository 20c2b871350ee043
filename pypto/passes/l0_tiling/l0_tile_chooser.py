"""The L0 design point of a matmul whose operands sit in Mat: the cube tile ``(m, n, k)``
that L0A / L0B / L0C hold, which operand stays put while the other streams (its
stationarity), and whether two accumulators take turns so that one drains while the cube
fills the other (``double_buffer_c``). AutoTileMatmulL0 asks it; so may a user
(``pypto.pypto_core.passes.l0_tile_chooser``, the reference's name).

    choose_l0_tile(L0TileConfig(M=16, N=256, K=512))   ->   (m, n, k) = (16, 256, 64), output-stationary

The choice minimises an estimate of the cycles the tiled matmul takes (the reference's
roofline model, its a2a3 calibration the defaults): the L1 -> L0 operand traffic at each
port's bandwidth, the cube's fractals with an issue cost per MMAD, and the fixpipe's drain
of each output tile, per row. The drain is exposed after each tile, or hidden behind the
next tile's compute with two accumulators (all but one tile's shorter pipe). Every legal
tile is scored; ties go to less padding, fewer K blocks, less operand traffic, a larger
tile, a longer k. A richer schedule (an operand held, two accumulators) replaces the
output-stationary one only when strictly faster, and only when that one tiles at all.

Legal: each of m, n, k a multiple of its alignment (the cube's 16) from its minimum, none
past the problem, an operand tile within its L0 buffer (half of it when the operand streams
double-buffered), the accumulator's rows padded to ``l0c_align_m`` within L0C (half of it
with two accumulators). k divides K, or (``allow_k_boundary``, K aligned) leaves a peeled
tail. An operand held across the grid needs k == K; two accumulators need k == K and two
full tiles along the loop that moves.
"""

from __future__ import annotations

import enum

import attrs

from pypto.errors import ConfigError


class Stationarity(enum.IntEnum):
    """Which operand stays in L0 while the output grid is swept (the reference's values)."""

    OutputStationary = 0  # the accumulator: both operands stream (each double-buffered)
    AStationary = 1  # the left operand, whole K, single-buffered; B streams
    BStationary = 2  # the right operand, whole K, single-buffered; A streams


@attrs.define
class L0TileConfig:
    """What the chooser is asked: the problem, the L0 buffers, the element sizes, what the
    caller can lower (the ``allow_*`` gates) and the cost model's constants (a2a3's)."""

    M: int = 0
    N: int = 0
    K: int = 0
    l0a_bytes: int = 0
    l0b_bytes: int = 0
    l0c_bytes: int = 0
    bytes_a: int = 2
    bytes_b: int = 2
    bytes_c: int = 4
    min_m: int = 16
    min_n: int = 16
    min_k: int = 16
    align_m: int = 16
    align_n: int = 16
    align_k: int = 16
    l0c_align_m: int = 16  # rows an accumulator occupies are padded to this (32 for INT32 on a2a3)
    box_align_m: int = 1  # a boxed Mat layout pads the tile's rows / columns to these
    box_align_n: int = 1
    max_n: int = 0  # 0: no cap on n (a bias row caps it at the Bias buffer)
    max_n_pipelined: int = 0  # the cap when n is the moving axis of a full-K grid
    max_n_nested_pipelined: int = 0  # ... and under two pipeline levels
    allow_a_stationary: bool = False
    allow_b_stationary: bool = False
    allow_double_buffer_c: bool = False
    c_read: bool = False  # the accumulator is read (matmul_acc): its traffic counts twice
    bw_a: float = 129.7  # L1 -> L0A, bytes per cycle
    bw_b: float = 85.4  # L1 -> L0B
    bw_drain: float = 118.0  # the fixpipe's bytes per cycle along a row
    drain_fixed_cycles: float = 164.0  # per drained tile
    drain_row_cycles: float = 4.45  # per row, the least
    drain_penalty_cycles: float = 2.6  # per row and extra pass of a fractal count not a power of 2
    drain_c0_bytes: int = 32  # an accumulator fractal's row bytes
    mad_head: int = 21  # per MMAD issued
    mad_k_fractal_bytes: int = 32  # the cube's K fractal
    mad_fp32_passes: int = 2  # cube passes per K fractal for FP32 operands
    allow_padding: bool = False  # a tile larger than the problem (rounded up to the minimum)
    allow_k_boundary: bool = False  # a k that does not divide K (its tail peeled)


@attrs.frozen
class L0TileResult:
    m: int
    n: int
    k: int
    estimated_traffic_bytes: int
    estimated_cost_cycles: int
    padded_compute_volume: int
    stationarity: Stationarity
    os_holds_a: bool  # output-stationary at k == K: A is the operand held in the outer loop
    double_buffer_c: bool
    perf_hint: str = ""


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _up(x: int, a: int) -> int:
    return _cdiv(x, a) * a


def _odd(x: int) -> int:
    while x % 2 == 0:
        x //= 2
    return x


def _streams(stat: Stationarity) -> tuple[bool, bool]:
    """(A double-buffered, B double-buffered): a held operand has all its buffer."""
    return stat is not Stationarity.AStationary, stat is not Stationarity.BStationary


def _held_loads(m: int, n: int, c: L0TileConfig) -> tuple[float, float]:
    """Operand cycles with A held (B streamed once per row of tiles) and with B held."""
    a, b = c.bytes_a * c.M * c.K / c.bw_a, c.bytes_b * c.K * c.N / c.bw_b
    return a + b * _cdiv(c.M, m), a * _cdiv(c.N, n) + b


def holds_a(m: int, n: int, c: L0TileConfig) -> bool:
    """Output-stationary at k == K: whether A (rows outer) is the cheaper operand to hold."""
    held_a, held_b = _held_loads(m, n, c)
    return held_a <= held_b


def rows_outer(m: int, n: int, c: L0TileConfig, stat: Stationarity) -> bool:
    """Whether the grid's outer loop walks M (holding A), its inner one N."""
    return stat is Stationarity.AStationary or stat is Stationarity.OutputStationary and holds_a(m, n, c)


def _load(m: int, n: int, k: int, c: L0TileConfig, stat: Stationarity) -> float:
    held_a, held_b = _held_loads(m, n, c)
    if stat is Stationarity.AStationary:
        return held_a
    if stat is Stationarity.BStationary:
        return held_b
    if k >= c.K:
        return min(held_a, held_b)
    return c.bytes_a * c.M * c.K * _cdiv(c.N, n) / c.bw_a + c.bytes_b * c.K * c.N * _cdiv(c.M, m) / c.bw_b


def _traffic(m: int, n: int, k: int, c: L0TileConfig, stat: Stationarity) -> int:
    a, b = c.bytes_a * c.M * c.K, c.bytes_b * c.K * c.N
    held_a = stat is Stationarity.AStationary or stat is Stationarity.OutputStationary and k >= c.K \
        and holds_a(m, n, c)
    held_b = stat is Stationarity.BStationary or stat is Stationarity.OutputStationary and k >= c.K \
        and not holds_a(m, n, c)
    return (a * (1 if held_a else _cdiv(c.N, n)) + b * (1 if held_b else _cdiv(c.M, m))
            + (2 if c.c_read else 1) * c.bytes_c * c.M * c.N)


def _mad(m: int, n: int, k: int, c: L0TileConfig) -> int:
    kt = max(1, c.mad_k_fractal_bytes // c.bytes_a)
    passes = max(1, c.mad_fp32_passes) if c.bytes_a == 4 else max(1, c.bytes_a // 2)
    full, tail = divmod(c.K, k)
    blocks = full + (tail > 0)
    fractals = full * _cdiv(k, kt) + (_cdiv(tail, kt) if tail else 0)
    per_tile = blocks * c.mad_head + passes * _cdiv(m, c.align_m) * fractals * _cdiv(n, c.align_n)
    return _cdiv(c.M, m) * _cdiv(c.N, n) * per_tile


def _drain(m: int, n: int, c: L0TileConfig) -> float:
    n1 = _cdiv(n, max(1, c.drain_c0_bytes // c.bytes_c))
    per_row = max(c.drain_row_cycles, c.bytes_c * n / c.bw_drain) + c.drain_penalty_cycles * (_odd(n1) - 1)
    return _cdiv(c.M, m) * _cdiv(c.N, n) * (c.drain_fixed_cycles + m * per_row)


@attrs.frozen
class _Scored:
    key: tuple  # (wall, padded compute, K blocks, load, -area, -k): lower is better
    m: int
    n: int
    k: int
    stat: Stationarity
    dbc: bool


def _score(m: int, n: int, k: int, c: L0TileConfig, stat: Stationarity, dbc: bool) -> _Scored:
    load = _load(m, n, k, c, stat)
    compute = max(load, float(_mad(m, n, k, c)))
    drain = _drain(m, n, c)
    if dbc:  # the drains hidden but one tile's shorter pipe (the pipeline's fill or drain)
        wall = max(compute, drain) + min(compute, drain) / (_cdiv(c.M, m) * _cdiv(c.N, n))
    else:
        wall = compute + drain
    padded = _up(c.M, m) * _up(c.N, n) * _up(c.K, k)
    return _Scored((int(wall + 0.5), padded, _cdiv(c.K, k), load, -(m * n), -k), m, n, k, stat, dbc)


def _legal_ks(bm: int, bn: int, c: L0TileConfig, a0: int, b0: int) -> list[int]:
    cap = min(a0 // bm, b0 // bn)
    k_problem = max(_up(c.K, c.align_k), c.min_k) if c.allow_padding else c.K
    k_hi = min(cap, k_problem) // c.align_k * c.align_k
    peel = c.allow_k_boundary and c.K % c.align_k == 0
    return [k for k in range(c.min_k, k_hi + 1, c.align_k) if c.allow_padding or peel or c.K % k == 0]


def _best(c: L0TileConfig, stat: Stationarity, dbc: bool) -> _Scored | None:
    """The fastest legal tile of one schedule."""
    stream_a, stream_b = _streams(stat)
    a0 = c.l0a_bytes // (c.bytes_a * (2 if stream_a else 1))
    b0 = c.l0b_bytes // (c.bytes_b * (2 if stream_b else 1))
    c0 = c.l0c_bytes // (c.bytes_c * (2 if dbc else 1))
    full_k_only = dbc or stat is not Stationarity.OutputStationary
    m_hi = _up(c.M, c.align_m) if c.allow_padding else c.M
    n_hi = _up(c.N, c.align_n) if c.allow_padding else c.N
    if c.max_n:
        n_hi = min(n_hi, c.max_n)
    best = None
    for m in range(c.min_m, m_hi + 1, c.align_m):
        bm = _up(m, c.box_align_m)
        rows = _up(bm, c.l0c_align_m)
        if rows * _up(c.min_n, c.box_align_n) > c0:
            break
        for n in range(c.min_n, min(n_hi, c0 // rows) + 1, c.align_n):
            bn = _up(n, c.box_align_n)
            if rows * bn > c0:
                continue
            outer_rows = rows_outer(m, n, c, stat)
            if dbc and (c.N // n if outer_rows else c.M // m) < 2:
                continue  # two accumulators need two full tiles along the moving loop
            for k in _legal_ks(bm, bn, c, a0, b0):
                if full_k_only and k != c.K or not _n_allowed(m, n, k, c, stat):
                    continue
                s = _score(m, n, k, c, stat, dbc)
                if best is None or s.key < best.key:
                    best = s
    return best


def _n_allowed(m: int, n: int, k: int, c: L0TileConfig, stat: Stationarity) -> bool:
    """The tighter caps on n where a full-K grid keeps copies of an n-sized resource (a
    bias window) per stage of the pipeline n moves in, or of two nested ones."""
    if k != c.K or (m, n) == (c.M, c.N):
        return True
    os_ = stat is Stationarity.OutputStationary
    if c.max_n_pipelined and (os_ or stat is Stationarity.AStationary) and n > c.max_n_pipelined:
        return False
    return not (c.max_n_nested_pipelined and os_ and holds_a(m, n, c) and n > c.max_n_nested_pipelined)


def _validate(c: L0TileConfig) -> None:
    if not (c.M > 0 and c.N > 0 and c.K > 0):
        raise ConfigError(f"ChooseL0Tile: M, N, K must all be positive (got {c.M}, {c.N}, {c.K})")
    if not (c.l0a_bytes > 0 and c.l0b_bytes > 0 and c.l0c_bytes > 0):
        raise ConfigError("ChooseL0Tile: L0 capacities must be positive")
    if not (c.bytes_a > 0 and c.bytes_b > 0 and c.bytes_c > 0):
        raise ConfigError("ChooseL0Tile: element byte sizes must be positive")
    if not (c.min_m > 0 and c.min_n > 0 and c.min_k > 0):
        raise ConfigError("ChooseL0Tile: minimum tile dimensions must be positive")
    if c.max_n and c.max_n < c.min_n:
        raise ConfigError(f"ChooseL0Tile: max_n must be zero (unbounded) or at least min_n (got max_n={c.max_n}, "
                          f"min_n={c.min_n})")
    if c.max_n_pipelined < 0 or (c.max_n and c.max_n_pipelined and c.max_n_pipelined > c.max_n):
        raise ConfigError("ChooseL0Tile: max_n_pipelined must be non-negative and no greater than max_n when both "
                          f"are bounded (got max_n_pipelined={c.max_n_pipelined}, max_n={c.max_n})")
    if c.max_n_nested_pipelined < 0 or (c.max_n_pipelined and c.max_n_nested_pipelined
                                        and c.max_n_nested_pipelined > c.max_n_pipelined):
        raise ConfigError("ChooseL0Tile: max_n_nested_pipelined must be non-negative and no greater than "
                          f"max_n_pipelined when both are bounded (got max_n_nested_pipelined="
                          f"{c.max_n_nested_pipelined}, max_n_pipelined={c.max_n_pipelined})")
    if min(c.align_m, c.align_n, c.align_k, c.l0c_align_m, c.box_align_m, c.box_align_n) <= 0:
        raise ConfigError("ChooseL0Tile: tile and physical L0C alignments must be positive")
    if not (c.bw_a > 0 and c.bw_b > 0 and c.bw_drain > 0):
        raise ConfigError(f"ChooseL0Tile: roofline bandwidths must be strictly positive (got bw_a={c.bw_a}, "
                          f"bw_b={c.bw_b}, bw_drain={c.bw_drain})")
    if c.drain_c0_bytes <= 0 or min(c.drain_row_cycles, c.drain_penalty_cycles, c.drain_fixed_cycles) < 0:
        raise ConfigError("ChooseL0Tile: drain params must be non-negative with a positive fractal C0")
    if not c.allow_padding:
        for axis, size, least in (("M", c.M, c.min_m), ("N", c.N, c.min_n), ("K", c.K, c.min_k)):
            if size < least:
                raise ConfigError(f"ChooseL0Tile: allow_padding=false but {axis}={size} is below the cube minimum "
                                  f"tile dimension {least}")
    a0 = c.l0a_bytes // (c.bytes_a * 2)
    b0 = c.l0b_bytes // (c.bytes_b * 2)
    if _up(c.min_m, c.box_align_m) > a0 // c.min_k:
        raise ConfigError(f"ChooseL0Tile: L0a capacity {a0} elements is too small to fit the minimum tile "
                          f"({c.min_m} x {c.min_k})")
    if _up(c.min_n, c.box_align_n) > b0 // c.min_k:
        raise ConfigError(f"ChooseL0Tile: L0b capacity {b0} elements is too small to fit the minimum tile "
                          f"({c.min_k} x {c.min_n})")


def choose_l0_tile(config: L0TileConfig) -> L0TileResult:
    """The fastest legal design point for ``config`` (ConfigError, a ValueError, when the
    configuration is invalid or admits no tile)."""
    c = config
    _validate(c)
    best = _best(c, Stationarity.OutputStationary, False)
    if best is None:
        raise ConfigError(f"ChooseL0Tile: no legal (m, n, k) tile found for M={c.M}, N={c.N}, K={c.K}")
    if (best.m, best.n, best.k) != (c.M, c.N, c.K):  # richer schedules only for a matmul that tiles
        stats = [Stationarity.OutputStationary]
        stats += [Stationarity.AStationary] if c.allow_a_stationary else []
        stats += [Stationarity.BStationary] if c.allow_b_stationary else []
        least_c = _up(_up(c.min_m, c.box_align_m), c.l0c_align_m) * _up(c.min_n, c.box_align_n)
        for stat in stats:
            for dbc in (False, True) if c.allow_double_buffer_c else (False,):
                if stat is Stationarity.OutputStationary and not dbc:
                    continue
                if c.l0c_bytes // (c.bytes_c * (2 if dbc else 1)) < least_c:
                    continue
                cand = _best(c, stat, dbc)
                if cand is not None and cand.key[0] < best.key[0]:
                    best = cand
    m, n, k = best.m, best.n, best.k
    hint = ""
    if c.M < c.min_m or c.N < c.min_n or c.K < c.min_k:
        hint = (f"Matmul shape (M={c.M}, N={c.N}, K={c.K}) is below the cube minimum tile dimension {c.min_m}; "
                f"tile shape padded up to ({m}, {n}, {k})")
    return L0TileResult(m, n, k, _traffic(m, n, k, c, best.stat), best.key[0], best.key[1], best.stat,
                        holds_a(m, n, c), best.dbc, hint)
