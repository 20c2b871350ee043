"""A kernel's signature: its parameters, each with its type and direction from the
annotation (or, for a ``@pl.jit`` specialization, the call's arguments), and its declared
returns; ``check_signature`` refuses the parameter forms a kernel cannot have. A mixin of
``FunctionConverter``."""

from __future__ import annotations

import ast

from pypto.errors import ParseError, SpecializationError, TypeCheckError, UnsupportedSyntaxError
from pypto.ir import nodes as n
from pypto.ir.types import ArrayType, TileType, type_name
from pypto.lang.expressions.exprs import Source


class Signatures:
    def params(self) -> tuple[n.Param, ...]:
        check_signature(self.source, self.fdef, spliced=False)
        args = list(self.fdef.args.args)
        if self.has_self:
            if not args or args[0].arg != "self":
                raise self.error(ParseError, self.fdef, f"method '{self.fdef.name}' of a @pl.program needs 'self' first")
            args = args[1:]
        binds = self.scan_axis_binds([a.arg for a in args])
        params = []
        for arg in args:
            if arg.annotation is None:
                raise self.error(TypeCheckError, arg, f"Parameter '{arg.arg}' missing type annotation",
                                 hint=f"Add a type annotation like: {arg.arg}: pl.Tensor[[64], pl.FP32]")
            given = None if self.given is None else self.given.get(arg.arg)
            self.bound_axes = {dim: var for dim, (var, _) in binds.get(arg.arg, {}).items()}
            try:
                t, direction = self.annotation(arg.annotation, given=given, param=arg.arg)
                self.bind_axes(arg.arg, t, binds.get(arg.arg, {}), arg)
            except SpecializationError as err:
                err.param = arg.arg  # which argument: a caller reports it where it is passed
                raise
            finally:
                self.bound_axes = {}
            if isinstance(t, TileType):
                raise self.error(TypeCheckError, arg, f"parameter '{arg.arg}' is a Tile: kernels take GM tensors",
                                 hint="take a pl.Tensor and pl.load the tile inside the kernel")
            if isinstance(t, ArrayType) and self.incore:
                raise self.error(TypeCheckError, arg, f"parameter '{arg.arg}' is an ArrayType ({type_name(t)}), and an "
                                 "array does not escape the function that makes it: a kernel's parameters are what a "
                                 "task is given (tensors and scalars)",
                                 hint="pass the elements the kernel needs as pl.Scalar parameters, or keep the array "
                                      "in the orchestration (an @pl.jit entry, or a @pl.jit.inline helper it calls)")
            self.check_local_name(arg.arg, arg)
            name = self.fresh(arg.arg)
            self.env = self.env.set(arg.arg, name)
            params.append(n.Param(name, t, direction))
        return tuple(params)

    def return_annotation(self, node, returned=None) -> tuple:
        """The declared return types; ``returned``: what the body returns, whose extents a
        ``pl.dynamic`` axis of the annotation takes (the reference's return types are
        symbolic: the value returned is the tensor it is)."""
        if isinstance(node, ast.Constant) and node.value is None:
            return ()
        items = [node]
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id == "tuple":
            items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if returned is None or len(returned) != len(items):
            return tuple(self.annotation(i)[0] for i in items)
        return tuple(self._returned_as(i, r) for i, r in zip(items, returned))

    def _returned_as(self, node, returned):
        declared = self.annotation(node)[0]
        if declared == returned or not any(self.is_dynamic(x) for x in ast.walk(node)):
            return declared
        try:
            return self.annotation(node, given=returned, param="the returned value")[0]
        except SpecializationError:
            return declared  # (the caller says how it differs)


def check_signature(source: Source, fdef: ast.FunctionDef, *, spliced: bool) -> None:
    """A kernel's parameters are a fixed list of names, each bound by every call: a
    parameter form the compiler would not honour (``*rest``, ``**kw``, ``/``, and, but for
    ``@pl.jit.inline`` helpers (``spliced``: their calls bind as Python binds them),
    keyword-only parameters and defaults) is refused where it is written, not ignored
    until a call's argument count is off."""
    a = fdef.args
    what = "an inline function" if spliced else "a kernel"
    fixed = "its parameters are fixed when it is compiled, one value per parameter at every call"
    seen = set()
    for p in (*a.posonlyargs, *a.args, *a.kwonlyargs):  # (Python refuses it when it compiles; text is only parsed)
        if p.arg in seen:
            raise ParseError(f"duplicate argument '{p.arg}' in function definition", span=source.span(p),
                             hint="give each parameter its own name")
        seen.add(p.arg)
    if a.posonlyargs:
        p = a.posonlyargs[-1]
        raise UnsupportedSyntaxError(f"'{fdef.name}' has positional-only parameters (up to '{p.arg}', then '/'), "
                                     f"which {what} does not support", span=source.span(p),
                                     hint="remove the '/': arguments bind by position or by name")
    for star, p in (("*", a.vararg), ("**", a.kwarg)):
        if p is not None:
            collects = "extra positional arguments" if star == "*" else "extra keyword arguments"
            raise UnsupportedSyntaxError(f"'{star}{p.arg}' of '{fdef.name}' collects {collects}, which {what} cannot "
                                         f"take: {fixed}", span=source.span(p),
                                         hint=f"replace '{star}{p.arg}' with one named, annotated parameter per "
                                              "argument (e.g. b: pl.Tensor)")
    if spliced:
        return  # keyword-only parameters and defaults bind as in Python (calls._bind_inline_args)
    if a.kwonlyargs:
        p = a.kwonlyargs[0]
        raise UnsupportedSyntaxError(f"parameter '{p.arg}' of '{fdef.name}' is keyword-only (it follows '*'), which "
                                     f"{what} does not support", span=source.span(p),
                                     hint="remove the '*' before it: every kernel parameter binds by position or by "
                                          "name")
    if a.defaults:
        d = a.defaults[0]
        p = a.args[len(a.args) - len(a.defaults)]
        raise UnsupportedSyntaxError(f"parameter '{p.arg}' of '{fdef.name}' has a default value "
                                     f"({ast.unparse(d)}), which {what} does not support: {fixed}",
                                     span=source.span(_spanning(p, d)),
                                     hint=f"remove '= {ast.unparse(d)}' and pass '{p.arg}' at every call, or read a "
                                          "module-level constant in the body instead (inline helpers, "
                                          "@pl.jit.inline, may have defaults)")


def _spanning(first, last):
    """A node covering ``first`` through ``last`` (a parameter and its default), for its span."""
    node = ast.arg(arg="")
    node.lineno, node.col_offset = first.lineno, first.col_offset
    node.end_lineno, node.end_col_offset = last.end_lineno, last.end_col_offset
    return node
