"""Human-readable listings of kernel programs: ``kernels/aiv/<fn>.pto`` and
``kernels/aic/<fn>.pto``. One instruction per line with its pipe, operands, and the user's
source line it came from; flags as ``set_flag(SRC -> DST, event)``."""

from __future__ import annotations

from pypto.codegen.isa import (
    Buf,
    Cond,
    Instr,
    Kernel,
    Loop,
    Program,
    ScalarAssign,
    ScalarArray,
    ScalarLoad,
    SetFlag,
    TensorArg,
    WaitFlag,
    expr_text,
)
from pypto.ir.types import AtomicType, type_name
from pypto.passes.context import Planner
from pypto.backend import MemorySpace

SPACE = {MemorySpace.Vec: "ub", MemorySpace.Mat: "l1", MemorySpace.Left: "l0a", MemorySpace.Right: "l0b",
         MemorySpace.Acc: "l0c", MemorySpace.Bias: "bias", MemorySpace.LeftScale: "l0a_scale",
         MemorySpace.RightScale: "l0b_scale"}


def listing(kernel: Kernel, program: Program, *, backend: str, planner: Planner) -> str:
    lines = [f"// pypto kernel {kernel.name} ({program.core.value}) for {backend}, memory_planner={planner.value}",
             "// params: " + ", ".join(f"{name}: {type_name(t)}" for name, t in program.params)]
    for a in program.allocs:
        where = SPACE[a.space]
        if a.slots > 1 and planner is Planner.PTOAS:
            lines.append(f"alloc_multi_tile {a.name}: {where} size={a.size} count={a.slots}")
        elif a.slots > 1:
            lines.append(f"alloc_tile {a.name}: {where}[{a.addr:#07x}] size={a.size} slots={a.slots}")
        else:
            lines.append(f"alloc_tile {a.name}: {where}[{a.addr:#07x}] size={a.size}")
    _block(program.body, 0, lines, planner)
    return "\n".join(lines) + "\n"


def _block(body, depth: int, lines: list, planner: Planner) -> None:
    pad = "  " * depth
    for node in body:
        if isinstance(node, Loop) and not node.bounded:
            lines.append(f"{pad}while {expr_text(node.cond)} {{")
            _block(node.body, depth + 1, lines, planner)
            lines.append(f"{pad}}}")
        elif isinstance(node, Loop):
            lines.append(f"{pad}for {node.var} = {expr_text(node.start)} to {expr_text(node.stop)} "
                         f"step {expr_text(node.step)} {{")
            _block(node.body, depth + 1, lines, planner)
            lines.append(f"{pad}}}")
        elif isinstance(node, Cond):
            lines.append(f"{pad}if {expr_text(node.cond)} {{")
            _block(node.then_body, depth + 1, lines, planner)
            if node.else_body:
                lines.append(f"{pad}}} else {{")
                _block(node.else_body, depth + 1, lines, planner)
            lines.append(f"{pad}}}")
        elif isinstance(node, ScalarAssign):
            lines.append(f"{pad}{node.name} = {expr_text(node.value)}")
        elif isinstance(node, ScalarArray):
            args = ", ".join(expr_text(a) for a in node.args)
            lines.append(f"{pad}{node.name} = array_{node.op} {args}")
        elif isinstance(node, ScalarLoad):
            lines.append(f"{pad}{node.name} = load_scalar {node.tensor}[{', '.join(map(expr_text, node.indices))}]")
        elif isinstance(node, (SetFlag, WaitFlag)):
            kind = "set_flag" if isinstance(node, SetFlag) else "wait_flag"
            cores = "" if node.src_core is node.dst_core else f" [{node.src_core.value}->{node.dst_core.value}]"
            lines.append(f"{pad}{kind}({node.src.value} -> {node.dst.value}, {expr_text(node.event)}){cores}")
        elif isinstance(node, Instr):
            b = node.dst
            if planner is Planner.PTOAS and b is not None and b.region is not None:
                lines.append(f"{pad}{b.tile} = multi_tile_get {b.region.name}[{expr_text(b.region.slot)}]")
            operands = ", ".join(_operand(a) for a in node.args if _operand(a))
            dst = f"{_buf(node.dst)} <- " if node.dst is not None else f"{node.result} <- " if node.result else ""
            where = f"  ; {node.span}" if node.span is not None else ""
            lines.append(f"{pad}{node.mnemonic:<9} {node.pipe.value:<7} {dst}{operands}{where}")


def _buf(b: Buf) -> str:
    return f"{SPACE[b.space]}[{expr_text(b.addr)}]:{b.tile}"


def _operand(a) -> str:
    if isinstance(a, Buf):
        return _buf(a)
    if isinstance(a, TensorArg):
        return f"gm:{a.name}"
    if isinstance(a, tuple):
        return "[" + ", ".join(expr_text(x) for x in a) + "]"
    if a is None or isinstance(a, (bool, str)) or a is AtomicType.None_:
        return ""
    if a is AtomicType.Add:
        return "atomic_add"
    return expr_text(a) if hasattr(a, "__attrs_attrs__") else repr(a)

