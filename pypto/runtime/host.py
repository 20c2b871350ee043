"""A kernel run as host Python, for a debugger (``RunConfig(platform="ref", debug=True)``
or ``@pl.jit(debug=True)``): its program as the front end built it, through
``torch_codegen``'s code (``pypto.sim``), compiled with every statement at the kernel's own file and line.
So ``breakpoint()`` in a kernel stops at the user's line in pdb, ``step`` / ``next`` walk
their lines, and ``p t`` shows a tile as a torch tensor (its valid region) under the name
the source gives it; ``print(...)`` prints the same values.

The generated code keeps the IR's values under private names (``_v_t_1``), and after each
statement that binds a source name it sets that name too (``t = prelude.host(_v_t_1)``):
the names as written always hold their latest value, and nothing the program computes
reads them. No pass runs, and no code is generated for the chip: what this checks is the
kernel's meaning, with the interpreter's semantics (one definition, ``pypto.sim.ops.semantics``).
"""

from __future__ import annotations

import ast
import builtins
import re
import traceback

from pypto.sim.reference.torch_codegen import _RESERVED, _Function, _expr
from pypto.errors import PyptoError, Span
from pypto.ir import nodes as n
from pypto.ir.rewrite import rename
from pypto.ir.types import ParamDirection, TensorType

PRIVATE = "_v_"
HEADER = "import torch\nimport pypto.language as pl\nfrom pypto.sim.reference import host_prelude as prelude\n"
_VERSION = re.compile(r"^(.*?)(?:_\d+)+$")
# names the host code reads as its own: a source name among them is left unset, not clobbered
_KEEP = _RESERVED | {"builtins"}


class _Host(_Function):
    """``torch_codegen``'s function, with a line of the user's source for every line it
    emits and the source's names set as the values they name are made."""

    def __init__(self, fn: n.Function, names: dict):
        super().__init__(fn, check_shapes=False)
        self.names = names  # private name -> the source's name
        self.line = fn.span.line if fn.span is not None else 1
        self.where: list[int] = []  # per emitted line, the user's line it stands for
        self.entering: list[str] = []  # names a block sets first: a loop's variable, a function's params

    def emit(self, depth: int, text: str) -> None:
        super().emit(depth, text)
        self.where.append(self.line)

    def source(self) -> str:
        self.entering = [p.name for p in self.fn.params]
        first = self.line
        text = "\n".join(self.lines()) + "\n"
        self.where.insert(0, first)  # (the def line is not emitted through ``emit``)
        return text

    def name(self, depth: int, private: str) -> None:
        user = self.names.get(private)
        if user is not None:
            self.emit(depth, f"{user} = prelude.host({private})")

    def block(self, body, depth: int, carried: tuple = ()) -> None:
        entering, self.entering = self.entering, []
        for private in entering:
            self.name(depth, private)
        super().block(body, depth, carried)

    def stmt(self, s, depth: int, carried: tuple) -> None:
        if getattr(s, "span", None) is not None:
            self.line = s.span.line
        if isinstance(s, n.For):
            self.entering = [s.var, *(a.name for a in s.iter_args)]
        super().stmt(s, depth, carried)
        if isinstance(s, n.Assign):
            self.name(depth, s.target)
        elif isinstance(s, (n.For, n.If)):
            for b in s.results:
                self.name(depth, b.name)

    def value(self, v, t, depth: int) -> str:
        if isinstance(v, n.FuncCall) and v.callee in ("breakpoint", "print"):
            return f"{v.callee}({', '.join(f'prelude.host({_expr(a)})' for a in v.args)})"
        return super().value(v, t, depth)


def _source_names(fn: n.Function, pynames: dict) -> dict:
    """Each name ``fn`` binds -> the source's name for it (the front end's record; a loop's
    carried version, ``acc_2``, is the source's ``acc``)."""
    known = set(pynames.values())
    out = {}
    for name in {p.name for p in fn.params} | set(n.symbols(fn)):
        user = pynames.get(name)
        if user is None:
            m = _VERSION.match(name)
            user = m.group(1) if m and m.group(1) in known else (name if name in known else None)
        if user is not None and user.isidentifier() and user not in _KEEP:
            out[name] = user
    return out


def host_code(fn: n.Function, pynames: dict):
    """``fn`` as a code object of host Python, each statement at its source line."""
    every = {p.name for p in fn.params} | set(n.symbols(fn))
    private = {x: PRIVATE + x for x in every}
    users = _source_names(fn, pynames)
    gen = _Host(rename(fn, private), {private[k]: v for k, v in users.items()})
    text = gen.source()
    tree = ast.parse(text)
    for node in ast.walk(tree):
        if hasattr(node, "lineno") and node.lineno is not None:
            line = gen.where[node.lineno - 1] if node.lineno - 1 < len(gen.where) else gen.where[-1]
            node.lineno = node.end_lineno = line
            node.col_offset = node.end_col_offset = 0  # (the generated columns are not the user's)
    filename = fn.span.file if fn.span is not None else f"<pypto debug {fn.name}>"
    return compile(tree, filename, "exec"), text


def run_host(program: n.Program, pynames: dict, args: tuple):
    """Run ``program``'s entry (its last function) on ``args`` as host Python: what it returns."""
    scope = {"builtins": builtins}
    exec(HEADER, scope)  # noqa: S102  (the names the generated code reads, as torch_codegen's source imports them)
    files = set()
    for fn in program.functions:
        code, _ = host_code(fn, pynames.get(fn.name, {}))
        files.add(code.co_filename)
        exec(code, scope)  # noqa: S102  (our own generated code: the program's meaning, not a file we read)
    entry = program.functions[-1]
    try:
        return scope[entry.name](*args)
    except PyptoError as err:
        raise _located(err, files) from None


def _located(err: PyptoError, files: set) -> PyptoError:
    """``err`` at the kernel line it was raised on (the host code's frames are the kernel's)."""
    frames = [f for f in traceback.extract_tb(err.__traceback__) if f.filename in files]
    if not frames or err.span is not None:
        return err
    f = frames[-1]
    return err.with_span(Span(f.filename, f.lineno, 1))


def run(kernel, args: tuple, where, types: tuple, soc):
    """A ``@pl.jit`` call run as host Python (its arguments bound in parameter order, and
    where each was written): None when it writes Out tensors in place (as a compiled call
    does), else what it returns."""
    from pypto.lang.jit import specialize_for_host
    from pypto.log import logger
    from pypto.runtime.arguments import as_declared

    program, pynames, _ = specialize_for_host(kernel, types, soc)
    logger.debug(f"[debug] {kernel.__name__}: running as host Python (no passes, no codegen)")
    params = program.functions[-1].params
    values = run_host(program, pynames, as_declared(params, kernel.param_names, args, where.__getitem__))
    if any(p.direction is ParamDirection.Out and isinstance(p.type, TensorType) for p in params):
        return None
    if isinstance(values, tuple) and len(values) == 1:
        return values[0]
    return values
