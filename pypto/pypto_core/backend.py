"""The reference's ``pypto.pypto_core.backend``: the backend objects and the process-wide
backend choice, which are ``pypto.backend``'s."""

from pypto.backend import (
    Backend,
    Backend910B,
    Backend950,
    BackendHandler,
    BackendType,
    Cluster,
    Core,
    Die,
    Mem,
    get_backend_instance,
    get_backend_type,
    get_handler,
    is_backend_configured,
    reset_for_testing,
    set_backend_type,
)

__all__ = ["Backend", "Backend910B", "Backend950", "BackendHandler", "BackendType", "Cluster", "Core", "Die", "Mem",
           "get_backend_instance", "get_backend_type", "get_handler", "is_backend_configured", "reset_for_testing",
           "set_backend_type"]
