"""Reductions in tile code (a mixin of ``tile_emitter.Emitter``): a row or column
reduction of a window whose operand fits in Vec is one tile op; one that does not is
folded over blocks of the reduced axis — a loop carrying the partial result, merged with
the op's ``combine`` — at the widest block that fits beside what the emitter holds."""

from __future__ import annotations


from pypto.ir import nodes as n
from pypto.ir.ops import argument, lookup, op_call
from pypto.ir.types import INDEX
from pypto.passes.tile_conversion.regions import block_sizes, extents, operand_regions, region_vars
from pypto.passes.tile_conversion.tensor_graph import Op, Unblockable


class Reductions:
    def reduce(self, name: str, call: n.Call, region, d: Op) -> n.Var:
        """A row (column) reduction reads whole rows (columns) of its operand; when they do
        not fit beside what is live, it folds over blocks of them into a carried result —
        the first block starts it (max and min fold exactly; a sum adds block sums)."""
        windows = lookup(call.op).windows
        axis = 1 if windows.kind == "row_reduce" else 0
        x = argument(call, "x")
        within = operand_regions(call, region, self.g.types, self.g.types[name].shape)["x"]
        full = within[axis][1]
        tile_op = "tile." + call.op.removeprefix("tensor.")
        with self.at(self.level(region_vars(region))) as frame:
            block = self.fold_block(x.name, within, axis, d)

            def reduced(start) -> n.Var:
                w = list(within)
                w[axis] = (start, block)
                return self.bind(name, op_call(tile_op, tile=self.value(x.name, tuple(w), d.stmt)), d.span)

            if block == full:
                return reduced(n.Const(0))
            if windows.combine is None:  # an arg reduction: two partial indices do not merge
                raise Unblockable(f"'{d.stmt.target}' reads whole {'rows' if axis == 1 else 'columns'} of its "
                                  "operand at once, more than fits Vec beside what is live", d.span,
                                  hint="reduce a narrower window (slice the operand)")
            first = self.push("first")  # its tiles die once it is reduced; the result lives on
            acc = reduced(n.Const(0))
            self.pop()
            frame.stmts.extend(first.stmts)
            self.adopt(frame, acc.name)
            t = self.types[acc.name]
            loop_end = full // block * block
            if loop_end > block:
                var, carried = self.fresh("c" if axis == 1 else "r", INDEX), self.fresh(f"{name}_acc", t)
                self.ranges[var] = (block, loop_end - block)
                fold = self.push("fold", (var, carried))
                part = reduced(n.Var(var))
                nxt = self.bind(name, op_call(windows.combine, lhs=n.Var(carried), rhs=part), d.span)
                fold.stmts.append(n.Yield((nxt,), span=d.span))
                self.pop()
                out = self.fresh(f"{name}_total", t)
                self.emit_loop(frame, var, n.Const(block), n.Const(loop_end), n.Const(block), fold,
                               iter_args=(n.IterArg(carried, t, acc),), results=(n.Binding(out, t),), span=d.span)
                self.adopt(frame, out, counted=False)
                acc = n.Var(out)
            if loop_end < full:  # what is left of the axis, one shorter block
                rest = self.push("first")
                block = full - loop_end
                part = reduced(n.Const(loop_end))
                acc = self.bind(name, op_call(windows.combine, lhs=acc, rhs=part), d.span)
                self.pop()
                frame.stmts.extend(rest.stmts)
                self.adopt(frame, acc.name)
            return acc

    def fold_block(self, x: str, within, axis: int, d: Op) -> int:
        """The longest block of the reduced axis whose tiles fit beside what is live: the
        whole axis (no fold) if it fits, else — when folds are allowed — the longest whose
        block and partial results fit ``fold_budget``. Decisions are kept by sizes: where
        the window sits does not change what it takes (a reuse it misses only makes the
        plan smaller)."""
        key = (self.g.resolve(x), extents(within), axis, self.live, self.fold_budget)
        if key not in self.folds:
            try:
                self.folds[key] = self._fold_block(x, within, axis, d)
            except Unblockable as err:
                self.folds[key] = err
        got = self.folds[key]
        if isinstance(got, Unblockable):
            if not self.fold_budget:
                self.wanted_fold = True
            raise got
        block, bound = got
        self.budget_bound = self.budget_bound or bound
        return block

    def _fold_block(self, x: str, within, axis: int, d: Op) -> tuple[int, bool]:
        full = within[axis][1]
        other = extents(within)[1 - axis]
        carried = 3 * other * self.g.types[self.g.resolve(x)].dtype.nbytes  # the result, a block's, combined

        unblockable = []  # why a block of the operand cannot be computed alone

        def need(block) -> int | None:
            """Bytes of one block of the operand; None when it cannot be computed alone."""
            w = list(within)
            w[axis] = (within[axis][0], block)
            try:
                return self.measure(lambda e, w=tuple(w): e.value(x, w, d.stmt))
            except Unblockable as err:
                unblockable.append(err)
                return None

        whole_need = need(full)
        # 0: the operand's window is on chip already, whole; folding could only read it again
        if whole_need is not None and (whole_need == 0 or whole_need + self.live <= self.capacity):
            return full, False
        least = None if whole_need is None else whole_need + self.live  # the fewest bytes any way takes
        if not self.fold_budget:
            raise Unblockable(f"'{d.stmt.target}' reduces more than fits Vec at once", d.span, need=least)
        bound, alone = False, False  # alone: some smaller block is computed on its own
        smaller = block_sizes(full)[1:]
        for block in smaller:
            one = need(block)
            if one is None:
                continue
            alone = True
            cost = one + carried
            if cost + self.live <= self.capacity:
                if cost <= self.fold_budget:
                    return block, bound
                bound = True
            least = cost + self.live if least is None else min(least, cost + self.live)
        if smaller and not alone:  # no block of it is computed alone: say why
            why = unblockable[-1]
            size = f" ({least} B with what is live)" if least is not None else ""
            raise Unblockable(f"the reduction '{d.stmt.target}' needs its operand whole{size}, more than Vec holds, "
                              f"and its operand is not computed in blocks of "
                              f"{'rows' if axis == 0 else 'columns'}: {why.message}", d.span, hint=why.hint, need=least)
        smallest = smaller[-1] if smaller else full
        raise Unblockable(f"the reduction '{d.stmt.target}' does not fit Vec even in blocks of {smallest} "
                          f"{'row' if axis == 0 else 'column'}{'s' * (smallest != 1)} of its operand", d.span,
                          hint="reduce a narrower window (slice the operand), or a smaller dtype", need=least)

    def measure(self, emit) -> int:
        """The most bytes the tiles ``emit(emitter)`` makes hold at once (emitted into a
        scratch copy; what is computed already costs nothing more)."""
        e = self.scratch()
        frame = e.push("sink")
        for f in self.frames:
            frame.memo.update(f.memo)
        try:
            emit(e)
        finally:
            self.wanted_fold = self.wanted_fold or e.wanted_fold
            self.budget_bound = self.budget_bound or e.budget_bound
        return e.peak
