"""The reference's ``pypto.pypto_core``, the Python face of its C++ core, for the names its
users import from there, each mapped onto this package's own object (there is no C++ here):

- ``LogLevel``, ``set_log_level`` / ``get_log_level``, ``_set_thread_log_level`` /
  ``_clear_thread_log_level`` (one thread's own level): ``pypto.log``;
- ``Error`` / ``InternalError``: ``pypto.errors``; ``DataType``: ``pypto.ir``;
- ``passes.MemoryPlanner`` (``pypto_core.passes``), ``ir.CoreType`` (``pypto_core.ir``),
  ``backend`` (``pypto_core.backend``: ``pypto.backend``'s reference names).
"""

from pypto.errors import InternalError
from pypto.errors import PyptoError as Error
from pypto.ir.types import DataType
from pypto.log import LogLevel, get_log_level, set_log_level
from pypto.log import clear_thread_log_level as _clear_thread_log_level
from pypto.log import set_thread_log_level as _set_thread_log_level
from pypto.pypto_core import backend, ir, passes

__all__ = ["DataType", "Error", "InternalError", "LogLevel", "backend", "get_log_level", "ir", "passes", "set_log_level"]
