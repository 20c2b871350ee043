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
from pypto.tools.insight import API_INSTR, SOURCE, TRACE, encode_block, read_blocks


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
    return [(e["ts"], e["ts"] + e["dur"]) for e in trace["traceEvents"]
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
    assert metrics["column_types"]["Cycles"] == "int"


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
    assert (s["ts"], f["ts"], s["name"]) == (30, 90, "MTE2->VECTOR flag3")
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
    (core,) = html.select("section", "core")
    assert core["attrs"]["data-core"] == "core0.veccore0"
    lane_names = [e["attrs"]["data-lane"] for e in html.select("div", "lane")]
    assert [x.split("#")[0] for x in lane_names] == sorted((x.split("#")[0] for x in lane_names),
                                                           key=["MTE2", "VECTOR", "MTE3"].index)
    by_lane = {}
    for s in html.select("div", "slice"):
        by_lane.setdefault(s["attrs"]["data-lane"], []).append((int(s["attrs"]["data-ts"]),
                                                                int(s["attrs"]["data-ts"]) + int(s["attrs"]["data-dur"])))
    for spans in by_lane.values():
        for a0, a1 in spans:
            for b0, b1 in spans:
                if (a0, a1) != (b0, b1):
                    assert a1 <= b0 or b1 <= a0 or (a0 <= b0 and b1 <= a1) or (b0 <= a0 and a1 <= b1)
    flows = html.select("line")
    assert flows and all("flag" in f["attrs"]["data-name"] for f in flows)
    assert screenshot(page, tmp_path / "trace.png", tmp_path / "profile").stat().st_size > 5_000
