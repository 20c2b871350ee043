"""The op reference, read off the registry: what ``help(pl.add)`` and
``inspect.signature(pl.tile.load)`` show, and the rows of the generated op table.

Each ``pl.<op>`` and ``pl.<level>.<op>`` is a function standing for the op (``stand_in``):
the front end knows it by its ``__pypto_path__``, Python's tools by its signature and
docstring, which come from the op's parameters, legal memory spaces and doc — the one
place those facts live. Calling it outside a kernel explains that kernels are parsed.
"""

from __future__ import annotations

import enum
import inspect

from pypto.errors import PyptoError
from pypto.ir.ops.registry import KEYWORD_FORMS, UNIFIED, Kind, OpDef, ParamSpec, lookup, spelled

# how an argument of each kind is written, for the reference's sake
_KIND_WORDS = {
    Kind.TILE: "Tile", Kind.TENSOR: "Tensor", Kind.ARRAY: "Array", Kind.LAYOUT: "pl.TensorLayout",
    Kind.SCALAR: "Scalar", Kind.INDEX_LIST: "list of indices", Kind.SHAPE: "list of static ints",
    Kind.DTYPE: "pl.DataType", Kind.SPACE: "pl.Mem", Kind.PAD: "pl.PadValue", Kind.ATOMIC: "pl.AtomicType",
    Kind.NOTIFY: "pld.NotifyOp", Kind.WAIT_CMP: "pld.WaitCmp", Kind.REDUCE: "pld.ReduceOp",
    Kind.BOOL: "bool", Kind.INT: "int", Kind.STR: "str",
}


class _Spelled:
    """A default shown as kernel source spells it (``pl.Mem.Vec``, ``pl.FP32``)."""

    def __init__(self, value):
        self.value = value

    def __repr__(self) -> str:
        v = self.value
        if isinstance(v, enum.Enum) and not repr(v).startswith("pl."):
            return f"pl.{type(v).__name__}.{v.name}"
        return repr(v)


class _SomeForms:
    """The default shown for a parameter only some of a unified name's forms take."""

    def __repr__(self) -> str:
        return "..."


SOME_FORMS = _SomeForms()


def _parameter(p: ParamSpec, kind=inspect.Parameter.POSITIONAL_OR_KEYWORD) -> inspect.Parameter:
    default = inspect.Parameter.empty if p.required else _Spelled(p.default)
    return inspect.Parameter(p.name, kind, default=default, annotation=_KIND_WORDS[p.kind])


def signature(*ops: OpDef) -> inspect.Signature:
    """The parameters of ``ops`` (one op, or a unified name's forms). The leading operands
    the forms name differently (``tile`` / ``x``) are positional-only, under the first
    form's name; the rest once each, in the order the forms give them, a parameter first
    met after a defaulted one keyword-only."""
    lists = [op.params for op in ops]
    prefix = 0
    for k in range(min(len(ps) for ps in lists)):
        if not all(ps[k].required for ps in lists):
            break
        if len({ps[k].name for ps in lists}) > 1:
            prefix = k + 1
    seen: dict[str, inspect.Parameter] = {}
    for k in range(prefix):
        words = " | ".join(dict.fromkeys(_KIND_WORDS[ps[k].kind] for ps in lists))
        seen[lists[0][k].name] = _parameter(lists[0][k], inspect.Parameter.POSITIONAL_ONLY).replace(annotation=words)
    defaulted = False
    for ps in lists:
        for p in ps[prefix:]:
            if p.name in seen:  # another form's: the kinds it takes joined
                words = seen[p.name].annotation.split(" | ")
                if _KIND_WORDS[p.kind] not in words:
                    seen[p.name] = seen[p.name].replace(annotation=" | ".join((*words, _KIND_WORDS[p.kind])))
                continue
            kind = inspect.Parameter.KEYWORD_ONLY if defaulted and p.required else \
                inspect.Parameter.POSITIONAL_OR_KEYWORD
            if any(q.kind is inspect.Parameter.KEYWORD_ONLY for q in seen.values()):
                kind = inspect.Parameter.KEYWORD_ONLY
            seen[p.name] = _parameter(p, kind)
            defaulted = defaulted or not p.required
    return inspect.Signature(list(seen.values()))


def keyword_forms(name: str) -> list[tuple[str, OpDef, str]]:
    """(how the form is picked, op, the keyword that picks it) for the forms of ``pl.<name>``
    a keyword selects (``pl.gather(x, mask_pattern=...)`` is ``gather_mask``)."""
    return [(f"{why} and {key}=", lookup(other), key) for why, op in forms(name)
            for key, other in KEYWORD_FORMS.get(op.name, ())]


def _call_params(op: OpDef, key: str | None) -> tuple[tuple, tuple]:
    """A form's (positional, keyword) parameters as a call spells them: a keyword form's
    selecting keyword and what follows it are written by name."""
    if key is None:
        return op.params, ()
    k = next(i for i, p in enumerate(op.params) if p.name == key)
    return op.params[:k], op.params[k:]


def _apart(ops) -> bool:
    """Whether the forms' required operands differ at some position by more than Tile
    against Tensor (``tile.gather``'s ``indices``, a Tile, where ``tensor.gather`` has ``dim``,
    an int): one merged parameter there would say neither."""
    lists = [op.params for op in ops]
    for k in range(min(len(ps) for ps in lists)):
        ps = [ps[k] for ps in lists]
        if not all(p.required for p in ps):
            break
        kinds = {_KIND_WORDS[p.kind] for p in ps}
        if len({p.name for p in ps}) > 1 and len(kinds) > 1 and not kinds <= {"Tile", "Tensor"}:
            return True
    return False


def per_form_signature(name: str) -> inspect.Signature:
    """``pl.<name>``'s parameters when its forms differ by position: each position
    positional-only and named for what each form takes there (``indices_or_dim``), the
    keyword forms' parameters keyword-only; one only some forms take defaults to ``...``."""
    calls = [(op, None) for _, op in forms(name)] + [(op, key) for _, op, key in keyword_forms(name)]
    at: list[list[ParamSpec]] = []
    by_name: dict[str, list[ParamSpec]] = {}
    for op, key in calls:
        positional, keywords = _call_params(op, key)
        for k, p in enumerate(positional):
            if k == len(at):
                at.append([])
            at[k].append(p)
        for p in keywords:
            by_name.setdefault(p.name, []).append(p)
    out = []
    for ps in at:
        words = " | ".join(dict.fromkeys(_KIND_WORDS[p.kind] for p in ps))
        every = len(ps) == len(calls) and all(p.required for p in ps)
        out.append(inspect.Parameter("_or_".join(dict.fromkeys(p.name for p in ps)),
                                     inspect.Parameter.POSITIONAL_ONLY, annotation=words,
                                     default=inspect.Parameter.empty if every else SOME_FORMS))
    taken = {p.name for p in out}
    for key, ps in by_name.items():
        if key in taken:
            continue
        words = " | ".join(dict.fromkeys(_KIND_WORDS[p.kind] for p in ps))
        optional = [p for p in ps if not p.required]
        default = _Spelled(optional[0].default) if len(optional) == len(ps) else SOME_FORMS
        out.append(inspect.Parameter(key, inspect.Parameter.KEYWORD_ONLY, annotation=words, default=default))
    return inspect.Signature(out)


def unified_signature(name: str) -> inspect.Signature:
    """The signature ``pl.<name>`` shows: its forms' parameters merged, or, where the forms
    differ by position, named per form (``per_form_signature``)."""
    ops = [op for _, op in forms(name)]
    if _apart(ops) or keyword_forms(name):
        return per_form_signature(name)
    return signature(*ops)


def form_call(name: str, op: OpDef, key: str | None = None) -> str:
    """One form as a call of ``pl.<name>``: ``pl.gather(src: 'Tile', *, mask_pattern: 'int', ...)``."""
    if key is None:
        return f"pl.{name}{signature(op)}"
    positional, keywords = _call_params(op, key)
    sig = inspect.Signature([_parameter(p) for p in positional]
                            + [_parameter(p, inspect.Parameter.KEYWORD_ONLY) for p in keywords])
    return f"pl.{name}{sig}"


def rules(op: OpDef) -> list[str]:
    """What the registry says of an op beyond its parameters, one line each."""
    out = []
    for p in op.params:
        if p.spaces:
            out.append(f"'{p.name}' must be in {' or '.join(s.name for s in p.spaces + p.staged)}")
        if p.optional:
            out.append(f"'{p.name}' may be None")
        if p.integer:
            out.append(f"'{p.name}' is an integer")
    if op.in_place:
        out.append("its result may share its first operand's buffer (it updates it in place)")
    if op.writes_operand:
        out.append(f"it writes '{op.writes_operand}' (the result is that tensor, updated)")
    for key, other in KEYWORD_FORMS.get(op.name, ()):
        out.append(f"with {key}= it is {other}")
    if op.mnemonic:
        out.append(f"instruction: {op.mnemonic}")
    return out


def forms(name: str) -> list[tuple[str, OpDef]]:
    """(how the form is picked, op) for a unified name ``pl.<name>``."""
    u = UNIFIED[name]
    if u.only is not None:
        return [("always", lookup(u.only))]
    picks = (("Tile operands", u.tile), ("a Tile and a scalar", u.tile_scalar), ("Tensor operands", u.tensor),
             ("a Tensor and a scalar", u.tensor_scalar))
    return [(why, lookup(op)) for why, op in picks if op is not None]


def _op_doc(op: OpDef, title: str) -> str:
    lines = [f"{title}{signature(op)}", "", op.doc or "(no description)"]
    lines += [f"  - {r}" for r in rules(op)]
    return "\n".join(lines)


def unified_doc(name: str) -> str:
    picks = [pick for why, op in forms(name)
             for pick in [(why, op, None)] + [k for k in keyword_forms(name) if k[0].startswith(why + " and ")]]
    keys = dict.fromkeys(key for _, _, key in picks if key is not None)
    by_keyword = "".join(f" and by {key}=" for key in keys)
    parts = [f"pl.{name}: one name for the level-specific ops below, picked by the first operand's type"
             f"{by_keyword}."]
    if len(picks) > 1:  # the forms at a glance, each as a call of its own
        calls = [(form_call(name, op, key), f"pl.{spelled(op.name)}") for _, op, key in picks]
        width = max(len(call) for call, _ in calls)
        parts += [f"  {call:<{width}}  is {op}" for call, op in calls]
        if any(p.default is SOME_FORMS for p in unified_signature(name).parameters.values()):
            parts.append("('...' in the signature: a parameter only some of these forms take.)")
    parts.append("")
    for why, op, _ in picks:
        parts += [f"With {why}:", _op_doc(op, f"pl.{spelled(op.name)}"), ""]
    return "\n".join(parts).rstrip() + "\n"


def op_doc(op: OpDef) -> str:
    return _op_doc(op, f"pl.{op.module}{spelled(op.name)}") + "\n"


def stand_in(path: tuple[str, ...]):
    """The function ``pl.<path>`` is: documented as the op, refusing to run outside a kernel."""
    dotted = ".".join(path)
    if len(path) == 1 and path[0] in UNIFIED:
        sig, doc = unified_signature(path[0]), unified_doc(path[0])
    else:
        op = lookup(dotted)
        if op is None:  # another spelling of an op (tile.create_tile is tile.create)
            from pypto.ir.ops.registry import resolve

            op = resolve(dotted)
        sig, doc = signature(op), op_doc(op)

    def op(*args, **kwargs):
        raise PyptoError(
            f"pl.{dotted} is part of the kernel language and only has meaning inside a "
            "@pl.jit / @pl.function body, which the compiler parses and never runs",
            hint="call the kernel instead: kernel(*tensors, config=RunConfig(...))",
        )

    op.__name__ = path[-1]
    op.__qualname__ = dotted
    op.__module__ = "pypto.language" if len(path) == 1 else f"pypto.language.{path[0]}"
    op.__doc__ = doc
    op.__signature__ = sig
    op.__pypto_path__ = path
    return op
