"""The golden corpus: a fixed set of kernels — the seed's, the examples', and programs drawn
once from the fuzz families (``tests/golden/generated``, by ``dev/golden_generate.py``) —
whose compiler outputs are kept as files under ``tests/golden/<case>/``: every pass dump,
every ``.pto`` listing, the perf-hint log, and the simulated cycles. A refactor leaves them
byte-identical; a change that means to alter them says so and rewrites them with
``python -m pytest tests/test_golden.py --update-golden``.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import torch

import pypto
from pypto.ir.types import ScalarType, TensorType
from pypto.lang import parse
from pypto.runtime import RunConfig
from pypto.runtime.build_dirs import LEASE
from pypto.runtime.compiled import compile_program
from pypto.sim.ops.numerics import TORCH

ROOT = Path(pypto.__file__).resolve().parent.parent
GOLDEN = Path(__file__).resolve().parent / "golden"
GENERATED = GOLDEN / "generated"


def _config(where: Path, **fields) -> RunConfig:
    return RunConfig(dump_passes=True, output_dir=where, **fields)


def _seed(name: str, planner: str):
    from pypto.demo import KERNELS, ROWS, TC

    kernel = next(k for k in KERNELS if k.__name__ == name)

    def build(where: Path):
        a, out = (torch.arange(ROWS * TC) % 3 - 1).float().reshape(ROWS, TC), torch.zeros(ROWS, TC)
        return kernel.compile(a, out, config=_config(where, memory_planner=planner)), (a, out)

    return build


def _b_trans(name: str):
    def build(where: Path):
        from pypto.examples import b_trans_matmul as bt

        x, w = bt.inputs()
        weight = w.T.contiguous() if name == "matmul_b_trans" else w
        out = torch.zeros(bt.M, bt.N)
        return getattr(bt, name).compile(x, weight, out, config=_config(where)), (x, weight, out)

    return build


def _split_k(name: str):
    def build(where: Path):
        spec = importlib.util.spec_from_file_location("split_k", ROOT / "examples" / "advanced" / "01_split_k.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        g = torch.Generator().manual_seed(0)
        args = (torch.randn(module.M, module.K, generator=g), torch.randn(module.K, module.N, generator=g),
                torch.zeros(module.M, module.N))
        return getattr(module, name).compile(*args, config=_config(where)), args

    return build


def _mixed(mode: str):
    def build(where: Path):
        import pypto.language as pl

        spec = importlib.util.spec_from_file_location("mixed_kernel", ROOT / "examples" / "advanced" / "02_mixed_kernel.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        args = (*module.inputs(), torch.zeros(module.M, module.N))
        return module.bands(getattr(pl.SplitMode, mode), 2).compile(*args, config=_config(where)), args

    return build


def _generated(path: Path):
    def build(where: Path):
        text = path.read_text()
        entry = text.splitlines()[1].removeprefix("# entry: ")
        program = parse(text, str(path.relative_to(ROOT)))
        params = program.function(entry).params
        compiled = compile_program(program, [p.name for p in params], _config(where), write=True)
        args = tuple(torch.zeros(tuple(p.type.shape), dtype=TORCH[p.type.dtype]) if isinstance(p.type, TensorType)
                     else _zero(p.type) for p in params)
        return compiled, args

    return build


def _zero(t: ScalarType):
    return 0.0 if t.dtype.is_float else 0


def cases() -> dict:
    """name -> build(output directory): (CompiledProgram, arguments to run it on)."""
    out = {}
    for name in ("single_buffer", "pipelined", "explicit_slots"):
        for planner in ("PYPTO", "DSA_RP", "PTOAS"):
            out[f"seed_{name}_{planner.lower()}"] = _seed(name, planner)
    for name in ("matmul_b_trans", "matmul_row_major"):
        out[f"example_{name}"] = _b_trans(name)
    for case, name in (("unsplit", "unsplit"), ("chained", "split_k_chained"), ("parallel", "split_k")):
        out[f"split_k_{case}"] = _split_k(name)
    for mode in ("NONE", "UP_DOWN", "LEFT_RIGHT"):
        out[f"mixed_{mode.lower()}"] = _mixed(mode)
    for path in sorted(GENERATED.glob("*.py")):
        out[f"generated_{path.stem}"] = _generated(path)
    return out


def outputs(name: str, build, where: Path) -> dict[str, str]:
    """What the case's compile and run produce, as {relative path: text}, paths under this
    checkout written relative to it (a clone elsewhere gives the same text)."""
    compiled, args = build(where)
    files = {}
    for path in sorted(where.rglob("*")):
        if path.is_file() and path.name != LEASE:  # (the live program's hold on its build, empty)
            files[str(path.relative_to(where))] = path.read_text().replace(str(ROOT) + "/", "")
    report = compiled.run(*args)
    lines = [f"cycles {report.cycles}", f"kernel_cycles {report.kernel_cycles}",
             f"instructions {report.instructions}", f"sync_instructions {report.sync_instructions}"]
    lines += [f"task {t.task_id} {t.kernel} core {t.core} dispatch {t.dispatch} start {t.start} end {t.end} "
              f"finish {t.finish} deps {' '.join(t.deps) or '-'}" for t in report.tasks]
    lines += [f"{core}.{pipe} {cycles}" for core, pipes in sorted(report.pipe_cycles.items())
              for pipe, cycles in sorted(pipes.items())]
    files["sim.txt"] = "\n".join(lines) + "\n"
    return files
