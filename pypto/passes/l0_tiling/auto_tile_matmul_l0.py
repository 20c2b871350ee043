"""AutoTileMatmulL0: a matmul whose operands sit in Mat (L1) and do not fit L0 is computed in
pieces that do — the design point the chooser picks (``l0_tile_chooser``), the pieces
``l0_grid`` writes.

    c = pl.tile.matmul(a_mat, b_mat)              # [64, 384] x [384, 256], FP32: k = 32
->  a_Left = pl.tile.extract(a_mat, 0, 0, [64, 32], target_memory=pl.Mem.Left)
    b_Right = pl.tile.extract(b_mat, 0, 0, [32, 256], target_memory=pl.Mem.Right)
    acc = pl.tile.matmul(a_Left, b_Right)
    for ko, (acc_iter,) in pl.pipeline(32, 384, 32, init_values=(acc,), stage=2):
        ...
        acc_1 = pl.tile.matmul_acc(acc_iter, a_Left_1, b_Right_1)
        pl.yield_(acc_1)

K alone is cut while the result fits Acc (L0C). A result that does not is computed a tile at
a time where it goes: its one use a ``tile.store`` (each tile stored to GM), or a
``tile.cast`` to BF16/FP16 with ``mode="rint"`` that only other matmuls read (each tile
written through the fixpipe into a Mat scratch, which those matmuls read: the fixpipe's
narrowing is that cast). That cast of a result that fits is folded the same way, in one
piece. ``matmul_bias`` adds its bias once, in each output tile's first K block; a bias
narrower than N is loaded a window per column of tiles. An operand that fits is left for
InferTileMemorySpace to move whole; the gemv forms and batch_matmul read their operands
whole. An operand already in Left or Right is the user's own L0 schedule, kept — unless it
cannot fit, which is an error where it is defined. Runs before InferTileMemorySpace, on
spaces the program gives.
"""

from __future__ import annotations

import attrs

from pypto.backend import MemorySpace as M
from pypto.errors import MemorySpaceError
from pypto.ir import nodes as n
from pypto.ir.ops import argument, lookup, op_call
from pypto.ir.ops.cube import acc_dtype
from pypto.ir.types import DataType, TileType, type_name
from pypto.log import logger
from pypto.passes.l0_tiling import l0_grid as grid
from pypto.passes.context import PassContext, PassResult, Planner, result
from pypto.passes.l0_tiling.l0_tile_chooser import L0TileConfig, L0TileResult, Stationarity, choose_l0_tile

TILED = ("tile.matmul", "tile.matmul_acc", "tile.matmul_bias")
BATCHED = ("tile.batch_matmul", "tile.batch_matmul_acc")
WHOLE = BATCHED + ("tile.gemv", "tile.gemv_acc", "tile.gemv_bias")
CUBE_K_BYTES = 32  # the cube's K block: pieces of K start at its multiples


def auto_tile_matmul_l0(program: n.Program, ctx: PassContext) -> PassResult:
    functions = []
    for fn in program.functions:
        if fn.type.is_kernel and any(_is_cube(s) for s in n.walk_stmts(fn.body)):
            fn = _Tiler(fn, ctx).run()
        functions.append(fn)
    return result(n.Program(program.name, tuple(functions)))


def _is_cube(stmt) -> bool:
    return isinstance(stmt, n.Assign) and isinstance(stmt.value, n.Call) and stmt.value.op in TILED + WHOLE


def design_config(M_: int, N_: int, K: int, lhs: DataType, rhs: DataType, soc, planner: Planner, *,
                  reads_acc: bool = False, bias_cap: int = 0) -> L0TileConfig:
    """The chooser's question for a matmul on ``soc``: its L0 buffers, the cube's 16-element
    fractals (K in multiples of its 32-byte block), an INT32 accumulator's rows padded to
    32, both held-operand schedules, and two accumulators unless the PYPTO planner's MemoryReuse
    would merge them."""
    c = L0TileConfig()
    c.M, c.N, c.K = M_, N_, K
    c.l0a_bytes, c.l0b_bytes, c.l0c_bytes = (soc.spec(s).capacity for s in (M.Left, M.Right, M.Acc))
    c.bytes_a, c.bytes_b, c.bytes_c = lhs.nbytes, rhs.nbytes, acc_dtype(lhs).nbytes
    c.align_k = c.min_k = max(16, CUBE_K_BYTES // lhs.nbytes)
    c.min_m, c.min_n = min(16, M_), min(16, N_)
    c.l0c_align_m = 32 if acc_dtype(lhs) is DataType.INT32 else 16
    c.allow_a_stationary = c.allow_b_stationary = True
    c.allow_double_buffer_c = planner is not Planner.PYPTO  # MemoryReuse would merge the two accumulators
    c.allow_k_boundary = True
    c.c_read = reads_acc
    if bias_cap:  # a bias window per copy of the tile the schedule keeps
        c.max_n, c.max_n_pipelined, c.max_n_nested_pipelined = bias_cap, bias_cap // 2, bias_cap // 4
    return c


def choose(c: L0TileConfig) -> L0TileResult:
    """The design point, for any K: a K the fractal alignment does not divide is chosen as
    rounded up, its last block then the shorter rest (K below one block: all of it)."""
    K = c.K
    if K % c.align_k or K < c.min_k:
        c = attrs.evolve(c, K=max(-(-K // c.align_k) * c.align_k, c.min_k))
    r = choose_l0_tile(c)
    return attrs.evolve(r, k=min(r.k, K)) if r.k > K or K != c.K else r


class _Tiler:
    def __init__(self, fn: n.Function, ctx: PassContext):
        self.fn, self.ctx, self.soc = fn, ctx, ctx.soc
        self.types = n.symbols(fn)
        memrefs = {t.memref.name for t in self.types.values() if isinstance(t, TileType) and t.memref}
        self.used = set(self.types) | memrefs
        self.defs = {s.target: s for s in n.walk_stmts(fn.body) if isinstance(s, n.Assign)}
        self.replaced: set[str] = set()  # loads whose value the pass now loads in windows

    def run(self) -> n.Function:
        body = self.block(self.fn.body)
        if self.replaced:  # a bias row loaded a window at a time: its whole load, unless read elsewhere
            read = set().union(*(_reads(s) for s in body))
            body = _drop(body, self.replaced - read)
        return attrs.evolve(self.fn, body=body)

    def block(self, body) -> tuple:
        body = list(body)
        out: list = []
        pending: dict[int, list] = {}  # statement index -> what replaces it (a placed grid)
        for i, stmt in enumerate(body):
            if i in pending:
                out.extend(pending.pop(i))
                continue
            if isinstance(stmt, n.For):
                stmt = attrs.evolve(stmt, body=self.block(stmt.body))
            elif isinstance(stmt, n.If):
                stmt = attrs.evolve(stmt, then_body=self.block(stmt.then_body), else_body=self.block(stmt.else_body))
            elif _is_narrowing(stmt, self.types):
                out.extend(self.narrowing(stmt))
                continue
            elif _is_cube(stmt):
                self.check_manual(stmt)
                if stmt.value.op in TILED and self._operands_in_mat(stmt.value):
                    out.extend(self.tile(stmt, body, i, pending))
                    continue
                if stmt.value.op in BATCHED and self._operands_in_mat(stmt.value):
                    out.extend(self.tile_pages(stmt))
                    continue
                self.check_whole(stmt)  # beside an operand already in L0, a Mat one is moved whole
            out.append(stmt)
        return tuple(out)

    # ------------------------------------------------------------------ what to do

    def _operands_in_mat(self, call: n.Call) -> bool:
        spaces = [self.types[argument(call, p).name].space for p in ("lhs", "rhs")]
        return spaces == [M.Mat, M.Mat]

    def tile(self, stmt: n.Assign, body: list, i: int, pending: dict) -> list:
        """The statements replacing the matmul ``stmt`` (``body[i]``); a tiled result
        placed where it is consumed goes into ``pending`` at its consumer's index."""
        call = stmt.value
        lhs, rhs = argument(call, "lhs"), argument(call, "rhs")
        lt, rt = self.types[lhs.name], self.types[rhs.name]
        if lt.valid_shape is not None or rt.valid_shape is not None:
            return self._whole_or(stmt, "a partial operand (valid_shape) is read whole, and does not fit L0",
                                  "load the whole operand into Mat, or cut valid_shape on an operand that fits L0")
        (M_, K), N_ = lt.shape, rt.shape[1]
        bias = argument(call, "bias") if call.op == "tile.matmul_bias" else None
        bias_cap = self.soc.spec(M.Bias).capacity // acc_dtype(lt.dtype).nbytes if bias is not None else 0
        cfg = design_config(M_, N_, K, lt.dtype, rt.dtype, self.soc, self.ctx.planner,
                            reads_acc=call.op == "tile.matmul_acc", bias_cap=bias_cap)
        point = choose(cfg)
        logger.debug(f"[AutoTileMatmulL0] {self.fn.name}.{stmt.target}: {call.op} [{M_}, {K}] x [{K}, {N_}] -> "
                     f"(m, n, k) = ({point.m}, {point.n}, {point.k}), {point.stationarity.name}, "
                     f"double_buffer_c={point.double_buffer_c}")
        if (point.m, point.n) == (M_, N_):
            return self._k_only(stmt, point, M_, N_, K, bias)
        fold = self._fold(stmt, body, i)
        return self._grid(stmt, body, i, pending, point, cfg, M_, N_, K, bias, fold)

    def tile_pages(self, stmt: n.Assign) -> list:
        """A batch_matmul on Mat stacks: K cut alone, every page of each piece at once (the
        whole stack of results in Acc, each operand's pages in two buffers of L0)."""
        call = stmt.value
        lhs, rhs = argument(call, "lhs"), argument(call, "rhs")
        lt, rt = self.types[lhs.name], self.types[rhs.name]
        out = self.types[stmt.target]
        if lt.valid_shape is not None or rt.valid_shape is not None:
            return self._whole_or(stmt, "a partial operand (valid_shape) is read whole, and does not fit L0",
                                  "load the whole operand into Mat, or cut valid_shape on an operand that fits L0")
        pages = [_pages(t.shape) for t in (lt, rt, out)]
        (M_, K), N_ = lt.shape[-2:], rt.shape[-1]
        cfg = design_config(M_, N_, K, lt.dtype, rt.dtype, self.soc, self.ctx.planner)
        cfg = attrs.evolve(cfg, M=M_, l0a_bytes=cfg.l0a_bytes // pages[0], l0b_bytes=cfg.l0b_bytes // pages[1],
                           l0c_bytes=cfg.l0c_bytes // pages[2])
        k = _k_alone(cfg)
        if k is None:
            raise MemorySpaceError(
                f"the {pages[2]} pages of this {call.op} ([{M_}, {N_}] each, {out.nbytes} B together) do not fit Acc "
                f"({self.soc.spec(M.Acc).capacity} B): its pages are computed together, a K block at a time",
                span=stmt.span, hint="multiply fewer pages at once (a pl.batch_matmul per group of pages), or a "
                "pl.matmul per page (the compiler tiles each)")
        if k == K:
            return [stmt]  # fits whole: InferTileMemorySpace moves the operands
        b = grid.Builder(self.types, self.used, self.soc, stmt.span)
        first = "acc" if call.op == "tile.batch_matmul_acc" else "fresh"
        job = grid.Job(lhs, rhs, M_, N_, K, M_, N_, k, first, argument(call, "acc") if first == "acc" else None,
                       batch=(tuple(lt.shape[:-2]), tuple(rt.shape[:-2])),
                       ops=("tile.batch_matmul", "tile.batch_matmul_acc"))
        grid.k_chain(b, job, n.Const(0), n.Const(0), M_, N_, name=stmt.target)
        return b.out

    def _k_only(self, stmt, point, M_, N_, K, bias) -> list:
        if point.k == K and bias is None:
            return [stmt]  # fits whole: InferTileMemorySpace moves the operands
        b = grid.Builder(self.types, self.used, self.soc, stmt.span)
        job = self._job(stmt, point, M_, N_, K, bias, b, bias_whole=True)
        grid.k_chain(b, job, n.Const(0), n.Const(0), M_, N_, name=stmt.target)
        return b.out

    def _grid(self, stmt, body, i, pending, point, cfg, M_, N_, K, bias, fold) -> list:
        """An output larger than Acc: its tiles placed where the result is consumed."""
        call = stmt.value
        acc_bytes = M_ * N_ * acc_dtype(self.types[argument(call, "lhs").name].dtype).nbytes
        where = f"the [{M_}, {N_}] result of this {call.op} ({acc_bytes} B) does not fit Acc " \
                f"({self.soc.spec(M.Acc).capacity} B), so it is computed a [{point.m}, {point.n}] tile at a time"
        store = self._store_use(stmt, body, i)
        if call.op == "tile.matmul_acc" or store is None and fold is None:
            k = _k_alone(cfg)
            if k is not None:  # the result fits Acc after all: K cut alone, into one accumulator
                point = attrs.evolve(point, m=M_, n=N_, k=k, stationarity=Stationarity.OutputStationary,
                                     double_buffer_c=False)
                return self._k_only(stmt, point, M_, N_, K, bias)
        if call.op == "tile.matmul_acc":
            raise MemorySpaceError(f"{where}, and an accumulator that large cannot be held to add onto",
                                   span=stmt.span, hint="accumulate into a result that fits Acc (split M or N "
                                   "into blocks, a pl.matmul_acc chain per block)")
        if store is None and fold is None:
            raise MemorySpaceError(
                f"{where}: each tile must go where the result goes, and '{stmt.target}' is not stored to GM "
                "(its only use a pl.store) nor cast to BF16/FP16 with mode=\"rint\" for other matmuls",
                span=stmt.span, hint=f"store it right away (pl.store({stmt.target}, ...)), or feed other matmuls "
                f"pl.cast({stmt.target}, pl.BF16, mode=\"rint\"), or split the matmul into blocks that fit")
        b = grid.Builder(self.types, self.used, self.soc, stmt.span)
        job = self._job(stmt, point, M_, N_, K, bias, b, bias_whole=point.n == N_)
        if store is not None:
            j, st = store
            placement = self._gm_placement(st)
            name = st.target if isinstance(st, n.Assign) else None
        else:
            j, cast = fold
            dtype = argument(cast.value, "target_type")
            need = M_ * N_ * dtype.nbytes
            if need > self.soc.spec(M.Mat).capacity:
                raise MemorySpaceError(f"{where}, into a Mat scratch for the matmuls that read it: {need} B, more "
                                       f"than Mat's {self.soc.spec(M.Mat).capacity} B", span=stmt.span,
                                       hint="store the result to GM and read it back in blocks")
            scratch = b.bind("scratch", op_call("tile.create", shape=tuple(n.Const(s) for s in (M_, N_)),
                                                dtype=dtype, target_memory=M.Mat))
            placement = grid.Placement(scratch, _assemble)
            name = cast.target
        emit = grid.full_k_grid if point.k == K else grid.split_k_grid
        emit(b, job, placement, name or n.fresh_name("out", self.used))
        pending[j] = list(b.out)
        return []

    def _job(self, stmt, point, M_, N_, K, bias, b: grid.Builder, *, bias_whole: bool) -> grid.Job:
        call = stmt.value
        first = {"tile.matmul": "fresh", "tile.matmul_acc": "acc", "tile.matmul_bias": "bias"}[call.op]
        bias_of = None
        if bias is not None:
            bias_of = self._bias_source(stmt, bias, b, whole=bias_whole)
        held_a = point.stationarity is Stationarity.AStationary or \
            point.stationarity is Stationarity.OutputStationary and point.os_holds_a
        return grid.Job(argument(call, "lhs"), argument(call, "rhs"), M_, N_, K, point.m, point.n, point.k, first,
                        argument(call, "acc") if first == "acc" else None, bias_of, held_a, point.double_buffer_c)

    # ------------------------------------------------------------------ consumers

    def _uses(self, name: str, body: list, i: int) -> list:
        return [(j, s) for j, s in enumerate(body) if j > i and name in _reads(s)]

    def _store_use(self, stmt, body, i):
        """(index, statement) of the result's one use when it is a store to GM."""
        uses = self._uses(stmt.target, body, i)
        if len(uses) != 1:
            return None
        j, s = uses[0]
        if isinstance(s, (n.Assign, n.Eval)) and isinstance(s.value, n.Call) and s.value.op == "tile.store" \
                and argument(s.value, "tile") == n.Var(stmt.target) and argument(s.value, "shapes") is None:
            return j, s
        return None

    def _fold(self, stmt, body, i):
        """(index, the cast) when the result's one use is the fixpipe's narrowing into Mat."""
        uses = self._uses(stmt.target, body, i)
        if len(uses) == 1 and _is_narrowing(uses[0][1], self.types):
            return uses[0]
        return None

    def narrowing(self, stmt: n.Assign) -> list:
        """A cast of an accumulator (FP32 to BF16/FP16, "rint") as the fixpipe makes it: the
        result written into a Mat tile of its own."""
        src = argument(stmt.value, "tile")
        b = grid.Builder(self.types, self.used, self.soc, stmt.span)
        shape = tuple(n.Const(s) for s in self.types[src.name].shape)
        scratch = b.bind("scratch", op_call("tile.create", shape=shape, dtype=argument(stmt.value, "target_type"),
                                            target_memory=M.Mat))
        b.bind("", op_call("tile.assemble", target=scratch, source=src, offset=(n.Const(0), n.Const(0))),
               name=stmt.target)
        return b.out

    def _gm_placement(self, st) -> grid.Placement:
        call = st.value
        (r0, c0), out, atomic = argument(call, "offsets"), argument(call, "output_tensor"), argument(call, "atomic")

        def place(b: grid.Builder, acc, mi, ni, state, name):
            offsets = (_add(r0, mi), _add(c0, ni))
            return b.bind(out.name, op_call("tile.store", tile=acc, offsets=offsets, output_tensor=state,
                                            atomic=atomic), name=name)

        return grid.Placement(out, place)

    def _bias_source(self, stmt, bias: n.Var, b: grid.Builder, *, whole: bool):
        """(builder, ni, width) -> the Bias tile for those columns: the whole row moved to
        Bias once, or a window of the row's tensor loaded per column of tiles."""
        t = self.types[bias.name]
        if whole:
            if t.space is M.Bias:
                return lambda _b, ni, width: bias
            moved = b.bind(f"{bias.name}_Bias", op_call("tile.move", tile=bias, target_memory=M.Bias))
            return lambda _b, ni, width: moved
        load = self.defs.get(bias.name)
        if t.space is M.Bias or load is None or load.value.op != "tile.load" \
                or argument(load.value, "valid_shape") is not None:
            raise MemorySpaceError(
                f"this tile.matmul_bias is computed a few columns at a time, each tile's bias a window of the "
                f"[1, {t.shape[1]}] row, and '{bias.name}' is not a tile.load of a tensor to read windows from",
                span=stmt.span, hint=f"load the bias row with pl.load(..., target_memory=pl.Mem.Mat) and pass it as "
                "it is loaded (the compiler loads the window each tile needs)")
        tensor, (r0, c0) = argument(load.value, "tensor"), argument(load.value, "offsets")
        self.replaced.add(bias.name)

        def window(bb: grid.Builder, ni, width):
            w = bb.bind(f"{bias.name}_win", op_call("tile.load", tensor=tensor, offsets=(r0, _add(c0, ni)),
                                                    shapes=(n.Const(1), n.Const(width)), target_memory=M.Mat))
            return bb.bind(f"{bias.name}_Bias", op_call("tile.move", tile=w, target_memory=M.Bias))

        return window

    # ------------------------------------------------------------------ checks

    def _whole_or(self, stmt, why: str, hint: str) -> list:
        """The matmul as written when its operands fit L0 whole, else an error."""
        self.check_whole(stmt, why=why, hint=hint)
        return [stmt]

    def check_whole(self, stmt, why: str | None = None, hint: str | None = None) -> None:
        """A cube op that reads its Mat operands whole: each must fit its L0 buffer."""
        call = stmt.value
        names = {p.name for p in lookup(call.op).params}
        for p, space in (("lhs", M.Left), ("rhs", M.Right), ("bias", M.Bias)):
            if p not in names:
                continue
            v = argument(call, p)
            t = self.types[v.name]
            if t.space is M.Mat and t.nbytes > self.soc.spec(space).capacity:
                raise MemorySpaceError(
                    f"{call.op} reads its {p} '{v.name}' ({type_name(t)}, {t.nbytes} B) whole into {space.name}, "
                    f"which holds {self.soc.spec(space).capacity} B" + (f": {why}" if why else ""), span=stmt.span,
                    hint=hint or "compute it with pl.matmul on the Mat tiles (the compiler cuts it into pieces "
                    "that fit), or split it along K yourself")

    def check_manual(self, stmt) -> None:
        """An operand the program put in Left or Right itself must fit there (the pieces
        are the program's own: they are kept, not cut)."""
        call = stmt.value
        for p, space, l0 in (("lhs", M.Left, "L0A"), ("rhs", M.Right, "L0B")):
            v = argument(call, p)
            t = self.types.get(v.name)
            cap = self.soc.spec(space).capacity
            if isinstance(t, TileType) and t.space is space and t.nbytes > cap:
                side = "left" if p == "lhs" else "right"
                where = self.defs.get(v.name)
                raise MemorySpaceError(
                    f"{call.op} {side} operand '{v.name}' in {space.name} ({l0}) has physical shape "
                    f"[{', '.join(map(str, t.shape))}] {t.dtype.name}, requiring {t.nbytes} bytes, but {space.name} "
                    f"({l0}) provides {cap} bytes; AutoTileMatmulL0 does not retile operands already placed in Left "
                    "or Right", span=where.span if where is not None and where.span is not None else stmt.span,
                    hint=f"Keep this operand in Mat and pass it directly to the matmul so the compiler can choose "
                         f"legal L0 tiles, or manually extract a smaller {space.name} tile")


def _pages(shape) -> int:
    out = 1
    for s in shape[:-2]:
        out *= s
    return out


def _k_alone(c: L0TileConfig) -> int | None:
    """The longest k that cuts K alone, the whole [M, N] in one accumulator (None when
    that does not fit Acc): all of K when both operands fit L0 whole, else the longest
    aligned block two buffers of each operand hold."""
    rows = -(-c.M // c.l0c_align_m) * c.l0c_align_m
    if rows * c.N * c.bytes_c > c.l0c_bytes or c.max_n and c.N > c.max_n:  # (a bias row wider than Bias)
        return None
    if c.M * c.K * c.bytes_a <= c.l0a_bytes and c.K * c.N * c.bytes_b <= c.l0b_bytes:
        return c.K
    k = min(c.l0a_bytes // (2 * c.M * c.bytes_a), c.l0b_bytes // (2 * c.N * c.bytes_b)) // c.align_k * c.align_k
    return min(k, c.K) if k > 0 else None


def _is_narrowing(stmt, types) -> bool:
    """A tile.cast of an accumulator: the fixpipe's narrowing into Mat (its type checks the
    dtypes and mode)."""
    return isinstance(stmt, n.Assign) and isinstance(stmt.value, n.Call) and stmt.value.op == "tile.cast" \
        and types[argument(stmt.value, "tile").name].space is M.Acc


def _assemble(b: grid.Builder, acc, mi, ni, state, name):
    return b.bind(state.name, op_call("tile.assemble", target=state, source=acc, offset=(mi, ni)), name=name)


def _add(a, b):
    if isinstance(a, n.Const) and isinstance(b, n.Const):
        return n.Const(a.value + b.value)
    if a == n.Const(0):
        return b
    return a if b == n.Const(0) else n.BinOp("+", a, b)


def _drop(body, names: set) -> tuple:
    out = []
    for s in body:
        if isinstance(s, n.Assign) and s.target in names:
            continue
        if isinstance(s, n.For):
            s = attrs.evolve(s, body=_drop(s.body, names))
        elif isinstance(s, n.If):
            s = attrs.evolve(s, then_body=_drop(s.then_body, names), else_body=_drop(s.else_body, names))
        out.append(s)
    return tuple(out)


def _reads(stmt, nested: bool = True) -> set[str]:
    """The names a statement reads (with its nested blocks')."""
    out: set[str] = set()
    stmts = n.walk_stmts((stmt,)) if nested else (stmt,)
    for s in stmts:
        if isinstance(s, (n.Assign, n.Eval)):
            exprs = list(n.value_exprs(s.value))
        elif isinstance(s, n.For):
            exprs = [s.start, s.stop, s.step, *(a.init for a in s.iter_args)]
        elif isinstance(s, n.If):
            exprs = [s.cond]
        elif isinstance(s, (n.Yield, n.Return)):
            exprs = list(s.values)
        else:
            exprs = []
        for e in exprs:
            out |= n.expr_vars(e)
    return out
