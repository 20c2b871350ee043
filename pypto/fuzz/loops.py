"""Program strategies over loops: carried values (in order and shuffled), a loop body of many
ops the sync inserter orders, and nested loops — each a ``Case`` with its torch oracle."""

from __future__ import annotations

from pypto.fuzz.data import FLOATS, INTS, random_tensor
from pypto.fuzz.drawing import st
from pypto.fuzz.recipes import Body, If, Load, Loop, Op, Recipe, Row, Store, case
from pypto.ir.types import DataType as D
from pypto.ir.types import ForKind

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
    body = Body(2)  # the load before the loop, then the carried tile
    body.add(Op(f, (1, body.add(Load(0, Row(0, (("i", 1),)), name="t"))), name="acc"))
    loop = Loop(1, trips, inits=(0,), body=tuple(body.steps), yields=(3,))
    recipe = Recipe("carried", dtype, rows, cols, (trips,), ((1, dtype),),
                    (Load(0, Row(0), name="acc"), loop, Store(1, 0, Row(0))),
                    text=f"carried {f} {dtype.name}[{rows}x{cols}] x{trips}{' specials' if specials else ''}")
    return case(recipe, (x,))


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

    top = Body()
    inits = [top.add(Load(0, Row(j), name=f"i{j}")) for j in range(n_init)]
    body = Body(n_init + k)  # the initial tiles, then the carried ones
    cur = list(range(n_init, n_init + k))
    new = []
    for j, step in enumerate(recipe):
        if step[0] == "keep":
            new.append(cur[step[1]])
        elif step[0] == "op":
            new.append(body.add(Op(step[1], (cur[step[2]], cur[step[3]]), name=f"v{j}")))
        else:
            t = body.add(Load(0, Row(n_init, (("i", 1),)), name=f"t{j}"))
            new.append(body.add(Op(step[1], (cur[step[2]], t), name=f"v{j}")))
    kind = ForKind.Pipeline if stage else ForKind.Sequential
    results = top.add(Loop(0, trips, tuple(inits[init_of[j]] for j in range(k)), tuple(body.steps), tuple(new),
                           kind, stage))
    for j in range(k):
        value = top.add(Op("add", (results + j, inits[0]), name=f"o{j}")) if reread else results + j
        top.add(Store(value, 0, Row(j)))
    text = " ".join(":".join(map(str, s)) for s in recipe)
    return case(Recipe("shuffled", dtype, rows, cols, (x.shape[0] // rows,), ((k, dtype),), tuple(top.steps),
                       text=f"shuffled carry {dtype.name}[{rows}x{cols}] x{trips}{f' stage {stage}' if stage else ''} "
                            f"inits {init_of} [{text}]" + (" reread" if reread else "")), (x,))


@st.composite
def loop_body_programs(draw, trips=None, branch: bool = False):
    """A loop whose body mixes tiles loaded before it (read by every iteration), tiles it
    loads, and values it computes — some stored mid-body, some never read again, one
    carried out and used after the loop: the lifetimes MemoryReuse packs, with a back edge
    through them, and the syncs at the loop's ends. ``branch`` (the ``loop_if`` family): the
    body ends in an if on the loop index whose result is carried."""
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

    top = Body()
    pool = [top.add(Load(0, Row(j), name=f"c{j}")) for j in range(n_inv)]
    # the if's own value from before the loop, read by nothing after it
    kept = top.add(Op(draw(ops), (draw(st.sampled_from(pool)), draw(st.sampled_from(pool))), name="k")) \
        if branch else None
    # the if's result carried; or left unread, the loop carrying another value, or none
    # (then the if ends the loop: nothing after it in the body reads what k's else needs)
    fate = draw(st.sampled_from(("carried", "unread", "alone"))) if branch else "carried"
    body = Body(top.size + (fate != "alone"))  # the invariants (and k), then the carried tile
    values = list(pool)  # the steps' pool: the invariants, then this body's values
    for k, step in enumerate([*steps, None]):
        if k == at:
            body.add(Store(values[stored], 0, Row(0, (("i", 1),))))
        if step is None:
            break
        if step[0] == "load":
            values.append(body.add(Load(0, Row(n_inv, (("i", 1),)), name=f"t{k}")))
        else:
            values.append(body.add(Op(step[0], (values[step[1]], values[step[2]]), name=f"v{k}")))
    text_if = ""
    if branch:
        # an if ending the body: its then loads a block, computes with an invariant or k and
        # stores it; its else stores k (from before the loop) and hands it on — k, read by
        # nothing after the loop, must outlive every then: the next trip's else reads it again
        equals, op, inv = draw(st.integers(0, 3)), draw(ops), draw(st.integers(0, n_inv))
        then = Body(body.size)
        t = then.add(Load(0, Row(n_inv, (("i", 1),)), name="u"))
        w = then.add(Op(op, (t, pool[inv] if inv < n_inv else kept), name="w"))
        then.add(Store(w, 3, Row(0, (("i", 1),))))
        orelse = (Store(kept, 3, Row(0, (("i", 1),))),)
        chosen = body.add(If("i", equals, tuple(then.steps), orelse, (w, kept)))
        if fate == "carried":
            carried, values = len(values), [*values, chosen]
        partner = f"c{inv}" if inv < n_inv else "k"
        text_if = f"; if i == {equals}: store {op}(load, {partner}) else store k, {fate}"
    kind = ForKind.Pipeline if stage else ForKind.Sequential
    if fate == "alone":
        top.add(Loop(0, trips, (), tuple(body.steps), (), kind, stage))
        result = pool[init]
    else:
        result = top.add(Loop(0, trips, (pool[init],), tuple(body.steps), (values[carried],), kind, stage))
    top.add(Store(result, 2, Row(0)))
    other = pool[post[1]] if post[1] < n_inv else result
    top.add(Store(top.add(Op(post[0], (result, other), name="p")), 2, Row(1)))
    for j, c in enumerate(pool):
        top.add(Store(c, 1, Row(j)))
    text = " ".join(":".join(map(str, s)) for s in steps)
    recipe = Recipe("loop_if" if branch else "loop_body", dtype, rows, cols, (x.shape[0] // rows,),
                    ((max(trips, 1), dtype), (n_inv, dtype), (2, dtype), (max(trips, 1), dtype)), tuple(top.steps),
                    text=f"loop {'if' if branch else 'body'} {dtype.name}[{rows}x{cols}] x{trips}"
                         f"{f' stage {stage}' if stage else ''} "
                         f"{n_inv} invariant [{text}] store {stored} after {at}; carry {carried} from {init}, then "
                         f"{post[0]}:{post[1]}{text_if}")
    return case(recipe, (x,))


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

    top = Body()
    invariants = [top.add(Load(0, Row(j), name=f"c{j}")) for j in range(n_inv)]
    wide = max(inner, 1)

    def step(body: Body, pool: list, s, k, row: Row) -> int:
        if s[0] == "load":
            return body.add(Load(0, row, name=f"t{k}"))
        return body.add(Op(s[0], (pool[s[1]], pool[s[2]]), name=f"v{k}"))

    outer_body = Body(n_inv + 1)
    pool = [*invariants, n_inv]
    for k, s in enumerate(pre):
        pool.append(step(outer_body, pool, s, k, Row(n_inv, (("i", 1),))))
    inner_body = Body(outer_body.size + 1)
    ipool = [*pool, outer_body.size]
    for k, s in enumerate(body):
        ipool.append(step(inner_body, ipool, s, 10 + k, Row(n_inv + width, (("i", wide), ("j", 1)))))
    inner_body.add(Store(ipool[stored], 0, Row(0, (("i", wide), ("j", 1)))))
    got = outer_body.add(Loop(0, inner, (pool[inner_init],), tuple(inner_body.steps), (ipool[carried_in],),
                              *_kind(inner_stage), var="j"))
    other = pool[post[1]] if post[1] < outer_pool else got
    p = outer_body.add(Op(post[0], (got, other), name="p"))
    acc = top.add(Loop(0, outer, (invariants[0],), tuple(outer_body.steps), (p,), *_kind(outer_stage)))
    top.add(Store(acc, 1, Row(0)))
    top.add(Store(invariants[-1], 1, Row(1)))
    text = lambda steps: " ".join(":".join(map(str, s)) for s in steps)  # noqa: E731
    loops = [f"{'pipeline' if k else 'range'}({t}{f', stage={k}' if k else ''})"
             for t, k in ((outer, outer_stage), (inner, inner_stage))]
    recipe = Recipe("nested", dtype, rows, cols, (x.shape[0] // rows,), ((width, dtype), (2, dtype)),
                    tuple(top.steps),
                    text=f"nested {dtype.name}[{rows}x{cols}] {n_inv} invariant; {loops[0]} [{text(pre)}] "
                         f"{loops[1]} [{text(body)}] store {stored}, carry {carried_in} from {inner_init}; "
                         f"then {post[0]}:{post[1]}")
    return case(recipe, (x,))


def _kind(stage) -> tuple:
    return (ForKind.Pipeline if stage else ForKind.Sequential, stage)
