"""Worked kernels the documentation, the tests and the benchmarks share."""
