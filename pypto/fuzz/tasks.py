"""Random task graphs for the chip: orchestrations of 2-12 tasks over a few tensors, their
bands read and written by elementwise ``pl.at`` scopes, some in ``pl.parallel`` /
``pl.range`` loops, some SPMD, some given views of one band rather than whole tensors, some
waiting on an earlier scope's task explicitly (``deps=``) or opting out of one argument's
tracking (``no_dep_args=``) (``graphs``), as kernel source (``source``), with what torch
computes in program order (``oracle``) and whether the runtime's rules order every pair of
tasks that touch one band with a writer (``race_free``: a model written from the rules,
not from the tracker, so it checks the tracker).

A step is ``(form, kind, trips, (op, srcs, dst), (deps, no_dep))``: ``form`` is "scope",
"loop" (``kind`` "parallel" / "range", ``trips`` iterations, a band "i" the loop index) or
"spmd" (one task of ``trips`` blocks, "i" the block index); each source and the
destination is ``(tensor, band, view)`` — with ``view``, the task is given that band alone
(a ``pl.slice`` the orchestration makes), else the whole tensor; ``deps``: the earlier
scope steps whose tasks this scope's waits for; ``no_dep``: the tensors it opts out of.
Tensors: inputs x0, x1, outputs y0, y1, a created scratch s0.

``atomic_graphs`` draws integer tasks that add bands of x into bands of y atomically,
some in ``pl.parallel`` loops, some SPMD: any order of the adds gives the same sum, so
``atomic_source`` must compute ``atomic_oracle``'s bits on every platform.
"""

from __future__ import annotations

import torch

from pypto.fuzz.drawing import st

R, C, BANDS = 16, 128, 4
INPUTS = ("x0", "x1")
OUTPUTS = ("y0", "y1")
SCRATCH = ("s0",)
OPS = {"exp": lambda t: torch.exp(t), "neg": lambda t: -t, "add": lambda a, b: a + b, "mul": lambda a, b: a * b}
ALL = tuple(range(BANDS))


@st.composite
def scopes(draw, readable, loop: str | None):
    """One pl.at scope: (op, [(tensor, band, view)], (tensor, band, view)); a band is an int
    or "i". Views (not in SPMD, whose body is the kernel) never share a root with the
    destination, so each argument's direction is what the rules give a tensor alone."""
    op = draw(st.sampled_from(sorted(OPS)))
    arity = 2 if op in ("add", "mul") else 1
    band = st.sampled_from(["i", 0]) if loop else st.integers(0, BANDS - 1)
    srcs = [(draw(st.sampled_from(readable)), draw(band)) for _ in range(arity)]
    # an SPMD task's blocks write one band each, mostly (a shared band is a race of its blocks)
    dst_band = st.sampled_from(["i", "i", "i", 0]) if loop == "spmd" else band
    dst = (draw(st.sampled_from(OUTPUTS + SCRATCH)), draw(dst_band))
    views = loop != "spmd" and dst[0] not in {x for x, _ in srcs}
    srcs = [(x, b, views and draw(st.booleans())) for x, b in srcs]
    return op, srcs, (*dst, views and draw(st.booleans()))


@st.composite
def graphs(draw):
    steps, written, handles = [], set(), []
    for _ in range(draw(st.integers(2, 7))):
        readable = list(INPUTS) + sorted(written)
        form = draw(st.sampled_from(["scope", "scope", "loop", "spmd"]))
        deps, no_dep = (), ()
        if form == "spmd":
            trips = draw(st.integers(1, BANDS))
            kind, scope = None, draw(scopes(readable, "spmd"))
        elif form == "loop":
            kind, trips = draw(st.sampled_from(["parallel", "range"])), draw(st.integers(2, BANDS))
            scope = draw(scopes(readable, kind))
        else:
            kind, trips, scope = None, 1, draw(scopes(readable, None))
            if handles and draw(st.integers(0, 2)) == 0:
                deps = tuple(sorted(set(draw(st.lists(st.sampled_from(handles), min_size=1, max_size=2)))))
            if draw(st.integers(0, 3)) == 0:
                no_dep = (draw(st.sampled_from(sorted({x for x, _, _ in scope[1]} | {scope[2][0]}))),)
            handles.append(len(steps))
        steps.append((form, kind, trips, scope, (deps, no_dep)))
        written.add(scope[2][0])
    return steps


def _band(b, i):
    return i if b == "i" else b


def _arg(name: str, band, view: bool, k: int) -> str:
    """The name a scope gives the tensor (its view's, for a view) and its row offset there."""
    return (f"{name}_v{k}", "0") if view else (name, f"{band} * {R}")


def source(steps, opt_out: tuple | None = None) -> str:
    """The entry; ``opt_out`` = (op, band): then a pair at the end — a task writing all of a
    fresh tensor w from x0, and one reading a band of w with no_dep_args=[w] into z."""
    lines = ["import pypto.language as pl", "", "",
             "@pl.jit", f"def graph({', '.join(f'{x}: pl.Tensor' for x in INPUTS)}, "
             f"{', '.join(f'{y}: pl.Out[pl.Tensor]' for y in OUTPUTS + ('z',))}):",
             f"    s0 = pl.create_tensor([{BANDS * R}, {C}], pl.FP32)",
             f"    w = pl.create_tensor([{BANDS * R}, {C}], pl.FP32)"]
    needed = {d for step in steps for d in step[4][0]}
    for k, (form, kind, trips, (op, srcs, (dst, band, dview)), (deps, no_dep)) in enumerate(steps):
        if form == "spmd":  # the body is the kernel: each block's i is its index
            value = f"pl.{op}({', '.join(f'pl.load({t}, [{b} * {R}, 0], [{R}, {C}])' for t, b, _ in srcs)})"
            lines += [f"    for i in pl.spmd({trips}):", f"        pl.store({value}, [{band} * {R}, 0], {dst})"]
            continue
        indent = "    "
        if form == "loop":
            lines.append(f"    for i in pl.{kind}({trips}):")
            indent = "        "
        loads, names = [], {}
        for j, (t, b, view) in enumerate([*srcs, (dst, band, dview)]):
            name, row = _arg(t, b, view, j)
            if view and name not in names.values():
                lines.append(f"{indent}{name} = pl.slice({t}, [{R}, {C}], [{b} * {R}, 0])")
            names[t if not view else (t, j)] = name
            if j < len(srcs):
                loads.append(f"pl.load({name}, [{row}, 0], [{R}, {C}])")
        target, row = _arg(dst, band, dview, len(srcs))
        options = "".join([f", deps=[{', '.join(f't{d}' for d in deps)}]" if deps else "",
                           f", no_dep_args=[{_opted(no_dep[0], srcs, (dst, band, dview))}]" if no_dep else ""])
        handle = f" as t{k}" if k in needed else ""
        lines.append(f"{indent}with pl.at(level=pl.Level.CORE_GROUP{options}){handle}:")
        lines.append(f"{indent}    pl.store(pl.{op}({', '.join(loads)}), [{row}, 0], {target})")
    if opt_out is not None:
        op, band = opt_out
        lines += ["    with pl.at(level=pl.Level.CORE_GROUP):",  # long: it outlasts any dispatch queue ahead of z
                  f"        t = pl.load(x0, [0, 0], [{BANDS * R}, {C}])",
                  "        for _ in pl.range(64):",
                  f"            t = pl.{op}(t)",
                  "        pl.store(t, [0, 0], w)",
                  "    with pl.at(level=pl.Level.CORE_GROUP, no_dep_args=[w]):",
                  f"        pl.store(pl.neg(pl.load(w, [{band * R}, 0], [{R}, {C}])), [{band * R}, 0], z)"]
    lines.append(f"    return {', '.join(OUTPUTS + ('z',))}")
    return "\n".join(lines) + "\n"


def _opted(tensor: str, srcs, dst) -> str:
    """The name the scope captures ``tensor`` by: its own, or its (first) view's."""
    for j, (t, b, view) in enumerate([*srcs, dst]):
        if t == tensor:
            return _arg(t, b, view, j)[0]
    return tensor


def oracle(steps, inputs: dict) -> dict:
    """torch, in program order."""
    t = {name: v.clone() for name, v in inputs.items()}
    for name in OUTPUTS + SCRATCH:
        t[name] = torch.zeros(BANDS * R, C)
    for form, kind, trips, (op, srcs, (dst, band, _)), _ in steps:
        for i in range(trips):
            operands = [t[x][_band(b, i) * R:(_band(b, i) + 1) * R] for x, b, _ in srcs]
            value = OPS[op](*operands)
            d = _band(band, i)
            t[dst][d * R:(d + 1) * R] = value
    return t


def race_free(steps) -> bool:
    return not unordered(steps)


def unordered(steps) -> set:
    """The rules, band by band: an Out argument is InOut in a sequential loop or after an
    earlier writer of its tensor; an Input or InOut argument waits for the registered
    producers of the bands it is given (one for a view, all for a whole tensor), and an
    InOut or OutputExisting one registers the task as theirs; the argument a scope opts out
    of (``no_dep_args``: the name it captures that tensor by first — the whole tensor, every
    use of it, or one view) does neither; ``deps`` add their scopes' tasks. The pairs of tasks (their numbers in submission order; one number twice for two
    blocks of an SPMD task) that touch one band, one writing, and that nothing orders:
    race-free when there are none."""
    runs, producer, written, handles = [], {}, set(), {}
    number = 0  # the chip's task number: a scope, a loop's iteration, a whole SPMD task
    for k, (form, kind, trips, (op, srcs, (dst, band, dview)), (deps, no_dep)) in enumerate(steps):
        read_names = {x for x, _, _ in srcs}
        direction = "InOut" if dst in read_names or kind == "range" or dst in written else "OutputExisting"
        args = [*srcs, (dst, band, dview)]
        # the captured name opted out: a whole tensor's (every whole use of it) or one view's
        name = _opted(no_dep[0], srcs, (dst, band, dview)) if no_dep else None
        opted = {j for j, (x, b, view) in enumerate(args) if _arg(x, b, view, j)[0] == name}
        for group in ([range(trips)] if form == "spmd" else [[i] for i in range(trips)]):
            i0 = next(iter(group))

            def bands(b, view):
                return (_band(b, i0),) if view else ALL

            preds = set()
            for j, (x, b, view) in enumerate(srcs):
                if j not in opted:
                    for bb in bands(b, view):
                        preds |= producer.get((x, bb), set())
            if direction == "InOut" and len(srcs) not in opted:
                for bb in bands(band, dview):
                    preds |= producer.get((dst, bb), set())
            for d in deps:
                preds |= handles[d]
            before = set(preds)
            for p in preds:
                before |= runs[p]["before"]
            at = set()
            for i in group:  # the blocks of one task: each runs on its own, none ordered against another
                at.add(len(runs))
                runs.append({"before": before, "task": number, "reads": {(x, _band(b, i)) for x, b, _ in srcs},
                             "writes": {(dst, _band(band, i))}})
            if len(srcs) not in opted:
                for bb in bands(band, dview):
                    producer[(dst, bb)] = at
            handles[k] = at
            number += 1
        written.add(dst)
    pairs = set()
    for j, b in enumerate(runs):
        for i in range(j):
            a = runs[i]
            conflict = a["writes"] & (b["reads"] | b["writes"]) or b["writes"] & a["reads"]
            if conflict and i not in b["before"]:
                pairs.add((a["task"], b["task"]))
    return pairs


# ----------------------------------------------------------------------------- atomic adds


@st.composite
def atomic_graphs(draw):
    """Steps ``(form, trips, src band, dst tensor, dst band)``: each task adds band ``src`` of
    x0 (a band "i": the loop or block index) into band ``dst`` of y0 or y1 atomically."""
    steps = []
    for _ in range(draw(st.integers(1, 5))):
        form = draw(st.sampled_from(["scope", "parallel", "spmd"]))
        trips = 1 if form == "scope" else draw(st.integers(1, BANDS))
        index = st.sampled_from(["i", 0, 1]) if form != "scope" else st.integers(0, BANDS - 1)
        steps.append((form, trips, draw(index), draw(st.sampled_from(OUTPUTS)), draw(index)))
    return steps


def atomic_source(steps) -> str:
    lines = ["import pypto.language as pl", "", "", "@pl.jit",
             f"def adds(x0: pl.Tensor, {', '.join(f'{y}: pl.Out[pl.Tensor]' for y in OUTPUTS)}):"]
    for form, trips, src, dst, band in steps:
        store = (f"pl.store(pl.load(x0, [{src} * {R}, 0], [{R}, {C}]), [{band} * {R}, 0], {dst}, "
                 "atomic=pl.AtomicType.Add)")
        if form == "spmd":
            lines += [f"    for i in pl.spmd({trips}):", f"        {store}"]
        elif form == "parallel":
            lines += [f"    for i in pl.parallel({trips}):", "        with pl.at(level=pl.Level.CORE_GROUP):",
                      f"            {store}"]
        else:
            lines += ["    with pl.at(level=pl.Level.CORE_GROUP):", f"        {store}"]
    lines.append(f"    return {', '.join(OUTPUTS)}")
    return "\n".join(lines) + "\n"


def atomic_oracle(steps, x0: torch.Tensor, outputs: dict) -> dict:
    t = {y: v.clone() for y, v in outputs.items()}
    for form, trips, src, dst, band in steps:
        for i in range(trips):
            s, d = _band(src, i), _band(band, i)
            t[dst][d * R:(d + 1) * R] += x0[s * R:(s + 1) * R]
    return t
