"""The staged compiler: one module per pass (a pure ``Program -> PassResult`` function of
the module's own name), the checks that run on the final program, and ``pipeline``, the
ordered list and its driver."""
