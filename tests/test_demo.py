"""What the demo says besides its kernels' results: the shape and tiles, what the planner's
name means, why busy cycles do not add up to the total, the roofline at the SoC table's GM
bandwidth, and microseconds at its clock — each figure checked against the table and the
run, not just present."""

import re

from pypto import demo
from pypto.backend import backend

SOC = backend("a2a3")


def run(capsys, tmp_path, *args) -> list[str]:
    assert demo.main(["-o", str(tmp_path / "builds"), *args]) == 0
    return capsys.readouterr().out.splitlines()


def test_the_demo_puts_its_cycles_in_context(capsys, tmp_path):
    lines = run(capsys, tmp_path)
    assert lines[0].startswith("exp of a [512, 128] fp32 tensor in 8 tiles of [64, 128] (32 KiB each)")
    assert "(a2a3sim, 1.8 GHz)" in lines[0] and SOC.chip.core_hz == 1_800_000_000
    assert lines[1].startswith("memory planner PYPTO: this compiler gives each tile an address")
    took, busy = {}, {}
    for name in ("single_buffer", "pipelined", "explicit_slots"):
        line = next(x for x in lines if x.startswith(name))
        m = re.search(r"; (\d+) cycles = ([\d.]+) µs \(busy: MTE2 (\d+), MTE3 (\d+), VECTOR (\d+)\)", line)
        cycles = int(m.group(1))
        assert float(m.group(2)) == round(cycles / SOC.chip.core_hz * 1e6, 2)
        took[name], busy[name] = cycles, sum(int(g) for g in m.groups()[2:])
    text = "\n".join(lines)
    # under the total where the pipes wait (no overlap), over it where they overlap
    assert busy["single_buffer"] < took["single_buffer"] and busy["pipelined"] > took["pipelined"]
    assert f"(single_buffer: {busy['single_buffer']} in {took['single_buffer']})" in text
    assert f"(pipelined: {busy['pipelined']} in {took['pipelined']})" in text
    bound = 512 * 128 * 4 // SOC.costs.gm_bytes_per_cycle  # in by MTE2, out by MTE3 at once
    assert f"at {SOC.costs.gm_bytes_per_cycle} B/cycle a pipe (a2a3 GM) need {bound} cycles" in text
    ratios = ", ".join(f"{c} ({c / bound:.1f} x)" for c in took.values())
    assert f"took {ratios}; the busiest pipe, VECTOR, works" in text
    assert all(c >= bound for c in took.values())


def test_on_ref_the_demo_says_where_it_ran_and_claims_no_cycles(capsys, tmp_path):
    lines = run(capsys, tmp_path, "--platform", "ref", "--planner", "PTOAS")
    assert "on the reference interpreter (ref)" in lines[0]
    assert lines[1].startswith("memory planner PTOAS: the assembler places the tiles")
    assert not any(x.startswith(("roofline", "busy")) or "cycles =" in x for x in lines)
