"""The worked examples the documentation points to run, and their numbers hold."""

import importlib.util
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def load(relative: str):
    spec = importlib.util.spec_from_file_location(relative.replace("/", "_").removesuffix(".py"), EXAMPLES / relative)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("platform", ["ref", "a2a3sim", "a5sim"])
def test_split_k_beats_one_task_on_the_chip_and_both_orders_are_close_to_float64(platform, capsys):
    split_k = load("advanced/01_split_k.py")
    results = split_k.main(platform)
    for error, _, _ in results.values():
        assert error < 1e-3  # fp32 inputs, fp32 accumulation over K=4096
    printed = capsys.readouterr().out
    assert "max |error| vs float64" in printed
    assert ("split-K over unsplit" in printed) == (platform != "ref")
    if platform != "ref":
        (_, one, _), (_, chained, _), (_, split, cores) = (results[k] for k in ("unsplit", "split_k_chained", "split_k"))
        assert split < one < chained and cores == split_k.SPLIT + 1  # the zeroing, then a cube core per split


@pytest.mark.parametrize("platform", ["ref", "a2a3sim", "a5sim"])
def test_the_mixed_kernel_example_overlaps_its_cube_and_vector_work(platform, capsys):
    mixed = load("advanced/02_mixed_kernel.py")
    results = mixed.main(platform)
    deep = results.pop("deep")
    assert "reserved by system.reserve_buffer" in deep.message and "pl.cross_core_slot(slot_num=N)" in deep.message
    for _, _, error in results.values():
        assert error < 1e-3
    if platform != "ref":
        staged = results["two scopes"][0]
        one, up_down = results["one scope, NONE, slot_num=2"][0], results["one scope, UP_DOWN, slot_num=2"][0]
        assert up_down < one < staged  # one dispatch; then the epilogue on both vector cores
        assert results["two scopes"][1] == 2 and results["one scope, UP_DOWN, slot_num=2"][1] == 1
    assert "slot_num=64: Vec buffer usage" in capsys.readouterr().out


LEARNING_PATH = ["beginner/01_hello.py", "beginner/02_elementwise.py", "beginner/03_softmax.py",
                 "intermediate/01_layer_norm.py", "intermediate/02_matmul.py", "intermediate/03_attention.py"]


def test_the_learning_path_is_every_beginner_and_intermediate_example():
    found = sorted(str(p.relative_to(EXAMPLES)) for d in ("beginner", "intermediate") for p in (EXAMPLES / d).glob("*.py"))
    assert found == sorted(LEARNING_PATH)


@pytest.mark.parametrize("platform", ["ref", "a2a3sim"])
@pytest.mark.parametrize("example", LEARNING_PATH)
def test_a_learning_example_runs_from_the_command_line_and_prints_its_check_and_kernel_cycles(example, platform,
                                                                                            tmp_path):
    import os
    import re
    import subprocess
    import sys

    env = {**os.environ, "PYTHONPATH": str(EXAMPLES.parent)}
    done = subprocess.run([sys.executable, str(EXAMPLES / example), "-p", platform], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    checks = [line for line in done.stdout.splitlines() if f"on {platform}:" in line]
    assert checks and all("True" in line and "False" not in line for line in checks), done.stdout
    cycles = re.findall(r"kernel cycles:? (\S+)", done.stdout)
    assert cycles
    if platform == "a2a3sim":
        assert all(c.rstrip(";,").isdigit() and int(c.rstrip(";,")) > 0 for c in cycles), done.stdout
    else:
        assert all(c == "not" for c in cycles)  # "not simulated on ref": the interpreter keeps no time


def test_pl_pipeline_beats_one_buffer_in_the_elementwise_example(capsys):
    results = load("beginner/02_elementwise.py").main("a2a3sim")
    assert results["exp_pipelined"][1] < results["exp_one_buffer"][1]
    assert "pl.pipeline takes 0." in capsys.readouterr().out
