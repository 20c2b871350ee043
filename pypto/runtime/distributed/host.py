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
from pypto.runtime.distributed.worker import StackedDeviceTensor
from pypto.errors import ParseError, PyptoError, TypeCheckError, UnsupportedSyntaxError
from pypto.ir.types import DataType
from pypto.lang.vocabulary import names as N
from pypto.lang.sources import source_of

_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.FloorDiv: operator.floordiv,
        ast.Mod: operator.mod}
_HINT = ("a host orchestrator allocates windows (pld.alloc_window_buffer), views them (pld.window), loops over the "
         "ranks (for r in pl.range(pld.world_size())) and dispatches (fn(..., device=r))")


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
        if len(args) != len(names):
            raise TypeCheckError(f"host orchestrator '{self.__name__}' takes {len(names)} arguments "
                                 f"({', '.join(names)}), got {len(args)}", span=source.span(node))
        walker = _Walker(source, nranks, dict(zip(names, args)), windows, self.methods)
        walker.bind_extents(node, names, args)
        try:
            walker.block(node.body)
        except _Return as ret:
            return walker.out, ret.value
        return walker.out, None


    methods: dict = {}  # what ``self.name(...)`` dispatches (the class form's)


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


class _Return(Exception):
    def __init__(self, value):
        self.value = value


class _Walker:
    def __init__(self, source, nranks: int, env: dict, windows: dict | None, methods: dict):
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
            index = self.integer(node.slice, "a rank index")
            if not 0 <= index < base.shape[0]:
                raise self.error(PyptoError, node, f"'{ast.unparse(node)}': index {index} is outside the "
                                 f"{base.shape[0]} of its first axis", hint="a world tensor's first axis is the ranks")
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
            if func.attr not in self.methods:
                raise self.error(TypeCheckError, node, f"the program has no device function '{func.attr}' to "
                                 "dispatch", hint=f"one of {', '.join(sorted(self.methods))}")
            return self.dispatch(self.methods[func.attr], node)
        meaning = self.meaning(func)
        if isinstance(meaning, N.Op) and meaning.name == "system.world_size":
            return self.nranks
        if isinstance(meaning, N.Op) and meaning.name == "tensor.alloc_window_buffer":
            return self.alloc(node, name)
        if isinstance(meaning, N.Op) and meaning.name == "tensor.window":
            return self.window(node)
        ref = self.source.resolver.resolve(func.id) if isinstance(func, ast.Name) and func.id not in self.env else None
        if isinstance(ref, N.Kernel):
            return self.dispatch(ref.obj, node)
        raise self.error(UnsupportedSyntaxError, node, f"a host orchestrator cannot call '{ast.unparse(func)}'")

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

    def dispatch(self, kernel, node: ast.Call):
        from pypto.ir.types import FunctionType

        kw = {k.arg: k.value for k in node.keywords}
        if "device" not in kw:
            raise self.error(TypeCheckError, node, f"the host dispatches '{ast.unparse(node.func)}' to one rank: "
                             "say which with device=", hint=f"{ast.unparse(node.func)}(..., device=r)")
        if getattr(kernel, "function_type", None) is not FunctionType.Orchestration:
            raise self.error(TypeCheckError, node, f"the host dispatches a per-device @pl.jit function, and "
                             f"'{ast.unparse(node.func)}' is not one",
                             hint="wrap the @pl.jit.incore kernel in a @pl.jit function that calls it, and dispatch "
                                  "that")
        rank = self.integer(kw.pop("device"), "device=")
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
        return None
