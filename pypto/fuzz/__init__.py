"""Fuzzing: hypothesis strategies for tile programs (``strategies``), for tensor-level code
over windows (``windows``) and for task graphs of an orchestration (``tasks``)."""
