"""Kernels written to files of their own (the front end parses a kernel from its file, and a
located error reads its lines back), and a run on both platforms checked bit for bit."""

from __future__ import annotations

import atexit
import importlib.util
import itertools
import os
import shutil
import sys
import tempfile
import textwrap

import torch

from pypto.runtime import RunConfig

PLATFORMS = ("ref", "a2a3sim")
_DIR = tempfile.mkdtemp(prefix="pypto_kernels_")
atexit.register(shutil.rmtree, _DIR, True)
_count = itertools.count()


def kernel_module(source: str, prefix: str = "k"):
    """(the module ``source`` defines, its path); ``pypto.language`` imported as ``pl``."""
    path = os.path.join(_DIR, f"{prefix}_{next(_count)}.py")
    with open(path, "w") as f:
        f.write("import pypto.language as pl\n\n\n" + textwrap.dedent(source))
    spec = importlib.util.spec_from_file_location(os.path.basename(path)[:-3], path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[spec.name]
    return module, path


def on_both(kernel, *args, **config):
    """The arguments as the kernel left them on ref, after checking a2a3sim left the same
    bytes (NaN payloads and the sign of zero included); non-tensor arguments pass through."""
    got = []
    for platform in PLATFORMS:
        fresh = [a.clone() if isinstance(a, torch.Tensor) else a for a in args]
        kernel(*fresh, config=RunConfig(platform=platform, **config))
        got.append(fresh)
    for x, y in zip(*got):
        if isinstance(x, torch.Tensor):
            assert torch.equal(x.contiguous().view(torch.uint8), y.contiguous().view(torch.uint8))
    return got[0]
