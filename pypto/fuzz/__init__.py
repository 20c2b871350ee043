"""Fuzzing: hypothesis strategies for tile programs (``strategies``, ``loops``), tensor-level
code over windows (``windows``), task graphs of an orchestration (``tasks``), split scopes
(``lanes``) and programs with a mistake planted (``bad``); the properties they are checked
against (``properties``); campaigns over them (``campaign``, ``python -m pypto.fuzz``) and
their reproducers (``reproducer``)."""

try:
    import hypothesis  # noqa: F401  (every strategy module draws with it)
except ImportError:  # the package runs without it; only fuzzing needs it
    raise ImportError("pypto.fuzz needs hypothesis, which the fuzz extra installs: pip install 'pypto[fuzz]'") \
        from None
