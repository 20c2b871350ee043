"""Every mistake at a kernel call names the user's call: the argument where it is written
(its position or keyword), ``config=`` for a bad config, the ``RunConfig(...)`` line for a
bad field — through ``kernel(...)``, ``.compile``, ``.lower``, ``.specialize`` and
``CompiledProgram.run`` / ``__call__`` alike."""

import numpy as np
import pytest
import torch

import pypto.language as pl
from pypto.errors import ConfigError, PyptoError, SpecializationError
from pypto.runtime import RunConfig

REF = RunConfig(platform="ref")


def where(marker: str, token: str) -> tuple:
    """(line, col) of ``token`` on the line holding ``marker`` in this file."""
    with open(__file__) as f:
        lines = f.read().splitlines()
    number = next(k for k, text in enumerate(lines, 1) if marker in text and "where(" not in text)
    return number, lines[number - 1].index(token) + 1


def assert_at(err: PyptoError, marker: str, token: str) -> None:
    line, col = where(marker, token)
    assert err.span is not None, err
    assert (err.span.file, err.span.line, err.span.col) == (__file__, line, col), (err.span, line, col)
    text = str(err)
    assert f"{__file__}:{line}:{col}" in text and marker in text  # the line is quoted


@pl.jit
def copy(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        pl.store(pl.load(a, [0, 0], [16, 128]), [0, 0], out)
    return out


@pl.jit
def loop_n(a: pl.Tensor, out: pl.Out[pl.Tensor], n: pl.Scalar[pl.INT32]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(n):
            pl.store(pl.load(a, [i * 16, 0], [16, 128]), [i * 16, 0], out)
    return out


BAD = {
    "numpy": (lambda: np.zeros((64, 128), np.float32), "is a ndarray; kernels take torch tensors", "from_numpy"),
    "float64": (lambda: torch.zeros(64, 128, dtype=torch.float64), "unsupported torch dtype torch.float64", ".float()"),
    "meta": (lambda: torch.zeros(64, 128, device="meta"), "is on meta", "no data"),
    "list": (lambda: [[0.0] * 128] * 64, "is a list", "torch.tensor"),
}


@pytest.mark.parametrize("kind", BAD)
@pytest.mark.parametrize("entry", ["call", "compile", "lower", "specialize", "run", "compiled-call", "keyword"])
def test_a_bad_argument_is_reported_where_it_is_passed(kind, entry):
    make, message, hint = BAD[kind]
    bad, out = make(), torch.zeros(64, 128)
    compiled = copy.compile(torch.zeros(64, 128), out, config=REF)
    calls = {
        "call": lambda: copy(bad, out, config=REF),  # MARK-call
        "compile": lambda: copy.compile(bad, out, config=REF),  # MARK-compile
        "lower": lambda: copy.lower(bad, out, config=REF),  # MARK-lower
        "specialize": lambda: copy.specialize(bad, out),  # MARK-specialize
        "run": lambda: compiled.run(bad, out),  # MARK-run
        "compiled-call": lambda: compiled(bad, out),  # MARK-compiled-call
        "keyword": lambda: copy(out=out, a=bad, config=REF),  # MARK-keyword
    }
    with pytest.raises(SpecializationError, match=message) as info:
        calls[entry]()
    assert_at(info.value, f"MARK-{entry}", "a=bad" if entry == "keyword" else "bad")
    assert hint in info.value.hint


@pytest.mark.parametrize("entry", ["call", "run"])
def test_an_int_outside_the_scalars_dtype_is_reported_where_it_is_passed(entry):
    a, out = torch.zeros(64, 128), torch.zeros(64, 128)
    message = r"argument 'n' is 1099511627776, which does not fit .* INT32"
    with pytest.raises(SpecializationError, match=message) as info:
        if entry == "call":
            loop_n(a, out, 2 ** 40, config=REF)  # MARK-int-call
        else:
            loop_n.compile(a, out, 2, config=REF).run(a, out, 2 ** 40)  # MARK-int-run
    assert_at(info.value, f"MARK-int-{entry}", "2 ** 40")


def test_a_float_for_an_integer_scalar_at_run_is_refused():
    a, out = torch.zeros(64, 128), torch.zeros(64, 128)
    compiled = loop_n.compile(a, out, 2, config=REF)
    with pytest.raises(SpecializationError, match="argument 'n' is 2.5, but its parameter is a INT32 scalar") as info:
        compiled.run(a, out, 2.5)  # MARK-float
    assert_at(info.value, "MARK-float", "2.5")


def test_a_multi_line_call_points_at_the_arguments_own_line():
    out = torch.zeros(64, 128)
    with pytest.raises(SpecializationError, match="is a ndarray") as info:
        copy(
            np.zeros((64, 128), np.float32),  # MARK-multiline
            out,
            config=REF,
        )
    assert_at(info.value, "MARK-multiline", "np.zeros")


def test_run_checks_what_the_program_was_compiled_for():
    a, out = torch.zeros(64, 128), torch.zeros(64, 128)
    compiled = copy.compile(a, out, config=REF)
    with pytest.raises(SpecializationError, match=r"'copy' was compiled for 2 arguments \(a, out\), got 1") as info:
        compiled.run(a)  # MARK-arity
    assert_at(info.value, "MARK-arity", "compiled.run(a)")
    with pytest.raises(SpecializationError, match=r"argument 'a' is Tensor\[32x128 fp32\], but this program was "
                                                  r"compiled for Tensor\[64x128 fp32\]") as info:
        compiled.run(torch.zeros(32, 128), out)  # MARK-shape
    assert_at(info.value, "MARK-shape", "torch.zeros(32")
    with pytest.raises(SpecializationError, match=r"argument 'out' is Tensor\[64x128 fp16\]") as info:
        compiled(a, out.half())  # MARK-dtype
    assert_at(info.value, "MARK-dtype", "out.half()")


def test_a_declared_shape_mismatch_names_the_declaration_and_the_call():
    @pl.jit
    def fixed(a: pl.Tensor[[64, 128], pl.FP32], out: pl.Out[pl.Tensor]):  # MARK-declared
        return out

    with pytest.raises(SpecializationError, match="but the kernel declares") as info:
        fixed(torch.zeros(32, 128), torch.zeros(64, 128), config=REF)  # MARK-mismatch
    assert_at(info.value, "MARK-declared", "pl.Tensor[")
    line, _ = where("MARK-mismatch", "fixed(")
    assert f"in the call at {__file__}:{line}:" in str(info.value)


# ----------------------------------------------------------------------------- config


@pytest.mark.parametrize("entry", ["call", "compile", "lower"])
@pytest.mark.parametrize("value, message", [
    ("ref", "config='ref' is not a RunConfig"),
    ({"platfrom": "ref"}, "config has no field 'platfrom'"),
    ({"platform": "cuda"}, "Invalid platform 'cuda'"),
    (42, "config=42 is not a RunConfig"),
])
def test_a_bad_config_is_reported_at_config(entry, value, message):
    a, out = torch.zeros(64, 128), torch.zeros(64, 128)
    calls = {
        "call": lambda: copy(a, out, config=value),  # MARK-cfg-call
        "compile": lambda: copy.compile(a, out, config=value),  # MARK-cfg-compile
        "lower": lambda: copy.lower(a, out, config=value),  # MARK-cfg-lower
    }
    with pytest.raises(ConfigError, match=message) as info:
        calls[entry]()
    assert_at(info.value, f"MARK-cfg-{entry}", "config=")


@pytest.mark.parametrize("build, message, token", [
    (lambda: RunConfig(platform="cuda"), "Invalid platform 'cuda'", "platform="),  # MARK-rc-platform
    (lambda: RunConfig(platfrom="ref"), "config has no field 'platfrom'", "platfrom="),  # MARK-rc-typo
    (lambda: RunConfig("ref"), "RunConfig takes its fields by name", "RunConfig("),  # MARK-rc-positional
    (lambda: RunConfig(memory_planner="LINEAR"), "unknown memory_planner", "memory_planner="),  # MARK-rc-planner
    (lambda: RunConfig(disabled_diagnostics=5), "is not a list of check names", "disabled_"),  # MARK-rc-disabled
    (lambda: RunConfig(output_dir=3), "output_dir=3 is not a path", "output_dir="),  # MARK-rc-output
    (lambda: RunConfig(enable_l0_trace="yes"), "enable_l0_trace='yes' is not a bool", "enable_"),  # MARK-rc-flag
], ids=["platform", "typo", "positional", "planner", "disabled", "output", "flag"])
def test_a_bad_run_config_field_is_reported_where_it_is_written(build, message, token):
    with pytest.raises(ConfigError, match=message) as info:
        build()
    marker = next(m for m in ("platform", "typo", "positional", "planner", "disabled", "output", "flag")
                  if f"MARK-rc-{m}" in str(info.value))
    assert_at(info.value, f"MARK-rc-{marker}", token)


def test_a_run_config_built_inside_the_call_points_at_its_field():
    with pytest.raises(ConfigError, match="Invalid platform 'cuda'") as info:
        copy(torch.zeros(64, 128), torch.zeros(64, 128), config=RunConfig(platform="cuda"))  # MARK-inline-rc
    assert_at(info.value, "MARK-inline-rc", "platform=")


def test_good_configs_still_compare_and_hash_alike():
    assert RunConfig(platform="ref") == RunConfig(platform="ref") == REF
    assert hash(RunConfig(disabled_diagnostics="PH001")) == hash(RunConfig(disabled_diagnostics=("PH001",)))
    a, out = torch.randn(64, 128), torch.zeros(64, 128)
    copy(a, out, config={"platform": "ref"})
    assert torch.equal(out[:16], a[:16])


def test_every_run_config_field_is_checked_by_name():
    import dataclasses

    defaults = RunConfig()
    assert RunConfig(**{f.name: getattr(defaults, f.name) for f in dataclasses.fields(RunConfig)}) == defaults
