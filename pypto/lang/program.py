"""Programs from source: the ``@pl.program`` class form and its ``@pl.function`` methods.

A program is a class of ``@pl.function`` methods; functions call each other as
``self.f(...)``. Bodies convert on demand, so a caller can be converted before the callee
it needs the signature of (``program_builder``; ``pypto.lang.text`` reads the same classes
from text). What the decorators give back: a ``Program``, a ``GenericProgram`` (pl.dynamic
axes, one Program per set of extents) or a ``HostProgram`` (a host orchestrator of ranks).
"""

from __future__ import annotations

import ast
import inspect

from pypto.errors import ParseError, PyptoError
from pypto.backend import DEFAULT
from pypto.ir import nodes as n
from pypto.ir.collector import collector_paused
from pypto.ir.types import FunctionType, Level, Role
from pypto.lang.vocabulary import names as N
from pypto.lang.statements.calls import ProgramHooks
from pypto.lang.converter import FunctionConverter
from pypto.console import filtered
from pypto.lang.expressions.exprs import Source
from pypto.lang.sources import defining_scope, source_of
from pypto.lang.program_builder import FunctionDecl, ProgramBuilder


def function(fn=None, *, type: FunctionType = FunctionType.Opaque, external_source=None, auto_scope=True, attrs=None,
             level: Level | None = None, role: Role | None = None):
    """A function of a ``@pl.program`` (the reference's class form): ``@pl.function``,
    ``@pl.function(type=pl.FunctionType.InCore)``, ``type=pl.FunctionType.Orchestration``.

    ``type`` says what it is: ``InCore`` (a kernel of the cores), ``AIC`` / ``AIV`` (one core
    kind's, for hand-written pipes; ``attrs={"dual_aiv_dispatch": True}`` runs an AIV one on
    both vector cores), ``Group`` (an AIC and an AIV function dispatched together),
    ``Orchestration`` (host code submitting tasks), ``Opaque`` (left to the compiler).
    ``level=pl.Level.HOST, role=pl.Role.Orchestrator`` makes it the host orchestrator of many
    ranks, which dispatches the program's orchestration to each (``self.orch(..., device=r)``);
    ``auto_scope=False`` as for ``pl.jit``. A function backed by a hand-written kernel
    (``external_source="k.cpp"``) can be declared but not run here: there is no AscendC
    toolchain."""
    if fn is None:
        return lambda f: FunctionDecl(f, type, external_source, defining_scope(inspect.currentframe().f_back))
    return FunctionDecl(fn, type, external_source, defining_scope(inspect.currentframe().f_back))


def program(cls) -> n.Program:
    """``@pl.program``: the class's ``@pl.function`` methods become one IR ``Program``
    (parsed, never run), built when Python defines the class, from the values of that moment.

    The last method is the entry. Methods call each other as ``self.k(a, out)`` (or
    ``pl.submit(self.k, ...)`` for a task's id). Run it with ``pypto.runtime.run(program,
    *tensors, config=...)`` or ``pypto.ir.compile(program)``; ``program.as_python()`` prints
    it as DSL source that parses back."""
    try:
        return _program(cls, inspect.currentframe().f_back)  # (the caller's frame: the names the class sees)
    except PyptoError as err:
        raise filtered(err) from err.__cause__  # pypto's frames left out: PYPTO_TRACEBACK=full shows them


def _program(cls, caller) -> n.Program:
    source, node = source_of(cls, line=caller.f_lineno if caller is not None else None)
    namespace = dict(vars(inspect.getmodule(cls) or object()))
    # A class defined in a function sees that function's locals (the sizes a builder
    # function computes before its @pl.program class, say), as its annotations did.
    if caller is not None and caller.f_code.co_name != "<module>":
        namespace.update(caller.f_locals)
    for decl in vars(cls).values():  # methods see their enclosing function's locals
        fn = getattr(decl, "fn", None)
        for name, cell in zip(getattr(fn, "__code__", None) and fn.__code__.co_freevars or (),
                              getattr(fn, "__closure__", None) or ()):
            try:
                namespace[name] = cell.cell_contents
            except ValueError:
                pass
    source = Source(source.file, source.lines, source.line_offset, source.col_offset,
                    resolver=N.ModuleResolver(namespace))
    if not isinstance(node, ast.ClassDef):
        raise ParseError("@pl.program decorates a class", span=source.span(node))
    # read when Python defines the class, before any RunConfig names a backend: the
    # default one; the pass pipeline verifies it again against the backend in force
    hosts = _host_methods(source, node)
    if hosts:
        # the host functions' Python (a SubWorker's body runs as written, on the host)
        return HostProgram(source, node, hosts, {name: getattr(decl, "fn", None) for name, decl in vars(cls).items()
                                                 if name in hosts})
    builder = ProgramBuilder(source, node, DEFAULT)
    if builder.entry is not None and builder.generic(source, builder.defs[builder.entry]):
        return GenericProgram(source, node)
    with collector_paused():
        try:
            return builder.build()
        except PyptoError as err:
            return _for_another_chip(source, node, err)


def _for_another_chip(source, node, err):
    """A program the default chip refuses may be written for another (an A5 kernel with MX
    matmuls): read for the first chip that takes it, else ``err``, the default chip's
    verdict. Compiling it for a chip that refuses it is refused by the pipeline, which reads
    it again for the chip in force."""
    from pypto.backend import BACKENDS

    for table in BACKENDS.values():
        if table is DEFAULT:
            continue
        try:
            return ProgramBuilder(source, node, table).build()
        except PyptoError:
            continue
    raise err


def _host_methods(source: Source, cls: ast.ClassDef) -> dict:
    """The methods declared ``@pl.function(level=pl.Level.HOST, ...)``: name -> their role."""
    out = {}
    conv = None
    for stmt in cls.body:
        if not isinstance(stmt, ast.FunctionDef):
            continue
        for deco in stmt.decorator_list:
            kw = {k.arg: k.value for k in deco.keywords} if isinstance(deco, ast.Call) else {}
            if "level" not in kw:
                continue
            conv = conv or FunctionConverter(source, stmt, name=stmt.name, kind=FunctionType.InCore,
                                             hooks=ProgramHooks(DEFAULT))
            if conv.static_of(kw["level"], Level, "the level") is Level.HOST:
                out[stmt.name] = conv.static_of(kw["role"], Role, "the role") if "role" in kw else Role.Orchestrator
    return out


class HostProgram:
    """A ``@pl.program`` with a host orchestrator (``@pl.function(level=pl.Level.HOST,
    role=pl.Role.Orchestrator)``): the reference's class form of a program of many ranks.
    The host function's body is walked by the runtime (``pypto.runtime.distributed``) like a
    ``@pl.jit.host`` body; each ``self.orch(..., device=r)`` it makes runs the program of the
    class's other functions with ``orch`` as its entry (``device_program``), on rank ``r``."""

    def __init__(self, source: Source, cls: ast.ClassDef, hosts: dict, python: dict | None = None):
        self.source = source
        self.sub_workers = {name: (python or {}).get(name) for name, role in hosts.items() if role is Role.SubWorker}
        self.cls = cls
        self.name = cls.name
        orchestrators = [name for name, role in hosts.items() if role is Role.Orchestrator]
        if len(orchestrators) != 1:
            fdef = next(s for s in cls.body if isinstance(s, ast.FunctionDef) and s.name in hosts)
            raise ParseError(f"program '{cls.name}' has {len(orchestrators)} host orchestrators: a program of many "
                             "ranks has one", span=source.span(fdef),
                             hint="one @pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)")
        self.host_name = orchestrators[0]
        self.hosts = frozenset(hosts)
        self.defs = {s.name: s for s in cls.body if isinstance(s, ast.FunctionDef)}
        self._made: dict[tuple, object] = {}

    @property
    def host_def(self) -> ast.FunctionDef:
        return self.defs[self.host_name]

    def device_functions(self) -> frozenset:
        """The names a host dispatch may call: the functions that run on a device."""
        return frozenset(self.defs) - self.hosts

    def device_program(self, entry: str, soc=DEFAULT):
        """The program of the class's device functions with ``entry`` as its entry (a
        ``GenericProgram`` when the entry has pl.dynamic axes); made once per entry."""
        key = (entry, id(soc))
        if key not in self._made:
            body = [s for s in self.cls.body if not (isinstance(s, ast.FunctionDef) and s.name in self.hosts)]
            body = [s for s in body if getattr(s, "name", None) != entry] + [self.defs[entry]]
            cls = ast.ClassDef(name=self.cls.name, bases=self.cls.bases, keywords=self.cls.keywords, body=body,
                               decorator_list=[], type_params=[])
            ast.copy_location(cls, self.cls)
            builder = ProgramBuilder(self.source, cls, soc)
            if builder.generic(self.source, builder.defs[entry]):
                self._made[key] = GenericProgram(self.source, cls)
            else:
                with collector_paused():
                    self._made[key] = builder.build()
        return self._made[key]

    def __repr__(self) -> str:
        return f"<pl.program {self.name}: host orchestrator {self.host_name} of many ranks>"


class GenericProgram:
    """A ``@pl.program`` whose entry has ``pl.dynamic`` axes. Types are static here, so it is
    a Program per set of extents, made (``specialize``) when it is run or compiled on tensors
    and kept; every method and kernel with dynamic axes is converted for the types its calls
    pass. Each mistake is reported then, at its line, as for any program. (``pypto.runtime``
    gives it ``specialize(*tensors)``, the Program for a call's arguments.)"""

    def __init__(self, source: Source, cls: ast.ClassDef):
        self.source = source
        self.cls = cls
        self.name = cls.name
        self._made: dict[tuple, n.Program] = {}

    @property
    def param_names(self) -> list:
        """The entry's parameters, in order."""
        fdef = [s for s in self.cls.body if isinstance(s, ast.FunctionDef)][-1]
        return [a.arg for a in fdef.args.args[1:]]

    def specialize_types(self, arg_types: tuple, soc=DEFAULT) -> n.Program:
        """The Program for a call whose arguments have the IR types ``arg_types``."""
        key = (id(soc), tuple(arg_types))
        if key not in self._made:
            with collector_paused():
                self._made[key] = ProgramBuilder(self.source, self.cls, soc, entry_types=tuple(arg_types)).build()
        return self._made[key]

    def __getattr__(self, attr: str):
        if not attr.startswith("_") and hasattr(n.Program, attr):
            raise PyptoError(f"program '{self.name}' has pl.dynamic axes: it is a Program per set of extents, and "
                             f"'{attr}' belongs to one of those", span=self.source.span(self.cls),
                             hint=f"program.specialize(*tensors).{attr}")
        raise AttributeError(f"'GenericProgram' object has no attribute '{attr}'")

    def unspecialized(self, soc=DEFAULT) -> n.Program:
        """The program as written, without a call's extents: the error naming the first
        pl.dynamic axis nothing gives (what compiling it with no tensors means)."""
        with collector_paused():
            return ProgramBuilder(self.source, self.cls, soc).build()

    def __repr__(self) -> str:
        return f"<pl.program {self.name}: pl.dynamic axes, specialized for the tensors it runs on>"
