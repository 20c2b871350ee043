"""Many chips: ``import pypto.language.distributed as pld``.

A rank's kernels reach their peers through window buffers every rank allocates alike
(``pld.DistributedTensor`` parameters) and signal cells (``pld.system.notify`` /
``wait``); the ``@pl.jit.host`` orchestrator allocates the windows and dispatches a
per-device ``@pl.jit`` function to each rank (``kernel(..., device=r)``). Like ``pl``,
these names are read by the front end from kernel source, never run; the module is
``pl.distributed`` to it, so ``pld.system.notify`` and ``pl.distributed.system.notify``
are one op (the form dumps print).
"""

from pypto.ir.types import AtomicType, NotifyOp, ReduceOp, WaitCmp
from pypto.lang.vocabulary.dsl import DslName as _DslName
from pypto.lang.vocabulary.dsl import TypeConstructor as _TypeConstructor


class _Namespace(_DslName):
    """``pld.system`` / ``pld.tensor`` / ``pld.tile``: their ops, by name."""

    def __getattr__(self, name: str) -> _DslName:
        from pypto.lang.vocabulary.names import Path, interpret

        if name.startswith("__"):
            raise AttributeError(name)
        from pypto.lang.vocabulary.names import Op
        from pypto.lang.vocabulary.op_reference import stand_in

        meaning = interpret(Path((*self.__pypto_path__, name)))
        if meaning is None:
            raise AttributeError(f"pld.{self.__pypto_path__[1]} has no operation {name!r}")
        if not isinstance(meaning, Op):
            return _DslName(*self.__pypto_path__, name)
        fn = stand_in(tuple(meaning.name.split(".")))  # documented from the registry
        fn.__pypto_path__ = (*self.__pypto_path__, name)
        fn.__qualname__ = "distributed." + meaning.name
        fn.__module__ = "pypto.language.distributed"
        return fn


__pypto_path__ = ("distributed",)

DistributedTensor = _TypeConstructor("distributed", "DistributedTensor")
CommCtx = _TypeConstructor("distributed", "CommCtx")
system = _Namespace("distributed", "system")
tensor = _Namespace("distributed", "tensor")
tile = _Namespace("distributed", "tile")

world_size = _DslName("distributed", "world_size")
get_comm_ctx = _DslName("distributed", "get_comm_ctx")
rank = _DslName("distributed", "rank")
nranks = _DslName("distributed", "nranks")
alloc_window_buffer = _DslName("distributed", "alloc_window_buffer")
window = _DslName("distributed", "window")
remote_load = _DslName("distributed", "remote_load")
remote_store = _DslName("distributed", "remote_store")

__all__ = ["AtomicType", "CommCtx", "DistributedTensor", "NotifyOp", "ReduceOp", "WaitCmp", "alloc_window_buffer", "get_comm_ctx",
           "nranks", "rank", "remote_load", "remote_store", "system", "tensor", "tile", "window", "world_size"]
