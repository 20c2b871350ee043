"""Expressions of kernel source read without running them: names looked up, compile-time values
folded, annotations read as IR types."""
