"""PyPTO in pure Python: the kernel language (``pypto.language``), its compiler, a reference
interpreter and a cycle-level simulator of the AI core and the chip."""

__version__ = "0.1.0"

from pypto.errors import InternalError, PartialCodegenError, PyptoError
from pypto.log import LogLevel, get_log_level, set_log_level

Error = PyptoError  # the reference's name for the base of every error it reports

__all__ = ["__version__", "Error", "InternalError", "LogLevel", "PartialCodegenError", "PyptoError", "get_log_level", "set_log_level"]
