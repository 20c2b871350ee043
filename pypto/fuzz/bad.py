"""The bad-program property: a valid kernel with one small mistake planted in its source —
a number, a dtype, an op, a memory space or a name changed, a statement dropped or
repeated, an argument dropped, swapped or added — either still compiles and runs, or ends
in a pypto error that names a line of the user's source. Never an internal exception,
never an error without a place.

Two kinds of source: a ``@pl.program`` text from a tile family (read by
``pl.parse_program``) and a ``@pl.jit`` orchestration from the task graphs (written to a
file and called, only its body mutated: a broken header is Python's to report).
"""

from __future__ import annotations

import functools
import io
import tempfile
import tokenize
from pathlib import Path

from pypto.fuzz import strategies, tasks
from pypto.fuzz.checks import Failure
from pypto.fuzz.drawing import st
from pypto.fuzz.example import Example, Knobs, Property

NUMBERS = ("0", "1", "2", "3", "-1", "5", "17", "64", "4096")
DTYPES = ("FP32", "FP16", "BF16", "INT32", "INT16", "INT8", "UINT8", "INT64", "BOOL")
SPACES = ("Vec", "Mat", "Left", "Right", "Acc", "Bias", "DDR")
MUTATIONS = ("number", "dtype", "op", "space", "name", "drop_line", "repeat_line", "drop_arg", "swap_args",
             "extra_kwarg")


def _tokens(text: str) -> list:
    return list(tokenize.generate_tokens(io.StringIO(text).readline))


def _offsets(text: str) -> list[int]:
    """The text offset each line starts at (1-based lines)."""
    starts, at = [0, 0], 0
    for line in text.splitlines(keepends=True):
        at += len(line)
        starts.append(at)
    return starts


def _replace(text: str, tok, new: str) -> str:
    starts = _offsets(text)
    a = starts[tok.start[0]] + tok.start[1]
    b = starts[tok.end[0]] + tok.end[1]
    return text[:a] + new + text[b:]


@st.composite
def mutate(draw, text: str, first_line: int):
    """(the text with one mistake planted at or after ``first_line``, what was done), or None
    when the drawn mistake has no place in it."""
    toks = [t for t in _tokens(text) if t.start[0] >= first_line]
    lines = text.splitlines(keepends=True)
    body = [k for k in range(first_line - 1, len(lines)) if lines[k].strip() and not lines[k].lstrip().startswith(
        ("@", "def ", "class ", "#", "import "))]
    kind = draw(st.sampled_from(MUTATIONS))
    names = [t for t in toks if t.type == tokenize.NAME]

    def pick(candidates):
        return candidates[draw(st.integers(0, len(candidates) - 1))] if candidates else None

    if kind == "number":
        tok = pick([t for t in toks if t.type == tokenize.NUMBER])
        new = draw(st.sampled_from(NUMBERS))
        return (_replace(text, tok, new), f"number {tok.string} -> {new} at line {tok.start[0]}") if tok else None
    if kind in ("dtype", "space", "op"):
        pool = {"dtype": DTYPES, "space": SPACES, "op": _op_names()}[kind]
        tok = pick([t for t in names if t.string in pool and t.string != "pl"])
        if tok is None:
            return None
        new = draw(st.sampled_from([p for p in pool if p != tok.string]))
        return _replace(text, tok, new), f"{kind} {tok.string} -> {new} at line {tok.start[0]}"
    if kind == "name":
        local = sorted({t.string for t in names if not _keyword(t.string) and t.string not in _op_names()})
        tok = pick([t for t in names if t.string in local])
        if tok is None or len(local) < 2:
            return None
        new = draw(st.sampled_from([x for x in local if x != tok.string]))
        return _replace(text, tok, new), f"name {tok.string} -> {new} at line {tok.start[0]}"
    if kind in ("drop_line", "repeat_line"):
        k = pick(body)
        if k is None:
            return None
        out = lines[:k] + ([lines[k]] if kind == "repeat_line" else []) + lines[k + 1:]
        return "".join(out), f"{kind.replace('_', ' ')} {k + 1}"
    # arguments of a call: the commas at the call's own depth
    calls = _calls(toks)
    call = pick(calls)
    if call is None:
        return None
    open_tok, commas, close_tok = call
    starts = _offsets(text)
    at = lambda pos: starts[pos[0]] + pos[1]  # noqa: E731
    bounds = [at(open_tok.end)] + [at(c.end) for c in commas] + [at(close_tok.start)]
    args = [text[bounds[i]:bounds[i + 1] - (1 if i + 1 < len(bounds) - 1 else 0)] for i in range(len(bounds) - 1)]
    if kind == "extra_kwarg":
        new = args + [" bogus=1"]
    elif len(args) < 2 and kind == "swap_args":
        return None
    elif kind == "swap_args":
        i = draw(st.integers(0, len(args) - 2))
        new = args[:i] + [args[i + 1], args[i]] + args[i + 2:]
    else:
        if not any(a.strip() for a in args):
            return None
        i = draw(st.integers(0, len(args) - 1))
        new = args[:i] + args[i + 1:]
    joined = ",".join(a if k == 0 else (a if a.startswith(" ") else " " + a) for k, a in enumerate(new))
    line = open_tok.start[0]
    return text[:bounds[0]] + joined.lstrip() + text[bounds[-1]:], f"{kind.replace('_', ' ')} of the call at line {line}"


def _calls(toks) -> list:
    """(open paren, commas at its depth, close paren) of each call (a paren after a name)."""
    out, stack = [], []
    for k, t in enumerate(toks):
        if t.type == tokenize.OP and t.string in "([{":
            call = t.string == "(" and k and toks[k - 1].type == tokenize.NAME and not _keyword(toks[k - 1].string)
            stack.append((t, [], call))
        elif t.type == tokenize.OP and t.string in ")]}" and stack:
            open_tok, commas, call = stack.pop()
            if call:
                out.append((open_tok, commas, t))
        elif t.type == tokenize.OP and t.string == "," and stack:
            stack[-1][1].append(t)
    return out


def _keyword(word: str) -> bool:
    import keyword

    return keyword.iskeyword(word) or word in ("self", "pl", "True", "False", "None")


@functools.cache
def _op_names() -> tuple:
    from pypto.ir.ops import all_ops

    return tuple(sorted({op.name.split(".", 1)[1] for op in all_ops()}))


# ----------------------------------------------------------------------------- examples


@st.composite
def bad_programs(draw, knobs: Knobs = Knobs()):
    """An Example whose ``source`` is a mutated kernel and ``detail`` ("program" | "jit",
    what was planted); ``case`` holds the arguments for a "program" one."""
    if draw(st.integers(0, 3)) == 0:
        steps = draw(tasks.graphs())
        text = tasks.source(steps)
        first = next(k for k, line in enumerate(text.splitlines(), 1) if line.startswith("def "))
        got = draw(mutate(text, first + 1))
        if got is None:
            return Example(source=text, detail=("jit", "nothing planted"))
        return Example(source=got[0], detail=("jit", got[1]))
    case = draw(st.one_of(strategies.elementwise_programs(knobs.dtypes, min(knobs.max_steps, 3), st.integers(1, 3)),
                          strategies.matmul_programs(trips=st.integers(1, 2)), strategies.reduction_programs()))
    text = case.program.as_python()
    got = draw(mutate(text, 1))
    if got is None:
        return Example(case=case, source=text, detail=("program", "nothing planted"))
    return Example(case=case, source=got[0], detail=("program", got[1]))


def check_errors(ex: Example) -> None:
    from pypto.errors import PyptoError

    kind, what = ex.detail
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "kernel.py"
        path.write_text(ex.source)
        try:
            _run(kind, ex, path)
        except PyptoError as err:
            if err.span is None or not _users(err.span.file, path):
                where = "no place" if err.span is None else f"{err.span} (not the user's)"
                raise Failure(f"{type(err).__name__} with {where}: {_first(err)}\nplanted: {what}\n{ex.source}") \
                    from None
        except SyntaxError:
            if kind == "program":
                raise Failure(f"a Python SyntaxError escaped the front end\nplanted: {what}\n{ex.source}") from None
        except RecursionError:
            raise Failure(f"RecursionError\nplanted: {what}\n{ex.source}") from None
        except Exception as err:  # an internal exception: what this property exists to find
            raise Failure(f"internal {type(err).__name__}: {_first(err)}\nplanted: {what}\n{ex.source}") from err


def _users(file: str, path: Path) -> bool:
    """A place in the user's kernel source, or the call of it (here)."""
    return Path(file).name in (path.name, Path(__file__).name)


def _first(err: BaseException) -> str:
    text = (getattr(err, "message", None) or str(err)).strip().splitlines()
    return text[0] if text else ""


def _run(kind: str, ex: Example, path: Path) -> None:
    from pypto.fuzz.example import ref_of

    if kind == "jit":
        import runpy

        kernel = runpy.run_path(str(path))["graph"]  # a broken header raises Python's own error here
        import torch

        shape = (tasks.BANDS * tasks.R, tasks.C)
        args = [torch.ones(shape) for _ in tasks.INPUTS] + [torch.zeros(shape) for _ in tasks.OUTPUTS + ("z",)]
        kernel(*args, config=ref_of(ex.platform))
        return
    from pypto.lang.text import parse_program
    from pypto.runtime.compiled import compile_program

    program = parse_program(path.read_text(), str(path))
    case = ex.case
    fn = program.functions[0] if not any(f.name == case.entry for f in program.functions) \
        else program.function(case.entry)
    compiled = compile_program(program, [p.name for p in fn.params], ref_of(ex.platform), write=False)
    compiled.run(*case.args())


ERRORS = Property("errors", "a program with a mistake planted compiles and runs, or gets a pypto error at the "
                            "user's line", lambda k: bad_programs(k), check_errors)
