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
