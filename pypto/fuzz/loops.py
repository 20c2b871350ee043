"""Program strategies over loops: carried values (in order and shuffled), a loop body of many
ops the sync inserter orders, and nested loops — each a ``Case`` with its torch oracle."""

from __future__ import annotations

import torch
from hypothesis import strategies as st

from pypto.ir import nodes as n
from pypto.ir.builder import FunctionBuilder
from pypto.ir.types import DataType as D
from pypto.ir.types import ForKind, FunctionType, ParamDirection, TensorType
from pypto.backend import A2A3
from pypto.fuzz.data import BINARY, FLOATS, INTS, Case, random_tensor, sentinel


# ----------------------------------------------------------------------------- carried values


@st.composite
def carried_programs(draw, trips=None):
    """acc = f(acc, tile_i) over a loop: the loop-carried value and its order are exact."""
    dtype = draw(st.sampled_from(FLOATS + INTS))
    rows = draw(st.sampled_from([1, 4, 8]))
    cols = draw(st.sampled_from([16, 64, 128]))
    trips = draw(st.integers(2, 6) if trips is None else trips)
    f = draw(st.sampled_from(["add", "maximum", "minimum", "mul"]))
    seed = draw(st.integers(0, 2**31 - 1))
    specials = draw(st.booleans())
    x = random_tensor((rows * trips, cols), dtype, seed, specials)
    b = FunctionBuilder("kernel", FunctionType.InCore, soc=A2A3)
    a = b.param("a", TensorType(x.shape, dtype))
    out = b.param("out", TensorType((rows, cols), dtype), ParamDirection.Out)
    acc = b.op("tile.load", a, [0, 0], [rows, cols], name="acc")
    with b.loop(1, trips, carried=[acc]) as loop:
        t = b.op("tile.load", a, [loop.var * rows, 0], [rows, cols], name="t")
        loop.yield_(b.op(f"tile.{f}", loop.iter_vars[0], t, name="acc"))
    b.eval("tile.store", loop.results[0], [0, 0], out)
    b.ret(out)
    want = x[:rows]
    for i in range(1, trips):
        want = BINARY[f][0](want, x[i * rows:(i + 1) * rows])
    return Case(n.Program("carried", (b.build(),)), "kernel", (x,), (sentinel((rows, cols), dtype),),
                (want,), recipe=f"carried {f} {dtype.name}[{rows}x{cols}] x{trips}{' specials' if specials else ''}")


@st.composite
def shuffled_carry_programs(draw, trips=None):
    """A loop carrying several tiles that trade places, start from one shared tile, or
    whose initial tiles are read again after the loop: one buffer per carried value is
    InitMemRef's plan, and each live value must still keep bytes of its own."""
    dtype = draw(st.sampled_from([D.FP32, D.INT32, D.FP16]))
    rows, cols = draw(st.sampled_from([(1, 64), (4, 64), (8, 128)]))
    k = draw(st.integers(2, 3))
    trips = draw(st.integers(0, 4) if trips is None else trips)
    n_init = draw(st.integers(1, k))
    init_of = [draw(st.integers(0, n_init - 1)) for _ in range(k)]
    ops = st.sampled_from(["add", "sub", "maximum", "minimum"])
    slot = st.integers(0, k - 1)
    recipe = [draw(st.one_of(st.tuples(st.just("keep"), slot), st.tuples(st.just("op"), ops, slot, slot),
                             st.tuples(st.just("load"), ops, slot))) for _ in range(k)]
    reread = draw(st.booleans())  # the first initial tile is read again after the loop
    stage = draw(st.sampled_from([None, 2, 3]))  # a pl.pipeline: its stages thread the carried tiles
    seed = draw(st.integers(0, 2**31 - 1))
    x = random_tensor((rows * (n_init + max(trips, 1)), cols), dtype, seed)
    if dtype is D.FP16:  # keep sums of a few steps finite and exact-comparable
        x = (x * 4).round() / 4

    b = FunctionBuilder("kernel", FunctionType.InCore, soc=A2A3)
    a = b.param("a", TensorType(x.shape, dtype))
    out = b.param("out", TensorType((rows * k, cols), dtype), ParamDirection.Out)
    inits = [b.op("tile.load", a, [j * rows, 0], [rows, cols], name=f"i{j}") for j in range(n_init)]
    kind = ForKind.Pipeline if stage else ForKind.Sequential
    with b.loop(0, trips, kind=kind, stage=stage, carried=[inits[init_of[j]] for j in range(k)]) as loop:
        cur = loop.iter_vars
        new = []
        for j, step in enumerate(recipe):
            if step[0] == "keep":
                new.append(cur[step[1]])
            elif step[0] == "op":
                new.append(b.op(f"tile.{step[1]}", cur[step[2]], cur[step[3]], name=f"v{j}"))
            else:
                t = b.op("tile.load", a, [(loop.var + n_init) * rows, 0], [rows, cols], name=f"t{j}")
                new.append(b.op(f"tile.{step[1]}", cur[step[2]], t, name=f"v{j}"))
        loop.yield_(*new)
    for j, r in enumerate(loop.results):
        value = b.op("tile.add", r, inits[0], name=f"o{j}") if reread else r
        b.eval("tile.store", value, [j * rows, 0], out)
    b.ret(out)

    blocks = [x[j * rows:(j + 1) * rows] for j in range(x.shape[0] // rows)]
    vals = [blocks[init_of[j]] for j in range(k)]
    for i in range(trips):
        nxt = []
        for step in recipe:
            if step[0] == "keep":
                nxt.append(vals[step[1]])
            elif step[0] == "op":
                nxt.append(BINARY[step[1]][0](vals[step[2]], vals[step[3]]))
            else:
                nxt.append(BINARY[step[1]][0](vals[step[2]], blocks[n_init + i]))
        vals = nxt
    want = torch.cat([v + blocks[0] if reread else v for v in vals])
    text = " ".join(":".join(map(str, s)) for s in recipe)
    return Case(n.Program("shuffled", (b.build(),)), "kernel", (x,), (sentinel((rows * k, cols), dtype),),
                (want,), recipe=f"shuffled carry {dtype.name}[{rows}x{cols}] x{trips}{f' stage {stage}' if stage else ''} "
                f"inits {init_of} [{text}]"
                + (" reread" if reread else ""))


@st.composite
def loop_body_programs(draw, trips=None):
    """A loop whose body mixes tiles loaded before it (read by every iteration), tiles it
    loads, and values it computes — some stored mid-body, some never read again, one
    carried out and used after the loop: the lifetimes MemoryReuse packs, with a back edge
    through them, and the syncs at the loop's ends."""
    dtype = draw(st.sampled_from([D.FP32, D.INT32, D.FP16]))
    rows, cols = draw(st.sampled_from([(1, 64), (4, 64), (8, 128)]))
    n_inv = draw(st.integers(1, 3))
    trips = draw(st.integers(0, 4) if trips is None else trips)
    stage = draw(st.sampled_from([None, 2, 3]))
    ops = st.sampled_from(["add", "sub", "maximum", "minimum"])
    steps = []  # ("load",) or (op, a, b) over the pool: invariants, then this body's values
    for k in range(draw(st.integers(1, 5))):
        pool = n_inv + k
        steps.append(draw(st.one_of(st.just(("load",)),
                                    st.tuples(ops, st.integers(0, pool - 1), st.integers(0, pool - 1)))))
    stored = draw(st.integers(0, n_inv + len(steps) - 1))
    at = draw(st.integers(max(stored - n_inv, -1) + 1, len(steps)))  # store after that many steps
    carried = draw(st.integers(n_inv, n_inv + len(steps) - 1))  # a body value the loop passes out
    init = draw(st.integers(0, n_inv - 1))  # ... starting from an invariant
    post = draw(st.tuples(ops, st.integers(0, n_inv)))  # then op(result, invariant or result) after the loop
    seed = draw(st.integers(0, 2**31 - 1))
    x = random_tensor((rows * (n_inv + max(trips, 1)), cols), dtype, seed)
    if dtype is D.FP16:  # keep a few sums finite and exact-comparable
        x = (x * 4).round() / 4

    b = FunctionBuilder("kernel", FunctionType.InCore, soc=A2A3)
    a = b.param("a", TensorType(x.shape, dtype))
    out = b.param("out", TensorType((rows * max(trips, 1), cols), dtype), ParamDirection.Out)
    keep = b.param("keep", TensorType((rows * n_inv, cols), dtype), ParamDirection.Out)
    after = b.param("after", TensorType((rows * 2, cols), dtype), ParamDirection.Out)
    pool = [b.op("tile.load", a, [j * rows, 0], [rows, cols], name=f"c{j}") for j in range(n_inv)]
    kind = ForKind.Pipeline if stage else ForKind.Sequential
    with b.loop(0, trips, kind=kind, stage=stage, carried=[pool[init]]) as loop:
        body = list(pool)
        for k, step in enumerate([*steps, None]):
            if k == at:
                b.eval("tile.store", body[stored], [loop.var * rows, 0], out)
            if step is None:
                break
            if step[0] == "load":
                body.append(b.op("tile.load", a, [(loop.var + n_inv) * rows, 0], [rows, cols], name=f"t{k}"))
            else:
                body.append(b.op(f"tile.{step[0]}", body[step[1]], body[step[2]], name=f"v{k}"))
        loop.yield_(body[carried])
    result = loop.results[0]
    b.eval("tile.store", result, [0, 0], after)
    other = pool[post[1]] if post[1] < n_inv else result
    b.eval("tile.store", b.op(f"tile.{post[0]}", result, other, name="p"), [rows, 0], after)
    for j, c in enumerate(pool):
        b.eval("tile.store", c, [j * rows, 0], keep)
    b.ret(out)

    blocks = [x[j * rows:(j + 1) * rows] for j in range(x.shape[0] // rows)]
    want = sentinel((rows * max(trips, 1), cols), dtype)  # stays so when the loop never runs
    last = blocks[init]
    for i in range(trips):
        vals = blocks[:n_inv]
        for step in steps:
            vals = vals + [blocks[n_inv + i] if step[0] == "load" else BINARY[step[0]][0](vals[step[1]], vals[step[2]])]
        want[i * rows:(i + 1) * rows] = vals[stored]
        last = vals[carried]
    then = BINARY[post[0]][0](last, blocks[post[1]] if post[1] < n_inv else last)
    text = " ".join(":".join(map(str, s)) for s in steps)
    starts = [sentinel((rows * k, cols), dtype) for k in (max(trips, 1), n_inv, 2)]
    return Case(n.Program("loop_body", (b.build(),)), "kernel", (x,), tuple(starts),
                (want, torch.cat(blocks[:n_inv]), torch.cat([last, then])),
                recipe=f"loop body {dtype.name}[{rows}x{cols}] x{trips}{f' stage {stage}' if stage else ''} "
                f"{n_inv} invariant [{text}] store {stored} after {at}; carry {carried} from {init}, then "
                f"{post[0]}:{post[1]}")


@st.composite
def nested_loop_programs(draw):
    """A loop nest: tiles loaded before the outer loop read deep inside it, an inner loop
    (range or pipeline, possibly empty) storing per iteration and passing a value out, and
    the outer loop carrying a tile through each of its iterations and out — the syncs that
    enter and leave loops through the loops' own syncs."""
    dtype = draw(st.sampled_from([D.FP32, D.INT32, D.FP16]))
    rows, cols = draw(st.sampled_from([(1, 64), (4, 64), (8, 128)]))
    n_inv = draw(st.integers(1, 2))
    outer, inner = draw(st.integers(0, 3)), draw(st.integers(0, 3))
    kinds = st.sampled_from([None, 2, 3])  # None: pl.range, else pl.pipeline(stage=...)
    outer_stage, inner_stage = draw(kinds), draw(kinds)
    ops = st.sampled_from(["add", "sub", "maximum", "minimum"])
    # Values: 0..n_inv-1 invariants, n_inv the outer carried tile, then the outer body's own.
    pre = [draw(st.one_of(st.just(("load",)), st.tuples(ops, st.integers(0, n_inv + k), st.integers(0, n_inv + k))))
           for k in range(draw(st.integers(0, 2)))]
    outer_pool = n_inv + 1 + len(pre)
    # The inner body sees the outer pool, then its carried tile, then its own values.
    body = [draw(st.one_of(st.just(("load",)), st.tuples(ops, st.integers(0, outer_pool + k),
                                                          st.integers(0, outer_pool + k))))
            for k in range(draw(st.integers(1, 3)))]
    inner_pool = outer_pool + 1 + len(body)
    stored = draw(st.integers(0, inner_pool - 1))  # stored every inner iteration
    carried_in = draw(st.integers(outer_pool + 1, inner_pool - 1))  # the inner loop passes this on
    inner_init = draw(st.integers(0, outer_pool - 1))
    post = draw(st.tuples(ops, st.integers(0, outer_pool)))  # op(inner result, outer value or itself)
    seed = draw(st.integers(0, 2**31 - 1))
    width = max(outer, 1) * max(inner, 1)
    x = random_tensor((rows * (n_inv + 2 * width), cols), dtype, seed)
    if dtype is D.FP16:  # keep a few sums finite and exact-comparable
        x = (x * 4).round() / 4

    b = FunctionBuilder("kernel", FunctionType.InCore, soc=A2A3)
    a = b.param("a", TensorType(x.shape, dtype))
    out = b.param("out", TensorType((rows * width, cols), dtype), ParamDirection.Out)
    last = b.param("last", TensorType((rows * 2, cols), dtype), ParamDirection.Out)
    invariants = [b.op("tile.load", a, [j * rows, 0], [rows, cols], name=f"c{j}") for j in range(n_inv)]

    def loop(trips, stage, carried, var):
        kind = ForKind.Pipeline if stage else ForKind.Sequential
        return b.loop(0, trips, kind=kind, stage=stage, carried=carried, var=var)

    def step(pool, s, k, row):
        if s[0] == "load":
            return b.op("tile.load", a, [row, 0], [rows, cols], name=f"t{k}")
        return b.op(f"tile.{s[0]}", pool[s[1]], pool[s[2]], name=f"v{k}")

    with loop(outer, outer_stage, [invariants[0]], "i") as lo:
        pool = [*invariants, lo.iter_vars[0]]
        for k, s in enumerate(pre):
            pool.append(step(pool, s, k, (lo.var + n_inv) * rows))
        with loop(inner, inner_stage, [pool[inner_init]], "j") as li:
            ipool = [*pool, li.iter_vars[0]]
            for k, s in enumerate(body):
                ipool.append(step(ipool, s, 10 + k, (lo.var * max(inner, 1) + li.var + n_inv + width) * rows))
            b.eval("tile.store", ipool[stored], [(lo.var * max(inner, 1) + li.var) * rows, 0], out)
            li.yield_(ipool[carried_in])
        got = li.results[0]
        other = pool[post[1]] if post[1] < outer_pool else got
        lo.yield_(b.op(f"tile.{post[0]}", got, other, name="p"))
    b.eval("tile.store", lo.results[0], [0, 0], last)
    b.eval("tile.store", invariants[-1], [rows, 0], last)
    b.ret(out)

    blocks = [x[j * rows:(j + 1) * rows] for j in range(x.shape[0] // rows)]
    f = {name: BINARY[name][0] for name in ("add", "sub", "maximum", "minimum")}
    want = sentinel((rows * width, cols), dtype)  # rows of iterations that never run stay so
    acc = blocks[0]
    for i in range(outer):
        vals = [*blocks[:n_inv], acc]
        for s in pre:
            vals.append(blocks[n_inv + i] if s[0] == "load" else f[s[0]](vals[s[1]], vals[s[2]]))
        carry = vals[inner_init]
        for j in range(inner):
            ivals = [*vals, carry]
            for s in body:
                ivals.append(blocks[n_inv + width + i * max(inner, 1) + j] if s[0] == "load"
                             else f[s[0]](ivals[s[1]], ivals[s[2]]))
            want[(i * max(inner, 1) + j) * rows:(i * max(inner, 1) + j + 1) * rows] = ivals[stored]
            carry = ivals[carried_in]
        acc = f[post[0]](carry, vals[post[1]] if post[1] < outer_pool else carry)
    text = lambda steps: " ".join(":".join(map(str, s)) for s in steps)  # noqa: E731
    loops = [f"{'pipeline' if k else 'range'}({t}{f', stage={k}' if k else ''})"
             for t, k in ((outer, outer_stage), (inner, inner_stage))]
    return Case(n.Program("nested", (b.build(),)), "kernel", (x,),
                (sentinel(want.shape, dtype), sentinel((rows * 2, cols), dtype)),
                (want, torch.cat([acc, blocks[n_inv - 1]])),
                recipe=f"nested {dtype.name}[{rows}x{cols}] {n_inv} invariant; {loops[0]} [{text(pre)}] "
                f"{loops[1]} [{text(body)}] store {stored}, carry {carried_in} from {inner_init}; "
                f"then {post[0]}:{post[1]}")
