"""The reference interpreter (``platform="ref"``): the IR run on torch tensors, its tasks,
Group clusters and cross-core pipes, and a program as host Python (``torch_codegen``)
calling the same semantics."""
