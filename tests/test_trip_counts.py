"""Trip counts (issue 38, item 4). Constant loop bounds the loop index's type (INDEX, a signed
64-bit integer) cannot hold are refused at the user's line; a count it holds compiles however
large. A long loop costs no memory per trip on a2a3sim: a steady loop's skipped trips are
closed forms, cycles and data the same as a short run extrapolated (and a smaller loop that
ends alike); a window leaving its tensor at an early trip is refused as ref refuses it, at
once. A loop that will take longer than anyone waits says so on the progress line, with the
time it has left, and Ctrl-C stops it with a plain KeyboardInterrupt."""

from __future__ import annotations

import atexit
import importlib.util
import itertools
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import tracemalloc

import pytest
import torch
from hypothesis import assume, event, given, settings
from hypothesis import strategies as st

import pypto
from pypto.errors import PyptoError, TypeCheckError
from pypto.fuzz import strategies as ps
from pypto.runtime import RunConfig
from pypto.sim.reports import progress
from pypto.sim.simulator import Launch, simulate_together
from pypto.backend import A2A3
from test_steady import _assert_same
from test_steady import _run as both_ways

LOW, HIGH = -2 ** 63, 2 ** 63 - 1
_DIR = tempfile.mkdtemp(prefix="pypto_trips_")  # (the kernels' files: read again as their errors are shown)
atexit.register(shutil.rmtree, _DIR, True)
_count = itertools.count()


def kernel_module(source: str):
    """The kernels of ``source``, written to a file of their own (their lines are the file's)."""
    path = os.path.join(_DIR, f"trips_{next(_count)}.py")
    with open(path, "w") as f:
        f.write("import pypto.language as pl\n\n\n" + textwrap.dedent(source))
    spec = importlib.util.spec_from_file_location(os.path.basename(path)[:-3], path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module, path


def line_of(path: str, text: str) -> int:
    with open(path) as f:
        return next(k for k, line in enumerate(f, 1) if text in line)


# ----------------------------------------------------------------------------- the front end


def _refused(start: int, stop: int, step: int) -> bool:
    """Whether a loop index of INDEX cannot run ``range(start, stop, step)`` as written:
    a bound it cannot hold, more trips than it counts, or a last step past its ends."""
    if not all(LOW <= v <= HIGH for v in (start, stop, step)):
        return True
    trips = range(start, stop, step)
    if not trips:
        return False
    return trips.index(trips[-1]) + 1 > HIGH or not LOW <= trips[-1] + step <= HIGH


_EDGE = st.one_of(st.integers(-3, 70), st.sampled_from([HIGH, HIGH - 1, HIGH + 1, LOW, LOW + 1, LOW - 1, 2 ** 40,
                                                         2 ** 62, -2 ** 62, 10 ** 30, -10 ** 30, 2 ** 64]),
                  st.integers(HIGH - 300, HIGH + 300), st.integers(LOW - 300, LOW + 300))

_LOOPS = {
    # form -> (kernel source around the bounds, the text of the line refused)
    "range": ("""
        @pl.jit
        def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
            with pl.at(level=pl.Level.CORE_GROUP):
                for i in pl.range(BOUNDS):
                    pl.store(pl.load(a, [0, 0], [16, 64]), [0, 0], out)
            return out
        """, "pl.range("),
    "pipeline": ("""
        @pl.jit
        def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
            with pl.at(level=pl.Level.CORE_GROUP):
                for i in pl.pipeline(BOUNDS, stage=2):
                    pl.store(pl.load(a, [0, 0], [16, 64]), [0, 0], out)
            return out
        """, "pl.pipeline("),
    "orchestration": ("""
        @pl.jit
        def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
            for i in pl.parallel(BOUNDS):
                with pl.at(level=pl.Level.CORE_GROUP):
                    pl.store(pl.load(a, [0, 0], [16, 64]), [0, 0], out)
            return out
        """, "pl.parallel("),
    "unroll": ("""
        @pl.jit
        def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
            for i in pl.unroll(BOUNDS):
                with pl.at(level=pl.Level.CORE_GROUP):
                    pl.store(pl.load(a, [0, 0], [16, 64]), [0, 0], out)
            return out
        """, "pl.unroll("),
}


@settings(deadline=None)  # (the profile's budget: each example compiles a kernel, in a fraction of a second)
@given(form=st.sampled_from(sorted(_LOOPS)), start=_EDGE, stop=_EDGE, step=_EDGE, written=st.integers(1, 3))
def test_property_constant_bounds_the_index_cannot_hold_are_refused_at_their_line(form, start, stop, step, written):
    if form != "unroll":
        assume(step > 0)  # (a range's step is positive: refused on its own)
    else:
        assume(step != 0)
    if written == 1:
        start, step = 0, 1
    elif written == 2:
        step = 1
    refused = _refused(start, stop, step)
    event("refused" if refused else "compiled")
    # an unrolled loop is copied at compile time: only a short one is compiled here
    assume(refused or form != "unroll" or len(range(start, stop, step)) <= 4)
    bounds = ", ".join(map(str, (stop,) if written == 1 else (start, stop) if written == 2 else (start, stop, step)))
    source, line_text = _LOOPS[form]
    module, path = kernel_module(source.replace("BOUNDS", bounds))
    a, out = torch.zeros(64, 64), torch.zeros(64, 64)
    if not refused:
        module.k.lower(a, out)
        return
    with pytest.raises(TypeCheckError) as info:
        module.k.lower(a, out)
    err = info.value
    assert err.span is not None and err.span.file == path and err.span.line == line_of(path, line_text), str(err)
    assert "INDEX" in err.message and str(HIGH) in err.message + (err.hint or "") and err.hint, str(err)


@pytest.mark.parametrize("blocks, refused", [(HIGH, False), (HIGH + 1, True), (10 ** 30, True), (2 ** 40, False)])
def test_a_constant_block_count_past_the_block_index_is_refused_at_its_line(blocks, refused):
    module, path = kernel_module(f"""
        @pl.jit
        def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
            with pl.spmd({blocks}):
                b = pl.tile.get_block_idx()
                pl.store(pl.load(a, [b % 4 * 16, 0], [16, 64]), [b % 4 * 16, 0], out)
            return out
        """)
    a, out = torch.zeros(64, 64), torch.zeros(64, 64)
    if not refused:
        module.k.lower(a, out)
        return
    with pytest.raises(TypeCheckError) as info:
        module.k.lower(a, out)
    assert info.value.span.line == line_of(path, "pl.spmd(") and "core_num" in info.value.message


# ----------------------------------------------------------------------------- long loops on a2a3sim

ROWS, COLS = 8, 64
_BASE, _TURN = 2000, 840  # a smaller loop that ends alike: past the fast-forward, as many trips mod every period


@st.composite
def long_loops(draw):
    """A loop whose windows stay or rotate (``(i % P) * rows``) — so a count of 2**31 - 1
    needs no larger tensor —, storing an elementwise op of what it loads each trip, or
    carrying a running maximum/minimum (and maybe storing it each trip): the shapes of the
    steady-loop tests that stay in place."""
    load_p, store_p = draw(st.sampled_from([1, 2, 4])), draw(st.sampled_from([1, 2, 4]))
    load_c = draw(st.integers(0, 3))

    def row(p, c=0):
        return "0" if p == 1 else f"((i + {c}) % {p}) * {ROWS}"

    header = draw(st.sampled_from(["pl.range(TRIPS)", "pl.pipeline(TRIPS, stage=2)"]))
    shape = draw(st.sampled_from(["store", "carried", "carried_store"]))
    load = f"pl.load(a, [{row(load_p, load_c)}, 0], [{ROWS}, {COLS}])"
    if shape == "store":
        op = draw(st.sampled_from(["pl.exp(x)", "pl.neg(x)", "pl.adds(x, 1.0)", "pl.mul(x, x)", "x",
                                   "pl.cast(pl.cast(x, pl.FP16), pl.FP32)"]))  # (a cast: an op's own template)
        before, body, after = [], [f"x = {load}", f"pl.store({op}, [{row(store_p)}, 0], out)"], []
    else:
        carry = draw(st.sampled_from(["pl.maximum", "pl.minimum"]))
        before, body = [f"acc = pl.load(a, [0, 0], [{ROWS}, {COLS}])"], [f"acc = {carry}(acc, {load})"]
        if shape == "carried_store":
            body.append(f"pl.store(pl.exp(acc), [{row(store_p)}, 0], out)")
        after = [f"pl.store(acc, [{4 * ROWS}, 0], out)"]
    lines = [*before, f"for i in {header}:", *("    " + x for x in body), *after]
    return ("@pl.jit\ndef k(a: pl.Tensor, out: pl.Out[pl.Tensor]PARAM):\n    with pl.at(level=pl.Level.CORE_GROUP):\n"
            + "".join(f"        {x}\n" for x in lines) + "    return out\n")


def _compiled(source: str, trips: int, runtime: bool):
    """(compiled kernel program, the trip count argument or None) of a drawn loop."""
    text = source.replace("PARAM", ", n: pl.Scalar[pl.INDEX]" if runtime else "")
    module, _ = kernel_module(text.replace("TRIPS", "n" if runtime else str(trips)))
    a, out = _tensors()
    extra = (trips,) if runtime else ()
    return module.k.compile(a, out, *extra, config=RunConfig(platform="a2a3sim")), extra


def _tensors():
    return torch.linspace(-3, 3, 5 * ROWS * COLS).reshape(5 * ROWS, COLS), torch.zeros(5 * ROWS, COLS)


def _skipped(compiled, extra) -> int:
    """How many trips the simulation of ``compiled`` fast-forwards (the public run does not say)."""
    (kernel,) = compiled.kernels.values()
    a, out = _tensors()
    values = {"a": a, "out": out, "n": extra[0] if extra else None}
    return simulate_together((Launch(kernel, tuple(values[p] for p, _ in kernel.params)),), A2A3).skipped


def _run(compiled, extra, platform="a2a3sim"):
    a, out = _tensors()
    report = compiled.run(a, out, *extra, config=RunConfig(platform=platform))
    return out, report.cycles


@settings(deadline=None, max_examples=max(4, settings().max_examples // 4))  # (three compiles and five runs each)
@given(source=long_loops(), trips=st.one_of(st.integers(2 ** 20, 2 ** 31 - 1), st.just(2 ** 31 - 1)),
       runtime=st.booleans())
def test_property_a_long_loop_is_a_short_one_extrapolated_in_constant_memory(source, trips, runtime):
    short = _BASE + (trips - _BASE) % _TURN  # as many trips mod every period: it ends as the long one does
    runs = {}
    for count in (short, short + _TURN, trips):
        compiled, extra = _compiled(source, count, runtime)
        if count == short:
            # (a pipeline of stage 2 loops over pairs of trips)
            assert _skipped(compiled, extra) > short // 4, "the loop is not fast-forwarded: a long run would not end"
            want, _ = _run(compiled, extra, "ref")  # the oracle, on the short loop
        tracemalloc.start()
        try:
            runs[count] = _run(compiled, extra)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        # (a few hundred KB, whatever the count)
        assert peak < 16 << 20, f"{count:,} trips took {peak / 2 ** 20:.1f} MB"
    (out_short, c_short), (_, c_next), (out_long, c_long) = runs[short], runs[short + _TURN], runs[trips]
    assert ps.bits_equal(out_short, want)
    assert ps.bits_equal(out_long, out_short)  # every later trip leaves the data as the short loop's last
    assert c_long == c_short + (trips - short) // _TURN * (c_next - c_short)  # each trip the same cycles on


@settings(deadline=None, max_examples=max(4, settings().max_examples // 3))
@given(source=long_loops(), trips=st.integers(64, 300))  # (a pipeline of stage 2: from 32 pairs of trips)
def test_property_a_loop_that_stays_in_place_fast_forwards_to_the_trip_by_trip_timeline(source, trips):
    # what the closed forms and the settling make of the skipped trips: exactly the trip by trip simulation
    compiled, extra = _compiled(source, trips, True)
    (kernel,) = compiled.kernels.values()
    a, out = _tensors()
    values = {"a": a, "out": out, "n": trips}
    args = tuple(values[p] for p, _ in kernel.params)
    fast, slow = both_ways(kernel, args, True), both_ways(kernel, args, False)
    assert isinstance(fast, dict) and fast["skipped"] > 0, fast
    _assert_same(fast, slow, source)


_MOVING = {
    # a window moving one tile a trip, out of its tensor at trip K (K tiles of rows): forwards, backwards
    "load": "pl.store(pl.load(a, [ROW, 0], [8, 64]), [0, 0], out)",
    "store": "pl.store(pl.load(a, [0, 0], [8, 64]), [ROW, 0], out)",
}


@settings(deadline=None, max_examples=max(4, settings().max_examples // 4))
@given(which=st.sampled_from(sorted(_MOVING)), backwards=st.booleans(), tiles=st.integers(1, 12),
       trips=st.one_of(st.integers(2 ** 20, 2 ** 31 - 1), st.just(2 ** 31 - 1)),
       count=st.sampled_from(["scalar", "read", "constant"]))
def test_property_a_window_leaving_its_tensor_early_in_a_long_loop_is_refused_as_ref_refuses_it(
        which, backwards, tiles, trips, count):
    row = f"({tiles - 1} - i) * 8" if backwards else "i * 8"
    header = {"scalar": "n: pl.Scalar[pl.INDEX]", "read": "cfg: pl.Tensor", "constant": ""}[count]
    module, path = kernel_module(f"""
        @pl.jit
        def k(a: pl.Tensor, out: pl.Out[pl.Tensor]{', ' + header if header else ''}):
            with pl.at(level=pl.Level.CORE_GROUP):
                {'n = pl.read(cfg, [0])' if count == 'read' else ''}
                for i in pl.range({trips if count == 'constant' else 'n'}):
                    {_MOVING[which].replace('ROW', row)}
            return out
        """)
    extra = {"scalar": (trips,), "read": (torch.tensor([trips], dtype=torch.int64),), "constant": ()}[count]
    got = {}
    for platform in ("ref", "a2a3sim"):
        a, out = torch.rand(tiles * 8, 64), torch.zeros(tiles * 8, 64)
        tracemalloc.start()
        try:
            with pytest.raises(PyptoError) as info:
                module.k(a, out, *extra, config=RunConfig(platform=platform))
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert peak < 64 << 20, f"{platform}: {peak / 2 ** 20:.1f} MB before the error"
        got[platform] = (type(info.value).__name__, str(info.value))
    assert got["a2a3sim"] == got["ref"]  # (a constant count: the compiler's own bounds check, before either runs)
    assert f"{path}:{line_of(path, 'pl.store(')}:" in got["ref"][1], got["ref"][1]  # at the user's line


# ----------------------------------------------------------------------------- a run longer than anyone waits

_FOREVER = 2 ** 40


@pytest.fixture
def said(monkeypatch):
    """The progress line at INFO through the logger (no tqdm), on a clock one second later at
    each look, a look every 16 trips; the run is interrupted (a KeyboardInterrupt, as Ctrl-C
    raises) at the 40th look."""
    looks = itertools.count()

    def clock():
        k = next(looks)
        if k == 40:
            raise KeyboardInterrupt
        return float(k)

    monkeypatch.setattr(progress, "clock", clock)
    monkeypatch.setitem(sys.modules, "tqdm", None)
    pypto.set_log_level(pypto.LogLevel.INFO)
    yield
    pypto.set_log_level(pypto.LogLevel.INFO)


def _interrupted(kernel, path: str, platform: str, capsys, *args) -> list[str]:
    a, out = torch.rand(64, 64), torch.zeros(64, 64)
    compiled = kernel.compile(a, out, *args, config=RunConfig(platform=platform))
    capsys.readouterr()
    with pytest.raises(KeyboardInterrupt):
        compiled.run(a, out, *args)
    return [x for x in re.split(r"[\r\n]", capsys.readouterr().err) if x.startswith("[pypto] k on")]


def _says_how_long(lines: list[str], platform: str, what: str, path: str, total: int = _FOREVER) -> None:
    loop = f"{what} at {re.escape(os.path.basename(path))}:{line_of(path, 'for i in')}"
    going = [x for x in lines if re.fullmatch(rf"\[pypto\] k on {platform}: (.*, )?{loop}( on aiv0)?: trip [\d,]+ of "
                                              rf"{total:,}, about [\d,]+ (years|days|h|min|s) left.*", x)]
    assert going, lines
    warned = [x for x in lines if re.fullmatch(rf"\[pypto\] k on {platform}: {loop}( on aiv0)? runs {total:,} trips, "
                                               r"about [\d,]+ years more at this rate \(Ctrl-C stops it\)", x)]
    assert len(warned) == 1 and len(lines) == len(going) + 2, lines  # once, and nothing of anything else
    assert lines[-1].startswith(f"[pypto] k on {platform}: interrupted after"), lines


def test_ref_interpreting_a_loop_of_2_40_trips_says_how_long_it_has_left_and_ctrl_c_stops_it(said, capsys):
    module, path = kernel_module(f"""
        @pl.jit
        def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
            with pl.at(level=pl.Level.CORE_GROUP):
                for i in pl.range({_FOREVER}):
                    pl.store(pl.load(a, [0, 0], [16, 64]), [0, 0], out)
            return out
        """)
    _says_how_long(_interrupted(module.k, path, "ref", capsys), "ref", "the loop", path)


def test_a2a3sim_simulating_a_loop_of_2_40_trips_trip_by_trip_says_how_long_it_has_left(said, capsys):
    module, path = kernel_module(f"""
        @pl.jit
        def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
            with pl.at(level=pl.Level.CORE_GROUP):
                for i in pl.range({_FOREVER}):
                    if i % 2 == 0:  # (a branch on the trip: not steady, every trip simulated)
                        pl.store(pl.load(a, [0, 0], [16, 64]), [0, 0], out)
            return out
        """)
    _says_how_long(_interrupted(module.k, path, "a2a3sim", capsys), "a2a3sim", "the loop", path)


def test_a2a3sim_performing_the_data_of_2_40_fast_forwarded_trips_says_how_long_it_has_left(said, capsys):
    module, path = kernel_module(f"""
        @pl.jit
        def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
            with pl.at(level=pl.Level.CORE_GROUP):
                acc = pl.cast(pl.load(a, [0, 0], [8, 64]), pl.INT32)
                for i in pl.range({_FOREVER}):
                    acc = pl.adds(acc, 1)  # (never the same twice: every trip's data is performed)
                pl.store(pl.cast(acc, pl.FP32), [0, 0], out)
            return out
        """)
    # (the simulation skips all but the trips it compared and the last: their data is performed one by one)
    lines = _interrupted(module.k, path, "a2a3sim", capsys)
    skipped = int(re.search(r"runs ([\d,]+) trips", "\n".join(lines)).group(1).replace(",", ""))
    assert _FOREVER - 100 < skipped < _FOREVER, lines
    _says_how_long(lines, "a2a3sim", "the data of the loop", path, skipped)


def test_ctrl_c_stops_a_long_ref_run_with_a_plain_keyboard_interrupt(tmp_path):
    script = tmp_path / "long.py"
    script.write_text(textwrap.dedent(f"""
        import torch
        import pypto
        import pypto.language as pl
        from pypto.runtime import RunConfig
        from pypto.sim.reports import progress

        progress.AFTER = 0.0  # the line at once

        @pl.jit
        def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
            with pl.at(level=pl.Level.CORE_GROUP):
                for i in pl.range({_FOREVER}):
                    pl.store(pl.load(a, [0, 0], [16, 64]), [0, 0], out)
            return out

        try:
            k(torch.rand(64, 64), torch.zeros(64, 64), config=RunConfig(platform="ref"))
        except KeyboardInterrupt:
            print("stopped")
        """))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "PYPTO_LOG_LEVEL": "info"}
    child = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env=env, cwd=tmp_path)
    seen = []
    try:
        for line in child.stderr:  # (the log is not a terminal: a line per redraw)
            seen.append(line)
            if f"of {_FOREVER:,}" in line:
                break
        child.send_signal(signal.SIGINT)
        err = "".join(seen) + child.stderr.read()  # (to its end: the child has stopped)
        out = child.stdout.read()
        child.wait(timeout=120)
    finally:
        child.kill()
    assert any(f"of {_FOREVER:,}, about" in x for x in seen), seen
    assert child.returncode == 0 and out.strip() == "stopped", (out, err)
    assert "Traceback" not in err and "interrupted after" in err, err
