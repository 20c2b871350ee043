"""Fuzzing the compiler: hypothesis strategies for tile programs (``strategies``)."""
