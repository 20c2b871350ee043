"""PH001 TileInnermostDimGranularity: a GM<->chip transfer whose innermost extent is
below the backend's recommended granularity (a2a3: the 512 B L2 cache line) moves its
data as many short rows, each costing a line. Runs on the final program; one hint per
source site, with how many transfers there collapse into it.

    [perf_hint PH001] TileInnermostDimGranularity: tile.load has innermost dim = 64B
    (tile fp32[16], target_memory=Mat); moves 1024B as 16 x 64B rows; recommended >= 512B
    for backend a2a3 (L2 cache line = 512B). Consider increasing tile shape on the
    innermost axis. at kernel.py:12:13
"""

from __future__ import annotations

import math

from pypto.ir import nodes as n
from pypto.ir.ops import argument
from pypto.ir.ops.type_rules import static_ints
from pypto.ir.types import TileType
from pypto.passes.context import Diagnostic, PassContext, Severity

RULE, CODE = "TileInnermostDimGranularity", "PH001"


def tile_innermost_dim_granularity(program: n.Program, ctx: PassContext) -> tuple[Diagnostic, ...]:
    if not ctx.enabled(RULE):
        return ()
    soc = ctx.soc
    sites: dict[tuple, list] = {}
    for fn in program.functions:
        types = n.symbols(fn)
        for stmt in n.walk_stmts(fn.body):
            call = getattr(stmt, "value", None)
            if not isinstance(call, n.Call) or call.op not in ("tile.load", "tile.store"):
                continue
            tile = stmt.type if call.op == "tile.load" else types.get(argument(call, "tile").name)
            if not isinstance(tile, TileType):
                continue
            shape = tile.shape
            valid = static_ints(tile.valid_shape) if tile.valid_shape is not None else shape
            if call.op == "tile.load" and argument(call, "transpose"):  # a transposing load reads rows of the region
                shape = shape[::-1]
                valid = None if valid is None else valid[::-1]
            inner = valid[-1] if valid is not None else shape[-1]
            inner_bytes = -(-inner * tile.dtype.bits // 8)
            if inner <= 0 or inner_bytes >= soc.recommended_transfer_bytes:
                continue
            space = tile.space.name if tile.space is not None else "unknown"
            moves = None
            if valid is not None:
                rows = math.prod(valid[:-1])
                moves = (rows * inner_bytes, rows, inner_bytes)
            span = stmt.span
            key = (str(span) if span else id(stmt), call.op, tile.dtype, inner_bytes, inner, space, moves)
            sites.setdefault(key, []).append(span)
    out = []
    for (_, op, dtype, inner_bytes, inner, space, moves), spans in sites.items():
        text = f"{op} has innermost dim = {inner_bytes}B (tile {dtype.short}[{inner}], target_memory={space})"
        if moves is not None:
            text += f"; moves {moves[0]}B as {moves[1]} x {moves[2]}B rows"
        text += (f"; recommended >= {soc.recommended_transfer_bytes}B for backend {soc.name} "
                 f"(L2 cache line = {soc.l2_cache_line}B). Consider increasing tile shape on the innermost axis.")
        out.append(Diagnostic(Severity.PerfHint, RULE, CODE, text, spans[0], count=len(spans)))
    return tuple(sorted(out, key=lambda d: (str(d.span), d.message)))
