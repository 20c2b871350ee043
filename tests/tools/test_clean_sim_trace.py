"""The L0 trace a simulated run writes, and clean_sim_trace's reading of it (or of any
visualize_data.bin)."""

import json
import subprocess
import sys

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from pypto.runtime import RunConfig
from pypto.tools import clean_sim_trace as cst
from pypto.sim.reports.insight_format import API_INSTR, SOURCE, TRACE, encode_block, read_blocks


def traced(seed, name, tmp_path):
    out = torch.zeros(512, 128)
    compiled = seed[name].compile(seed["A"], out, config=RunConfig(enable_l0_trace=True, output_dir=tmp_path / name))
    report = compiled.run(seed["A"], out)
    assert torch.equal(out, torch.exp(seed["A"]))
    return report


def clean(path, *args):
    done = subprocess.run([sys.executable, "-m", "pypto.tools.clean_sim_trace", str(path), *args],
                          capture_output=True, text=True, timeout=120)
    return done


def lanes(trace):
    names = {}
    for e in trace["traceEvents"]:
        if e.get("name") == "thread_name":
            names[(e["pid"], e["tid"])] = e["args"]["name"]
    return names


def slices(trace, lane_prefix):
    names = lanes(trace)
    return [(e["args"]["start_cycle"], e["args"]["start_cycle"] + e["args"]["cycles"]) for e in trace["traceEvents"]
            if e.get("ph") == "X" and names.get((e["pid"], e["tid"]), "").split("#")[0] == lane_prefix]


def test_a_traced_run_writes_the_insight_container_and_trace_json(seed, tmp_path, capfd):
    report = traced(seed, "pipelined", tmp_path)
    directory = report.trace_dir
    assert directory.name.startswith("OPPROF_pipelined_incore_0_") and directory.parent.name == "sim"
    assert directory.parent.parent == (tmp_path / "pipelined").resolve()
    assert f"[l0_trace] pipelined_incore_0: wrote {directory / 'simulator' / 'visualize_data.bin'}" in capfd.readouterr().err
    blocks = read_blocks((directory / "simulator" / "visualize_data.bin").read_bytes())
    kinds = [b.type for b in blocks]
    assert kinds == [SOURCE, TRACE, API_INSTR]
    assert blocks[0].path.endswith("seed_kernels.py") and b"def pipelined" in blocks[0].payload
    trace = blocks[1].json()
    assert trace == json.loads((directory / "simulator" / "trace.json").read_text())
    names = {e["name"] for e in trace["traceEvents"]}
    assert {"SET_FLAG", "WAIT_FLAG", "BAR"} <= names
    lane_names = set(lanes(trace).values())
    assert {"SCALAR", "MTE2", "VECTOR", "MTE3", "ALL"} <= lane_names
    metrics = blocks[2].json()
    assert metrics["Cores"] == ["core0.veccore0"]
    assert all(len(column) == 1 for record in metrics["Instructions"] for column in record.values())
    assert set(metrics["Instructions Dtype"]) >= {"Address", "Pipe", "Cycles", "Vector Utilization Percentage"}


def test_cleaned_pipelined_trace_overlaps_loads_with_compute(seed, tmp_path):
    report = traced(seed, "pipelined", tmp_path)
    done = clean(report.trace_dir, "-o", tmp_path / "clean")
    assert done.returncode == 0, done.stderr
    trace = json.loads((tmp_path / "clean" / "trace.clean.json").read_text())
    order = [name.split("#")[0] for _, name in sorted(lanes(trace).items(), key=lambda kv: kv[0][1])]
    assert [x for i, x in enumerate(order) if x not in order[:i]] == ["MTE2", "VECTOR", "MTE3"]
    assert not any(e.get("name") in ("SET_FLAG", "WAIT_FLAG", "BAR") for e in trace["traceEvents"])
    assert any(e.get("ph") == "s" for e in trace["traceEvents"]) and any(e.get("ph") == "f" for e in trace["traceEvents"])
    mte2, vec = slices(trace, "MTE2"), slices(trace, "VECTOR")
    assert any(a < d and c < b for a, b in mte2 for c, d in vec)
    assert (tmp_path / "clean" / "raw_simulator" / "visualize_data.bin").is_file()
    metrics = json.loads((tmp_path / "clean" / "instr_metrics.json").read_text())
    records = metrics["instructions"]["core0.veccore0"]
    assert {r["pipe"] for r in records} == {"MTE2", "VECTOR", "MTE3"}
    assert all(r["vector_utilization_percentage"] == 100.0 for r in records if r["pipe"] == "VECTOR")
    assert metrics["column_types"]["cycles"] == "int"
    assert set(metrics["column_types"]) == set(records[0])  # keyed like the records


def test_cleaned_single_buffer_trace_never_overlaps_them(seed, tmp_path):
    report = traced(seed, "single_buffer", tmp_path)
    assert clean(report.trace_dir).returncode == 0
    trace = json.loads((report.trace_dir / "simulator" / "trace.clean.json").read_text())
    mte2, vec = slices(trace, "MTE2"), slices(trace, "VECTOR")
    assert mte2 and vec and not any(a < d and c < b for a, b in mte2 for c, d in vec)


def test_options_keep_scalar_raw_metrics_and_no_copy(seed, tmp_path):
    report = traced(seed, "single_buffer", tmp_path)
    done = clean(report.trace_dir / "simulator" / "visualize_data.bin", "-o", tmp_path / "o", "--keep-scalar",
                 "--raw-metrics", "--no-copy-raw")
    assert done.returncode == 0, done.stderr
    trace = json.loads((tmp_path / "o" / "trace.clean.json").read_text())
    assert "SCALAR" in set(lanes(trace).values())
    raw = json.loads((tmp_path / "o" / "instr_metrics.json").read_text())
    assert "Instructions" in raw and "Cores" in raw
    assert not (tmp_path / "o" / "raw_simulator").exists()


def hand_built(tmp_path, truncate=0):
    trace = {"traceEvents": [
        {"name": "process_name", "ph": "M", "pid": 7, "args": {"name": "core0.veccore0"}},
        {"name": "thread_name", "ph": "M", "pid": 7, "tid": 1, "args": {"name": "MTE2"}},
        {"name": "thread_name", "ph": "M", "pid": 7, "tid": 2, "args": {"name": "VEC"}},
        {"name": "thread_name", "ph": "M", "pid": 7, "tid": 3, "args": {"name": "FLOWCTRL"}},
        {"name": "TLOAD", "ph": "X", "pid": 7, "tid": 1, "ts": 10, "dur": 50},
        {"name": "TLOAD", "ph": "X", "pid": 7, "tid": 1, "ts": 30, "dur": 50},
        {"name": "SET_FLAG", "ph": "B", "pid": 7, "tid": 1, "ts": 80, "args": {"detail": "PIPE:MTE2,TRIGGERPIPE:VEC,FLAGID:3,"}},
        {"name": "SET_FLAG", "ph": "E", "pid": 7, "tid": 1, "ts": 81},
        {"name": "WAIT_FLAG", "ph": "B", "pid": 7, "tid": 2, "ts": 5, "args": {"detail": "PIPE:MTE2,TRIGGERPIPE:VEC,FLAGID:3,"}},
        {"name": "WAIT_FLAG", "ph": "E", "pid": 7, "tid": 2, "ts": 82},
        {"name": "VADD", "ph": "X", "pid": 7, "tid": 2, "ts": 90, "dur": 20},
        {"name": "stall", "ph": "X", "pid": 7, "tid": 3, "ts": 0, "dur": 5},
    ]}
    data = b"".join([
        encode_block(SOURCE, b"def k(): ...\n", path="/src/k.py"),
        encode_block(9, b"\x00\x01 not json, an unknown block type"),
        encode_block(TRACE, json.dumps(trace).encode() + b"   "),  # odd length: padded
        encode_block(API_INSTR, {"Cores": ["core0.veccore0"], "Instructions": [
            {"Address": ["0x10"], "Pipe": ["MTE2"], "Cycles": [50]}], "Instructions Dtype": {"Cycles": "int"}}),
    ])
    path = tmp_path / "visualize_data.bin"
    path.write_bytes(data[: len(data) - truncate])
    return path


def test_a_hand_built_container_with_source_unknown_blocks_and_padding(tmp_path):
    path = hand_built(tmp_path)
    blocks = read_blocks(path.read_bytes())
    assert [b.type for b in blocks] == [SOURCE, 9, TRACE, API_INSTR]
    assert blocks[0].path == "/src/k.py" and blocks[0].payload == b"def k(): ...\n"
    done = clean(path)
    assert done.returncode == 0, done.stderr
    trace = json.loads((tmp_path / "trace.clean.json").read_text())
    assert set(lanes(trace).values()) == {"MTE2", "MTE2#1", "VECTOR"}  # FLOWCTRL dropped, VEC read as VECTOR
    (s,) = [e for e in trace["traceEvents"] if e["ph"] == "s"]
    (f,) = [e for e in trace["traceEvents"] if e["ph"] == "f"]
    assert (s["args"]["cycle"], f["args"]["cycle"], s["name"]) == (30, 90, "MTE2->VECTOR flag3")
    # microseconds at the a2a3 core clock (the trace names none), each floored to a nanosecond
    assert trace["otherData"]["clock_hz"] == 1.8e9 and (s["ts"], f["ts"]) == (0.016, 0.05)
    (vadd,) = [e for e in trace["traceEvents"] if e.get("name") == "VADD"]
    assert (vadd["ts"], vadd["dur"], vadd["args"]["start_cycle"], vadd["args"]["cycles"]) == (0.05, 0.011, 90, 20)
    metrics = json.loads((tmp_path / "instr_metrics.json").read_text())
    assert metrics["instructions"]["core0.veccore0"] == [{"address": "0x10", "pipe": "MTE2", "cycles": 50}]


@pytest.mark.parametrize("cut", [1, 5, 40])
def test_a_truncated_container_is_one_clear_error(tmp_path, cut):
    done = clean(hand_built(tmp_path, truncate=cut))
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("error: ")
    assert "truncated" in done.stderr


def test_bad_paths_and_arguments_are_one_line_errors(tmp_path):
    for args in ([str(tmp_path / "nope")], [str(tmp_path)], [str(tmp_path), "--bogus"]):
        done = clean(*args)
        assert done.returncode == 1 and done.stderr.startswith("error: ") and done.stderr.count("\n") == 1, args
    (tmp_path / "x.bin").write_bytes(b"\x05\x00\x00\x00\x00\x00\x00\x00\x02\x00\x01\x13hello")
    done = clean(tmp_path / "x.bin")
    assert done.returncode == 1 and "reserve byte is 0x13" in done.stderr


@given(st.lists(st.tuples(st.integers(0, 200), st.integers(1, 60)), min_size=1, max_size=30))
def test_property_sub_lanes_are_disjoint_or_strictly_nested(spans):
    group = [{"name": f"i{k}", "ph": "X", "ts": ts, "dur": dur} for k, (ts, dur) in enumerate(spans)]
    lanes_ = cst._sub_lanes(group)
    assert sorted(id(e) for lane in lanes_ for e in lane) == sorted(id(e) for e in group)
    for lane in lanes_:
        for a in lane:
            for b in lane:
                if a is b:
                    continue
                a0, a1, b0, b1 = a["ts"], a["ts"] + a["dur"], b["ts"], b["ts"] + b["dur"]
                disjoint = a1 <= b0 or b1 <= a0
                nested = (a0 <= b0 and b1 <= a1) or (b0 <= a0 and a1 <= b1)
                assert disjoint or nested


def test_the_cleaned_timeline_page_in_chromium(seed, tmp_path):
    from browser import Elements, dom, screenshot

    report = traced(seed, "pipelined", tmp_path)
    assert clean(report.trace_dir, "-o", tmp_path / "c").returncode == 0
    page = tmp_path / "c" / "trace.clean.html"
    html = Elements(dom(page, tmp_path / "profile"))
    assert [g["attrs"]["data-group"] for g in html.select("div", "group")] == ["core0.veccore0"]
    lane_names = [e["attrs"]["data-lane"] for e in html.select("div", "lane")]
    assert [x.split("#")[0] for x in lane_names] == sorted((x.split("#")[0] for x in lane_names),
                                                           key=["MTE2", "VECTOR", "MTE3"].index)
    by_lane = {}
    for s in html.select("div", "slice"):
        by_lane.setdefault(s["attrs"]["data-lane"], []).append((int(s["attrs"]["data-ts"]),
                                                                int(s["attrs"]["data-ts"]) + int(s["attrs"]["data-dur"])))
    assert by_lane
    for spans in by_lane.values():
        for a0, a1 in spans:
            for b0, b1 in spans:
                if (a0, a1) != (b0, b1):
                    assert a1 <= b0 or b1 <= a0 or (a0 <= b0 and b1 <= a1) or (b0 <= a0 and a1 <= b1)
    flows = html.select("line")
    assert flows and all("flag" in f["attrs"]["data-name"] for f in flows)
    assert screenshot(page, tmp_path / "trace.png", tmp_path / "profile").stat().st_size > 5_000


# ----------------------------------------------------------------------------- odd input


def container(tmp_path, *blocks, name="visualize_data.bin"):
    path = tmp_path / name
    path.write_bytes(b"".join(blocks))
    return path


def trace_block(events):
    return encode_block(TRACE, {"traceEvents": events})


def x(name="TLOAD", ts=10, dur=5, pid=0, tid="MTE2", **extra):
    return {"name": name, "ph": "X", "ts": ts, "dur": dur, "pid": pid, "tid": tid, **extra}


def clean_here(capsys, *args):
    """``clean`` in this process: the same exit code and output, without a Python start-up."""
    code = cst.main([str(a) for a in args])
    out, err = capsys.readouterr()
    return subprocess.CompletedProcess(args, code, out, err)


def one_error(done, path, fragment):
    assert done.returncode == 1, done.stdout
    assert "Traceback" not in done.stderr
    assert done.stderr.startswith(f"error: {path}: ") and done.stderr.count("\n") == 1, done.stderr
    assert fragment in done.stderr, done.stderr


@pytest.mark.parametrize("blocks, fragment", [
    ([trace_block([x(ts="abc", dur="x")])], 'event 0 ("TLOAD") has ts "abc", not a number'),
    ([trace_block([x(ts=None, dur=None)])], "has ts null, not a number"),
    ([trace_block([{"name": "TLOAD", "ph": "X", "ts": 1, "pid": 0, "tid": 0}])], "has dur (missing), not a number"),
    ([trace_block([x(ts=True)])], "has ts true, not a number"),
    ([trace_block([x(dur=-4)])], "has a negative dur -4"),
    ([trace_block([x(), x(ts=1e308, dur=1e308)])], "event 1 (\"TLOAD\") has ts 1e+308, beyond 2**53"),
    ([trace_block([x(ts=2 ** 53, dur=1)])], "ends (ts + dur) beyond 2**53"),
    ([trace_block([x(pid=[1])])], "has pid [1], not an integer or a string"),
    ([trace_block([x(), {"ph": "M", "name": "process_name", "pid": 0, "args": "str"}])],
     'event 1 ("process_name") has args "str", not an object'),
    ([trace_block([x(args="x")])], 'has args "x", not an object'),
    ([trace_block(["a", 1, None])], 'event 0 is "a", not an object'),
    ([trace_block([x(), {"ph": "B", "name": "SET_FLAG", "ts": 1, "pid": 0, "tid": 0, "args": {"detail": 5}}])],
     "has args.detail 5, not a string"),
    ([encode_block(TRACE, b'{"traceEvents":[{"ph":"X","name":"a","ts":NaN,"dur":1,"pid":0,"tid":0}]}')],
     "TRACE block does not hold strict JSON: NaN is not a JSON number"),
    ([encode_block(TRACE, b'{"traceEvents":[{"ph":"X","name":"a","ts":1,"dur":Infinity,"pid":0,"tid":0}]}')],
     "Infinity is not a JSON number"),
    ([encode_block(TRACE, b'{"traceEvents":[{"ph":"X","name":"a","ts":1,"dur":1e999,"pid":0,"tid":0}]}')],
     "1e999 does not fit in a double"),
    ([encode_block(TRACE, b'{"traceEvents":[{"ph":"X","name":"a","ts":' + b"9" * 5000 + b',"dur":1}]}')],
     "value has 5000 digits"),
    ([encode_block(TRACE, b"[" * 100_000 + b"]" * 100_000)], "nests arrays or objects too deeply"),
    ([trace_block([x()]), encode_block(API_INSTR, [1, 2])], "the API_INSTR block holds [1, 2], not an object"),
    ([trace_block([x()]), encode_block(API_INSTR, {"Cores": 5})], "API_INSTR Cores is 5, not a list of core names"),
    ([trace_block([x()]), encode_block(API_INSTR, {"Cores": ["c"], "Instructions": [{"Cycles": 5}]})],
     "API_INSTR instruction 0: 'Cycles' is 5, not a list (one per core)"),
], ids=["ts-string", "ts-null", "dur-missing", "ts-bool", "dur-negative", "ts-huge", "end-huge", "pid-list",
        "process-args-string", "args-string", "event-string", "detail-number", "nan", "infinity", "1e999", "bigint",
        "deep", "instr-list", "instr-cores-int", "instr-column-scalar"])
def test_valid_json_with_odd_content_is_one_clear_error(tmp_path, capsys, blocks, fragment):
    path = container(tmp_path, *blocks)
    done = clean_here(capsys, path, "-o", tmp_path / "out")
    one_error(done, path, fragment)
    assert not (tmp_path / "out").exists()  # refused before anything was written


@given(st.lists(st.fixed_dictionaries({
    "name": st.sampled_from(["TLOAD", "VADD", "SET_FLAG"]),
    "ph": st.sampled_from(["X", "B", "E", "M"]),
    "ts": st.one_of(st.integers(-10, 10 ** 20), st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=3),
                    st.none()),
    "dur": st.one_of(st.integers(-5, 100), st.floats(allow_nan=True, allow_infinity=True), st.none()),
    "pid": st.one_of(st.integers(0, 2), st.just("0"), st.just([0])),
    "tid": st.sampled_from([0, 1, "MTE2", "VEC"]),
    "args": st.one_of(st.none(), st.just({}), st.just({"detail": "PIPE:MTE2,TRIGGERPIPE:VEC,FLAGID:0"}),
                      st.just("x")),
}), max_size=8))
def test_property_any_trace_is_cleaned_into_strict_json_or_refused_in_one_line(events):
    import contextlib
    import io
    import tempfile
    from pathlib import Path

    def strict(constant):
        raise AssertionError(f"{constant} in the output")

    with tempfile.TemporaryDirectory() as tmp:
        # Python's own json.dumps writes NaN and Infinity: the container may hold them.
        path = container(Path(tmp), encode_block(TRACE, json.dumps({"traceEvents": events}).encode()))
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            code = cst.main([str(path), "-o", str(Path(tmp) / "out")])
        lines = [line for line in err.getvalue().splitlines() if line.startswith("error: ")]
        if code:
            assert len(lines) == 1 and "Traceback" not in err.getvalue()
        else:
            assert not lines
            json.loads((Path(tmp) / "out" / "trace.clean.json").read_text(), parse_constant=strict)


def test_the_reader_rejects_nan_that_python_would_accept(tmp_path):
    path = container(tmp_path, encode_block(TRACE, b'{"traceEvents":[{"ph":"X","name":"a","ts":NaN,"dur":1,'
                                                   b'"pid":0,"tid":"MTE2"}]}'))
    one_error(clean(path), path, "NaN is not a JSON number")
    assert not (tmp_path / "trace.clean.json").exists()


# ----------------------------------------------------------------------------- several OPPROF dirs


def test_several_opprof_dirs_write_one_subdirectory_each(seed, tmp_path):
    compiled = seed["pipelined"].compile(seed["A"], torch.zeros(512, 128),
                                         config=RunConfig(enable_l0_trace=True, output_dir=tmp_path / "build"))
    first = compiled.run(seed["A"], torch.zeros(512, 128)).trace_dir
    second = compiled.run(seed["A"], torch.zeros(512, 128)).trace_dir  # a kernel run twice: two OPPROF dirs
    assert first != second and first.parent == second.parent == tmp_path / "build" / "sim"
    # the README's command: the build output directory
    for paths, out in (([tmp_path / "build"], "a"), ([tmp_path / "build" / "sim"], "b"), ([first, second], "c")):
        done = clean(*paths, "-o", tmp_path / out)
        assert done.returncode == 0, done.stderr
        assert sorted(p.name for p in (tmp_path / out).iterdir()) == sorted([first.name, second.name])
        for opprof in (first, second):
            written = tmp_path / out / opprof.name
            assert {p.name for p in written.iterdir()} == {"trace.clean.json", "trace.clean.html", "instr_metrics.json",
                                                           "raw_simulator"}
            assert f"wrote {written / 'trace.clean.json'} and {written / 'trace.clean.html'} (" in done.stdout
    # one OPPROF dir, as before: straight into -o
    done = clean(first, "-o", tmp_path / "d")
    assert done.returncode == 0 and (tmp_path / "d" / "trace.clean.json").is_file()
    # one bad input among several: one line, nothing written
    bad = container(tmp_path, trace_block([x(ts="late")]), name="bad.bin")
    one_error(clean(tmp_path / "build", bad, "-o", tmp_path / "e"), bad, "has ts \"late\"")
    assert not (tmp_path / "e").exists()


def test_two_loose_files_without_o_would_collide_and_say_so(tmp_path):
    a = container(tmp_path, trace_block([x()]), name="a.bin")
    b = container(tmp_path, trace_block([x()]), name="b.bin")
    done = clean(a, b)
    assert done.returncode == 1 and done.stderr.count("\n") == 1 and "give -o DIR" in done.stderr
    assert clean(a, b, "-o", tmp_path / "o").returncode == 0
    assert (tmp_path / "o" / "a" / "trace.clean.json").is_file() and (tmp_path / "o" / "b" / "trace.clean.json").is_file()


def test_derived_files_are_never_copied_as_raw(seed, tmp_path):
    report = traced(seed, "single_buffer", tmp_path)
    assert clean(report.trace_dir).returncode == 0  # writes beside visualize_data.bin
    assert (report.trace_dir / "simulator" / "trace.clean.json").is_file()
    assert clean(report.trace_dir, "-o", tmp_path / "o").returncode == 0
    assert sorted(p.name for p in (tmp_path / "o" / "raw_simulator").iterdir()) == ["trace.json", "visualize_data.bin"]


# ----------------------------------------------------------------------------- lanes, flows, blocks


def test_more_than_a_hundred_sub_lanes_never_share_a_track(tmp_path):
    staggered = [x(name=f"L{k}", ts=k, dur=1000) for k in range(150)]  # each overlaps all, nests in none
    path = container(tmp_path, trace_block([*staggered, x(name="MOV", ts=5, dur=5, tid="MTE1")]))
    assert clean(path).returncode == 0
    trace = json.loads((tmp_path / "trace.clean.json").read_text())
    tracks = [(e["pid"], e["tid"]) for e in trace["traceEvents"] if e.get("name") == "thread_name"]
    assert len(tracks) == len(set(tracks)) == 151
    names = lanes(trace)
    (mov,) = [e for e in trace["traceEvents"] if e.get("name") == "MOV"]
    assert names[(mov["pid"], mov["tid"])] == "MTE1"
    assert {names[(e["pid"], e["tid"])] for e in trace["traceEvents"] if e.get("name", "").startswith("L")} == \
        {"MTE2"} | {f"MTE2#{k}" for k in range(1, 150)}


def test_two_trace_blocks_are_both_kept(tmp_path):
    path = container(tmp_path,
                     trace_block([{"ph": "M", "name": "process_name", "pid": 0, "args": {"name": "core0.veccore0"}},
                                  x(name="A")]),
                     trace_block([{"ph": "M", "name": "process_name", "pid": 0, "args": {"name": "core0.cubecore0"}},
                                  x(name="B", tid="MTE1")]))
    assert clean(path).returncode == 0
    trace = json.loads((tmp_path / "trace.clean.json").read_text())
    cores = {e["pid"]: e["args"]["name"] for e in trace["traceEvents"] if e.get("name") == "process_name"}
    assert sorted(cores.values()) == ["core0.cubecore0", "core0.veccore0"]  # pid 0 twice, two cores
    placed = {e["name"]: cores[e["pid"]] for e in trace["traceEvents"] if e.get("ph") == "X"}
    assert placed == {"A": "core0.veccore0", "B": "core0.cubecore0"}


def test_keep_scalar_still_drops_the_scalar_units_flag_slices(tmp_path):
    path = container(tmp_path, trace_block([
        x(), x(name="issue TLOAD t", ts=0, dur=2, tid="SCALAR"),
        x(name="issue set_flag(MTE2->VECTOR, 1)", ts=2, dur=2, tid="SCALAR"),
        x(name="issue wait_flag(MTE2->VECTOR, 1)", ts=4, dur=2, tid="SCALAR"),
        x(name="issue BAR", ts=6, dur=1, tid="SCALAR"), x(name="SET_FLAG", ts=7, dur=1)]))
    assert clean(path, "--keep-scalar").returncode == 0
    trace = json.loads((tmp_path / "trace.clean.json").read_text())
    assert sorted(e["name"] for e in trace["traceEvents"] if e.get("ph") == "X") == ["TLOAD", "issue TLOAD t"]


def naive_flows(flags, placed, cores):
    """The definition the fast matching must agree with: a linear scan per flag."""
    by_name = {}
    for (block, pid), name in cores.items():
        by_name.setdefault((block, name), (block, pid))
    waits = {}
    for w in sorted(flags["WAIT_FLAG"], key=lambda f: f["begin"]):
        d = w["detail"]
        waits.setdefault((w["core"], d.get("PIPE"), d.get("TRIGGERPIPE"), d.get("FLAGID")), []).append(w)
    out = []
    for s in sorted(flags["SET_FLAG"], key=lambda f: f["begin"]):
        d = s["detail"]
        target = by_name.get((s["core"][0], d.get("TRIGGERCORE")), s["core"])
        queue = waits.get((target, d.get("PIPE"), d.get("TRIGGERPIPE"), d.get("FLAGID")))
        if not queue:
            continue
        w = queue.pop(0)
        before = [p for p in placed.get((s["core"], cst._lane(d.get("PIPE"))), []) if p[0]["ts"] <= s["begin"]]
        after = [p for p in placed.get((target, cst._lane(d.get("TRIGGERPIPE"))), []) if p[0]["ts"] >= w["end"]]
        if before and after:
            producer = max(before, key=lambda p: p[0]["ts"])
            consumer = min(after, key=lambda p: p[0]["ts"])
            out.append((producer[0]["ts"], producer[2], consumer[0]["ts"], consumer[2]))
    return out


@given(st.lists(st.tuples(st.sampled_from(["MTE2", "VECTOR"]), st.integers(0, 60), st.integers(0, 3)), max_size=25),
       st.lists(st.tuples(st.integers(0, 60), st.integers(0, 60), st.integers(0, 1)), max_size=12))
def test_property_fast_flow_matching_agrees_with_the_linear_scan(slices_, pairs):
    core = (0, 0)
    placed = {}
    for k, (lane, ts, tid) in enumerate(slices_):
        placed.setdefault((core, lane), []).append(({"ts": ts, "k": k}, 0, tid))
    detail = {"PIPE": "MTE2", "TRIGGERPIPE": "VECTOR"}
    flags = {"SET_FLAG": [{"core": core, "begin": b, "detail": {**detail, "FLAGID": str(f)}} for b, _, f in pairs],
             "WAIT_FLAG": [{"core": core, "end": e, "begin": e, "detail": {**detail, "FLAGID": str(f)}}
                           for _, e, f in pairs]}
    arrows, _ = cst._flows(flags, placed, {core: "core0.veccore0"})
    fast = [(s["ts"], s["tid"], f["ts"], f["tid"]) for s, f in zip(arrows[::2], arrows[1::2])]
    assert fast == naive_flows(flags, placed, {core: "core0.veccore0"})


def test_an_empty_trace_gives_a_sensible_page(tmp_path):
    from browser import Elements, dom

    path = container(tmp_path, trace_block([{"ph": "M", "name": "process_name", "pid": 0, "args": {"name": "c"}}]))
    done = clean(path)
    assert done.returncode == 0 and "no instruction slices" in done.stderr
    html = Elements(dom(tmp_path / "trace.clean.html", tmp_path / "profile"))
    (meta,) = [e for e in html.found if e["attrs"].get("id") == "meta"]
    assert meta["text"] == "no instructions in this trace: nothing ran on a pipe lane"
    assert "Infinity" not in meta["text"] and "NaN" not in meta["text"]
