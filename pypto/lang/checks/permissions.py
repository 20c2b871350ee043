"""Write permission, checked over a converted function: what a store, an assemble or a
kernel's Out / InOut parameter writes must not be an input parameter (a plain
``pl.Tensor``) under any name it may have on some path — an alias, a window, an if's or a
loop's result, an inline helper's or a kernel's returned argument (``ir.tensors.Sources``).

Run on the front end's output for kernel source only: dump text is read as printed, and
passes answer for what they produce.
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from pypto.errors import PyptoError, TypeCheckError, UnwrittenOutputError
from pypto.ir import nodes as n
from pypto.ir.ops import argument, lookup
from pypto.ir.tensors import Sources
from pypto.ir.types import ParamDirection, TensorType


@attrs.frozen
class CallSite:
    """What the source said where a call was written, for a check over the IR that faults
    it: the inline calls it was spliced through (innermost first, as notes), and the scope
    there (Python name -> SSA name), which names what it writes as the source did."""

    call: object  # kept, so that no other call takes its id
    notes: tuple = ()
    scope: Mapping = attrs.Factory(dict)

    def name(self, ssa: str) -> str | None:
        """The Python name ``ssa`` had where the call was written (None: a temporary)."""
        return next((k for k, v in self.scope.items() if v == ssa), None)


def with_notes(err: PyptoError, site: CallSite | None) -> PyptoError:
    for note in site.notes if site is not None else ():
        err = err.with_note(note)
    return err


def check_writes(fn: n.Function, callees: Mapping, names: Mapping[str, str], sites: Mapping | None = None) -> None:
    """``callees``: IR name -> the ``Callee`` a call names (its params' directions, the
    parameter it returns); ``names``: SSA name -> the Python name it binds; ``sites``:
    id(call) -> its ``CallSite``."""
    inputs = [p.name for p in fn.params if p.direction is ParamDirection.In and isinstance(p.type, TensorType)]
    if not inputs:
        return

    sources = Sources(fn, lambda callee: _returned(callees, callee))
    sites = sites or {}
    for stmt, call, target, span, what in _writes(fn.body, callees):
        if isinstance(target, n.Var):
            site = sites.get(id(call))
            site = site if site is not None and site.call is call else None
            local = site.name(target.name) if site is not None else names.get(target.name)
            try:
                _check(target.name, local, span or stmt.span, what, inputs, sources, names)
            except PyptoError as err:
                raise with_notes(err, site) from None


def check_outputs(fn: n.Function, callees: Mapping, names: Mapping[str, str]) -> None:
    """An Out parameter that nothing writes under any name, and whose name the body binds to
    another value, is the most common first bug — ``out = pl.add(a, b)`` binds a name and
    writes nothing (the reference's code generation finds it; here it is the line)."""
    outs = [p.name for p in fn.params if p.direction is ParamDirection.Out and isinstance(p.type, TensorType)]
    if not outs:
        return
    sources = Sources(fn, lambda callee: _returned(callees, callee))
    written = set()
    for _, _, target, _, _ in _writes(fn.body, callees):
        if isinstance(target, n.Var):
            written |= sources.leaves(target.name)
    for p in outs:
        if p in written:
            continue
        name = names.get(p, p)
        rebound = next((s for s in n.walk_stmts(fn.body) if isinstance(s, n.Assign) and s.target != p
                        and names.get(s.target) == name), None)
        if rebound is not None:
            raise UnwrittenOutputError(
                f"'{name}' is an Out parameter, and this binds the name '{name}' to another value: nothing writes "
                "the tensor", span=rebound.span,
                hint=f"write it: {name}[:] = value (or {name} = pl.assemble({name}, value, [0, ...]))")


def _returned(callees: Mapping, callee: str):
    c = callees.get(callee)
    one = c is not None and len(c.returns) == 1 and c.returned_params
    return c.returned_params[0] if one else None


def _writes(body, callees: Mapping):
    """(statement, the call, the Expr written, where, what writes it) for every write in
    ``body``."""
    for stmt in n.walk_stmts(body):
        value = getattr(stmt, "value", None)
        if isinstance(value, n.Submit):
            value = value.call
        if isinstance(value, n.Call):
            op = lookup(value.op)
            if op.writes_operand is not None:
                yield (stmt, value, argument(value, op.writes_operand), value.span,
                       f"{op.name} writes its '{op.writes_operand}', which is")
        elif isinstance(value, n.FuncCall) and value.callee in callees:
            c = callees[value.callee]
            spans = value.arg_spans or (None,) * len(value.args)
            for arg, p, span in zip(value.args, c.params, spans):
                if p.direction is not ParamDirection.In:
                    yield (stmt, value, arg, span,
                           f"'{c.display}' writes its parameter '{p.name}' (pl.{p.direction.name}), and this "
                           "argument is")


def _check(ssa: str, name: str | None, span, what: str, inputs: list, sources: Sources, names: Mapping) -> None:
    leaves = sources.leaves(ssa)
    hit = [x for x in inputs if x in leaves]
    if not hit:
        return
    param = names.get(hit[0], hit[0])
    hint = (f"declare it written: '{param}: pl.Out[pl.Tensor[...]]' (written only) or "
            f"'{param}: pl.InOut[pl.Tensor[...]]' (read and written)")
    if ssa in inputs or name == param and len(leaves) == 1:
        message = f"{what} the input parameter '{param}'"
    elif name is None:
        message = f"{what} {'' if len(leaves) == 1 else 'on some path '}the input parameter '{param}'"
    elif len(leaves) == 1:
        message = f"{what} '{name}', another name for the input parameter '{param}'"
    else:
        message = f"{what} '{name}', and on some path '{name}' is the input parameter '{param}'"
    raise TypeCheckError(message, span=span, hint=hint)

