"""``pl.TensorView(stride=, layout=, valid_shape=, pad=)``, the third entry of a
``pl.Tensor[...]`` annotation, checked against the tensor's shape (in the extents a call
gives its ``pl.dynamic`` axes). A mixin of the annotation reader."""

from __future__ import annotations

import ast

from pypto.errors import TypeCheckError, UnsupportedSyntaxError
from pypto.ir.types import DataType, PadValue, TensorLayout
from pypto.lang.vocabulary import names as N


class TensorViews:
    def _mx_layout(self, node, layout, shape, dtype) -> None:
        """``pl.MX_A_ZZ`` / ``pl.MX_B_NN``: an MX scale tensor, E8M0 (or its bytes, UINT8) in
        the packing the hardware's scale buffers read (its tiles keep that packing; the MX
        matmul reads them so), whole bands of 16 by pairs of K groups."""
        if dtype not in (DataType.FP8E8M0, DataType.UINT8):
            raise self.error(TypeCheckError, node, f"pl.{layout.name} tags an MX scale tensor, of pl.FP8E8M0 (or "
                             f"pl.UINT8) scales, not pl.{dtype.name}", hint=f"pl.Tensor[[m, k // 32], pl.FP8E8M0, "
                                                                             f"pl.{layout.name}]")
        extents = list(self.static_dims(shape, "a tensor shape"))
        groups, band = (extents + [0, 0])[1::-1] if layout is TensorLayout.MX_A_ZZ else (extents + [0, 0])[:2]
        if len(extents) != 2 or groups % 2 or band % 16:
            raise self.error(TypeCheckError, node, f"an MX scale tensor in pl.{layout.name} is 2D with an even number "
                             f"of K groups and a multiple of 16 {'rows' if layout is TensorLayout.MX_A_ZZ else 'columns'}"
                             f", not {extents}", hint="K a multiple of 64 and M (N) of 16")
        return layout

    def _tensor_view(self, node, shape, dtype=None) -> TensorLayout | None:
        """``pl.TensorView(stride=, layout=, valid_shape=, pad=)``, checked against the shape;
        the MX scale layout a bare ``pl.MX_A_ZZ`` / ``pl.MX_B_NN`` names (the tensor's type
        carries it), else None.
        A GM tensor here is the torch tensor a call passes: its strides are the tensor's own
        (a strided window is passed as a torch view), so a view declares the row-major ones;
        the valid region and pad it declares describe what its producer fills, and each load
        says its own (``valid_shape=``), so they change nothing else here."""
        head = node.func if isinstance(node, ast.Call) else node
        _, meaning = self.entity(head)
        if isinstance(meaning, N.Value) and meaning.value in (TensorLayout.MX_A_ZZ, TensorLayout.MX_B_NN):
            return self._mx_layout(node, meaning.value, shape, dtype)
        if not (isinstance(node, ast.Call) and isinstance(meaning, N.TypeCtor) and meaning.name == "TensorView"):
            raise self.error(TypeCheckError, node, f"'{ast.unparse(node)}' does not belong in pl.Tensor[...]: its third "
                             "entry is a pl.TensorView(...)", hint="pl.Tensor[[16, 64], pl.FP32, "
                                                                   "pl.TensorView(valid_shape=[16, n], layout=pl.TensorLayout.ND)]")
        if node.args:
            raise self.error(TypeCheckError, node, "pl.TensorView takes keywords only",
                             hint="pl.TensorView(stride=[64, 1], layout=pl.TensorLayout.ND)")
        kw = {}
        for k in node.keywords:
            if k.arg not in ("stride", "layout", "valid_shape", "pad"):
                raise self.error(TypeCheckError, k, f"Unknown TensorView keyword argument: {k.arg!r}",
                                 hint="Supported: valid_shape, stride, layout, pad")
            kw[k.arg] = k.value
        if "layout" not in kw:
            if kw:
                raise self.error(TypeCheckError, node, "layout is required when stride, valid_shape, or pad is provided",
                                 hint="add layout=pl.TensorLayout.ND")
            return
        layout = self.static_of(kw["layout"], TensorLayout, "a tensor layout")
        if layout is not TensorLayout.ND:
            raise self.error(UnsupportedSyntaxError, kw["layout"], f"a {layout.name} tensor layout is not modeled here: "
                             "GM tensors are row-major (ND)",
                             hint="for a transposed matmul operand pass b_trans=True, or pl.transpose the tensor")
        dims = shape.elts if isinstance(shape, (ast.List, ast.Tuple)) else None
        extents = [self._extent(d) for d in dims] if dims is not None else list(self.static_dims(shape, "a tensor shape"))
        rank = len(extents)
        for name in ("stride", "valid_shape"):
            if name in kw and (not isinstance(kw[name], (ast.List, ast.Tuple)) or len(kw[name].elts) != rank):
                raise self.error(TypeCheckError, kw[name], f"a TensorView's {name} has one entry per axis ({rank})")
        if "stride" in kw:
            stride = [self.static_of(x, int, "a stride") for x in kw["stride"].elts]
            if None not in extents:
                want = [1] * rank
                for axis in range(rank - 2, -1, -1):
                    want[axis] = want[axis + 1] * extents[axis + 1]
                if stride != want:
                    raise self.error(UnsupportedSyntaxError, kw["stride"], f"stride {stride} is not the row-major "
                                     f"{want} of {extents}: a tensor's strides here are the torch tensor's own",
                                     hint="pass the strided window as a torch view (big[:, :64]) and drop stride=")
        if "valid_shape" in kw:
            for axis, (v, extent) in enumerate(zip(kw["valid_shape"].elts, extents)):
                if self._dynamic(v) is not None or extent is None:
                    continue
                value = self.static_of(v, int, "a valid extent")
                if not 0 <= value <= extent:
                    raise self.error(TypeCheckError, v, f"valid extent {value} on axis {axis} is outside the "
                                     f"tensor's {extent}")
        if "pad" in kw:
            self.static_of(kw["pad"], PadValue, "a pad value")

    def _extent(self, d) -> int | None:
        """An axis's extent: written, or what a call bound its pl.dynamic axis to (None: unbound)."""
        dyn = self._dynamic(d)
        if dyn is None:
            return self.static_of(d, int, "a tensor extent")
        bound = self.dynamic_extents.get(id(dyn))
        return bound[1] if bound is not None else None
