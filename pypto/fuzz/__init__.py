"""Fuzzing: hypothesis strategies for tile programs (``strategies``), for tensor-level code
over windows (``windows``) and for task graphs of an orchestration (``tasks``)."""

try:
    import hypothesis  # noqa: F401  (every strategy module draws with it)
except ImportError:  # the package runs without it; only fuzzing needs it
    raise ImportError("pypto.fuzz needs hypothesis, which the fuzz extra installs: pip install 'pypto[fuzz]'") \
        from None
