"""PyPTO's log, through the standard ``logging`` module (logger ``"pypto"``): the
reference's levels (``pypto.LogLevel``), ``set_log_level`` / ``get_log_level``, and
``PYPTO_LOG_LEVEL`` read once, at import. INFO (the default) shows the one-line notes a
build prints (perf-hint summaries); WARN and above keep them quiet; DEBUG adds each pass
and its time.
"""

from __future__ import annotations

import enum
import logging
import os
import sys
import threading

EVENT = 15  # between DEBUG and INFO: what the reference logs as events


class LogLevel(enum.IntEnum):
    NONE = logging.CRITICAL + 10
    FATAL = logging.CRITICAL
    ERROR = logging.ERROR
    WARN = logging.WARNING
    INFO = logging.INFO
    EVENT = EVENT
    DEBUG = logging.DEBUG


logging.addLevelName(EVENT, "EVENT")
logger = logging.getLogger("pypto")
_ALIASES = {"WARNING": "WARN", "CRITICAL": "FATAL", "OFF": "NONE"}


def _level(value) -> LogLevel:
    if isinstance(value, LogLevel):
        return value
    if isinstance(value, str) and _ALIASES.get(value.upper(), value.upper()) in LogLevel.__members__:
        return LogLevel[_ALIASES.get(value.upper(), value.upper())]
    from pypto.errors import ConfigError

    raise ConfigError(f"log level {value!r} is not one of {', '.join(LogLevel.__members__)}",
                      hint="pypto.set_log_level(pypto.LogLevel.WARN), or PYPTO_LOG_LEVEL=warn")


def set_log_level(level) -> None:
    """``pypto.set_log_level(pypto.LogLevel.DEBUG)`` (or its name: ``"debug"``)."""
    logger.setLevel(_level(level))


def get_log_level() -> LogLevel:
    """The process-wide level (a thread's own, if set, is not it: get and set pair up)."""
    return LogLevel(logger.getEffectiveLevel()) if logger.getEffectiveLevel() in LogLevel._value2member_map_ \
        else LogLevel.INFO


_THREAD = threading.local()  # .level: the calling thread's own level, when it has one


def set_thread_log_level(level) -> None:
    """The calling thread logs at ``level`` (more or less than the process-wide level)
    until ``clear_thread_log_level()``: a test runner's worker threads each at their own."""
    _THREAD.level = _level(level)


def clear_thread_log_level() -> None:
    _THREAD.__dict__.pop("level", None)


def _enabled_for(level: int, _process_wide=logger.isEnabledFor) -> bool:
    mine = getattr(_THREAD, "level", None)
    return _process_wide(level) if mine is None else level >= mine


logger.isEnabledFor = _enabled_for  # every logger.debug/info/... asks this first


class _Stderr(logging.StreamHandler):
    """A handler writing to whatever ``sys.stderr`` is when it writes (a test's capture). A
    progress line (a record with ``progress`` set: ``pypto.sim.reports.progress``) overwrites
    itself on a terminal: written after a carriage return, without its newline, and
    cleared by the next line of any kind."""

    def __init__(self):
        super().__init__()
        self.open_line = False  # a progress line is on the terminal, unterminated

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, value):
        pass

    def overwrites(self) -> bool:
        isatty = getattr(self.stream, "isatty", None)
        return bool(isatty and isatty())

    def emit(self, record):
        if getattr(record, "progress", False) and self.overwrites():
            try:
                self.stream.write("\r" + self.format(record) + "\033[K")
                self.flush()
                self.open_line = True
            except Exception:  # as StreamHandler.emit: a broken stream is logging's to report
                self.handleError(record)
            return
        if self.open_line:
            self.stream.write("\r\033[K")  # what follows takes the progress line's place
            self.open_line = False
        super().emit(record)


def _install() -> None:
    """A handler on stderr that writes each line as it is (a program that configures
    ``logging`` itself may remove it), and the level ``PYPTO_LOG_LEVEL`` names."""
    if not logger.handlers:
        handler = _Stderr()
        handler.setFormatter(logging.Formatter("%(message)s"))
        logger.addHandler(handler)
        logger.propagate = False
    name = os.environ.get("PYPTO_LOG_LEVEL")
    try:
        logger.setLevel(_level(name) if name else LogLevel.INFO)
    except Exception:  # an unknown name in the environment: the default, said once
        logger.setLevel(LogLevel.INFO)
        logger.warning(f"[pypto] PYPTO_LOG_LEVEL={name!r} is not a level ({', '.join(LogLevel.__members__)}); "
                       "using INFO")


_install()
