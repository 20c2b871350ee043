"""Where kernel source comes from: the ``ast`` of a function or class as written in its file,
with spans into that file and a resolver over the names it sees (its module's globals and
its closure). The front end reads source and never runs it.
"""

from __future__ import annotations

import ast
import inspect
import linecache
import textwrap
from collections.abc import Mapping

import numpy

from pypto.errors import ParseError, SpecializationError
from pypto.ir.types import FunctionType
from pypto.lang.vocabulary import names as N
from pypto.lang.vocabulary.dsl import _decorated_at
from pypto.lang.expressions.exprs import Source
from pypto.lang.statements.signatures import check_signature


def source_of(obj, scope: dict | None = None, line: int | None = None) -> tuple[Source, ast.AST]:
    """The ``ast`` of a function or class as written in its file, with spans into that file.
    ``scope``: the names of the function that defined it (which its annotations read, and a
    closure does not keep), seen before the module's. ``line``: a line of the definition
    (its decorator's, as the decorating frame has it), which tells two classes of one name
    in a file apart — ``inspect`` finds a class by name only."""
    from pypto.errors import PyptoError

    try:
        file = inspect.getsourcefile(obj) or inspect.getfile(obj)
        lines, start = _class_at(file, obj, line) if line is not None and inspect.isclass(obj) else (None, None)
        if lines is None:
            lines, start = inspect.getsourcelines(obj)
    except (OSError, TypeError):
        raise PyptoError(
            f"cannot retrieve the source code of '{getattr(obj, '__qualname__', obj)}': kernels are parsed "
            "from their source, which must be available in a file",
            hint="define the kernel in a .py file (not in an interactive prompt or exec string)",
        ) from None
    text = "".join(lines)
    dedented = textwrap.dedent(text)
    indent = len(text.split("\n", 1)[0]) - len(dedented.split("\n", 1)[0])
    tree = ast.parse(dedented)
    node = tree.body[0]
    all_lines = tuple(line.rstrip("\n") for line in linecache.getlines(file)) or tuple(
        line.rstrip("\n") for line in lines)
    module = getattr(obj, "__globals__", None)
    if module is None:
        module = vars(inspect.getmodule(obj) or object())
    cells = dict(zip(obj.__code__.co_freevars, obj.__closure__ or ())) if hasattr(obj, "__code__") else {}
    source = Source(file, all_lines, line_offset=start - 1, col_offset=indent,
                    resolver=N.ModuleResolver(_LiveNames(cells, scope or {}, module)))
    return source, node


class _LiveNames(Mapping):
    """The names a kernel sees, as they are bound now: its closure's cells, then the
    locals of the function that defined it (as they were then), then its module's globals
    — read at each lookup, so a kernel compiled again after a rebinding sees the new value."""

    def __init__(self, cells: dict, scope: dict, module: dict):
        self.cells, self.scope, self.module = cells, scope, module

    def __getitem__(self, name: str):
        cell = self.cells.get(name)
        if cell is not None:
            try:
                return cell.cell_contents
            except ValueError:  # an empty cell: defined later in the enclosing function
                pass
        if name in self.scope:
            return self.scope[name]
        return self.module[name]

    def __contains__(self, name) -> bool:
        try:
            self[name]
        except KeyError:
            return False
        return True

    def __iter__(self):
        return iter({**self.module, **self.scope, **{k: None for k in self.cells}})

    def __len__(self) -> int:
        return sum(1 for _ in self)


class Reads:
    """The outside values a specialization read (module constants, closure values, module
    attributes, the kernels it calls), as they were then. A program built from them is
    stale once any of them is rebound — a notebook cell setting ``SCALE = 3`` after a call
    that compiled with ``SCALE = 2`` — and is then built again (``changed``)."""

    def __init__(self, resolvers):
        self.entries = tuple((resolver, read, _frozen(resolver.current(read)))
                             for resolver in {id(r): r for r in resolvers if isinstance(r, N.ModuleResolver)}.values()
                             for read in tuple(resolver.reads))

    def changed(self) -> str | None:
        """The first read whose value is not what it was, described; None when none is."""
        for resolver, read, then in self.entries:
            now = resolver.current(read)
            if _frozen(now) != then:
                what = read[1] if read[0] == "name" else f"{read[1].__name__}.{read[2]}"
                return f"'{what}' changed from {_shown(then)} to {_shown(_frozen(now))}"
        return None


class _Same:
    """An object compared by identity (a module, a kernel, an enum member): equal only to itself."""

    __slots__ = ("obj",)

    def __init__(self, obj):
        self.obj = obj

    def __eq__(self, other) -> bool:
        return isinstance(other, _Same) and other.obj is self.obj

    def __hash__(self) -> int:
        return id(self.obj)


def _frozen(value):
    """A value as a kernel reads it, kept so that a later change shows — a list is copied
    (an in-place ``OFFSETS[0] = 4`` is a change), a float kept by its bits (-0.0 is not
    0.0; a NaN is equal to itself), ``True`` is not ``1``."""
    if isinstance(value, numpy.generic):
        value = value.item()
    if isinstance(value, float):
        return (float, value.hex())
    if isinstance(value, (bool, int, str)) or value is None:
        return (type(value), value)
    if isinstance(value, (tuple, list)):
        return (type(value), tuple(_frozen(x) for x in value))
    return _Same(value)


def _shown(frozen) -> str:
    if isinstance(frozen, _Same):
        return "<nothing>" if frozen.obj is N.ABSENT else f"<{type(frozen.obj).__name__}>"
    kind, value = frozen
    if kind is float:
        return repr(float.fromhex(value))
    if kind in (tuple, list):
        items = ", ".join(_shown(x) for x in value)
        return f"({items})" if kind is tuple else f"[{items}]"
    return repr(value)


def _class_at(file: str, cls, line: int):
    """(lines, first line) of the class named like ``cls`` whose decorators or header hold
    ``line``; (None, None) when the file does not show one."""
    text = "".join(linecache.getlines(file))
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return None, None
    found = [x for x in ast.walk(tree) if isinstance(x, ast.ClassDef) and x.name == cls.__name__
             and min([d.lineno for d in x.decorator_list] + [x.lineno]) <= line <= x.lineno]
    if len(found) != 1:
        return None, None
    x = found[0]
    first = min([d.lineno for d in x.decorator_list] + [x.lineno])
    return text.splitlines(keepends=True)[first - 1:x.end_lineno], first


class KernelSource:
    """A kernel function's parsed source, read once per kernel object. Its signature is
    checked as it is read, so no call is bound against parameters the kernel cannot have."""

    def __init__(self, fn, function_type: FunctionType | None = None, scope: dict | None = None):
        if not inspect.isfunction(fn):  # refused where it is decorated, while that line is known
            kind = "class" if inspect.isclass(fn) else type(fn).__name__
            what = f"{'an' if kind[0] in 'aeiou' else 'a'} {kind}"
            name = getattr(fn, "__name__", None)
            raise ParseError(f"{repr(name) if isinstance(name, str) else 'the decorated value'} is {what}: a kernel "
                             "decorator (@pl.jit, @pl.function) takes a function", span=_decorated_at(),
                             hint="write the kernel as a def: @pl.jit above 'def kernel(a: pl.Tensor, ...):' "
                                  "(kernels that call each other go in a @pl.program class)")
        self.fn = fn
        self.function_type = function_type
        self.scope = scope
        self._parsed = None

    def get(self):
        if self._parsed is None:
            source, node = source_of(self.fn, self.scope)
            if not isinstance(node, ast.FunctionDef):
                raise SpecializationError(f"'{self.fn.__name__}' is not a function", span=source.span(node))
            check_signature(source, node, spliced=self.function_type is FunctionType.Inline)
            self._parsed = (source, node)
        return self._parsed

    def param_names(self) -> tuple[str, ...]:
        return tuple(a.arg for a in self.get()[1].args.args)


def defining_scope(frame) -> dict | None:
    """The local names of the function a kernel is defined in (a builder function's sizes),
    or None at module level, where the module's names are the kernel's."""
    if frame is None or frame.f_code.co_name == "<module>":
        return None
    return dict(frame.f_locals)
