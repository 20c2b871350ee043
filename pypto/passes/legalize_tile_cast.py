"""LegalizeTileCast: a ``tile.cast`` the chip's vector unit cannot do in one instruction
becomes the chain of ones it can (the SoC table's ``native_casts``; a chip without one, a2a3,
keeps every cast as it is, as the reference's feature matrix has it).

    h = pl.tile.cast(x_i32, target_type=pl.FP16)    ->    h_hop = pl.tile.cast(x_i32, target_type=pl.FP32)
                                                          h = pl.tile.cast(h_hop, target_type=pl.FP16)

The shortest chain is taken, as the reference's pass takes it, among those that give the
direct conversion's bits (``exact``), which is what the interpreter computes before this
pass: INT32 -> FP32 -> FP16 is one (every integer FP16 does not overflow is exact in FP32, and
those it does stay past its range). Where every shortest chain would round twice (INT32 ->
BF16 through FP32, FP32 -> INT8 through FP16) the cast stays one instruction with one
rounding — the program's arithmetic, on every chip; the chip's chain is then its cost only
in what the reference would emit, which this model does not charge. A pair no chain of
native conversions reaches is refused at the cast, naming the chip.
"""

from __future__ import annotations

from collections import deque

import attrs

from pypto.errors import TypeCheckError
from pypto.ir import nodes as n
from pypto.ir.ops import argument, op_call
from pypto.ir.types import DataType, TileType
from pypto.passes.context import PassContext, PassResult, result

_BY_SHORT = {d.short: d for d in DataType}


def applies(soc) -> bool:
    """Only a chip with a table of native conversions has casts to expand (a2a3 has none)."""
    return soc.native_casts is not None


def legalize_tile_cast(program: n.Program, ctx: PassContext) -> PassResult:
    native = ctx.soc.native_casts
    if native is None:
        return result(program)
    return result(n.Program(program.name, tuple(_function(fn, native, ctx.soc) for fn in program.functions)))


def chain(source: DataType, target: DataType, native) -> tuple | None:
    """The dtypes a cast passes through, ``source`` first and ``target`` last: one hop when
    native, else the first exact shortest chain; ``(source, target)`` when no shortest chain
    is exact (kept direct); None when none reaches ``target``."""
    if source is target or target.short in native.get(source.short, ()):
        return source, target
    shortest = _shortest_paths(source.short, target.short, native)
    if not shortest:
        return None
    for path in shortest:
        dtypes = tuple(_BY_SHORT[s] for s in path)
        if all(exact(a, b, target) for a, b in zip(dtypes[:-2], dtypes[1:-1])):
            return dtypes
    return source, target


def _shortest_paths(src: str, dst: str, native) -> list:
    """Every shortest path from ``src`` to ``dst`` over the native conversions, in a fixed
    order (a breadth-first search keeping each node's first-found parents, sorted)."""
    depth, parents = {src: 0}, {src: []}
    queue = deque([src])
    while queue:
        node = queue.popleft()
        for nxt in sorted(native.get(node, ())):
            if nxt not in depth:
                depth[nxt], parents[nxt] = depth[node] + 1, [node]
                queue.append(nxt)
            elif depth[nxt] == depth[node] + 1:
                parents[nxt].append(node)
    if dst not in depth:
        return []

    def paths(node):
        if node == src:
            return [[src]]
        return [p + [node] for parent in sorted(parents[node]) for p in paths(parent)]

    return paths(dst)


def _exact_ints(d: DataType) -> float:
    """The magnitude up to which every integer is exact in ``d`` (a float: 2**(mantissa + 1))."""
    if d.is_int:
        return float(2 ** d.bits)
    return float(2 ** {"fp16": 11, "bf16": 8, "fp32": 24}[d.short])


def _bound(d: DataType) -> float:
    """Past this magnitude a conversion to ``d`` saturates or overflows alike (FP16 overflows
    from 65520, the midpoint past its largest finite value)."""
    if d.is_int:
        lo, hi = d.int_range
        return float(max(-lo, hi))
    return {"fp16": 65520.0, "bf16": 3.4e38, "fp32": 3.4e38}[d.short]


def exact(cur: DataType, mid: DataType, target: DataType) -> bool:
    """Whether the hop ``cur`` -> ``mid`` on the way to ``target`` leaves the direct
    conversion's result: it keeps every value exactly (a widening), or every value ``target``
    can tell apart (integers within its range, in a float with enough mantissa; a saturation
    whose range holds the integer ``target``'s, which later saturations compose with; a
    float's one rounding to such an integer type, with nothing but saturations after it)."""
    if cur.is_float and mid.is_float:
        return _exact_ints(mid) >= _exact_ints(cur) and _bound(mid) >= _bound(cur)
    if cur.is_int and mid.is_float:
        lo, hi = cur.int_range
        return _exact_ints(mid) >= min(float(max(-lo, hi)), _bound(target)) and _bound(mid) >= _bound(target)
    if mid.is_int and target.is_int:  # an integer -> integer saturation, or a float rounded once
        lo, hi = mid.int_range
        tlo, thi = target.int_range
        return lo <= tlo and hi >= thi
    return False


def _function(fn: n.Function, native, soc) -> n.Function:
    used = set(n.symbols(fn))
    types = n.symbols(fn)

    def body(stmts: tuple) -> tuple:
        out = []
        for s in stmts:
            out.extend(_stmt(s))
        return tuple(out)

    def _stmt(s):
        nested = {f: body(getattr(s, f)) for f in ("body", "then_body", "else_body") if hasattr(s, f)}
        if nested:
            return [attrs.evolve(s, **nested)]
        call = s.value if isinstance(s, n.Assign) else None
        if not (isinstance(call, n.Call) and call.op == "tile.cast" and isinstance(s.type, TileType)):
            return [s]
        x = argument(call, "tile")
        src = types.get(x.name) if isinstance(x, n.Var) else None
        if not isinstance(src, TileType) or src.space is not s.type.space:  # (the fixpipe's narrowing out of Acc)
            return [s]
        target = s.type.dtype
        if src.dtype.short not in native or target is DataType.BOOL:  # (a dtype the table does not list)
            return [s]
        hops = chain(src.dtype, target, native)
        if hops is None:
            reach = sorted(native.get(src.dtype.short, ()))
            raise TypeCheckError(f"{soc.title} converts {src.dtype.name} to none of the dtypes from which "
                                 f"{target.name} is reached (its vector unit converts {src.dtype.name} to "
                                 f"{', '.join(r.upper() for r in reach) or 'nothing'} in one instruction)",
                                 span=call.span, hint=f"cast through a dtype both convert to, or compute in "
                                                      f"{target.name} from the start")
        if len(hops) == 2:
            return [s]
        mode = argument(call, "mode")
        stmts, value = [], x
        for mid in hops[1:-1]:
            name = fresh_name(f"{s.target}_{mid.short}", used)
            t = attrs.evolve(s.type, dtype=mid, memref=None)
            stmts.append(n.Assign(name, t, attrs.evolve(op_call("tile.cast", tile=value, target_type=mid, mode=mode),
                                                        span=call.span), span=s.span))
            types[name], value = t, n.Var(name)
        stmts.append(attrs.evolve(s, value=attrs.evolve(call, args=(value, *call.args[1:]))))
        return stmts

    return attrs.evolve(fn, body=body(fn.body))


fresh_name = n.fresh_name
