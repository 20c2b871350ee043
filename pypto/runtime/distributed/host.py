"""The ``@pl.jit.host`` orchestrator: the one function that knows every rank. Its body is
parsed, never run as Python: it allocates window buffers, makes typed views of them and
dispatches a per-device ``@pl.jit`` function to each rank (``fn(..., device=r)``), in the
small language the reference's host orchestrators are written in — constants, the
parameters and their per-rank slices (``x[r]``), integer arithmetic of the loop's rank,
``pld.world_size()``, ``for r in pl.range(n)``. Walking it gives the ``Dispatch``es, in
host order, which the cluster then runs (each rank's in its own thread).
"""

from __future__ import annotations

import ast
import math
import operator

import attrs
import torch

from pypto.cluster.windows import WindowBuffer, WindowView
from pypto.runtime.distributed import builtins
from pypto.runtime.distributed.worker import StackedDeviceTensor
from pypto.errors import ParseError, PyptoError, TypeCheckError, UnsupportedSyntaxError
from pypto.ir.types import DataType, ReduceOp
from pypto.lang.vocabulary import names as N
from pypto.lang.sources import source_of

_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.FloorDiv: operator.floordiv,
        ast.Mod: operator.mod}
_HINT = ("a host orchestrator allocates windows (pld.alloc_window_buffer), views them (pld.window), loops over the "
         "ranks (for r in pl.range(pld.world_size())) and dispatches (fn(..., device=r))")


@attrs.frozen
class Callback:
    """``self.verify(t)`` in the host: a SubWorker's Python run on the host once every
    dispatch the host made before it has run (the reference's sub-worker task)."""

    name: str
    fn: object
    args: tuple
    span: object = attrs.field(eq=False)


@attrs.frozen
class Dispatch:
    rank: int
    kernel: object  # a @pl.jit function (the per-device orchestration)
    args: tuple  # per-rank: torch views of the host's tensors, WindowViews, numbers
    span: object = attrs.field(eq=False)


class HostKernel:
    """``@pl.jit.host``: call it with the world-shaped tensors and a config whose
    ``distributed_config`` names the devices; ``compile`` gives the program to run again."""

    __pypto_kernel__ = True

    def __init__(self, fn):
        self.fn = fn
        self.__name__ = fn.__name__
        self.__qualname__ = fn.__qualname__
        self.__doc__ = fn.__doc__
        self.__wrapped__ = fn
        self._parsed = None

    def __repr__(self) -> str:
        return f"<pypto host orchestrator {self.__qualname__}>"

    def parsed(self):
        if self._parsed is None:
            source, node = source_of(self.fn)
            self._parsed = (source, node)
        return self._parsed

    @property
    def param_names(self) -> tuple:
        _, node = self.parsed()
        return tuple(a.arg for a in node.args.args)

    def compile(self, *args, config=None, **kwargs):
        from pypto.runtime.distributed.program import DistributedProgram

        return DistributedProgram(self, config)

    def __call__(self, *args, config=None, **kwargs):
        return self.compile(config=config)(*args, **kwargs)

    def dispatches(self, args: tuple, nranks: int, windows: dict | None = None) -> tuple[list, object]:
        """(the Dispatches the body makes for these arguments, what it returns). ``windows``:
        the buffers a persistent worker keeps, by name (allocated here the first time)."""
        source, node = self.parsed()
        names = self.param_names
        args = self.outputs_made(source, node, nranks, args)
        if len(args) != len(names):
            raise TypeCheckError(f"host orchestrator '{self.__name__}' takes {len(names)} arguments "
                                 f"({', '.join(names)}), got {len(args)}", span=source.span(node))
        walker = _Walker(source, nranks, dict(zip(names, args)), windows, self.methods, self.sub_workers)
        walker.class_def = getattr(getattr(self, "program", None), "cls", None)
        walker.bind_extents(node, names, args)
        try:
            walker.block(node.body)
        except _Return as ret:
            return walker.out, ret.value
        return walker.out, None


    def outputs_made(self, source, fdef, nranks: int, args: tuple) -> tuple:
        """``args`` with the pl.Out parameters left out (all of them, the reference's
        return-style call) made: zeros of their annotated shape and dtype."""
        from pypto.sim.ops.numerics import TORCH

        params = fdef.args.args[len(fdef.args.args) - len(self.param_names):]
        outs = [k for k, a in enumerate(params) if a.annotation is not None
                and ast.unparse(a.annotation).split("[", 1)[0].endswith("Out")
                and not ast.unparse(a.annotation).split("[", 1)[0].endswith("InOut")]
        if not outs or len(args) != len(params) - len(outs):
            return args
        walker = _Walker(source, nranks, {}, None, self.methods)
        given, made = iter(args), []
        for k, a in enumerate(params):
            if k not in outs:
                made.append(next(given))
                continue
            ann = a.annotation.slice  # pl.Out[pl.Tensor[[...], dtype]]
            dims, dtype = ann.slice.elts[0].elts, walker.value(ann.slice.elts[1])
            made.append(torch.zeros(tuple(walker.integer(d, "an extent") for d in dims), dtype=TORCH[dtype]))
        return tuple(made)

    methods: dict = {}  # what ``self.name(...)`` dispatches (the class form's)
    sub_workers: dict = {}  # what ``self.name(...)`` runs on the host: a SubWorker's Python (or None: bound later)

    def collective_calls(self, nranks: int) -> list:
        """Each host-level collective the body calls, as far as it is known before the
        arguments are: (its variant's name, the call's ast). The variant — the collective,
        its constant options and the payload's dtype — is what one builtin program serves
        for any shape (``builtins.variant``)."""
        source, node = self.parsed()
        walker = _Walker(source, nranks, {}, None, self.methods)
        found = []
        for call in ast.walk(node):
            if not isinstance(call, ast.Call):
                continue
            meaning = walker.meaning(call.func)
            if not (isinstance(meaning, N.Op) and meaning.name.startswith("system.")
                    and meaning.name.split(".", 1)[1] in builtins.PARAMS):
                continue
            name = meaning.name.split(".", 1)[1]
            params = builtins.PARAMS[name]
            given = {p[0]: a for p, a in zip(params, call.args)} | {k.arg: k.value for k in call.keywords}
            options = {}
            for pname, is_window, default in params:
                if not is_window:
                    try:
                        options[pname] = walker.value(given[pname]) if pname in given else default
                    except PyptoError:
                        options[pname] = None  # (known only at the call)
            payload = given.get("signal" if name == "barrier" else "target")
            dtype = None if name == "barrier" else _window_dtype(walker, node, payload, call)
            found.append((builtins.variant(name, options, dtype), call))
        return found


class ProgramHost(HostKernel):
    """The host orchestrator of a ``@pl.program`` class (``pypto.lang.program.HostProgram``):
    walked as a ``@pl.jit.host`` body is, its ``self.orch(..., device=r)`` dispatching the
    class's program with ``orch`` as the entry."""

    def __init__(self, program):
        self.program = program
        self.__name__ = self.__qualname__ = program.host_name
        self.__doc__ = None
        self._parsed = (program.source, program.host_def)
        self.methods = {name: DeviceEntry(program, name) for name in program.device_functions()}
        self.sub_workers = dict(program.sub_workers)

    def __repr__(self) -> str:
        return f"<pypto host orchestrator {self.program.name}.{self.__name__}>"

    @property
    def param_names(self) -> tuple:
        return tuple(a.arg for a in self.program.host_def.args.args[1:])


class DeviceEntry:
    """One device function of a class-form program, as the host dispatches it: the class's
    program with it as the entry, compiled per config (and per extents when generic)."""

    def __init__(self, program, name: str):
        self.program = program
        self.__name__ = name
        self._built: dict = {}

    @property
    def function_type(self):
        from pypto.backend import DEFAULT
        from pypto.lang.program_builder import function_options

        return function_options(self.program.source, self.program.defs[self.__name__], DEFAULT)[0]

    def compile(self, *args, config=None):
        from pypto.backend import backend
        from pypto.lang.program import GenericProgram
        from pypto.runtime.build import entry_params
        from pypto.runtime.compiled import compile_program
        from pypto.runtime.generic import GenericCompiled

        if config not in self._built:
            program = self.program.device_program(self.__name__, backend(config.backend))
            self._built[config] = GenericCompiled(program, config) if isinstance(program, GenericProgram) \
                else compile_program(program, entry_params(program), config, write=False)
        return self._built[config]


def _written(kernel) -> tuple:
    """The positions of a dispatched function's pl.Out / pl.InOut parameters: what a host
    call of it gives back (the tensors it wrote, as the reference's host calls return)."""
    if isinstance(kernel, DeviceEntry):
        fdef = kernel.program.defs[kernel.__name__]
        params = fdef.args.args[1:]
    else:
        try:
            params = source_of(kernel.fn)[1].args.args if hasattr(kernel, "fn") else []
        except PyptoError:
            params = []
    return tuple(i for i, a in enumerate(params) if a.annotation is not None
                 and ast.unparse(a.annotation).split("[", 1)[0].endswith(("Out", "InOut")))


def _window_dtype(walker, fdef, operand, call):
    """The dtype= of the pld.window a host collective's operand is (inline, or the last
    assignment of its name before the call); None when it cannot be told before the call."""
    def dtype_of(expr):
        if isinstance(expr, ast.Call) and getattr(walker.meaning(expr.func), "name", None) == "tensor.window":
            for k in expr.keywords:
                if k.arg == "dtype":
                    try:
                        return walker.value(k.value)
                    except PyptoError:
                        return None
        return None

    if isinstance(operand, ast.Name):
        found = None
        for s in ast.walk(fdef):
            if isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name) \
                    and s.targets[0].id == operand.id and s.lineno <= call.lineno and dtype_of(s.value) is not None:
                if found is None or s.lineno >= found[0]:
                    found = (s.lineno, dtype_of(s.value))
        return found[1] if found else None
    return dtype_of(operand)


class _Return(Exception):
    def __init__(self, value):
        self.value = value


class _Walker:
    def __init__(self, source, nranks: int, env: dict, windows: dict | None, methods: dict,
                 sub_workers: dict | None = None):
        self.sub_workers = sub_workers or {}
        self.made: dict = {}  # the signals the host's allreduce calls made, by call site
        self.inline_count = 0  # the inline chip scopes met: the next goes to this device (mod the devices)
        self.placed: dict = {}  # id(a stacked tensor's shard) -> (the worker it is on, the shard)
        self.methods = methods
        self.windows = windows
        self.source = source
        self.nranks = nranks
        self.env = env
        self.out: list[Dispatch] = []

    def bind_extents(self, fdef, names, args) -> None:
        """The pl.dynamic names of the parameters' annotated shapes, each the extent of the
        tensor passed there (a host body sizes its windows with them: NR * SIZE)."""
        self.extents: dict = {}
        by_name = dict(zip(names, args))
        for a in fdef.args.args:
            value, ann = by_name.get(a.arg), a.annotation
            while isinstance(ann, ast.Subscript) and not (isinstance(ann.slice, ast.Tuple) and ann.slice.elts
                                                          and isinstance(ann.slice.elts[0], ast.List)):
                ann = ann.slice  # pl.Out[pl.Tensor[...]]
            if not isinstance(value, torch.Tensor) or not isinstance(ann, ast.Subscript):
                continue
            dims = ann.slice.elts[0].elts
            if len(dims) != value.dim():
                continue
            for dim, extent in zip(dims, value.shape):
                if isinstance(dim, ast.Name) and dim.id not in self.env:
                    meaning = self.meaning(dim)
                    if isinstance(meaning, N.Value) and isinstance(meaning.value, N.DynVar):
                        self.extents.setdefault(meaning.value.name, int(extent))

    def error(self, cls, node, message: str, hint: str | None = _HINT) -> PyptoError:
        return cls(message, span=self.source.span(node), hint=hint)

    def block(self, body) -> None:
        for stmt in body:
            self.stmt(stmt)

    def stmt(self, s) -> None:
        if isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant) and isinstance(s.value.value, str):
            return  # a docstring
        if isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name):
            self.env[s.targets[0].id] = self.value(s.value, name=s.targets[0].id)
            return
        if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name) and s.value is not None:
            self.env[s.target.id] = self.value(s.value, name=s.target.id)
            return
        if isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Tuple) \
                and all(isinstance(t, ast.Name) for t in s.targets[0].elts):
            names = [t.id for t in s.targets[0].elts]
            v = self.value(s.value)
            if not isinstance(v, tuple) or len(v) != len(names):
                raise self.error(TypeCheckError, s, f"'{ast.unparse(s.value)}' gives "
                                 f"{len(v) if isinstance(v, tuple) else 'one value'}, not {len(names)}", hint=None)
            self.env.update(zip(names, v))
            return
        if isinstance(s, ast.For) and isinstance(s.target, ast.Name) and not s.orelse:
            for r in self.loop(s.iter):
                self.env[s.target.id] = r
                self.block(s.body)
            return
        if isinstance(s, ast.Expr) and isinstance(s.value, ast.Call):
            self.value(s.value)
            return
        if isinstance(s, ast.Return):
            raise _Return(self.value(s.value) if s.value is not None else None)
        if isinstance(s, ast.Pass):
            return
        if isinstance(s, ast.With) and len(s.items) == 1 and self.chip_scope(s.items[0].context_expr):
            self.inline_chip(s)
            return
        raise self.error(UnsupportedSyntaxError, s, f"a host orchestrator cannot run '{ast.unparse(s).splitlines()[0]}'")

    def loop(self, node) -> range:
        if isinstance(node, ast.Call) and self.meaning(node.func) == N.Builtin("range") and not node.keywords \
                and 1 <= len(node.args) <= 3:
            bounds = [self.integer(a, "a loop bound") for a in node.args]
            return range(*bounds)
        raise self.error(UnsupportedSyntaxError, node, f"a host loop runs over pl.range(...), not "
                         f"'{ast.unparse(node)}'", hint="for r in pl.range(pld.world_size()):")

    def meaning(self, node):
        """What a name chain of the language denotes (None: not one of the language's)."""
        chain = []
        while isinstance(node, ast.Attribute):
            chain.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name) or node.id in self.env:
            return None
        ref = self.source.resolver.resolve(node.id)
        if not isinstance(ref, N.Path):
            return ref
        for attr in reversed(chain):
            ref = ref.child(attr)
        return N.interpret(ref)

    def integer(self, node, what: str) -> int:
        v = self.value(node)
        if isinstance(v, bool) or not isinstance(v, int):
            raise self.error(TypeCheckError, node, f"{what} must be an integer, not {v!r}", hint=None)
        return v

    def value(self, node, name: str | None = None):
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float, str)):
            return node.value
        if isinstance(node, ast.Name) and node.id in self.env:
            return self.env[node.id]
        if isinstance(node, ast.Tuple):
            return tuple(self.value(e) for e in node.elts)
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            lhs, rhs = self.value(node.left), self.value(node.right)
            if not all(isinstance(x, int) and not isinstance(x, bool) for x in (lhs, rhs)):
                raise self.error(TypeCheckError, node, f"host arithmetic is on integers: '{ast.unparse(node)}'",
                                 hint=None)
            if isinstance(node.op, (ast.FloorDiv, ast.Mod)) and rhs == 0:
                raise self.error(PyptoError, node, f"division by zero in '{ast.unparse(node)}'", hint=None)
            return _OPS[type(node.op)](lhs, rhs)
        if isinstance(node, ast.Subscript):
            base = self.value(node.value)
            stacked = base if isinstance(base, StackedDeviceTensor) else None
            if stacked is not None:
                if stacked.freed:
                    raise self.error(PyptoError, node, f"'{ast.unparse(node.value)}' was freed "
                                     "(free_stacked_tensor)", hint="pass a stacked tensor the worker still holds")
                base = stacked.data
            if not isinstance(base, torch.Tensor):
                raise self.error(TypeCheckError, node, f"'{ast.unparse(node.value)}' is not a tensor to slice",
                                 hint=None)
            parts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            if len(parts) > base.dim() or stacked is not None and len(parts) != 1:
                raise self.error(TypeCheckError, node, f"'{ast.unparse(node)}' indexes {len(parts)} axes of a "
                                 f"tensor of {base.dim() if stacked is None else 1}", hint=None)
            index = tuple(self.integer(p, "an index") for p in parts)
            for axis, i in enumerate(index):
                if not 0 <= i < base.shape[axis]:
                    raise self.error(PyptoError, node, f"'{ast.unparse(node)}': index {i} is outside the "
                                     f"{base.shape[axis]} of axis {axis}",
                                     hint="a world tensor's first axis is the ranks")
            index = index[0] if len(index) == 1 else index
            shard = base[index]
            if stacked is not None:  # where it is resident: a dispatch elsewhere is refused
                self.placed[id(shard)] = (stacked.worker_ids[index], shard)
            return shard
        if isinstance(node, ast.Call):
            return self.call(node, name)
        meaning = self.meaning(node)
        if isinstance(meaning, N.Value) and isinstance(meaning.value, N.DynVar):
            if meaning.value.name in self.extents:
                return self.extents[meaning.value.name]
            raise self.error(TypeCheckError, node, f"pl.dynamic '{meaning.value.name}' is no extent of the host "
                             "function's tensors here", hint="size the host's tensors with it, or use "
                                                             "pld.world_size()")
        if isinstance(meaning, N.Value):
            return meaning.value
        raise self.error(UnsupportedSyntaxError, node, f"a host orchestrator cannot evaluate '{ast.unparse(node)}'")

    def call(self, node: ast.Call, name: str | None):
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr == "get_byte" and not node.args and not node.keywords:
            dtype = self.value(func.value)
            if isinstance(dtype, DataType):
                return dtype.get_byte()
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self" \
                and self.methods:
            if func.attr in self.sub_workers:
                return self.callback(func.attr, node)
            if func.attr not in self.methods:
                raise self.error(TypeCheckError, node, f"the program has no device function '{func.attr}' to "
                                 "dispatch", hint=f"one of {', '.join(sorted(self.methods))}")
            return self.dispatch(self.methods[func.attr], node)
        meaning = self.meaning(func)
        if isinstance(meaning, N.Op) and meaning.name == "system.world_size":
            return self.nranks
        if isinstance(meaning, N.Op) and meaning.name in ("create_tensor", "tensor.create"):
            return self.create(node)
        if isinstance(meaning, N.Op) and meaning.name == "tensor.alloc_window_buffer":
            return self.alloc(node, name)
        if isinstance(meaning, N.Op) and meaning.name == "tensor.window":
            return self.window(node)
        if isinstance(meaning, N.Op) and meaning.name.startswith("system.") \
                and meaning.name.split(".", 1)[1] in builtins.PARAMS:
            return self.collective(meaning.name.split(".", 1)[1], node)
        ref = self.source.resolver.resolve(func.id) if isinstance(func, ast.Name) and func.id not in self.env else None
        if isinstance(ref, N.Kernel):
            return self.dispatch(ref.obj, node)
        raise self.error(UnsupportedSyntaxError, node, f"a host orchestrator cannot call '{ast.unparse(func)}'")

    def create(self, node: ast.Call) -> torch.Tensor:
        """``pl.create_tensor([...], dtype=...)`` in the host: a host tensor of zeros, which the
        dispatches after it write and read."""
        from pypto.sim.ops.numerics import TORCH

        kw = {k.arg: k.value for k in node.keywords}
        if len(node.args) != 1 or not isinstance(node.args[0], (ast.List, ast.Tuple)) or set(kw) != {"dtype"}:
            raise self.error(TypeCheckError, node, "pl.create_tensor takes a shape and dtype=",
                             hint="pl.create_tensor([128, 128], dtype=pl.FP32)")
        dtype = self.value(kw["dtype"])
        if not isinstance(dtype, DataType):
            raise self.error(TypeCheckError, kw["dtype"], "pl.create_tensor's dtype is a pl dtype", hint="dtype=pl.FP32")
        return torch.zeros(tuple(self.integer(e, "an extent") for e in node.args[0].elts), dtype=TORCH[dtype])

    def alloc(self, node: ast.Call, name: str | None) -> WindowBuffer:
        kw = {k.arg: k.value for k in node.keywords}
        if "name" in kw:
            raise self.error(TypeCheckError, kw["name"], "pld.alloc_window_buffer's name= is the variable it is "
                             "assigned to", hint="drop name=: buf = pld.alloc_window_buffer(...) names it 'buf'")
        if len(node.args) != 1:
            raise self.error(TypeCheckError, node, "pld.alloc_window_buffer takes a size in bytes, or a shape and "
                             "dtype=", hint="pld.alloc_window_buffer(SIZE * pl.FP32.get_byte())")
        arg = node.args[0]
        if isinstance(arg, (ast.List, ast.Tuple)):
            if set(kw) != {"dtype"}:
                raise self.error(TypeCheckError, node, "pld.alloc_window_buffer(shape, dtype=...) needs dtype=",
                                 hint="pld.alloc_window_buffer([NR, 1], dtype=pl.INT32)")
            dtype = self.value(kw["dtype"])
            size = math.prod(self.integer(e, "an extent") for e in arg.elts) * dtype.nbytes
        else:
            if kw:
                raise self.error(TypeCheckError, node, f"pld.alloc_window_buffer(size) takes no {', '.join(kw)}=",
                                 hint="pld.alloc_window_buffer(SIZE * pl.FP32.get_byte())")
            size = self.integer(arg, "a window's size in bytes")
        if size <= 0:
            raise self.error(TypeCheckError, node, f"a window buffer of {size} bytes", hint="size it in bytes, > 0")
        name = name or f"window_{node.lineno}"
        kept = self.windows.get(name) if self.windows is not None else None
        if kept is not None and kept.nbytes == size:
            return kept
        buf = WindowBuffer.allocate(name, size, self.nranks)
        if self.windows is not None:
            self.windows[name] = buf
        return buf

    def window(self, node: ast.Call) -> WindowView:
        kw = {k.arg: k.value for k in node.keywords}
        if len(node.args) != 2 or set(kw) != {"dtype"}:
            raise self.error(TypeCheckError, node, "pld.window takes (buffer, shape, dtype=...)",
                             hint="pld.window(data_buf, [1, SIZE], dtype=pl.FP32)")
        buf = self.value(node.args[0])
        if not isinstance(buf, WindowBuffer):
            raise self.error(TypeCheckError, node.args[0], f"pld.window views a buffer pld.alloc_window_buffer "
                             f"gave, not '{ast.unparse(node.args[0])}'", hint=None)
        shape_node = node.args[1]
        if not isinstance(shape_node, (ast.List, ast.Tuple)):
            raise self.error(TypeCheckError, shape_node, "pld.window's shape is a list of extents", hint=None)
        shape = tuple(self.integer(e, "an extent") for e in shape_node.elts)
        dtype = self.value(kw["dtype"])
        if not isinstance(dtype, DataType):
            raise self.error(TypeCheckError, kw["dtype"], "pld.window's dtype is a pl dtype", hint="dtype=pl.FP32")
        view = WindowView(buf, shape, dtype)
        if view.nbytes > buf.nbytes:
            raise self.error(TypeCheckError, node, f"a {list(shape)} {dtype.name} window needs {view.nbytes} bytes "
                             f"and '{buf.name}' has {buf.nbytes}",
                             hint="allocate the buffer with the bytes of every view of it")
        return view

    def chip_scope(self, node) -> bool:
        """``pl.at(level=pl.Level.CHIP, ...)``: a chip orchestration written inline."""
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "at"):
            return False
        level = next((k.value for k in node.keywords if k.arg == "level"), None)
        try:
            return level is not None and getattr(self.value(level), "name", None) == "CHIP"
        except PyptoError:
            return False

    def inline_chip(self, s: ast.With) -> None:
        """The scope's body as a chip orchestration of the host tensors it names, dispatched
        to the next device in turn (the k-th such scope to device k): what it assembles into
        is bound to the tensor assembled into."""
        from pypto.sim.ops.numerics import FROM_TORCH

        seen, params = set(), []
        for node in ast.walk(ast.Module(body=s.body, type_ignores=[])):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id not in seen \
                    and isinstance(self.env.get(node.id), torch.Tensor):
                seen.add(node.id)
                params.append(node.id)
        params.sort(key=lambda x: next(n.lineno * 10000 + n.col_offset for n in ast.walk(
            ast.Module(body=s.body, type_ignores=[])) if isinstance(n, ast.Name) and n.id == x))
        tensors = [self.env[x] for x in params]
        name = f"inline_chip_{s.lineno}"
        text = builtins.inline_chip(name, tuple((x, tuple(t.shape), FROM_TORCH[t.dtype])
                                               for x, t in zip(params, tensors)),
                                    "\n".join(ast.unparse(b) for b in s.body))
        rank = self.inline_count % self.nranks
        self.inline_count += 1
        self.out.append(Dispatch(rank, builtins.text_program(name, text), tuple(tensors), self.source.span(s)))
        for node in ast.walk(ast.Module(body=s.body, type_ignores=[])):  # x = pl.assemble(t, ...): x is t
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                    and isinstance(node.value, ast.Call) and getattr(node.value.func, "attr", None) == "assemble" \
                    and node.value.args and isinstance(node.value.args[0], ast.Name) \
                    and node.value.args[0].id in self.env:
                self.env[node.targets[0].id] = self.env[node.value.args[0].id]

    def collective(self, name: str, node: ast.Call):
        """``pld.tensor.<name>(...)`` in the host: its builtin program dispatched to every
        rank with the same views (the reference's builtin per-device task); gives back the
        view it writes."""
        op = f"pld.tensor.{name}"
        params = builtins.PARAMS[name]
        if len(node.args) > len(params):
            raise self.error(TypeCheckError, node, f"{op} takes at most {len(params)} arguments "
                             f"({', '.join(p[0] for p in params)})", hint=None)
        given = {p[0]: a for p, a in zip(params, node.args)}
        for k in node.keywords:
            if k.arg not in {p[0] for p in params} or k.arg in given:
                raise self.error(TypeCheckError, k.value, f"{op} has no{' second' if k.arg in given else ''} "
                                 f"argument {k.arg}=", hint=f"its arguments: {', '.join(p[0] for p in params)}")
            given[k.arg] = k.value
        values = {}
        for pname, is_window, default in params:
            if pname not in given:
                if default is builtins.REQUIRED:
                    raise self.error(TypeCheckError, node, f"{op} needs its {pname}",
                                     hint="the host form takes windows: pld.window(buf, shape, dtype=...)")
                values[pname] = default
                continue
            v = self.value(given[pname])
            if is_window and not isinstance(v, WindowView):
                raise self.error(TypeCheckError, given[pname], f"{op}'s {pname} in a host orchestrator is a window, "
                                 f"not '{ast.unparse(given[pname])}'",
                                 hint="pass pld.window(buf, shape, dtype=...) of a pld.alloc_window_buffer buffer")
            values[pname] = v
        if name == "allreduce":
            self.host_allreduce(node, values)
        options = tuple((p, values[p]) for p, is_window, default in params
                        if not is_window and values[p] != default)
        if name == "allreduce" and values["core_num"] != 1:  # the blocks' split is the chip's concern
            options = tuple(o for o in options if o[0] != "core_num")
        operands = tuple((p, values[p].shape, values[p].dtype) for p, is_window, _ in params
                         if is_window and values[p] is not None)
        kernel = builtins.builtin(name, operands, options)
        views = tuple(values[p] for p, _, _ in operands)
        for r in range(self.nranks):
            self.out.append(Dispatch(r, kernel, views, self.source.span(node)))
        return values[builtins.returned(name)]

    def host_allreduce(self, node: ast.Call, values: dict) -> None:
        """The host allreduce's own rules (core_num, the ring path), and its signal made
        when left out: one per call site, ``[world_size(), core_num]``, which the collective
        leaves as it found it."""
        from pypto.backend import DEFAULT

        cores, mode, target, signal = values["core_num"], values["mode"], values["target"], values["signal"]
        limit = DEFAULT.aiv_cores
        if isinstance(cores, bool) or not isinstance(cores, int) or not 1 <= cores <= limit:
            raise self.error(TypeCheckError, node, f"pld.tensor.allreduce: core_num={cores!r}; a launch admits 1 to "
                             f"{limit} vector cores at once", hint=f"core_num in 1..{limit}")
        if mode == "ring" and (cores != 1 or values["op"] is not ReduceOp.Sum or target.dtype is not DataType.FP32):
            raise self.error(TypeCheckError, node, "the host allreduce's ring path is op=pld.ReduceOp.Sum over an "
                             "FP32 target with core_num=1",
                             hint="reduce in an FP32 window, or call the InCore composite for other ops")
        if signal is None:
            if mode == "ring":
                raise self.error(TypeCheckError, node, "the host allreduce makes a signal for mode='mesh' only",
                                 hint="pass a [2 * (NR - 1) + 1, NR] INT32 signal window for mode='ring'")
            name = f"allreduce_signal_{node.lineno}_{node.col_offset}"
            buf = self.windows.get(name) if self.windows is not None else None
            if buf is None:
                buf = self.made.get(name) or WindowBuffer.allocate(name, self.nranks * cores * 4, self.nranks)
                self.made[name] = buf
                if self.windows is not None:
                    self.windows[name] = buf
            values["signal"] = WindowView(buf, (self.nranks, cores), DataType.INT32)
        elif cores > 1 and (len(signal.shape) != 2 or signal.shape[1] < cores):
            raise self.error(TypeCheckError, node, f"pld.tensor.allreduce with core_num={cores} needs a signal lane "
                             f"per core, and its signal is {list(signal.shape)}",
                             hint=f"pld.window(sig_buf, [pld.world_size(), {cores}], dtype=pl.INT32)")

    def dispatch(self, kernel, node: ast.Call):
        from pypto.ir.types import FunctionType

        kw = {k.arg: k.value for k in node.keywords}
        if getattr(kernel, "function_type", None) is not FunctionType.Orchestration:
            raise self.error(TypeCheckError, node, f"the host dispatches a per-device @pl.jit function, and "
                             f"'{ast.unparse(node.func)}' is not one",
                             hint="wrap the @pl.jit.incore kernel in a @pl.jit function that calls it, and dispatch "
                                  "that")
        if "device" not in kw and self.nranks > 1:
            raise self.error(TypeCheckError, node, f"the host dispatches '{ast.unparse(node.func)}' to one of "
                             f"{self.nranks} devices: say which with device=",
                             hint=f"{ast.unparse(node.func)}(..., device=r)")
        # without device=, a program of one device runs it there
        rank = self.integer(kw.pop("device"), "device=") if "device" in kw else 0
        if not 0 <= rank < self.nranks:
            raise self.error(PyptoError, node, f"device={rank} is not a rank of the {self.nranks} devices",
                             hint=f"a rank in 0..{self.nranks - 1}")
        if kw:
            raise self.error(TypeCheckError, node, f"a dispatch passes its arguments by position, not "
                             f"{', '.join(k + '=' for k in kw)}", hint=None)
        args = tuple(self.value(a) for a in node.args)
        for a, arg in zip(node.args, args):
            held = self.placed.get(id(arg))
            if held is not None and held[1] is arg and held[0] != rank:
                raise self.error(PyptoError, a, f"'{ast.unparse(a)}' is resident on worker {held[0]} and this "
                                 f"dispatch runs on device {rank}",
                                 hint="alloc_stacked_tensor(host, worker_ids=[...]) with each shard's device= "
                                      "(the identity for device=r)")
        self.out.append(Dispatch(rank, kernel, args, self.source.span(node)))
        outs = tuple(args[i] for i in _written(kernel) if i < len(args))
        return outs[0] if len(outs) == 1 else outs or None

    def callback(self, name: str, node: ast.Call):
        if node.keywords:
            raise self.error(TypeCheckError, node, f"a sub-worker call passes its arguments by position, not "
                             f"{', '.join(k.arg + '=' for k in node.keywords)}", hint=None)
        args = tuple(self.value(a) for a in node.args)
        self.out.append(Callback(name, self.sub_workers[name], args, self.source.span(node)))
        fdef = next((s for s in ast.walk(self.source_tree()) if isinstance(s, ast.FunctionDef) and s.name == name),
                    None) if self.source_tree() is not None else None
        params = fdef.args.args if fdef is not None else []
        params = params[1:] if params and params[0].arg == "self" else params
        outs = tuple(args[i] for i, a in enumerate(params) if i < len(args) and a.annotation is not None
                     and ast.unparse(a.annotation).split("[", 1)[0].endswith(("Out", "InOut")))
        return outs[0] if len(outs) == 1 else outs or None  # (what it writes, as a dispatch gives back)

    def source_tree(self):
        return getattr(self, "class_def", None)
