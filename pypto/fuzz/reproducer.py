"""A failing example as a runnable ``.py`` file: the kernel (``PROGRAM``, the DSL text of
its ``@pl.program``; or ``SOURCE``, a kernel module's text), its inputs and what its Out
tensors start as and must hold (tensors as dtype, shape and base64 bytes), and the
property it breaks. ``python <file>`` checks it again (exit 1 while it fails);
``python -m pypto.tools.bisect <file>`` finds the pass that breaks it.

Every value is a literal assignment, so ``read`` reads a reproducer with ``ast`` and never
runs it; the program is parsed by the front end with its lines where the file has them.
Checking one again (``main``, ``python <file>``) runs what the property runs: a task graph
is rebuilt from its steps (``DETAIL``), but a planted mistake in a ``@pl.jit`` module (an
``errors`` reproducer's ``SOURCE``) is that module, imported as the file itself would be.
"""

from __future__ import annotations

import ast
import base64
from pathlib import Path

import torch

from pypto.fuzz.data import Case

_DTYPES = {str(d).removeprefix("torch."): d for d in (torch.float64, torch.float32, torch.float16, torch.bfloat16,
                                                      torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8,
                                                      torch.bool)}
_CHUNK = 96


def encode(t: torch.Tensor) -> tuple:
    flat = t.contiguous().reshape(-1)  # (a 0-d tensor has no last axis to view as bytes)
    data = flat.view(torch.uint8) if t.dtype is not torch.bool else flat.to(torch.uint8)
    return str(t.dtype).removeprefix("torch."), tuple(t.shape), base64.b64encode(data.numpy().tobytes()).decode()


def decode(value) -> torch.Tensor:
    dtype, shape, data = value
    raw = bytearray(base64.b64decode(data))
    flat = torch.frombuffer(raw, dtype=torch.uint8) if raw else torch.empty(0, dtype=torch.uint8)
    if dtype == "bool":
        return flat.to(torch.bool).reshape(shape)
    return flat.view(_DTYPES[dtype]).reshape(shape).clone()


def _tensors(name: str, tensors) -> str:
    if not tensors:
        return f"{name} = []\n"
    rows = []
    for t in tensors:
        dtype, shape, data = encode(t)
        chunks = [data[k:k + _CHUNK] for k in range(0, len(data), _CHUNK)] or [""]
        body = "\n".join(f"        {c!r}" for c in chunks)
        rows.append(f"    ({dtype!r}, {shape!r},\n{body}),")
    return f"{name} = [\n" + "\n".join(rows) + "\n]\n"


def _text(name: str, text: str | None) -> str:
    """``NAME = \"\"\"\\n<text>\"\"\"`` where the text reads back as it is (else its repr)."""
    if text is None:
        return f"{name} = None\n"
    literal = '"""\n' + text + '"""'
    try:
        exact = ast.literal_eval(literal) == "\n" + text
    except (SyntaxError, ValueError):
        exact = False
    return f"{name} = {literal}\n" if exact else f"{name} = {chr(10) + text!r}\n"


def write(path: Path, prop: str, example, signature: str, message: str = "", bisect: str = "") -> Path:
    """The reproducer of ``example`` (a ``pypto.fuzz.properties.Example``) at ``path``."""
    case = example.case
    lines = [f"pypto.fuzz reproducer: property {prop!r} fails.", "", f"    {signature}", ""]
    lines += [f"    {line}" for line in message.strip().splitlines()[:12]]
    if bisect.strip():
        lines += ["", "Bisected:"] + [f"    {line}" for line in bisect.strip().splitlines()[:40]]
    lines += ["", f"Run it:     python {path.name}              (exit 1 while it fails, 0 once fixed)"]
    if case is not None and example.source is None:  # a program and its inputs: what the bisect takes
        lines.append(f"Bisect it:  python -m pypto.tools.bisect {path.name}")
    head = "".join(f"# {line}".rstrip() + "\n" for line in lines) + "\n"  # comments: any text is safe there
    parts = [head,
             f"PROPERTY = {prop!r}\n", f"SIGNATURE = {signature!r}\n", f"PLANNER = {example.planner!r}\n",
             f"PLATFORM = {example.platform!r}\n",
             f"ENTRY = {case.entry if case is not None else None!r}\n",
             f"RECIPE = {case.recipe if case is not None else ''!r}\n",
             f"CHECK = {case.check if case is not None else None!r}\n",
             f"DETAIL = {example.detail!r}\n",
             _text("PROGRAM", case.program.as_python() if case is not None else None),
             _text("SOURCE", example.source)]
    if case is not None:
        parts += [_tensors("INPUTS", case.inputs), _tensors("OUTPUTS", case.outputs),
                  _tensors("EXPECTED", case.expected), _tensors("BOUNDS", case.bounds)]
    parts.append('\n\nif __name__ == "__main__":\n    from pypto.fuzz.reproducer import main\n\n'
                 "    raise SystemExit(main(__file__))\n")
    path.write_text("".join(parts))
    return path


class NotAReproducer(ValueError):
    pass


def read(path: Path) -> tuple:
    """(property name, Example, signature) of a reproducer, read with ``ast``, never run."""
    from pypto.fuzz.example import Example
    from pypto.lang.text import parse_program

    path = Path(path)
    try:
        text = path.read_text()
        module = ast.parse(text, str(path))
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError) as exc:
        raise NotAReproducer(f"{path}: cannot read it as Python ({exc})") from None
    values, lines = {}, {}
    for node in module.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            try:
                values[node.targets[0].id] = ast.literal_eval(node.value)
            except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
                raise NotAReproducer(f"{path}:{node.lineno}: {node.targets[0].id} is not a literal") from None
            lines[node.targets[0].id] = node.lineno
    missing = [k for k in ("PROPERTY", "PLANNER", "PROGRAM", "SOURCE", "DETAIL") if k not in values]
    if missing:
        raise NotAReproducer(f"{path}: not a pypto.fuzz reproducer (no {', '.join(missing)})")
    wrong = [k for k, kinds in (("PROPERTY", str), ("PLANNER", str), ("PROGRAM", (str, type(None))),
                                ("SOURCE", (str, type(None))), ("ENTRY", (str, type(None))),
                                ("RECIPE", str), ("SIGNATURE", str)) if k in values and not isinstance(values[k], kinds)]
    if wrong or values["PLANNER"] not in ("PYPTO", "DSA_RP", "PTOAS"):
        raise NotAReproducer(f"{path}:{lines.get((wrong or ['PLANNER'])[0], 1)}: {(wrong or ['PLANNER'])[0]} is not "
                             "what a reproducer holds there")
    case = None
    if values["PROGRAM"] is not None:
        # the program's lines where the file has them, so errors name the file's lines
        program = parse_program("\n" * lines["PROGRAM"] + values["PROGRAM"].removeprefix("\n"), str(path))
        try:
            case = Case(program, values["ENTRY"], *(tuple(decode(t) for t in values[k]) for k in
                                                    ("INPUTS", "OUTPUTS", "EXPECTED")),
                        values["CHECK"], tuple(decode(t) for t in values["BOUNDS"]), recipe=values.get("RECIPE", ""))
        except (KeyError, ValueError, TypeError, RuntimeError) as exc:
            raise NotAReproducer(f"{path}: its tensors do not read back ({exc})") from None
    source = values["SOURCE"].removeprefix("\n") if values["SOURCE"] is not None else None
    platform = values.get("PLATFORM", "a2a3sim")  # (written by campaigns since the second chip)
    if platform not in ("a2a3sim", "a5sim"):
        raise NotAReproducer(f"{path}:{lines.get('PLATFORM', 1)}: PLATFORM is not what a reproducer holds there")
    example = Example(case=case, planner=values["PLANNER"], source=source, detail=values["DETAIL"],
                      platform=platform)
    problem = _incoherent(values["PROPERTY"], example)
    if problem:
        raise NotAReproducer(f"{path}: {problem}")
    return values["PROPERTY"], example, values.get("SIGNATURE", "")


# what a property's reproducer carries besides PROPERTY: a program with its tensors, or DETAIL
# (its first item saying the kind) with or without SOURCE
_CARRIES = {"tasks": ("detail", ("graph", "atomic", "opt_out")), "mixed": ("detail", ("UP_DOWN", "LEFT_RIGHT")),
            "errors": ("source", ("program", "jit"))}


def _incoherent(prop: str, example) -> str:
    """Why the fields do not make one reproducer of ``prop``, or ''."""
    what, kinds = _CARRIES.get(prop, ("case", ()))
    detail = example.detail
    if what == "case" or what == "source" and detail and detail[0] == "program":
        if example.case is None:
            return f"a '{prop}' reproducer holds a PROGRAM and its tensors, and this one has none"
        if not any(f.name == example.case.entry for f in example.case.program.functions):
            return f"ENTRY {example.case.entry!r} is not a function of its PROGRAM"
        if len(example.case.outputs) != len(example.case.expected):
            return "OUTPUTS and EXPECTED differ in number"
    if what != "case" and not (isinstance(detail, tuple) and detail and detail[0] in kinds):
        return f"DETAIL is not what a '{prop}' reproducer holds (a tuple led by one of {', '.join(kinds)})"
    if what == "source" and not isinstance(example.source, str):
        return f"a '{prop}' reproducer holds the SOURCE of the kernel it checks, and this one has none"
    return ""


def main(path) -> int:
    """Check the reproducer's property again: 1 (and what fails) while it fails, 0 once it
    holds, 2 (one line on stderr) when the file is no reproducer or cannot be checked here."""
    import sys

    from pypto.errors import PyptoError
    from pypto.fuzz.checks import quietly

    try:
        from pypto.fuzz.properties import PROPERTIES
        name, example, signature = read(Path(path))
    except (ImportError, NotAReproducer, PyptoError) as exc:  # (the properties live with the strategies)
        print(f"error: {str(exc).splitlines()[0]}", file=sys.stderr)
        return 2
    prop = PROPERTIES.get(name)
    if prop is None:
        print(f"error: {path}: no property {name!r} (there are {', '.join(PROPERTIES)})", file=sys.stderr)
        return 2
    if name == "tasks":
        from pypto.fuzz.graphs import source_of

        if example.source is not None and example.source != source_of(example.detail):
            print("note: SOURCE is not the source of DETAIL's steps; the steps are what is checked", file=sys.stderr)
    try:
        with quietly():
            prop.check(example)
    except Exception as exc:  # whatever the property raises is the failure it reproduces
        print(f"property {name!r} still fails: {type(exc).__name__}: {exc}")
        return 1
    print(f"property {name!r} holds now (it failed with: {signature})")
    return 0
