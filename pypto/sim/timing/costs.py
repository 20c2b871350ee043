"""What an issued instruction costs, from the SoC's cost table (``SoC.costs``): the cycles it
holds its pipe and the further cycles until its data lands — a GM transfer by its rows and
bytes, an indexed one by its bursts, the cube by its fractals, the vector unit by its 256 B
repeats — with the detail its trace slice shows. ``issuer``: the scalar unit issuing it
(``issue.Issuer``: the launch's tensors, the SoC, its barriers' holds)."""

from __future__ import annotations

import math

from pypto.backend import Pipe
from pypto.codegen.comm import CROSS_RANK
from pypto.codegen.isa import Instr
from pypto.ir.ops import lookup

INDEXED = {"tile.mgather": "mem", "tile.mgather_mat": "mem", "tile.mscatter": "output_tensor"}  # by index: the tensor


def cost(ins: Instr, args: dict, dst, issuer) -> tuple:
    """(occupancy, latency, trace detail) of one instruction: cycles it holds its pipe, and
    further cycles until its data lands (transfer pipes only)."""
    c = issuer.costs
    soc = issuer.soc
    if ins.mnemonic in CROSS_RANK:  # the interconnect's: decided as it starts (``pypto.sim.data.ranks``)
        return 1, 0, ()
    if ins.op in ("tile.load", "tile.store", "tile.gather_row"):
        if ins.op != "tile.store":
            t = issuer.tensors[args["tensor" if ins.op == "tile.load" else "src"].name]
            extents = args["shapes"] if args["valid_shape"] is None else args["valid_shape"]
            buf = dst
        else:
            t = issuer.tensors[args["output_tensor"].name]
            buf = args["tile"]
            extents = buf.valid
        esize = t.element_size()
        rows = math.prod(extents[:-1]) if len(extents) > 1 else 1
        row_bytes = extents[-1] * esize
        # Full-width rows of a row-major tensor are one stretch; those of a view (x[:, 0:64]) are not.
        contiguous = len(extents) == 1 or extents[-1] == t.shape[-1] and t.is_contiguous()
        bpc = c.fixpipe_bytes_per_cycle if ins.pipe is Pipe.FIXPIPE else c.gm_bytes_per_cycle
        if contiguous or row_bytes >= soc.gm_access_granularity:
            moved = rows * row_bytes
        else:
            moved = rows * max(row_bytes, c.short_row_bytes)
        occupancy = max(1, math.ceil(moved / bpc))
        return occupancy, c.gm_latency, (("address", buf.addr), ("bytes", rows * row_bytes), ("rows", rows),
                                         ("row_bytes", row_bytes))
    if ins.op in INDEXED:  # each index its own burst: a row (row mode) or an element
        t = issuer.tensors[args[INDEXED[ins.op]].name]
        rows = ins.op != "tile.mscatter" and args["coalesce"] == "row"
        if ins.op == "tile.mgather_mat":  # the region it writes; the element form then loads its GM scratch
            count = dst.valid[0] if rows else math.prod(dst.valid)
            staged = 0 if rows else c.gm_latency + math.ceil(count * t.element_size() / c.gm_bytes_per_cycle)
        else:
            count, staged = math.prod(args["idx"].valid), 0
        unit = t.shape[-1] * t.element_size() if rows else t.element_size()
        moved = count * max(unit, c.short_row_bytes)
        return c.gm_latency + math.ceil(moved / c.gm_bytes_per_cycle) + staged, 0, (
            ("address", (dst or args["src"]).addr), ("bytes", count * unit), ("bursts", count))
    if ins.op == "system.syncall":  # the arrival, and the hold until the last participant's
        mode, k = args["mode"], issuer.syncalls
        issuer.syncalls += 1
        hold = issuer.holds[k] if k < len(issuer.holds) else 0
        return (c.syncall_hard if mode == "hard" else c.syncall_soft) + hold, 0, (
            ("core_type", args["core_type"]), ("mode", mode), ("held", hold))
    if ins.pipe is Pipe.SCALAR:  # one element, by the scalar unit (``elements``)
        if ins.op in ("tensor.write", "tensor.read"):
            t = issuer.tensors[args["tensor"].name]
            cost = c.scalar_gm_write if ins.op == "tensor.write" else c.scalar_gm_read
            return cost, 0, (("tensor", args["tensor"].name), ("bytes", t.element_size()))
        buf = args["tile"]
        return c.scalar_ub_access, 0, (("address", buf.addr), ("bytes", buf.dtype.nbytes))
    if ins.mnemonic == "TZERO":  # a zero fill on the cube core: its bytes at the L1 rate
        return max(1, math.ceil(dst.nbytes / c.l1_bytes_per_cycle)), 0, (("address", dst.addr),
                                                                           ("bytes", dst.nbytes))
    if ins.op == "tile.assemble":  # in the target's own buffer only the source's bytes move
        src, target = args["source"], args["target"]
        moved = src.nbytes if target.addr == dst.addr and target.space is dst.space else dst.nbytes + src.nbytes
        if ins.pipe is Pipe.FIXPIPE:
            return max(1, math.ceil(moved / c.fixpipe_bytes_per_cycle)), c.mte1_latency, (("address", dst.addr),
                                                                                            ("bytes", moved))
        repeats = math.ceil(moved / c.vector_repeat_bytes)
        return c.vector_startup + repeats, 0, (("address", dst.addr), ("bytes", moved), ("repeats", repeats))
    if ins.mnemonic == "TRANSVIEW":  # the same bytes read in the other layout: nothing moves on hardware
        return 1, 0, (("address", dst.addr), ("bytes", dst.nbytes))
    if ins.op == "tile.extract" and ins.pipe is not Pipe.VECTOR:  # only the window moves
        bpc = c.l1_bytes_per_cycle if ins.pipe is Pipe.MTE1 else c.fixpipe_bytes_per_cycle
        return max(1, math.ceil(dst.nbytes / bpc)), c.mte1_latency, (("address", dst.addr), ("bytes", dst.nbytes))
    if ins.pipe is Pipe.MTE1 or ins.pipe is Pipe.FIXPIPE:
        src = args["tile"]
        bpc = c.l1_bytes_per_cycle if ins.pipe is Pipe.MTE1 else c.fixpipe_bytes_per_cycle
        return max(1, math.ceil(src.nbytes / bpc)), c.mte1_latency, (("address", dst.addr), ("bytes", src.nbytes))
    if ins.pipe is Pipe.CUBE:
        lhs, rhs = args["lhs"], args["rhs"]
        m, k = lhs.shape[-2:]
        nn = rhs.shape[-1]
        pages = math.prod(dst.shape[:-2])  # a batched product: one MMAD per page
        fractals = math.ceil(m / 16) * math.ceil(k / 16) * math.ceil(nn / 16)
        return pages * (c.cube_startup + fractals * c.cube_cycles_per_fractal), 0, (
            ("address", dst.addr), ("fractals", pages * fractals)) + ((("pages", pages),) if pages > 1 else ())
    # the vector unit: 256 B repeats over the region it works on, masked at row tails
    op = lookup(ins.op)
    work = args["tile"] if op.reduces else dst
    elem = work.dtype.nbytes
    lanes = c.vector_repeat_bytes // elem
    valid = work.valid
    if tuple(valid) == tuple(work.shape):
        total = math.prod(valid)
        repeats = max(1, math.ceil(total / lanes))
    else:
        rows = math.prod(valid[:-1]) if len(valid) > 1 else 1
        repeats = max(1, rows * math.ceil(valid[-1] / lanes))
        total = rows * valid[-1]
    per = c.vector_cycles.get(op.cost_class(args), 1)
    utilization = round(100.0 * total / (repeats * lanes), 2)
    return c.vector_startup + repeats * per, 0, (("address", dst.addr), ("repeats", repeats),
                                                 ("vector_utilization_percentage", utilization))
