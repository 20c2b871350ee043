"""A kernel function's signature and its simple statements: assignments, calls of ``pl`` ops
and of other kernels, subscripts of arrays and tensors."""
