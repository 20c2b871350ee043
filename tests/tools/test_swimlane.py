"""python -m pypto.tools.swimlane: a run's swimlane records as a chrome trace and a page."""

import json
import subprocess
import sys

import pytest
import torch

import pypto.language as pl
from pypto.cli import main as cli
from pypto.runtime import RunConfig
from pypto.tools import swimlane

R, C = 64, 128


@pl.jit
def chain(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    for i in pl.range(3):
        with pl.at(level=pl.Level.CORE_GROUP):
            pl.store(pl.exp(pl.load(a, [i * R, 0], [R, C])), [i * R, 0], out)
    return out


def _run(tmp_path, **config):
    a, out = torch.randn(3 * R, C), torch.zeros(3 * R, C)
    build = tmp_path / "build"
    report = chain.compile(a, out, config=RunConfig(output_dir=build, **config)).run(a, out)
    return report, build


def _tool(*args):
    return subprocess.run([sys.executable, "-m", "pypto.tools.swimlane", *map(str, args)], capture_output=True,
                          text=True, timeout=120)


def test_the_trace_has_a_slice_per_task_its_pickup_and_an_arrow_per_edge(tmp_path):
    report, build = _run(tmp_path, enable_chip_swimlane=2, enable_dep_gen=True)
    done = _tool(build, "-o", tmp_path / "out")
    assert done.returncode == 0, done.stderr
    data = json.loads((tmp_path / "out" / "swimlane.json").read_text())
    events = data["traceEvents"]
    groups = {e["pid"]: e["args"]["name"] for e in events if e["name"] == "process_name"}
    assert groups == {0: "AIC (cube cores)", 1: "AIV (vector cores)"}
    lanes = [e for e in events if e["name"] == "thread_name"]
    assert len(lanes) == 72 and sum(e["pid"] == 1 for e in lanes) == 48
    tasks = [e for e in events if e["ph"] == "X" and e["name"] != "pickup"]
    assert sorted(e["args"]["task_id"] for e in tasks) == sorted(t.task_id for t in report.tasks)
    assert {e["name"] for e in tasks} == {"chain_incore_0"}  # kernel names from the name map
    pickups = [e for e in events if e["name"] == "pickup"]
    assert len(pickups) == 3 and all(abs(p["dur"] - 0.8) < 0.03 for p in pickups)  # ~0.8 us
    flows = [e for e in events if e["ph"] in "sf"]
    assert len(flows) == 4 and {e["name"] for e in flows} == {"r1t0 -> r1t1", "r1t1 -> r1t2"}
    page = (tmp_path / "out" / "swimlane.html").read_text()
    assert page.startswith("<!doctype html>") and "chain_incore_0" in page


def test_a_records_file_alone_and_a_json_output_path(tmp_path):
    _, build = _run(tmp_path, enable_chip_swimlane=1)
    records = build / "dfx_outputs" / "chip_swimlane_records.json"
    assert swimlane.main([str(records), "-o", str(tmp_path / "t.json")]) == 0
    data = json.loads((tmp_path / "t.json").read_text())
    assert sum(e["ph"] == "X" for e in data["traceEvents"]) == 6  # three tasks and their pickups
    assert (tmp_path / "t.html").is_file()
    # a page's path names the page, its trace beside it, not a directory called "p.html"
    assert swimlane.main([str(records), "-o", str(tmp_path / "p.html")]) == 0
    assert (tmp_path / "p.html").is_file() and json.loads((tmp_path / "p.json").read_text()) == data


def test_each_command_s_usage_names_it_as_it_is_typed(capsys):
    for command in ("swimlane", "memory-map", "ops", "advise", "critical-path"):
        with pytest.raises(SystemExit):
            cli([command, "--help"])
        assert capsys.readouterr().out.startswith(f"usage: pypto {command} "), command


def test_names_from_the_input_are_escaped_in_the_page(tmp_path):
    _, build = _run(tmp_path, enable_chip_swimlane=2, enable_dep_gen=True)
    name_map = build / "dfx_outputs" / "name_map_chain.json"
    data = json.loads(name_map.read_text())
    data["callable_id_to_name"]["0"] = "</script><script>alert(1)</script>"
    name_map.write_text(json.dumps(data))
    assert swimlane.main([str(build), "-o", str(tmp_path / "o")]) == 0
    page = (tmp_path / "o" / "swimlane.html").read_text()
    assert "<script>alert(1)" not in page and "</script><script>" not in page


def test_bad_input_is_one_line_and_a_nonzero_exit(tmp_path):
    cases = {"missing.json": None, "notjson.json": "{", "other.json": '{"x": 1}',
             "badrow.json": json.dumps({"metadata": {"core_types": ["aiv"], "clock_freq_hz": 50},
                                        "aicore_tasks": [[0, 0, 1, "x", 2, 0, 0]]}),
             "badcore.json": json.dumps({"metadata": {"core_types": ["aiv"], "clock_freq_hz": 50},
                                         "aicore_tasks": [[5, 0, 1, 1, 2, 0, 0]]})}
    for name, text in cases.items():
        path = tmp_path / name
        if text is not None:
            path.write_text(text)
        done = _tool(path, "-o", tmp_path / "o")
        assert done.returncode == 1, name
        assert done.stderr.count("\n") == 1 and done.stderr.startswith("error: "), (name, done.stderr)
    empty = tmp_path / "empty_dir"
    empty.mkdir()
    done = _tool(empty, "-o", tmp_path / "o")
    assert done.returncode == 1 and "enable_chip_swimlane" in done.stderr


def test_the_page_draws_a_bar_per_task_on_its_core_and_an_arrow_per_edge(tmp_path):
    from tests.tools.browser import Elements, dom

    report, build = _run(tmp_path, enable_chip_swimlane=2, enable_dep_gen=True)
    data = json.loads((build / "dfx_outputs" / "name_map_chain.json").read_text())
    data["callable_id_to_name"]["0"] = "<img src=x onerror=alert(1)>"
    (build / "dfx_outputs" / "name_map_chain.json").write_text(json.dumps(data))
    assert swimlane.main([str(build), "-o", str(tmp_path / "o")]) == 0
    page = Elements(dom(tmp_path / "o" / "swimlane.html", tmp_path / "profile"))
    bars = [e for e in page.select("div", "slice") if "data-id" in e["attrs"]]
    assert sorted(b["attrs"]["data-id"] for b in bars) == sorted(t.task_id for t in report.tasks)
    assert all(b["attrs"]["title"].startswith("<img src=x onerror=alert(1)> on ") for b in bars)  # text, not markup
    assert {b["text"] for b in bars} <= {"<img src=x onerror=alert(1)>", ""}
    assert not page.select("img")
    lanes = page.select("div", "lane")
    assert [int(e["attrs"]["data-core"]) for e in lanes] == sorted({t.core for t in report.tasks})
    assert {e["attrs"]["data-name"] for e in page.select("line")} == {"r1t0->r1t1", "r1t1->r1t2"}
    assert len(page.select("span", "tick")) >= 3 and len(page.select("div", "k-pickup")) == 3
    assert [e["text"] for e in page.select("div", "group")] == ["AIV (vector cores)"]


def test_malformed_records_and_deps_are_one_line_errors(tmp_path):
    meta = {"core_types": ["aiv"], "clock_freq_hz": 50}
    row = [0, 0, 1, 1, 2, 0, 0]
    cases = {
        "unhashable_type": {"metadata": {"core_types": [["aiv"]], "clock_freq_hz": 50}, "aicore_tasks": [row]},
        "huge_cycle": {"metadata": meta, "aicore_tasks": [[0, 0, 1, 10 ** 400, 2, 0, 0]]},
        "huge_clock": {"metadata": {"core_types": ["aiv"], "clock_freq_hz": 10 ** 400}, "aicore_tasks": [row]},
        "scheduler_int": {"metadata": meta, "aicore_tasks": [row], "scheduler_tasks": {"records": 5}},
    }
    for name, data in cases.items():
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(data))
        done = _tool(path, "-o", tmp_path / "o")
        assert done.returncode == 1 and done.stderr.startswith("error: ") and done.stderr.count("\n") == 1, name
    records = tmp_path / "good.json"
    records.write_text(json.dumps({"metadata": meta, "aicore_tasks": [row]}))
    for name, deps in {"tasks_int": {"tasks": 5}, "kernel_ids_int": {"tasks": [{"task_id": "1", "kernel_ids": 3}]},
                       "pred_infinity": '{"edges": [{"pred": Infinity, "succ": "1"}]}',
                       "deep": "[" * 100000 + "]" * 100000}.items():
        path = tmp_path / f"{name}.deps.json"
        path.write_text(deps if isinstance(deps, str) else json.dumps(deps))
        done = _tool(records, "--deps", path, "-o", tmp_path / "o")
        assert done.returncode in (0, 1) and "Traceback" not in done.stderr, (name, done.stderr[-500:])
        if done.returncode:
            assert done.stderr.startswith("error: ") and done.stderr.count("\n") == 1, name
