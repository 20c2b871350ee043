"""The reference's module path of ``CompiledProgram``, what ``pypto.ir.compile`` returns:
``from pypto.ir.compiled_program import CompiledProgram``.

The class is the runtime's (``pypto.runtime.compiled``): the IR runs nothing, so the runtime
installs the name here when it is imported, as it installs ``pypto.ir.compile`` —
``import pypto.language`` (or ``pypto.runtime``) does it. Read before either, the name is
an ImportError that says so.
"""


def __getattr__(name: str):
    if name == "CompiledProgram":
        raise ImportError("pypto.ir.compiled_program.CompiledProgram is the runtime's: import pypto.language "
                          "(or pypto.runtime) first, which installs it", name=name)
    raise AttributeError(f"module 'pypto.ir.compiled_program' has no attribute {name!r}")
