"""The reference's module path of ``DistributedConfig`` and ``DistributedCompiledProgram``
(``from pypto.ir.distributed_compiled_program import DistributedConfig``). Both are the
runtime's (``pypto.runtime.distributed``), installed here when the runtime is imported, as
``pypto.ir.compiled_program.CompiledProgram`` is."""


def __getattr__(name: str):
    if name in ("DistributedConfig", "DistributedCompiledProgram"):
        raise ImportError(f"pypto.ir.distributed_compiled_program.{name} is the runtime's: import pypto.language "
                          "(or pypto.runtime) first, which installs it", name=name)
    raise AttributeError(f"module 'pypto.ir.distributed_compiled_program' has no attribute {name!r}")
