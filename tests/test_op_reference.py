"""The op reference comes from the registry: ``help()`` and ``inspect.signature`` of every
``pl.*`` op, and the generated table in docs/ops.md, kept in step here."""

import inspect
import pydoc
from pathlib import Path

import pytest

import pypto.language as pl
import pypto.language.distributed  # noqa: F401  (pl.distributed: the pld ops)
from pypto.errors import PyptoError
from pypto.ir.ops.registry import UNIFIED, all_ops, lookup, spelled
from pypto.tools import op_table

DOCS = Path(__file__).resolve().parents[1] / "docs" / "ops.md"


def _stand_in(name: str):
    obj = pl.distributed if lookup(name).module else pl  # (pld: pypto.language.distributed)
    for part in spelled(name).split("."):
        obj = getattr(obj, part)
    return obj


@pytest.mark.parametrize("op", [op for op in all_ops() if op.name.split(".")[0] in ("tile", "tensor", "system", "array")],
                         ids=lambda op: op.name)
def test_every_op_s_signature_and_help_are_its_registry_entry(op):
    fn = _stand_in(op.name)
    sig = inspect.signature(fn)
    assert list(sig.parameters) == [p.name for p in op.params]
    for p in op.params:
        assert (sig.parameters[p.name].default is inspect.Parameter.empty) == p.required
    text = pydoc.render_doc(fn, renderer=pydoc.plaintext)
    assert op.doc in text and f"pl.{op.module}{spelled(op.name)}(" in text


def test_a_unified_name_documents_each_form_it_picks():
    text = pydoc.render_doc(pl.add, renderer=pydoc.plaintext)
    for form in ("pl.tile.add(", "pl.tile.adds(", "pl.tensor.add(", "pl.tensor.adds("):
        assert form in text
    assert "'lhs' must be in Vec" in text
    sig = inspect.signature(pl.matmul)
    assert list(sig.parameters)[:5] == ["lhs", "rhs", "out_dtype", "a_trans", "b_trans"]
    assert sig.parameters["lhs"].annotation == "Tile | Tensor"
    assert repr(sig.parameters["out_dtype"].default) == "None"
    assert repr(inspect.signature(pl.load).parameters["target_memory"].default) == "pl.Mem.Vec"
    assert "'lhs' must be in Left" in pl.tile.matmul.__doc__ and "MMAD" in pl.tile.matmul.__doc__
    assert set(UNIFIED) <= set(dir(pl))
    exp = inspect.signature(pl.exp)  # the forms name their operand tile / x: positional, one of them
    assert [p.kind for p in exp.parameters.values()] == [inspect.Parameter.POSITIONAL_ONLY]
    exp.bind(object())
    inspect.signature(pl.cast).bind(object(), pl.FP16)


def test_namespaces_list_their_ops_and_names_still_refuse_to_run():
    assert {"load", "and_", "batch_matmul", "MaskPattern", "create_tile", "min"} <= set(dir(pl.tile))
    assert {"dim", "create_tensor"} <= set(dir(pl.tensor)) and "tpush_to_aic" in dir(pl.system)
    assert "matmul" in dir(pl.tensor)
    with pytest.raises(PyptoError, match=r"pl.tile.load is part of the kernel language"):
        pl.tile.load(None, [0], [1])
    with pytest.raises(PyptoError, match=r"pl.add is part of the kernel language"):
        pl.add(1, 2)
    assert pl.tile.create_tile.__pypto_path__ == ("tile", "create_tile")  # another spelling, documented as its op
    assert pl.tile.create_tile.__doc__ == pl.tile.create.__doc__


def test_the_docs_table_is_the_registry_s(tmp_path, capsys):
    assert DOCS.read_text(encoding="utf-8") == op_table.table(), \
        "regenerate it: python -m pypto.tools.op_table -o docs/ops.md"
    assert op_table.main(["--check", str(DOCS)]) == 0
    stale = tmp_path / "ops.md"
    stale.write_text(op_table.table().replace("| `pl.tile.load(", "| `pl.tile.loaded("), encoding="utf-8")
    assert op_table.main(["--check", str(stale)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "out of date" in err[0]
    for op in all_ops():
        if op.name.startswith(("tile.", "tensor.")):
            assert f"`pl.{op.module}{spelled(op.name)}(" in DOCS.read_text(encoding="utf-8")


def test_gather_and_scatter_name_their_positions_per_form_and_list_the_forms():
    """Their tile and tensor forms take different things at one position (a Tile of
    indices, an int dim): the signature names each position for both, and help() opens
    with the four calls, each with the op it is."""
    gather = inspect.signature(pl.gather)
    assert list(gather.parameters) == ["src_or_input", "indices_or_dim", "tmp_or_index", "mask_pattern", "output_dtype"]
    assert gather.parameters["indices_or_dim"].annotation == "Tile | int"
    assert [p.kind.name for p in gather.parameters.values()] == ["POSITIONAL_ONLY"] * 3 + ["KEYWORD_ONLY"] * 2
    x, i, t = object(), object(), object()
    for args, kwargs in (((x, i, t), {}), ((x, -1, i), {}), ((x,), {"mask_pattern": 1}),
                         ((x,), {"mask_pattern": 1, "output_dtype": pl.UINT32})):
        gather.bind(*args, **kwargs)
    with pytest.raises(TypeError):
        gather.bind(x, dim=-1, index=i)  # the tensor form's names are positions here
    scatter = inspect.signature(pl.scatter)
    assert list(scatter.parameters) == ["dst_or_input", "src_or_dim", "indexes_or_index", "src", "mask_pattern", "dst"]
    scatter.bind(x, -1, i, t)
    scatter.bind(x, mask_pattern=1, dst=t)
    text = pydoc.render_doc(pl.gather, renderer=pydoc.plaintext)
    calls = [line.strip() for line in text.splitlines() if line.strip().startswith("pl.gather(")]
    assert calls == [
        "pl.gather(src: 'Tile', indices: 'Tile', tmp: 'Tile')                                    is pl.tile.gather",
        "pl.gather(src: 'Tile', *, mask_pattern: 'int', output_dtype: 'pl.DataType' = None)      is "
        "pl.tile.gather_mask",
        "pl.gather(input: 'Tensor', dim: 'int', index: 'Tensor')                                 is pl.tensor.gather",
        "pl.gather(input: 'Tensor', *, mask_pattern: 'int', output_dtype: 'pl.DataType' = None)  is "
        "pl.tensor.gather_mask"]
    assert "('...' in the signature: a parameter only some of these forms take.)" in text
    assert "With Tensor operands and mask_pattern=:" in text and "VGATHERM" in text


@pytest.mark.parametrize("name", sorted(UNIFIED))
def test_every_form_of_a_unified_name_is_a_call_its_signature_takes(name):
    from pypto.lang.vocabulary.op_reference import forms, keyword_forms

    unified = inspect.signature(getattr(pl, name))
    picks = [(op, None) for _, op in forms(name)] + [(op, key) for _, op, key in keyword_forms(name)]
    for op, key in picks:
        own = inspect.signature(_stand_in(op.name)).parameters.values()
        names = [p.name for p in own]
        by_position = [p for p in own if p.default is p.empty and p.kind is not p.KEYWORD_ONLY
                       and (key is None or names.index(p.name) < names.index(key))]
        by_name = {p.name: object() for p in own if p.default is p.empty and p not in by_position}
        unified.bind(*(object() for _ in by_position), **by_name)
