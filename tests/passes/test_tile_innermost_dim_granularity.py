import torch

import pypto.language as pl
from pypto.runtime import RunConfig


def narrow_kernel(cols):
    @pl.jit
    def narrow(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            for i in pl.pipeline(4, stage=2):
                t = pl.load(a, [i * 16, 0], [16, COLS], target_memory=pl.Mem.Vec)  # the load under test
                pl.store(t, [i * 16, 0], out)
        return out

    narrow.fn.__globals__["COLS"] = cols
    return narrow


def _where(marker: str) -> str:
    """line:col of the statement on the line carrying ``marker``."""
    import inspect

    lines, start = inspect.getsourcelines(narrow_kernel)
    i, text = next((i, text) for i, text in enumerate(lines) if marker in text)
    return f"{start + i}:{len(text) - len(text.lstrip()) + 1}"


def test_a_16_element_fp32_load_gets_ph001_at_the_users_line(tmp_path):
    kernel = narrow_kernel(16)
    compiled = kernel.compile(torch.randn(64, 16), torch.zeros(64, 16), config=RunConfig(output_dir=tmp_path))
    load, store = compiled.perf_hints
    assert load.line() == (
        "[perf_hint PH001] TileInnermostDimGranularity: tile.load has innermost dim = 64B (tile fp32[16], "
        "target_memory=Vec); moves 1024B as 16 x 64B rows; recommended >= 512B for backend a2a3 (L2 cache line = "
        "512B). Consider increasing tile shape on the innermost axis. (2 occurrences at this source location) "
        f"at {__file__}:{_where('the load under test')}")
    assert store.message.startswith("tile.store has innermost dim = 64B")
    log = (tmp_path / "report" / "perf_hints.log").read_text().splitlines()
    assert log == [load.line(), store.line()]


def test_disabled_diagnostics_removes_it_by_name_or_code(tmp_path):
    kernel = narrow_kernel(16)
    for name in ("PH001", "TileInnermostDimGranularity"):
        compiled = kernel.compile(torch.randn(64, 16), torch.zeros(64, 16),
                                  config=RunConfig(output_dir=tmp_path / name, disabled_diagnostics=[name]))
        assert compiled.perf_hints == ()
        assert (tmp_path / name / "report" / "perf_hints.log").read_text() == ""


def test_a_128_element_fp32_load_gets_none():
    kernel = narrow_kernel(128)
    assert kernel.compile(torch.randn(64, 128), torch.zeros(64, 128)).perf_hints == ()


def test_mat_loads_count_the_rows_they_move():
    @pl.jit
    def weights(w: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            b = pl.load(w, [0, 0], [1024, 64], target_memory=pl.Mem.Mat)
            pl.store(pl.load(w, [0, 0], [1, 256]), [0, 0], out)
        return out

    hints = weights.compile(torch.randn(1024, 256).half(), torch.zeros(1, 256).half()).perf_hints
    (mat,) = [h for h in hints if "target_memory=Mat" in h.message]
    assert "tile.load has innermost dim = 128B (tile fp16[64], target_memory=Mat); moves 131072B as 1024 x 128B rows" \
        in mat.message
