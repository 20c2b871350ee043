"""A kernel reads outside values — module constants, closure values, module attributes, the
kernels and inline helpers it calls — when it is compiled. Rebinding one afterwards (a
notebook cell run again) makes the next call, ``compile()`` or ``lower()`` build it again
from the new value, on every platform; a call with nothing changed reuses what was built."""

import importlib.util
import sys
import textwrap

import pytest
import torch

from pypto.runtime import RunConfig

PLATFORMS = ("ref", "a2a3sim")

HEAD = """\
import pypto.language as pl
"""

BODY = """
@pl.jit
def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [16, 64])
        pl.store({expr}, [0, 0], out)
    return out
"""


def load(tmp_path, text: str, name: str = "kmod"):
    """``text`` as a module of its own (a file, so the front end reads its source)."""
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(text))
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(autouse=True)
def _forget_modules():
    yield
    for name in ("kmod", "kcfg", "khelp"):
        sys.modules.pop(name, None)


def run(kernel, platform, a=None):
    a = torch.ones(16, 64) if a is None else a
    out = torch.zeros(16, 64)
    kernel(a, out, config=RunConfig(platform=platform))
    return out


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_rebound_module_constant_is_read_again(tmp_path, platform):
    m = load(tmp_path, HEAD + "SCALE = 2.0\n" + BODY.format(expr="pl.mul(t, SCALE)"))
    assert torch.all(run(m.k, platform) == 2.0)
    m.SCALE = 3.0
    assert torch.all(run(m.k, platform) == 3.0)
    m.SCALE = 3  # an int is another constant than the float 3.0, converted the same way here
    assert torch.all(run(m.k, platform) == 3.0)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_rebound_closure_value_is_read_again(tmp_path, platform):
    m = load(tmp_path, HEAD + """
def make():
    scale = 2.0

    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(a, [0, 0], [16, 64])
            pl.store(pl.mul(t, scale), [0, 0], out)
        return out

    def set_scale(value):
        nonlocal scale
        scale = value

    return k, set_scale
""")
    k, set_scale = m.make()
    assert torch.all(run(k, platform) == 2.0)
    set_scale(5.0)
    assert torch.all(run(k, platform) == 5.0)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_rebound_module_attribute_is_read_again(tmp_path, platform):
    cfg = load(tmp_path, "SCALE = 2.0\n", "kcfg")
    m = load(tmp_path, HEAD + "import kcfg\n" + BODY.format(expr="pl.mul(t, kcfg.SCALE)"))
    assert torch.all(run(m.k, platform) == 2.0)
    cfg.SCALE = 7.0
    assert torch.all(run(m.k, platform) == 7.0)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_list_changed_in_place_is_a_change(tmp_path, platform):
    m = load(tmp_path, HEAD + """
START = [0, 0]

@pl.jit
def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, START, [16, 64])
        pl.store(t, [0, 0], out)
    return out
""")
    a = torch.arange(32 * 64, dtype=torch.float32).reshape(32, 64)
    assert torch.equal(run(m.k, platform, a), a[:16])
    m.START[0] = 16
    assert torch.equal(run(m.k, platform, a), a[16:])


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_rebound_dtype_and_shape_constant_are_read_again(tmp_path, platform):
    m = load(tmp_path, HEAD + """
DT = pl.FP16
ROWS = 16

@pl.jit
def k(a: pl.Tensor[[ROWS, 64], pl.FP32], out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [16, 64])
        pl.store(pl.cast(pl.cast(t, target_type=DT), target_type=pl.FP32), [0, 0], out)
    return out
""")
    a = torch.full((16, 64), 1.0 + 2.0 ** -12)
    assert torch.all(run(m.k, platform, a) == 1.0)  # rounded through fp16
    m.DT = m.pl.BF16
    assert torch.all(run(m.k, platform, a) == 1.0)
    m.DT = m.pl.FP32
    assert torch.all(run(m.k, platform, a) == 1.0 + 2.0 ** -12)
    m.ROWS = 32  # the annotation now asks for 32 rows: the 16-row argument is refused
    from pypto.errors import PyptoError

    with pytest.raises(PyptoError, match="32"):
        run(m.k, platform, a)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_rebound_helper_and_a_helpers_own_constant_are_read_again(tmp_path, platform):
    load(tmp_path, HEAD + """
SHIFT = 1.0

@pl.jit.inline
def bump(t):
    return pl.add(t, SHIFT)

@pl.jit.inline
def double(t):
    return pl.mul(t, 2.0)
""", "khelp")
    m = load(tmp_path, HEAD + "import khelp\nhelper = khelp.bump\n" + BODY.format(expr="helper(t)"))
    assert torch.all(run(m.k, platform) == 2.0)
    sys.modules["khelp"].SHIFT = 10.0  # read by the helper, in the helper's module
    assert torch.all(run(m.k, platform) == 11.0)
    m.helper = sys.modules["khelp"].double
    assert torch.all(run(m.k, platform) == 2.0)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_called_kernels_constant_is_read_again(tmp_path, platform):
    m = load(tmp_path, HEAD + """
SCALE = 2.0

@pl.jit.incore
def body(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    t = pl.load(a, [0, 0], [16, 64])
    pl.store(pl.mul(t, SCALE), [0, 0], out)
    return out

@pl.jit
def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    out = body(a, out)
    return out
""")
    assert torch.all(run(m.k, platform) == 2.0)
    m.SCALE = -1.0
    assert torch.all(run(m.k, platform) == -1.0)


def test_compile_and_lower_see_the_new_value_and_reuse_an_unchanged_build(tmp_path):
    m = load(tmp_path, HEAD + "SCALE = 2.0\n" + BODY.format(expr="pl.mul(t, SCALE)"))
    a, out = torch.ones(16, 64), torch.zeros(16, 64)
    config = RunConfig(output_dir=str(tmp_path / "build"))
    first = m.k.compile(a, out, config=config)
    assert m.k.compile(a, out, config=config) is first
    m.SCALE = 2.0  # the same value, bound again: nothing to build
    assert m.k.compile(a, out, config=config) is first
    m.SCALE = -0.0
    second = m.k.compile(a, out, config=config)
    assert second is not first
    assert "-0.0" in m.k.lower(a, out).as_python()
    m.SCALE = 0.0  # +0.0 is not -0.0: it multiplies to other bits
    third = m.k.compile(a, out, config=config)
    assert third is not second
    second.run(-a, out)
    assert not torch.any(torch.signbit(out))  # -1 * -0.0
    third.run(-a, out)
    assert torch.all(torch.signbit(out))  # -1 * +0.0


def test_a_rebuild_is_logged_with_the_change(tmp_path, capsys):
    import pypto

    m = load(tmp_path, HEAD + "SCALE = 2.0\n" + BODY.format(expr="pl.mul(t, SCALE)"))
    run(m.k, "ref")
    m.SCALE = 4.5
    before = pypto.get_log_level()
    pypto.set_log_level("debug")
    try:
        capsys.readouterr()
        run(m.k, "ref")
    finally:
        pypto.set_log_level(before)
    assert "k: built again, 'SCALE' changed from 2.0 to 4.5" in capsys.readouterr().err
