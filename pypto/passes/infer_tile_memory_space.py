"""InferTileMemorySpace: every tile gets a memory space, and a move is inserted where a
consumer needs its operand somewhere else.

    x = pl.tile.load(a, ..., target_memory=None)       x = pl.tile.load(a, ..., target_memory=pl.Mem.Mat)
    y = pl.tile.load(b, ..., target_memory=None)   ->  x_Left = pl.tile.move(x, target_memory=pl.Mem.Left)
    c = pl.tile.matmul(x, y)                           y = pl.tile.load(b, ..., target_memory=pl.Mem.Mat)
                                                       y_Right = pl.tile.move(y, target_memory=pl.Mem.Right)
                                                       c = pl.tile.matmul(x_Left, y_Right)

A load whose consumers include the cube's L0 buffers lands in Mat (the SoC table's only
way on to Left/Right/Bias); other loads land in Vec. Every other result space follows
from the registry's type inference. A move the SoC table does not allow is an error.
"""

from __future__ import annotations

import attrs

from pypto.errors import MemorySpaceError
from pypto.ir import nodes as n
from pypto.ir.infer import call_type
from pypto.ir.ops import Kind, argument, lookup, with_args
from pypto.ir.types import TileType
from pypto.passes.context import PassContext, PassResult, result
from pypto.backend import MemorySpace as M


def infer_tile_memory_space(program: n.Program, ctx: PassContext) -> PassResult:
    functions = []
    for fn in program.functions:
        types = n.symbols(fn)
        if any(isinstance(t, TileType) and t.space is None for t in types.values()):
            fn = _infer(fn, ctx)
        functions.append(fn)
    return result(n.Program(program.name, tuple(functions)))


def _needs(fn: n.Function) -> dict[str, set]:
    """For each tile name, the spaces its consumers require of it."""
    needs: dict[str, set] = {}
    for stmt in n.walk_stmts(fn.body):
        call = getattr(stmt, "value", None)
        if not isinstance(call, n.Call):
            continue
        for p, arg in zip(lookup(call.op).params, call.args):
            if p.kind is Kind.TILE and p.spaces and isinstance(arg, n.Var):
                needs.setdefault(arg.name, set()).update(p.spaces)
    return needs


def _infer(fn: n.Function, ctx: PassContext) -> n.Function:
    needs = _needs(fn)
    soc = ctx.soc
    used = set(n.symbols(fn))
    types = {p.name: p.type for p in fn.params}

    def landing(name: str) -> M:
        wanted = needs.get(name, set())
        for space in soc.targets_from(M.DDR):  # Vec before Mat
            if wanted and all(w == space or soc.can_move(space, w) for w in wanted):
                return space
        return M.Vec

    def block(body, moved: dict) -> tuple:
        """``moved``: (tile, space) -> the name of a move already made in an enclosing block
        (entries of a space another move into it has since replaced are dropped, here and
        in the enclosing blocks)."""
        outer, moved = moved, dict(moved)
        out = []
        for stmt in body:
            if isinstance(stmt, n.Assign) and isinstance(stmt.value, n.Call):
                call = stmt.value
                if call.op == "tile.load" and argument(call, "target_memory") is None:
                    call = with_args(call, target_memory=landing(stmt.target))
                call = operands(call, out, stmt.span, moved)
                t = call_type(call, types, soc)
                if isinstance(stmt.type, TileType) and stmt.type.memref is not None:
                    t = attrs.evolve(t, memref=stmt.type.memref)
                stmt = attrs.evolve(stmt, value=call, type=t)
                types[stmt.target] = t
            elif isinstance(stmt, n.Eval) and isinstance(stmt.value, n.Call):
                stmt = attrs.evolve(stmt, value=operands(stmt.value, out, stmt.span, moved))
            elif isinstance(stmt, n.LOOPS):
                iter_args = tuple(attrs.evolve(a, type=_type_of(a.init, types, a.type)) for a in stmt.iter_args)
                for a in iter_args:
                    types[a.name] = a.type
                if isinstance(stmt, n.For):
                    types[stmt.var] = n.symbols(fn)[stmt.var]
                body2 = block(stmt.body, moved)
                results = tuple(attrs.evolve(b, type=a.type) for a, b in zip(iter_args, stmt.results))
                for b in results:
                    types[b.name] = b.type
                stmt = attrs.evolve(stmt, body=body2, iter_args=iter_args, results=results)
            elif isinstance(stmt, n.If):
                then_b, else_b = block(stmt.then_body, moved), block(stmt.else_body, moved)
                last = then_b[-1] if then_b else None
                results = tuple(attrs.evolve(b, type=_type_of(v, types, b.type))
                                for b, v in zip(stmt.results, last.values if isinstance(last, n.Yield) else ()))
                for b in results:
                    types[b.name] = b.type
                stmt = attrs.evolve(stmt, then_body=then_b, else_body=else_b, results=results)
            elif isinstance(stmt, n.Assign):
                types[stmt.target] = stmt.type
            out.append(stmt)
        for key in [k for k in outer if k not in moved]:
            del outer[key]
        return tuple(out)

    def operands(call: n.Call, out: list, span, moved: dict) -> n.Call:
        """Insert the moves this call's operands need."""
        args = list(call.args)
        for i, (p, arg) in enumerate(zip(lookup(call.op).params, call.args)):
            if p.kind is not Kind.TILE or not p.spaces or not isinstance(arg, n.Var):
                continue
            t = types[arg.name]
            if t.space in p.spaces or t.space is None:
                continue
            want = p.spaces[0]
            if not soc.can_move(t.space, want):
                raise MemorySpaceError(
                    f"{call.op} needs '{arg.name}' in {want.name}, but it is in {t.space.name} and {soc.name} "
                    f"cannot move a tile from {t.space.name} to {want.name}", span=span,
                    hint="produce the operand where the consumer reads it")
            key = (arg.name, want)
            if key in moved:
                moved[key] = moved.pop(key)  # the most recently used
            else:
                name = n.fresh_name(f"{arg.name}_{want.name}", used)
                move = n.Call("tile.move", (arg, want))
                mt = call_type(move, types, soc)
                types[name] = mt
                out.append(n.Assign(name, mt, move, span=span))
                # Earlier moves into that space are reused while they fit beside this one,
                # the least recently used given up first: a move kept across another's
                # lifetime holds both (two full Right tiles where one fits), while one made
                # again keeps its source alive until then.
                kept = [k for k in moved if k[1] is want]
                room = soc.spec(want).capacity - mt.nbytes
                while kept and sum(types[moved[k]].nbytes for k in kept) > room:
                    del moved[kept.pop(0)]
                moved[key] = name
            args[i] = n.Var(moved[key])
        return attrs.evolve(call, args=tuple(args))

    return attrs.evolve(fn, body=block(fn.body, {}))


def _type_of(expr, types, default):
    return types.get(expr.name, default) if isinstance(expr, n.Var) else default
