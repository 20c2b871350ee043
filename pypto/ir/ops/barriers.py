"""``system.syncall``: the cross-core barrier every participant of an SPMD launch reaches
before any goes on (``pto::SYNCALL``). ``core_type`` names the participants — the launch's
vector cores (``"aiv_only"``), its cube cores (``"aic_only"``) or both (``"mix"``) — and
``mode`` the mechanism: ``"hard"``, the FFTS barrier, which waits for every physical core
of the kind and so needs a launch that fills them all at once; ``"soft"``, a counter in
the GM ``gm_workspace`` (INT32, one 64-byte line) that ``used_cores`` participants
(0: the launch's own count) poll, which works at partial occupancy. Either orders only
arrival: the data a core wrote before it is not published by it.

What it waits for is the launch's: the orchestrator checks the occupancy a launch gives
it (``pypto.chip.barriers``), the chip model holds each block there until the last
arrives.
"""

from __future__ import annotations

from pypto.backend import SoC
from pypto.ir.nodes import Const
from pypto.ir.ops.registry import Kind, OpArgs, register
from pypto.ir.ops.type_rules import fail
from pypto.ir.ops.registry import ParamSpec as P
from pypto.ir.types import DataType, ScalarType, TensorType, type_name

CORE_TYPES = ("aiv_only", "aic_only", "mix")
MODES = ("hard", "soft")
WORKSPACE_ELEMENTS = 16  # one 64-byte cache line of INT32 counters
INT32_MAX = 2 ** 31 - 1


def _infer(a: OpArgs, soc: SoC):
    op = "system.syncall"
    core_type, mode = a["core_type"], a["mode"]
    if core_type not in CORE_TYPES:
        raise fail(op, "core_type 'aiv_only', 'aic_only' or 'mix'", repr(core_type),
                   'core_type="aiv_only" for a vector kernel, "aic_only" for a cube one, "mix" for both')
    if mode not in MODES:
        raise fail(op, "mode 'hard' or 'soft'", repr(mode),
                   'mode="hard" at full occupancy, mode="soft" with gm_workspace= and used_cores= otherwise')
    workspace, used = a["gm_workspace"], a["used_cores"]
    if mode == "hard":
        if workspace is not None or used is not None:
            raise fail(op, "no gm_workspace/used_cores in mode='hard'", "them",
                       "pass mode='soft' to use the GM-polling barrier, or drop them")
        return None
    t = a.type("gm_workspace")
    if not isinstance(t, TensorType):
        raise fail(op, "a gm_workspace tensor in mode='soft'", type_name(t) if t else "none",
                   "pass a zero-initialized pl.Tensor[[16], pl.INT32] parameter every block shares")
    elements = 1
    for s in t.shape:
        elements = elements * s if isinstance(s, int) else None if elements is None else elements
    if t.dtype is not DataType.INT32 or (elements is not None and elements < WORKSPACE_ELEMENTS):
        raise fail(op, f"an INT32 gm_workspace of at least {WORKSPACE_ELEMENTS} elements (64 bytes)", type_name(t),
                   "pass a zero-initialized pl.Tensor[[16], pl.INT32] parameter every block shares")
    if used is None:
        raise fail(op, "an explicit used_cores in mode='soft'", "none",
                   "used_cores=N, the participants (for 'mix' the AIC and AIV cores together), or 0 for the "
                   "launch's own count")
    ut = a.type("used_cores")
    if isinstance(used, Const) and (not isinstance(used.value, int) or isinstance(used.value, bool)
                                    or not 0 <= used.value <= INT32_MAX) \
            or isinstance(ut, ScalarType) and not ut.dtype.is_int:
        raise fail(op, "a used_cores in the INT32 range [0, 2**31 - 1]", type_name(ut) if ut else repr(used.value),
                   "used_cores=N participants, or 0 for the launch's own count")
    return None


register("system.syncall", [P("core_type", Kind.STR, default="mix", show=True),
                            P("mode", Kind.STR, default="hard"),
                            P("gm_workspace", Kind.TENSOR, default=None, optional=True),
                            P("used_cores", Kind.SCALAR, default=None, optional=True, integer=True)], _infer,
         doc="barrier: every participant of the SPMD launch (core_type 'aiv_only' | 'aic_only' | 'mix') arrives "
             "before any goes on; mode 'hard' (FFTS, full occupancy) or 'soft' (GM counter gm_workspace, "
             "used_cores participants, 0: the launch's); side effect only", effect=True)
