"""The op reference comes from the registry: ``help()`` and ``inspect.signature`` of every
``pl.*`` op, and the generated table in docs/ops.md, kept in step here."""

import inspect
import pydoc
from pathlib import Path

import pytest

import pypto.language as pl
from pypto.errors import PyptoError
from pypto.ir.ops.registry import UNIFIED, all_ops, spelled
from pypto.tools import op_table

DOCS = Path(__file__).resolve().parents[1] / "docs" / "ops.md"


def _stand_in(name: str):
    obj = pl
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
    assert op.doc in text and f"pl.{spelled(op.name)}(" in text


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
            assert f"`pl.{spelled(op.name)}(" in DOCS.read_text(encoding="utf-8")
