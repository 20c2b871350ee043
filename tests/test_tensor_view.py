"""``pl.TensorView`` in a tensor annotation: keywords checked against the shape; a GM tensor's
strides are the torch tensor's own (a strided window is passed as a torch view), and a
declared valid region may name a ``pl.dynamic`` axis nothing binds."""

import pytest
import torch

import pypto.language as pl
from pypto.errors import PyptoError
from pypto.runtime import RunConfig

V = pl.dynamic("V")


@pl.jit
def copy(x: pl.Tensor[[16, 64], pl.FP32, pl.TensorView(stride=[64, 1], layout=pl.TensorLayout.ND,
                                                        valid_shape=[16, V], pad=pl.PadValue.zero)],
         out: pl.Out[pl.Tensor[[16, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        pl.store(pl.load(x, [0, 0], [16, 64]), [0, 0], out)
    return out


@pytest.mark.parametrize("platform", ["ref", "a2a3sim"])
def test_a_view_annotation_takes_a_strided_torch_window(platform):
    big, out = torch.randn(16, 128), torch.zeros(16, 64)
    copy(big[:, 32:96], out, config=RunConfig(platform=platform))
    assert torch.equal(out, big[:, 32:96])


def _kernel(view: str, tmp_path):
    path = tmp_path / "view_kernel.py"
    path.write_text(
        "import pypto.language as pl\n"
        "V = pl.dynamic('V')\n"
        "@pl.jit\n"
        f"def k(x: pl.Tensor[[16, 64], pl.FP32, {view}], out: pl.Out[pl.Tensor[[16, 64], pl.FP32]]):\n"
        "    with pl.at(level=pl.Level.CORE_GROUP):\n"
        "        pl.store(pl.load(x, [0, 0], [16, 64]), [0, 0], out)\n"
        "    return out\n")
    import importlib.util
    spec = importlib.util.spec_from_file_location(f"view_kernel_{abs(hash(view))}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.k, path


@pytest.mark.parametrize("view, message", [
    ("pl.TensorView(valid_shape=[16, 8])", "layout is required when stride, valid_shape, or pad is provided"),
    ("pl.TensorView(layout=pl.TensorLayout.DN)", "a DN tensor layout is not modeled here"),
    ("pl.TensorView(stride=[1024, 1], layout=pl.TensorLayout.ND)", "stride [1024, 1] is not the row-major [64, 1]"),
    ("pl.TensorView(valid_shape=[16, 65], layout=pl.TensorLayout.ND)", "valid extent 65 on axis 1 is outside"),
    ("pl.TensorView(valid_shape=[16], layout=pl.TensorLayout.ND)", "valid_shape has one entry per axis (2)"),
    ("pl.TensorView(strides=[64, 1], layout=pl.TensorLayout.ND)", "Unknown TensorView keyword argument: 'strides'"),
    ("pl.TensorView([64, 1])", "pl.TensorView takes keywords only"),
    ("pl.FP16", "its third entry is a pl.TensorView(...)"),
])
def test_a_bad_view_is_refused_where_it_is_written(view, message, tmp_path):
    k, path = _kernel(view, tmp_path)
    with pytest.raises(PyptoError, match=__import__("re").escape(message)) as info:
        k(torch.zeros(16, 64), torch.zeros(16, 64), config=RunConfig(platform="ref"))
    assert info.value.span.file == str(path) and info.value.span.line == 4


def test_an_empty_view_is_the_tensor(tmp_path):
    k, _ = _kernel("pl.TensorView()", tmp_path)
    x, out = torch.randn(16, 64), torch.zeros(16, 64)
    k(x, out, config=RunConfig(platform="ref"))
    assert torch.equal(out, x)


W = pl.dynamic("W")


@pl.jit
def strided(x: pl.Tensor[[16, W], pl.FP32, pl.TensorView(stride=[1024, 1], layout=pl.TensorLayout.ND)],
            out: pl.Out[pl.Tensor[[16, W], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        pl.store(pl.load(x, [0, 0], [16, W]), [0, 0], out)
    return out


def test_a_view_s_stride_is_checked_in_the_extents_a_call_gives():
    with pytest.raises(PyptoError, match=r"stride \[1024, 1\] is not the row-major \[64, 1\] of \[16, 64\]"):
        strided(torch.zeros(16, 64), torch.zeros(16, 64), config=RunConfig(platform="ref"))
