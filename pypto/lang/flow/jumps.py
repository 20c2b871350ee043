"""``break`` and ``continue`` of a loop body, turned into structured control flow on the
source (``ast``) before it is converted, as the reference's CtrlFlowTransform does on its IR:

    for i in pl.range(n):            for i in pl.range(n):
        A                                A
        if c:                            if c:
            continue          ->             pass
        B                                else:
                                             B

A ``break`` also sets the loop's break flag, which the loop's condition reads — a ``for``
that breaks becomes a ``while`` over its own counter (``broken_for``):

    for i in pl.range(s, e, d):      __it = s; __stop = e; __step = d; __brk = False
        A                            while __it < __stop and not __brk:
        if c:                 ->         i = __it
            break                        A
        B                                if c: __brk = True
                                         else: B
                                         __it = __it + __step

What follows a statement that jumps on every path moves into the branch that does not
jump; where a branch jumps on some paths only, a skip flag set at the jump guards what
follows (``if not __skip:``), so nothing is copied. Jumps inside a nested loop are that
loop's. Pure functions of the tree: the nodes made carry the jump's location.
"""

from __future__ import annotations

import ast
import itertools

_LOOPS = (ast.For, ast.While, ast.AsyncFor)


def jumps(stmts, kind: type | tuple = (ast.Break, ast.Continue)) -> list:
    """The ``break``/``continue`` statements (of ``kind``) that leave this loop body: not
    those of a loop nested in it."""
    out = []
    for stmt in stmts:
        if isinstance(stmt, kind):
            out.append(stmt)
        elif not isinstance(stmt, _LOOPS):
            for field in ("body", "orelse", "handlers", "finalbody"):
                for child in getattr(stmt, field, ()) or ():
                    if isinstance(child, ast.stmt):
                        out.extend(jumps([child], kind))
    return out


def outside_ifs(stmts) -> list:
    """The jumps of a body that sit in something other than ``if`` statements (a ``with``
    block): a form the transformation does not restructure."""
    out = []
    for stmt in stmts:
        if isinstance(stmt, ast.If):
            out.extend(outside_ifs(stmt.body) + outside_ifs(stmt.orelse))
        elif not isinstance(stmt, (*_LOOPS, ast.Break, ast.Continue)):
            out.extend(jumps([stmt]))
    return out


class Names:
    """Fresh names for the flags one function's loops need (``__brk_0``, ...): no source
    name starts with two underscores and a kind of flag."""

    def __init__(self):
        self._count = itertools.count()

    def fresh(self, what: str) -> str:
        return f"__{what}_{next(self._count)}"


def eliminated(stmts, brk: str | None, names: Names) -> list:
    """A loop body without its ``continue``s and ``break``s: each ``break`` sets ``brk``
    (the loop's break flag); what follows a jump does not run after it."""
    skip = names.fresh("skip") if _partial(stmts) else None
    body = _block(stmts, brk, skip)
    if skip is not None:
        first = stmts[0]
        body.insert(0, _assign(skip, False, first))
    return body


def _block(stmts, brk, skip) -> list:
    out = []
    for k, stmt in enumerate(stmts):
        if isinstance(stmt, (ast.Break, ast.Continue)):
            if isinstance(stmt, ast.Break):
                out.append(_assign(brk, True, stmt))
            if skip is not None:
                out.append(_assign(skip, True, stmt))
            return out  # what follows it never runs
        if not jumps([stmt]):
            out.append(stmt)
            continue
        rest = stmts[k + 1:]
        then_always, else_always = _always(stmt.body), _always(stmt.orelse)
        then = _block(stmt.body, brk, skip)
        other = _block(stmt.orelse, brk, skip)
        if then_always or else_always:  # what follows belongs to the branch that goes on
            if not then_always:
                then += _block(rest, brk, skip)
            if not else_always:
                other += _block(rest, brk, skip)
            out.append(_if(stmt, then, other))
            return out
        out.append(_if(stmt, then, other))
        if rest:  # some paths through the if jumped: the flag says which
            guard = ast.UnaryOp(ast.Not(), _load(skip, rest[0]))
            out.append(ast.copy_location(ast.If(ast.copy_location(guard, rest[0]), _block(rest, brk, skip), []),
                                         rest[0]))
        return out
    return out


def _always(stmts) -> bool:
    """Whether a block jumps on every path through it."""
    for stmt in stmts:
        if isinstance(stmt, (ast.Break, ast.Continue)):
            return True
        if isinstance(stmt, ast.If) and _always(stmt.body) and _always(stmt.orelse):
            return True
    return False


def _partial(stmts) -> bool:
    """Whether some ``if`` of the body jumps on some of its paths only, with statements
    after it: then a flag has to say whether they run."""
    for k, stmt in enumerate(stmts):
        if isinstance(stmt, (ast.Break, ast.Continue)):
            return False
        if isinstance(stmt, ast.If) and jumps([stmt]):
            then_always, else_always = _always(stmt.body), _always(stmt.orelse)
            if then_always and else_always:
                return False
            if then_always or else_always:  # what follows goes into the branch that goes on
                branch = stmt.orelse if then_always else stmt.body
                return _partial(branch + stmts[k + 1:])
            return _partial(stmt.body) or _partial(stmt.orelse) or bool(stmts[k + 1:])
    return False


def broken_for(node: ast.For, target: str, counter: str, stop: str, step: str, brk: str,
               names: Names) -> ast.While:
    """A ``for`` over ``pl.range`` whose body breaks, as a ``while`` over the names that
    hold its counter (from the start), its stop and step, and its break flag (False), which
    the caller binds before it: the loop variable ``target`` is bound from the counter at
    the top of each trip, so after the loop it holds the last trip's value, as Python's does."""
    test = ast.BoolOp(ast.And(), [ast.Compare(_load(counter, node), [ast.Lt()], [_load(stop, node)]),
                                  ast.UnaryOp(ast.Not(), _load(brk, node))])
    advance = _assign_expr(counter, ast.BinOp(_load(counter, node), ast.Add(), _load(step, node)), node)
    body = [_assign_expr(target, _load(counter, node), node), *eliminated(node.body, brk, names), advance]
    return _locate(ast.While(test, body, []), node)


def broken_while(node: ast.While, brk: str, names: Names) -> ast.While:
    """A ``while`` whose body breaks, as one that also tests its break flag ``brk`` (False,
    bound by the caller before it)."""
    test = ast.BoolOp(ast.And(), [node.test, ast.UnaryOp(ast.Not(), _load(brk, node))])
    return _locate(ast.While(test, eliminated(node.body, brk, names), []), node)


def _if(stmt: ast.If, then: list, other: list) -> ast.If:
    return ast.copy_location(ast.If(stmt.test, then or [ast.copy_location(ast.Pass(), stmt)], other), stmt)


def _assign(name: str, value: bool, at) -> ast.Assign:
    return _assign_expr(name, ast.Constant(value), at)


def _assign_expr(name: str, value, at) -> ast.Assign:
    node = ast.Assign([ast.Name(name, ast.Store())], value)
    return _locate(node, at)


def _load(name: str, at) -> ast.Name:
    return _locate(ast.Name(name, ast.Load()), at)


def _locate(node, at):
    """``node`` and the nodes made with it located at ``at`` (what they stand in for); the
    source's own nodes inside it keep their locations."""
    for x in ast.walk(node):
        if isinstance(x, (ast.stmt, ast.expr)) and not hasattr(x, "lineno"):
            ast.copy_location(x, at)
    return node
